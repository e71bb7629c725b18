/* export_pytorch.c — `export --to pytorch` (export_pytorch.h): the snapshot
 * torch.cuda.memory._dump_snapshot writes, {"segments", "device_traces", "allocator_settings",
 * "external_annotations"}, from torch_export.h's entries, layout.h's layout at the last event and
 * torch_context.h's annotations, categories and module offsets, streamed through tree_write.h as
 * a pickle (a frame list written once and fetched from the memo after) or as the same structure
 * in JSON. A printer: the facts are those modules'. */
#include "export_pytorch.h"

#include "gmt_grow.h"
#include "gmt_vocab.h"
#include "layout.h"
#include "stack_names.h"
#include "torch_context.h"
#include "torch_export.h"
#include "tree_write.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void key_str(tree_writer *w, const char *k, const char *v) {
    tree_key(w, k);
    tree_str(w, v);
}

static void key_uint(tree_writer *w, const char *k, uint64_t v) {
    tree_key(w, k);
    tree_uint(w, v);
}

/* Stacks whose frame list is memoized, by stack id (a larger id is written out each time). */
#define TORCH_MEMO_MAX_STACK_ID ((int64_t)1 << 26)

typedef struct torch_out {
    tree_writer w;
    stack_names *stacks;
    torch_modules *modules;
    torch_categories *cats; /* NULL: no categories known, none written */
    torch_annotations ann;
    uint32_t *memo_of; /* by stack id: tree_memoize's answer for its frame list; 0: not yet */
    size_t memo_cap;
    char cat_err[256]; /* why a category could not be read ("": none) */
    int oom;           /* out of memory reading a stack */
    int timed;         /* the entries have a time_us */
} torch_out;

/* One frame as PyTorch writes it: {filename, line, name}. A native frame without a symbol is
 * named "??" (what addr2line answers and PyTorch keeps, torch_context.h), its file the module's
 * path followed by "+0x" and the return address's offset in it when the module's base is known
 * (PyTorch has no key for it); a frame the trace lost is "??" in "??". */
static void put_frame(torch_out *o, const named_frame *f) {
    tree_writer *w = &o->w;
    char where[4096];
    const char *file = f->file;
    uint64_t off;
    if (!file && f->module && !f->name && f->ip &&
        torch_module_offset(o->modules, f->module, f->ip, &off)) {
        snprintf(where, sizeof where, "%s+0x%llx", f->module, (unsigned long long)off);
        file = where;
    }
    tree_dict(w);
    key_str(w, "filename", file ? file : f->module ? f->module : "??");
    tree_key(w, "line");
    tree_int(w, f->line);
    key_str(w, "name", f->name ? f->name : "??");
    tree_close(w);
}

/* A stack's frames, innermost first; in a pickle a stack written before is a get of its first
 * list. */
static void put_frames(torch_out *o, int64_t stack_id) {
    tree_writer *w = &o->w;
    int memo = !w->json && stack_id > 0 && stack_id < TORCH_MEMO_MAX_STACK_ID;
    if (memo && (size_t)stack_id < o->memo_cap && o->memo_of[stack_id]) {
        tree_get(w, o->memo_of[stack_id]);
        return;
    }
    const named_stack *st = stack_id ? stack_names_get(o->stacks, stack_id) : NULL;
    if (stack_id && !st)
        o->oom = 1;
    tree_list(w);
    for (size_t k = 0; st && k < st->frame_count; k++)
        put_frame(o, &st->frames[k]);
    tree_close(w);
    if (!memo)
        return;
    if (gmt_grow((void **)&o->memo_of, &o->memo_cap, (size_t)stack_id, sizeof *o->memo_of) != 0)
        o->oom = 1;
    else
        o->memo_of[stack_id] = tree_memoize(w);
}

/* A settings value: dicts and lists, strings, ints, floats, bools, None. */
static void put_value(tree_writer *w, const torch_value *v) {
    switch (v->type) {
    case TORCH_VALUE_DICT:
    case TORCH_VALUE_LIST:
        if (v->type == TORCH_VALUE_DICT)
            tree_dict(w);
        else
            tree_list(w);
        for (size_t i = 0; i < v->n; i++) {
            if (v->type == TORCH_VALUE_DICT)
                tree_key(w, v->keys[i]);
            put_value(w, &v->items[i]);
        }
        tree_close(w);
        return;
    case TORCH_VALUE_STR:
        tree_str(w, v->str);
        return;
    case TORCH_VALUE_INT:
        tree_int(w, v->i);
        return;
    case TORCH_VALUE_FLOAT:
        tree_float(w, v->f);
        return;
    case TORCH_VALUE_BOOL:
        tree_bool(w, (int)v->i);
        return;
    case TORCH_VALUE_NULL:
        tree_none(w);
        return;
    }
}

static void put_block(torch_out *o, const layout_block *b) {
    tree_writer *w = &o->w;
    tree_dict(w);
    key_uint(w, "address", b->addr);
    key_uint(w, "size", b->size);
    key_uint(w, "requested_size", b->requested);
    key_str(w, "state", layout_state_name(b->state));
    tree_key(w, "frames");
    put_frames(o, b->state == LAYOUT_INACTIVE ? 0 : b->stack_id);
    tree_close(w);
}

static void put_segment(torch_out *o, const layout *lay, const layout_segment *s) {
    tree_writer *w = &o->w;
    tree_dict(w);
    key_uint(w, "device", (uint64_t)lay->device);
    key_uint(w, "address", s->addr);
    key_uint(w, "total_size", s->size);
    key_uint(w, "allocated_size", s->allocated_bytes - s->pending_bytes);
    key_uint(w, "active_size", s->allocated_bytes);
    key_uint(w, "requested_size", s->requested_bytes);
    key_uint(w, "stream", s->stream);
    key_str(w, "segment_type", s->small_pool ? "small" : "large");
    tree_key(w, "segment_pool_id"); /* (a, b), as PyTorch's MempoolId_t; (0, 0): the default */
    tree_int_pair(w, (int64_t)((uint64_t)s->pool >> 32),
                  (int64_t)((uint64_t)s->pool & 0xffffffffu));
    tree_key(w, "is_expandable");
    tree_bool(w, s->mapped);
    tree_key(w, "frames");
    put_frames(o, s->stack_id);
    tree_key(w, "blocks");
    tree_list(w);
    for (size_t k = 0; k < s->block_count; k++)
        put_block(o, &lay->blocks[s->first_block + k]);
    tree_close(w);
    tree_close(w);
}

/* An annotation as PyTorch 2.4-2.6 put it in each device's trace (torch_context.h): a
 * "user_defined" entry whose one frame is named by the stage, its file the range's name. */
static void put_user_defined(torch_out *o, const torch_annotation *a) {
    tree_writer *w = &o->w;
    tree_dict(w);
    key_str(w, "action", "user_defined");
    key_uint(w, "addr", 0);
    key_uint(w, "size", 0);
    key_uint(w, "stream", 0);
    tree_key(w, "time_us");
    tree_int(w, a->time_us);
    if (o->cats)
        key_str(w, "category", gmt_category_name(BLOCK_CATEGORY_UNKNOWN));
    tree_key(w, "frames");
    tree_list(w);
    tree_dict(w);
    key_str(w, "filename", a->name);
    tree_key(w, "line");
    tree_int(w, 0);
    key_str(w, "name", torch_annotation_stage(a));
    tree_close(w);
    tree_close(w);
    tree_close(w);
}

typedef struct trace_out {
    torch_out *o;
    size_t next_ann; /* the next annotation to put in this device's trace */
} trace_out;

static int put_event(void *ctx, const torch_event *e) {
    trace_out *t = ctx;
    torch_out *o = t->o;
    tree_writer *w = &o->w;
    /* the ranges begun or ended by now, before the entry (the reader's order for them) */
    while (o->timed && t->next_ann < o->ann.n && o->ann.items[t->next_ann].time_us <= e->time_us)
        put_user_defined(o, &o->ann.items[t->next_ann++]);
    tree_dict(w);
    key_str(w, "action", e->action);
    key_uint(w, "addr", e->addr);
    key_uint(w, "size", e->size);
    key_uint(w, "stream", e->stream);
    if (o->timed) {
        tree_key(w, "time_us");
        tree_int(w, e->time_us);
    }
    if (!strcmp(e->action, "oom"))
        key_uint(w, "device_free", e->device_free);
    if (o->cats) { /* a segment's entry, an oom: no block, "unknown" */
        const char *cat = torch_category_of(o->cats, e, o->cat_err, sizeof o->cat_err);
        if (!cat)
            return -1;
        key_str(w, "category", cat);
    }
    tree_key(w, "frames");
    put_frames(o, e->stack_id);
    tree_close(w);
    return ferror(w->f) ? -1 : 0; /* a full disk: stop early, write_file says why */
}

static void put_annotations(torch_out *o) {
    tree_writer *w = &o->w;
    tree_key(w, "external_annotations");
    tree_list(w);
    for (size_t i = 0; i < o->ann.n; i++) {
        const torch_annotation *a = &o->ann.items[i];
        tree_dict(w); /* PyTorch's order: the metadata (name, stage), then device, time_us */
        key_str(w, "name", a->name);
        key_str(w, "stage", torch_annotation_stage(a));
        tree_key(w, "device"); /* a recording's ranges are the process's: one entry each */
        tree_int(w, 0);
        tree_key(w, "time_us");
        tree_int(w, a->time_us);
        tree_close(w);
    }
    tree_close(w);
}

static int fill(FILE *f, sqlite3 *db, int json, char *err, size_t errlen) {
    torch_out *o = calloc(1, sizeof *o);
    if (!o || !(o->stacks = stack_names_new(db)) || !(o->modules = torch_modules_read(db))) {
        if (o)
            stack_names_free(o->stacks);
        free(o);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int devices = torch_export_device_count(db), rc = 0;
    o->timed = torch_export_timed(db);
    if ((o->timed && torch_annotations_read(db, &o->ann, err, errlen) != 0) ||
        torch_categories_read(db, &o->cats, err, errlen) != 0)
        rc = -1;
    int64_t last = torch_export_last_event(db);
    tree_writer *w = &o->w;
    tree_begin(w, f, json);
    tree_dict(w);
    tree_key(w, "segments");
    tree_list(w);
    for (int d = 0; d < devices && rc == 0; d++) {
        layout *lay;
        if (layout_build(db, d, last, &lay, err, errlen) != 0) {
            rc = -1;
            break;
        }
        for (size_t i = 0; i < lay->segment_count; i++)
            put_segment(o, lay, &lay->segments[i]);
        layout_free(lay);
    }
    tree_close(w);
    tree_key(w, "device_traces");
    tree_list(w);
    for (int d = 0; d < devices && rc == 0; d++) {
        tree_list(w);
        trace_out t = {.o = o};
        char why[256] = "";
        if (o->cats && torch_categories_begin(o->cats, why, sizeof why) != 0)
            rc = -1;
        else if (torch_export_events(db, d, put_event, &t, why, sizeof why) != 0 &&
                 (*why || *o->cat_err))
            rc = -1;
        if (rc != 0) {
            snprintf(err, errlen, "%s", *why ? why : o->cat_err);
            break;
        }
        while (rc == 0 && o->timed && t.next_ann < o->ann.n) /* ranges after the last entry */
            put_user_defined(o, &o->ann.items[t.next_ann++]);
        tree_close(w);
    }
    tree_close(w);
    torch_value settings;
    if (torch_export_settings(db, &settings) != 0)
        o->oom = 1;
    if (settings.n) { /* none known (an older snapshot, a driver trace): no key, as there */
        tree_key(w, "allocator_settings");
        put_value(w, &settings);
    }
    torch_value_free(&settings);
    if (o->timed) /* PyTorch >= 2.7 writes the key; a snapshot without times had none */
        put_annotations(o);
    tree_close(w);
    tree_end(w);
    if (rc == 0 && o->oom) {
        snprintf(err, errlen, "out of memory reading a stack");
        rc = -1;
    }
    stack_names_free(o->stacks);
    torch_modules_free(o->modules);
    torch_categories_free(o->cats);
    torch_annotations_free(&o->ann);
    free(o->memo_of);
    free(o);
    return rc;
}

int export_pytorch_fill(FILE *f, void *ctx, char *err, size_t errlen) {
    return fill(f, ctx, 0, err, errlen);
}

int export_pytorch_fill_json(FILE *f, void *ctx, char *err, size_t errlen) {
    return fill(f, ctx, 1, err, errlen);
}
