/* test_snapshot.c — PyTorch snapshots into C structs (analyzer/snapshot.h).
 *
 * Hand-made snapshots of each format generation (blocks without address,
 * 2.0-style history, entries without frames or time, the newest keys, a bare
 * segment list), frame and stack interning, the error for each missing or
 * mistyped key; then the real snapshots in ../shared/data/pytorch against
 * numbers Python's pickle module computes (exit 77 when they are absent,
 * after everything else ran), and Python-written synthetic snapshots when
 * python3 is there.
 *
 * Usage: test_snapshot [SOURCE_DIR]; without it the repository is found from
 * GMT_SOURCE_DIR or this file's path. */
#include "check.h"
#include "pickle_build.h"
#include "snapshot.h"

#include <unistd.h>

/* ---- snapshot shapes (protocol 4, as Python writes snapshots) ------------ */

static void u64(pb *w, uint64_t v) { /* LONG1, 9 bytes when bit 63 is set */
    pb_op(w, 0x8a);
    pb_op(w, v >> 63 ? 9 : 8);
    pb_le(w, v, v >> 63 ? 9 : 8);
}

static uint32_t memoize(pb *w) {
    pb_op(w, 0x94);
    return w->memo++;
}

static void get(pb *w, uint32_t idx) {
    pb_op(w, 'j');
    pb_le(w, idx, 4);
}

static void dict(pb *w) {
    pb_op(w, '}');
    pb_op(w, '(');
}
static void list(pb *w) {
    pb_op(w, ']');
    pb_op(w, '(');
}
static void dict_end(pb *w) { pb_op(w, 'u'); }
static void list_end(pb *w) { pb_op(w, 'e'); }
static void kint(pb *w, const char *k, int64_t v) { /* these snapshots have no BININT2 */
    pb_str(w, k);
    pb_int_with(w, v, 0);
}
static void ku64(pb *w, const char *k, uint64_t v) {
    pb_str(w, k);
    u64(w, v);
}
static void kstr(pb *w, const char *k, const char *v) {
    pb_str(w, k);
    pb_str(w, v);
}
static void begin(pb *w) {
    w->len = 0;
    w->memo = 0;
    pb_op(w, 0x80);
    pb_op(w, 4);
}
static void end(pb *w) { pb_op(w, '.'); }

/* The root dict, opened at its "segments" list. */
static void begin_segments(pb *w) {
    begin(w);
    dict(w);
    pb_str(w, "segments");
    list(w);
}

/* A segment's keys up to its blocks, in PyTorch's order; active_size is
 * allocated_size, requested_size is written when not 0. The caller goes on
 * with the other keys and closes the dict. */
typedef struct segment_keys {
    int64_t device;
    uint64_t address;
    int64_t total, allocated, requested, stream;
    const char *type;
} segment_keys;

static void segment_head(pb *w, segment_keys k) {
    dict(w);
    kint(w, "device", k.device);
    ku64(w, "address", k.address);
    kint(w, "total_size", k.total);
    kint(w, "allocated_size", k.allocated);
    kint(w, "active_size", k.allocated);
    if (k.requested)
        kint(w, "requested_size", k.requested);
    kint(w, "stream", k.stream);
    kstr(w, "segment_type", k.type);
}

static void frame(pb *w, const char *name, const char *file, uint64_t line) {
    dict(w);
    kstr(w, "name", name);
    kstr(w, "filename", file);
    ku64(w, "line", line);
    dict_end(w);
}

/* ---- the two ways in ------------------------------------------------------ */

/* A string of a snapshot by id ("" for 0 and out of range). */
static const char *text_of(const snapshot *s, uint32_t id) {
    return id && id < s->string_count && s->strings[id] ? s->strings[id] : "";
}

/* Whether two stacks (of two snapshots) have the same frames. */
static int same_stack(const snapshot *a, uint32_t sa, const snapshot *b, uint32_t sb) {
    size_t da, db;
    const uint32_t *fa = snapshot_stack_frames(a, sa, &da), *fb = snapshot_stack_frames(b, sb, &db);
    if (da != db)
        return 0;
    for (size_t k = 0; k < da; k++) {
        const snapshot_frame *x = &a->frames[fa[k]], *y = &b->frames[fb[k]];
        if (strcmp(x->name, y->name) || strcmp(x->filename, y->filename) || x->line != y->line)
            return 0;
    }
    return 1;
}

/* Entry kinds are interned: every entry's is in range, and no two are alike. */
static int kinds_interned(const snapshot *s) {
    for (size_t d = 0; d < s->device_count; d++)
        for (size_t i = 0; i < s->devices[d].entry_count; i++)
            if (s->devices[d].entries[i].kind >= s->entry_kind_count)
                return 0;
    for (size_t i = 0; i < s->entry_kind_count; i++)
        for (size_t j = 0; j < i; j++) {
            const snapshot_entry_kind *a = &s->entry_kinds[i], *b = &s->entry_kinds[j];
            if (a->stream == b->stream && a->device_free == b->device_free &&
                a->action_name == b->action_name && a->compile_context == b->compile_context &&
                a->user_metadata == b->user_metadata && a->action == b->action &&
                a->flags == b->flags)
                return 0;
        }
    return 1;
}

/* The same snapshot read two ways: ids may differ (they are given in the order things are
 * met), what they name may not. */
static int same_snapshot(const snapshot *a, const snapshot *b) {
    int same = a->device_count == b->device_count && a->segment_count == b->segment_count &&
               a->annotation_count == b->annotation_count &&
               a->settings.present == b->settings.present && kinds_interned(a) && kinds_interned(b);
    for (size_t d = 0; same && d < a->device_count; d++) {
        const snapshot_device *x = &a->devices[d], *y = &b->devices[d];
        same = x->entry_count == y->entry_count;
        for (size_t i = 0; same && i < x->entry_count; i++) {
            const snapshot_entry *e = &x->entries[i], *f = &y->entries[i];
            const snapshot_entry_kind *ek = snapshot_kind(a, e), *fk = snapshot_kind(b, f);
            same = e->addr == f->addr && e->size == f->size && ek->stream == fk->stream &&
                   ek->device_free == fk->device_free && e->time_us == f->time_us &&
                   ek->action == fk->action && ek->flags == fk->flags &&
                   !strcmp(text_of(a, ek->action_name), text_of(b, fk->action_name)) &&
                   !strcmp(text_of(a, ek->compile_context), text_of(b, fk->compile_context)) &&
                   !strcmp(text_of(a, ek->user_metadata), text_of(b, fk->user_metadata)) &&
                   same_stack(a, e->stack, b, f->stack);
        }
    }
    for (size_t i = 0; same && i < a->segment_count; i++) {
        const snapshot_segment *x = &a->segments[i], *y = &b->segments[i];
        same = x->address == y->address && x->total_size == y->total_size &&
               x->block_count == y->block_count && same_stack(a, x->stack, b, y->stack);
        for (size_t j = 0; same && j < x->block_count; j++)
            same = x->blocks[j].address == y->blocks[j].address &&
                   x->blocks[j].size == y->blocks[j].size &&
                   x->blocks[j].state == y->blocks[j].state &&
                   same_stack(a, x->blocks[j].stack, b, y->blocks[j].stack);
    }
    return same;
}

/* snapshot_load of path (which reads trace entries while it parses) against parsing first and
 * converting the tree after (snapshot_from_pickle): the same snapshot, or the same error. */
static void check_both_ways(const char *path, const snapshot *tree, const char *tree_err) {
    char err[256] = "";
    snapshot *s = snapshot_load(path, err, sizeof err);
    if (!tree != !s || (!tree && strcmp(tree_err, err) != 0) || (tree && !same_snapshot(tree, s))) {
        fprintf(stderr, "%s: snapshot_load differs from the tree's reading: \"%s\" vs \"%s\"\n",
                path, err, tree_err);
        check_failures++;
    }
    snapshot_free(s);
}

/* Parses and converts; NULL with the message in err. Every time, reading it while parsing
 * must give the same (check_both_ways). */
static snapshot *convert(const pb *w, char *err, size_t errlen) {
    pickle_doc *d = pickle_parse(w->b, w->len, NULL, err, errlen);
    snapshot *s = d ? snapshot_from_pickle(d, err, errlen) : NULL;
    pickle_free(d);
    char path[] = "/tmp/test_snapshot_convert_XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0 && write(fd, w->b, w->len) == (ssize_t)w->len)
        check_both_ways(path, s, err);
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    return s;
}

/* ---- the oldest shapes ---------------------------------------------------- */

#define BASE UINT64_C(0x7f3a00000000)

static void test_old_format(void) {
    pb w = {0};
    begin_segments(&w);
    /* segment 0: blocks without address */
    segment_head(&w, (segment_keys){.device = 0,
                                    .address = BASE,
                                    .total = 0x200000,
                                    .allocated = 0x180000,
                                    .stream = 0,
                                    .type = "large"});
    pb_str(&w, "blocks");
    list(&w);
    const int64_t sizes[] = {0x100000, 0x80000, 0x80000};
    const char *states[] = {"active_allocated", "active_pending_free", "inactive"};
    for (int b = 0; b < 3; b++) {
        dict(&w);
        kint(&w, "size", sizes[b]);
        kstr(&w, "state", states[b]);
        dict_end(&w);
    }
    list_end(&w);
    dict_end(&w);
    /* segment 1: a PyTorch 2.0 block with history instead of frames */
    segment_head(&w, (segment_keys){.device = 1,
                                    .address = BASE + 0x200000,
                                    .total = 0x100000,
                                    .allocated = 0x100000,
                                    .stream = 7,
                                    .type = "small"});
    pb_str(&w, "blocks");
    list(&w);
    dict(&w);
    kint(&w, "size", 0x100000);
    kstr(&w, "state", "active_awaiting_free");
    pb_str(&w, "history");
    list(&w);
    dict(&w);
    ku64(&w, "addr", BASE + 0x200000);
    kint(&w, "real_size", 1000);
    pb_str(&w, "frames");
    list(&w);
    frame(&w, "alloc", "train.py", 10);
    frame(&w, "main", "train.py", 99);
    list_end(&w);
    dict_end(&w);
    list_end(&w);
    dict_end(&w);
    list_end(&w);
    dict_end(&w);
    list_end(&w);
    /* a trace: no frames, no time_us */
    pb_str(&w, "device_traces");
    list(&w);
    list(&w);
    dict(&w);
    kstr(&w, "action", "alloc");
    ku64(&w, "addr", BASE);
    kint(&w, "size", 512);
    kint(&w, "stream", 0);
    dict_end(&w);
    list_end(&w);
    list_end(&w);
    dict_end(&w);
    end(&w);

    char err[256];
    snapshot *s = convert(&w, err, sizeof err);
    if (!s)
        fprintf(stderr, "%s\n", err);
    CHECK(s != NULL);
    if (!s)
        goto out;
    CHECK(s->segment_count == 2);
    CHECK(!s->settings.present && !s->has_annotations && s->has_device_traces);
    CHECK(s->settings.max_split_size == -1 && s->settings.expandable_segments == -1);
    CHECK(!s->settings.has_max_split_size && !s->settings.has_garbage_collection_threshold);
    const snapshot_segment *g = &s->segments[0];
    CHECK(g->block_count == 3 && g->pool == SNAPSHOT_POOL_LARGE && g->is_expandable == -1);
    CHECK(!(g->flags & (SNAPSHOT_SEGMENT_HAS_REQUESTED | SNAPSHOT_SEGMENT_HAS_POOL_ID)));
    uint64_t expect = BASE;
    for (size_t b = 0; b < g->block_count; b++) {
        CHECK_EQ_U64(g->blocks[b].address, expect);
        CHECK(g->blocks[b].flags & SNAPSHOT_BLOCK_ADDRESS_COMPUTED);
        CHECK_EQ_U64(g->blocks[b].requested_size, g->blocks[b].size);
        CHECK(g->blocks[b].stack == 0);
        expect += g->blocks[b].size;
    }
    CHECK_EQ_U64(expect, BASE + 0x200000);
    CHECK(g->blocks[0].state == SNAPSHOT_BLOCK_ACTIVE_ALLOCATED);
    CHECK(g->blocks[1].state == SNAPSHOT_BLOCK_ACTIVE_PENDING_FREE);
    CHECK(g->blocks[2].state == SNAPSHOT_BLOCK_INACTIVE);
    g = &s->segments[1];
    CHECK(g->device == 1 && g->stream == 7 && g->pool == SNAPSHOT_POOL_SMALL);
    const snapshot_block *hb = &g->blocks[0];
    CHECK_EQ_U64(hb->address, BASE + 0x200000);
    CHECK_EQ_U64(hb->requested_size, 1000); /* history[0].real_size */
    CHECK(hb->state == SNAPSHOT_BLOCK_ACTIVE_PENDING_FREE);
    CHECK(hb->flags & SNAPSHOT_BLOCK_HAS_FRAMES);
    size_t depth;
    const uint32_t *fr = snapshot_stack_frames(s, hb->stack, &depth);
    CHECK(depth == 2);
    if (depth == 2) {
        CHECK_STR_EQ(s->frames[fr[0]].name, "alloc");
        CHECK_STR_EQ(s->frames[fr[1]].name, "main");
        CHECK(s->frames[fr[1]].line == 99);
        CHECK_STR_EQ(s->frames[fr[1]].filename, "train.py");
        CHECK(s->frames[fr[0]].filename == s->frames[fr[1]].filename); /* interned */
    }
    CHECK(s->device_count == 1 && s->devices[0].entry_count == 1);
    const snapshot_entry *e = &s->devices[0].entries[0];
    const snapshot_entry_kind *k = snapshot_kind(s, e);
    CHECK(k->action == GMT_TORCH_ALLOC && k->flags == 0 && e->time_us == 0 && e->stack == 0);
    CHECK_EQ_U64(e->addr, BASE);
    CHECK_STR_EQ(s->strings[k->action_name], "alloc");
    snapshot_free(s);

    /* torch.cuda.memory_snapshot(): the segment list alone */
    pb l = {0};
    begin(&l);
    list(&l);
    segment_head(&l, (segment_keys){.device = 0,
                                    .address = BASE,
                                    .total = 512,
                                    .allocated = 0,
                                    .stream = 0,
                                    .type = "small"});
    pb_str(&l, "blocks");
    list(&l);
    dict(&l);
    kint(&l, "size", 512);
    kstr(&l, "state", "inactive");
    dict_end(&l);
    list_end(&l);
    dict_end(&l);
    list_end(&l);
    end(&l);
    s = convert(&l, err, sizeof err);
    CHECK(s != NULL);
    if (s) {
        CHECK(s->segment_count == 1 && s->device_count == 0 && !s->has_device_traces);
        CHECK_EQ_U64(s->segments[0].blocks[0].address, BASE);
    }
    snapshot_free(s);
    free(l.b);
out:
    free(w.b);
}

/* ---- the newest shapes ---------------------------------------------------- */

static void entry_head(pb *w, const char *action, uint64_t addr, int64_t size, int64_t t) {
    dict(w);
    kstr(w, "action", action);
    ku64(w, action[0] == 'o' ? "device_free" : "addr", addr);
    kint(w, "size", size);
    ku64(w, "stream", UINT64_C(0x5555deadbeef));
    kint(w, "time_us", t);
}

static void test_new_format(void) {
    pb w = {0};
    begin_segments(&w);
    segment_head(&w, (segment_keys){.device = 0,
                                    .address = BASE,
                                    .total = 0x400000,
                                    .allocated = 0x200000,
                                    .requested = 0x1ff000,
                                    .stream = 0,
                                    .type = "large"});
    pb_str(&w, "segment_pool_id");
    pb_int(&w, 3);
    pb_int(&w, 9);
    pb_op(&w, 0x86);
    pb_str(&w, "is_expandable");
    pb_op(&w, 0x88);
    pb_str(&w, "frames");
    list(&w);
    list_end(&w);
    pb_str(&w, "blocks");
    list(&w);
    dict(&w);
    ku64(&w, "address", BASE);
    kint(&w, "size", 0x200000);
    kint(&w, "requested_size", 0x1ff000);
    kstr(&w, "state", "active_allocated");
    kstr(&w, "user_metadata", "layers.0.weight"); /* no PyTorch writes it (yet): read alike */
    pb_str(&w, "frames");
    list(&w);
    frame(&w, "torch::unwind::unwind()", "??", 0);
    uint32_t f_unwind = memoize(&w);
    frame(&w, "forward", "/m.py", 12);
    uint32_t f_fwd = memoize(&w);
    list_end(&w);
    uint32_t stack_a = memoize(&w);
    dict_end(&w);
    dict(&w);
    ku64(&w, "address", BASE + 0x200000);
    kint(&w, "size", 0x200000);
    kstr(&w, "state", "something_new");
    kint(&w, "user_metadata", 5); /* hostile: ignored */
    dict_end(&w);
    list_end(&w);
    dict_end(&w);
    list_end(&w);

    pb_str(&w, "device_traces");
    list(&w);
    list(&w);
    /* 0: alloc, frames shared with block 0 through the memo */
    entry_head(&w, "alloc", BASE, 0x1ff000, 1000);
    pb_str(&w, "frames");
    get(&w, stack_a);
    kstr(&w, "compile_context", "[0/0] fn");
    kstr(&w, "user_metadata", "tag");
    dict_end(&w);
    /* 1: an equal stack written out again (other list, other frame dicts) */
    entry_head(&w, "free_requested", BASE, 0x1ff000, 1001);
    pb_str(&w, "frames");
    list(&w);
    frame(&w, "torch::unwind::unwind()", "??", 0);
    frame(&w, "forward", "/m.py", 12);
    list_end(&w);
    pb_str(&w, "compile_context");
    pb_op(&w, 'N');
    dict_end(&w);
    /* 2: reusing frame dicts in another order, line 2^64-1 */
    entry_head(&w, "segment_map", BASE + 0x400000, 0x200000, 1002);
    pb_str(&w, "frames");
    list(&w);
    get(&w, f_fwd);
    get(&w, f_unwind);
    frame(&w, "??", "??", UINT64_MAX);
    list_end(&w);
    kint(&w, "user_metadata", 7); /* a hostile type: ignored, not refused */
    dict_end(&w);
    /* 3: oom: device_free instead of addr; 4..6: the other actions */
    entry_head(&w, "oom", 123456, 0x40000000, 1003);
    kstr(&w, "compile_context", "N/A");
    kstr(&w, "user_metadata", ""); /* PyTorch's "no metadata set" */
    dict_end(&w);
    entry_head(&w, "segment_unmap", BASE + 0x400000, 0x200000, 1004);
    dict_end(&w);
    entry_head(&w, "snapshot", 0, 0, 1005);
    dict_end(&w);
    entry_head(&w, "empty_cache", 0, 0, 1006); /* unknown: kept as OTHER */
    pb_str(&w, "frames");
    list(&w);
    list_end(&w);
    dict_end(&w);
    list_end(&w);
    list(&w); /* device 1: two events (a run of the entries read while parsing, not first) */
    entry_head(&w, "alloc", BASE + 0x10000000, 512, 2000);
    dict_end(&w);
    entry_head(&w, "free_completed", BASE + 0x10000000, 512, 2001);
    dict_end(&w);
    list_end(&w);
    list_end(&w);

    pb_str(&w, "external_annotations");
    list(&w);
    dict(&w);
    kstr(&w, "stage", "START");
    kstr(&w, "name", "ProfilerStep#3");
    kint(&w, "device", 0);
    kint(&w, "time_us", 999);
    dict_end(&w);
    dict(&w);
    kstr(&w, "stage", "END");
    kstr(&w, "name", "ProfilerStep#3");
    kint(&w, "time_us", 1010);
    dict_end(&w);
    list_end(&w);

    pb_str(&w, "allocator_settings");
    dict(&w);
    kstr(&w, "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True");
    kint(&w, "max_split_size", -1);
    pb_str(&w, "garbage_collection_threshold");
    pb_raw(&w, "G\x3f\xe8\x00\x00\x00\x00\x00\x00", 9); /* 0.75 */
    pb_str(&w, "expandable_segments");
    pb_op(&w, 0x88);
    pb_str(&w, "release_lock_on_cudamalloc");
    pb_op(&w, 0x89);
    kint(&w, "pinned_num_register_threads", 8);
    pb_str(&w, "roundup_power2_divisions");
    dict(&w);
    kint(&w, "1", 4);
    kint(&w, "1024", 8);
    kint(&w, ">", 2);
    dict_end(&w);
    pb_str(&w, "an_unknown_key");
    list(&w);
    list_end(&w);
    dict_end(&w);
    dict_end(&w);
    end(&w);

    char err[256];
    snapshot *s = convert(&w, err, sizeof err);
    if (!s)
        fprintf(stderr, "%s\n", err);
    CHECK(s != NULL);
    if (!s) {
        free(w.b);
        return;
    }
    const snapshot_segment *g = &s->segments[0];
    CHECK(g->pool_id[0] == 3 && g->pool_id[1] == 9 && g->is_expandable == 1);
    CHECK(g->flags & SNAPSHOT_SEGMENT_HAS_POOL_ID && g->flags & SNAPSHOT_SEGMENT_HAS_REQUESTED);
    CHECK(g->flags & SNAPSHOT_SEGMENT_HAS_FRAMES && g->stack == 0); /* frames: [] */
    CHECK(g->requested_size == 0x1ff000);
    CHECK(g->blocks[0].requested_size == 0x1ff000);
    CHECK(!(g->blocks[0].flags & SNAPSHOT_BLOCK_ADDRESS_COMPUTED));
    CHECK(g->blocks[1].state == SNAPSHOT_BLOCK_OTHER);
    CHECK(s->device_count == 2 && s->devices[1].entry_count == 2);
    CHECK(snapshot_kind(s, &s->devices[1].entries[1])->action == GMT_TORCH_FREE_COMPLETED &&
          s->devices[1].entries[1].addr == BASE + 0x10000000 &&
          s->devices[1].entries[1].size == 512);
    const snapshot_entry *e = s->devices[0].entries;
    CHECK(s->devices[0].entry_count == 7);
    if (s->devices[0].entry_count != 7)
        goto done;
    const snapshot_entry_kind *k[7];
    for (int i = 0; i < 7; i++)
        k[i] = snapshot_kind(s, &e[i]);
    /* stacks: [unwind, forward] read three ways is one stack; one other; empty */
    CHECK(e[0].stack == g->blocks[0].stack && e[0].stack != 0);
    CHECK(e[1].stack == e[0].stack);
    CHECK(e[2].stack != e[0].stack && e[2].stack != 0);
    CHECK(s->stack_count == 3);
    CHECK(s->frame_count == 3);
    /* seven actions on device 0; device 1's alloc says less than device 0's (no frames,
     * compile_context or user_metadata), and its free_completed is an eighth action */
    CHECK(s->entry_kind_count == 9 && kinds_interned(s));
    CHECK(s->devices[1].entries[0].kind != e[0].kind);
    size_t depth;
    const uint32_t *fr = snapshot_stack_frames(s, e[2].stack, &depth);
    CHECK(depth == 3);
    if (depth == 3) {
        CHECK_STR_EQ(s->frames[fr[0]].name, "forward");
        CHECK_STR_EQ(s->frames[fr[1]].name, "torch::unwind::unwind()");
        CHECK(s->frames[fr[2]].line == -1); /* 2^64-1 */
    }
    fr = snapshot_stack_frames(s, e[0].stack, &depth);
    CHECK(depth == 2 && fr && s->frames[fr[1]].line == 12);
    CHECK(snapshot_stack_frames(s, 99, &depth) == NULL && depth == 0);
    CHECK(k[0]->flags == (SNAPSHOT_HAS_TIME | SNAPSHOT_HAS_FRAMES) && e[0].time_us == 1000);
    CHECK_EQ_U64(k[0]->stream, UINT64_C(0x5555deadbeef));
    CHECK_STR_EQ(s->strings[k[0]->compile_context], "[0/0] fn");
    CHECK_STR_EQ(s->strings[k[0]->user_metadata], "tag");
    CHECK(k[1]->compile_context == 0 && k[1]->user_metadata == 0); /* None, absent */
    CHECK(k[2]->user_metadata == 0 && k[3]->user_metadata == 0);   /* an int, "" */
    CHECK_STR_EQ(s->strings[k[3]->compile_context], "N/A");
    CHECK_STR_EQ(s->strings[g->blocks[0].user_metadata], "layers.0.weight");
    CHECK(g->blocks[1].user_metadata == 0);
    CHECK(s->strings[0] == NULL);
    CHECK(k[1]->action == GMT_TORCH_FREE_REQUESTED);
    CHECK(k[2]->action == GMT_TORCH_SEGMENT_MAP);
    CHECK(k[3]->action == GMT_TORCH_OOM && k[3]->device_free == 123456 && e[3].addr == 0);
    CHECK(e[3].size == 0x40000000 && e[3].stack == 0 && k[3]->flags == SNAPSHOT_HAS_TIME);
    CHECK(k[4]->action == GMT_TORCH_SEGMENT_UNMAP && k[5]->action == GMT_TORCH_SNAPSHOT);
    CHECK(k[6]->action == SNAPSHOT_ACTION_OTHER && k[6]->flags & SNAPSHOT_HAS_FRAMES);
    CHECK_STR_EQ(s->strings[k[6]->action_name], "empty_cache");
    CHECK(s->annotation_count == 2);
    CHECK(s->annotations[0].stage == SNAPSHOT_STAGE_START && s->annotations[0].device == 0);
    CHECK(s->annotations[1].stage == SNAPSHOT_STAGE_END && s->annotations[1].device == -1);
    CHECK_STR_EQ(s->annotations[1].name, "ProfilerStep#3");
    CHECK(s->annotations[1].time_us == 1010);
    const snapshot_settings *st = &s->settings;
    CHECK(st->present && st->max_split_size == -1 && st->garbage_collection_threshold == 0.75);
    CHECK(st->has_max_split_size && st->has_garbage_collection_threshold);
    CHECK(st->graph_capture_record_stream_reuse == -1); /* absent */
    CHECK_STR_EQ(st->alloc_conf, "expandable_segments:True");
    CHECK(st->expandable_segments == 1 && st->release_lock_on_cudamalloc == 0);
    CHECK(st->pinned_use_cuda_host_register == -1 && st->pinned_num_register_threads == 8);
    CHECK(st->roundup_count == 3);
    if (st->roundup_count == 3) {
        CHECK(st->roundup[0].size == 1 && st->roundup[0].divisions == 4);
        CHECK(st->roundup[1].size == 1024 && st->roundup[1].divisions == 8);
        CHECK(st->roundup[2].size == UINT64_MAX && st->roundup[2].divisions == 2);
    }
done:
    snapshot_free(s);
    free(w.b);
}

/* ---- errors ----------------------------------------------------------------- */

/* A one-segment, one-entry snapshot with one thing broken. */
enum {
    OK,
    NO_SEG_ADDRESS,
    NO_BLOCK_SIZE,
    BAD_BLOCKS,
    NO_ACTION,
    STR_SIZE,
    NO_LINE,
    BAD_FRAME,
    NO_ANNOT_NAME,
    NO_SEGMENTS,
    BAD_ENTRY,
    NO_DEVICE_FREE,
    BAD_TRACES,
    BAD_POOL_ID,
    BAD_STATE
};

static void broken(pb *w, int what) {
    begin(w);
    dict(w);
    if (what != NO_SEGMENTS) {
        pb_str(w, "segments");
        list(w);
        for (int sg = 0; sg < 2; sg++) {
            dict(w);
            kint(w, "device", 0);
            if (!(what == NO_SEG_ADDRESS && sg == 1))
                ku64(w, "address", BASE + (uint64_t)sg * 4096);
            kint(w, "total_size", 4096);
            kint(w, "allocated_size", 0);
            kint(w, "active_size", 0);
            kint(w, "stream", 0);
            kstr(w, "segment_type", "small");
            if (what == BAD_POOL_ID)
                kstr(w, "segment_pool_id", "x");
            pb_str(w, "blocks");
            if (what == BAD_BLOCKS) {
                pb_int(w, 1);
            } else {
                list(w);
                dict(w);
                if (!(what == NO_BLOCK_SIZE && sg == 1))
                    kint(w, "size", 4096);
                if (what == BAD_STATE)
                    kint(w, "state", 0);
                else
                    kstr(w, "state", "inactive");
                dict_end(w);
                list_end(w);
            }
            dict_end(w);
        }
        list_end(w);
    }
    pb_str(w, "device_traces");
    if (what == BAD_TRACES) {
        list(w);
        pb_int(w, 5);
        list_end(w);
    } else {
        list(w);
        list(w);
        for (int i = 0; i < 3; i++) {
            if (what == BAD_ENTRY && i == 1) {
                pb_int(w, 7);
                continue;
            }
            dict(w);
            if (!(what == NO_ACTION && i == 2))
                kstr(w, "action", what == NO_DEVICE_FREE && i == 2 ? "oom" : "alloc");
            ku64(w, "addr", BASE);
            if (what == STR_SIZE && i == 0)
                kstr(w, "size", "big");
            else
                kint(w, "size", 512);
            kint(w, "stream", 0);
            pb_str(w, "frames");
            list(w);
            frame(w, "a", "f.py", 1);
            if (what == BAD_FRAME && i == 0) {
                pb_str(w, "not a frame");
            } else if (what == NO_LINE && i == 0) {
                dict(w);
                kstr(w, "name", "b");
                kstr(w, "filename", "f.py");
                dict_end(w);
            }
            list_end(w);
            dict_end(w);
        }
        list_end(w);
        list_end(w);
    }
    pb_str(w, "external_annotations");
    list(w);
    dict(w);
    kstr(w, "stage", "START");
    if (what != NO_ANNOT_NAME)
        kstr(w, "name", "x");
    kint(w, "time_us", 5);
    dict_end(w);
    list_end(w);
    dict_end(w);
    end(w);
}

static void test_errors(void) {
    static const struct {
        int what;
        const char *message;
    } cases[] = {
        {NO_SEG_ADDRESS, "snapshot: segments[1]: 'address' missing"},
        {NO_BLOCK_SIZE, "snapshot: segments[1].blocks[0]: 'size' missing"},
        {BAD_BLOCKS, "snapshot: segments[0]: 'blocks' is an int, expected a list"},
        {NO_ACTION, "snapshot: device_traces[0][2]: 'action' missing"},
        {STR_SIZE, "snapshot: device_traces[0][0]: 'size' is a str, expected an int"},
        {NO_LINE, "snapshot: device_traces[0][0].frames[1]: 'line' missing"},
        {BAD_FRAME, "snapshot: device_traces[0][0].frames[1]: is a str, expected a dict"},
        {NO_ANNOT_NAME, "snapshot: external_annotations[0]: 'name' missing"},
        {NO_SEGMENTS, "snapshot: 'segments' missing"},
        {BAD_ENTRY, "snapshot: device_traces[0][1]: is an int, expected a dict"},
        {NO_DEVICE_FREE, "snapshot: device_traces[0][2]: 'device_free' missing"},
        {BAD_TRACES, "snapshot: device_traces[0] is an int, expected a list"},
        {BAD_POOL_ID, "snapshot: segments[0]: 'segment_pool_id' is a str, expected a pair of ints"},
        {BAD_STATE, "snapshot: segments[0].blocks[0]: 'state' is an int, expected a str"},
    };
    pb w = {0};
    char err[256];
    broken(&w, OK);
    snapshot *s = convert(&w, err, sizeof err);
    if (!s)
        fprintf(stderr, "%s\n", err);
    CHECK(s != NULL);
    snapshot_free(s);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        broken(&w, cases[i].what);
        err[0] = '\0';
        s = convert(&w, err, sizeof err);
        CHECK(s == NULL);
        CHECK_STR_EQ(err, cases[i].message);
        snapshot_free(s);
    }
    /* one entry referenced 2000 x 2000 times: the output budget stops it */
    begin_segments(&w);
    list_end(&w);
    pb_str(&w, "device_traces");
    pb_op(&w, ']');
    uint32_t entry_list = 0;
    pb_op(&w, '(');
    for (int d = 0; d < 2000; d++) {
        if (d == 0) {
            list(&w);
            dict(&w);
            kstr(&w, "action", "alloc");
            kint(&w, "addr", 1);
            kint(&w, "size", 1);
            kint(&w, "stream", 0);
            dict_end(&w);
            uint32_t entry = memoize(&w);
            for (int i = 1; i < 2000; i++)
                get(&w, entry);
            list_end(&w);
            entry_list = memoize(&w);
        } else {
            get(&w, entry_list);
        }
    }
    list_end(&w);
    dict_end(&w);
    end(&w);
    s = convert(&w, err, sizeof err);
    CHECK(s == NULL);
    CHECK(strstr(err, "snapshot: its records need more memory than 16 bytes per pickle byte") ==
          err);
    snapshot_free(s);
    /* a record dict far bigger than any real one */
    begin_segments(&w);
    list_end(&w);
    pb_str(&w, "device_traces");
    list(&w);
    list(&w);
    dict(&w);
    for (int i = 0; i < 100; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        kint(&w, key, i);
    }
    dict_end(&w);
    list_end(&w);
    list_end(&w);
    dict_end(&w);
    end(&w);
    s = convert(&w, err, sizeof err);
    CHECK(s == NULL);
    CHECK_STR_EQ(err, "snapshot: device_traces[0][0]: has 100 keys, more than a snapshot record "
                      "has (64)");
    snapshot_free(s);
    /* the root itself */
    begin(&w);
    pb_int(&w, 3);
    end(&w);
    s = convert(&w, err, sizeof err);
    CHECK(s == NULL);
    CHECK_STR_EQ(err, "snapshot: the pickle holds an int, expected a dict");
    snapshot_free(s);
    free(w.b);
}

/* ---- the real snapshots --------------------------------------------------- */

typedef struct expected {
    const char *file;
    size_t segments, blocks, large, active_blocks, inactive_blocks;
    uint64_t total_size, allocated_size, address_sum;
    size_t entries, with_frames;
    size_t actions[SNAPSHOT_ACTION_COUNT];
    uint64_t size_sum, depth_sum;
    size_t frames, stacks, annotations, starts;
    int settings;
    int64_t first_time_us;
} expected;

/* Computed with python3 and pickle.load on each file:
 *   segments, blocks            len(s['segments']), sum of len(g['blocks'])
 *   large                       segments with segment_type == 'large'
 *   active/inactive_blocks      blocks by state
 *   total/allocated_size        sums over segments (sum of block sizes per
 *                               segment == total_size is checked separately)
 *   address_sum                 sum of block addresses mod 2^64 (each block's
 *                               'address', else accumulated from the segment)
 *   entries, with_frames        len(device_traces[0]), those with 'frames'
 *   actions                     Counter(e['action'])
 *   size_sum                    sum(e['size'])
 *   depth_sum                   sum(len(e['frames']))
 *   frames                      len({(f['name'], f['filename'], line as
 *                               int64)}) over segments, blocks and entries
 *   stacks                      distinct frame tuples, plus the empty one
 *   annotations, starts         len(external_annotations), stage == 'START'
 *   first_time_us               device_traces[0][0]['time_us'] */
static const expected real[] = {
    {"legacy-format.pickle",
     7,
     168,
     1,
     161,
     7,
     33554432,
     14503424,
     UINT64_C(13726405838848),
     1,
     0,
     {[GMT_TORCH_FREE_COMPLETED] = 1},
     12288,
     0,
     27,
     11,
     0,
     0,
     0,
     INT64_C(1709895075849930)},
    {"lm-ctx512-forward.pickle",
     649,
     991,
     619,
     970,
     21,
     UINT64_C(36165386240),
     UINT64_C(36045752320),
     UINT64_C(138830354536368128),
     4152,
     4152,
     {[GMT_TORCH_ALLOC] = 1301,
      [GMT_TORCH_FREE_REQUESTED] = 657,
      [GMT_TORCH_FREE_COMPLETED] = 657,
      [GMT_TORCH_SEGMENT_ALLOC] = 418,
      [GMT_TORCH_SEGMENT_FREE] = 1119},
     UINT64_C(130537503896),
     451008,
     1034,
     807,
     1824,
     912,
     1,
     INT64_C(1748475027094185)},
    {"lm-small-forward.pickle",
     30,
     378,
     28,
     369,
     9,
     UINT64_C(1107296256),
     UINT64_C(1043817472),
     UINT64_C(53162088617581568),
     8507,
     8507,
     {[GMT_TORCH_ALLOC] = 2998,
      [GMT_TORCH_FREE_REQUESTED] = 2753,
      [GMT_TORCH_FREE_COMPLETED] = 2753,
      [GMT_TORCH_SEGMENT_ALLOC] = 3},
     UINT64_C(29287021700),
     874376,
     560,
     327,
     714,
     357,
     1,
     INT64_C(1748474028636221)},
    {"segments-only.pickle",
     1457,
     1912,
     1437,
     1202,
     710,
     UINT64_C(75902222336),
     UINT64_C(55083942400),
     UINT64_C(268735047624778240),
     0,
     0,
     {0},
     0,
     0,
     127,
     7,
     0,
     0,
     1,
     0},
};

static void check_real(const snapshot *s, const expected *x) {
    size_t blocks = 0, large = 0, active = 0, inactive = 0, tiled = 0, allocated_match = 0;
    uint64_t total = 0, allocated = 0, addr_sum = 0;
    for (size_t i = 0; i < s->segment_count; i++) {
        const snapshot_segment *g = &s->segments[i];
        uint64_t sum = 0, active_bytes = 0;
        for (size_t j = 0; j < g->block_count; j++) {
            const snapshot_block *b = &g->blocks[j];
            /* blocks tile the segment: each starts where the previous ended */
            if (b->address != g->address + sum)
                fprintf(stderr, "%s: segments[%zu].blocks[%zu] not contiguous\n", x->file, i, j);
            sum += b->size;
            addr_sum += b->address;
            active += b->state == SNAPSHOT_BLOCK_ACTIVE_ALLOCATED;
            inactive += b->state == SNAPSHOT_BLOCK_INACTIVE;
            if (b->state == SNAPSHOT_BLOCK_ACTIVE_ALLOCATED)
                active_bytes += b->size;
        }
        tiled += sum == g->total_size;
        allocated_match += active_bytes == g->allocated_size;
        blocks += g->block_count;
        large += g->pool == SNAPSHOT_POOL_LARGE;
        total += g->total_size;
        allocated += g->allocated_size;
        CHECK(g->is_expandable == 0 && g->flags & SNAPSHOT_SEGMENT_HAS_POOL_ID);
    }
    CHECK(s->segment_count == x->segments);
    CHECK(blocks == x->blocks);
    CHECK(tiled == x->segments);
    CHECK(allocated_match == x->segments);
    CHECK(large == x->large);
    CHECK(active == x->active_blocks && inactive == x->inactive_blocks);
    CHECK_EQ_U64(total, x->total_size);
    CHECK_EQ_U64(allocated, x->allocated_size);
    CHECK_EQ_U64(addr_sum, x->address_sum);
    CHECK(s->device_count == 1);
    if (s->device_count != 1)
        return;
    const snapshot_device *d = &s->devices[0];
    size_t actions[SNAPSHOT_ACTION_COUNT] = {0}, with_frames = 0;
    uint64_t size_sum = 0, depth_sum = 0;
    for (size_t i = 0; i < d->entry_count; i++) {
        const snapshot_entry *e = &d->entries[i];
        const snapshot_entry_kind *k = snapshot_kind(s, e);
        actions[k->action]++;
        with_frames += (k->flags & SNAPSHOT_HAS_FRAMES) != 0;
        CHECK(k->flags & SNAPSHOT_HAS_TIME);
        size_sum += e->size;
        depth_sum += s->stacks[e->stack].depth;
    }
    CHECK(d->entry_count == x->entries);
    CHECK(with_frames == x->with_frames);
    for (int a = 0; a < SNAPSHOT_ACTION_COUNT; a++)
        CHECK(actions[a] == x->actions[a]);
    CHECK_EQ_U64(size_sum, x->size_sum);
    CHECK_EQ_U64(depth_sum, x->depth_sum);
    CHECK(s->frame_count == x->frames);
    CHECK(s->stack_count == x->stacks);
    CHECK(s->annotation_count == x->annotations);
    size_t starts = 0;
    for (size_t i = 0; i < s->annotation_count; i++)
        starts += s->annotations[i].stage == SNAPSHOT_STAGE_START;
    CHECK(starts == x->starts);
    CHECK(s->settings.present == x->settings);
    if (d->entry_count)
        CHECK(d->entries[0].time_us == x->first_time_us);
    /* every frame id of every stack is in range */
    size_t bad = 0;
    for (size_t i = 0; i < s->stack_count; i++) {
        size_t depth;
        const uint32_t *fr = snapshot_stack_frames(s, (uint32_t)i, &depth);
        for (size_t k = 0; k < depth; k++)
            bad += fr[k] >= s->frame_count;
    }
    CHECK(bad == 0);
}

/* Returns 0 when ../shared is absent. */
static int test_real_files(void) {
    char dir[4200], path[4400], err[256];
    if (!real_snapshots_dir(dir, sizeof dir))
        return 0;
    for (size_t i = 0; i < sizeof real / sizeof real[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, real[i].file);
        snapshot *s = snapshot_load(path, err, sizeof err);
        pickle_doc *doc = pickle_parse_file(path, NULL, err, sizeof err);
        snapshot *tree = doc ? snapshot_from_pickle(doc, err, sizeof err) : NULL;
        if (tree && s && !same_snapshot(tree, s)) {
            fprintf(stderr, "%s: read while parsing, it differs from the tree's reading\n", path);
            check_failures++;
        }
        snapshot_free(tree);
        pickle_free(doc);
        if (!s) {
            fprintf(stderr, "%s\n", err);
            check_failures++;
            continue;
        }
        check_real(s, &real[i]);
        if (i == 0) { /* the one entry: no frames */
            CHECK(snapshot_kind(s, &s->devices[0].entries[0])->flags == SNAPSHOT_HAS_TIME);
            CHECK(!s->settings.present && !s->has_annotations);
        }
        if (i == 2) { /* device_traces[0][1].frames[11].line is 2^64-1 */
            size_t depth;
            const uint32_t *fr = snapshot_stack_frames(s, s->devices[0].entries[1].stack, &depth);
            CHECK(depth > 11 && s->frames[fr[11]].line == -1);
            CHECK_STR_EQ(s->settings.alloc_conf, "");
            CHECK(s->settings.roundup_count == 16 && s->settings.expandable_segments == 0);
        }
        snapshot_free(s);
    }
    err[0] = '\0';
    snprintf(path, sizeof path, "%s/SOURCES.md", dir);
    snapshot *s = snapshot_load(path, err, sizeof err); /* not a pickle */
    CHECK(s == NULL && strncmp(err, "pickle: ", 8) == 0);
    return 1;
}

/* The same synthetic snapshot written by Python with protocols 2 and 4. */
static void test_python_snapshots(void) {
    char tmpl[] = "/tmp/test_snapshot.XXXXXX";
    char path[4200], err[256];
    char *dir = python_pickles_make(tmpl, "Python-written snapshots");
    if (!dir)
        return;
    snapshot *s[2] = {NULL, NULL};
    const char *names[] = {"snapshot-p2.pickle", "snapshot-p4.pickle"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        s[i] = snapshot_load(path, err, sizeof err);
        if (!s[i])
            fprintf(stderr, "%s\n", err);
        CHECK(s[i] != NULL);
    }
    if (s[0] && s[1]) {
        CHECK(s[0]->device_count == 1 && s[0]->devices[0].entry_count == 300);
        CHECK(s[0]->annotation_count == 20 && s[0]->settings.present);
        CHECK(s[0]->frame_count == s[1]->frame_count && s[0]->stack_count == s[1]->stack_count);
        CHECK(s[0]->segment_count == s[1]->segment_count);
        CHECK(memcmp(s[0]->devices[0].entries, s[1]->devices[0].entries,
                     300 * sizeof(snapshot_entry)) == 0);
        /* alloc, free_requested, free_completed on stream 0, all with time and frames: the
         * 300 entries have three kinds */
        CHECK(s[0]->entry_kind_count == 3 && s[1]->entry_kind_count == 3);
        CHECK(kinds_interned(s[0]) && kinds_interned(s[1]));
        for (size_t i = 0; i < s[0]->segment_count; i++) {
            uint64_t sum = 0;
            for (size_t j = 0; j < s[0]->segments[i].block_count; j++)
                sum += s[0]->segments[i].blocks[j].size;
            CHECK_EQ_U64(sum, s[0]->segments[i].total_size);
        }
    }
    snapshot_free(s[0]);
    snapshot_free(s[1]);
    python_pickles_remove(dir);
}

int main(int argc, char **argv) {
    find_source_dir(argc, argv);
    test_old_format();
    test_new_format();
    test_errors();
    test_python_snapshots();
    return finish_or_skip("test_snapshot", test_real_files());
}
