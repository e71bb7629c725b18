/* export_pytorch.c — `export --to pytorch` (export_pytorch.h): the pickle
 * torch.cuda.memory._dump_snapshot writes, {"segments", "device_traces", "allocator_settings"},
 * from torch_export.h's entries and layout.h's layout at the last event, streamed through
 * pickle_write.h (a frame list written once and fetched from the memo after). A printer: the
 * facts are torch_export.h's and layout.h's. */
#include "export_pytorch.h"

#include "gmt_grow.h"
#include "layout.h"
#include "pickle_write.h"
#include "stack_names.h"
#include "torch_export.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A list written in batches as pickle writes one: EMPTY_LIST, then MARK items APPENDS. */
typedef struct list_out {
    pickle_writer *w;
    size_t in_batch;
} list_out;

static void list_begin(list_out *l, pickle_writer *w) {
    l->w = w;
    l->in_batch = 0;
    pickle_write_empty_list(w);
}

static void list_item(list_out *l) { /* before each item */
    if (l->in_batch++ == 0)
        pickle_write_mark(l->w);
}

static void list_item_done(list_out *l) {
    if (l->in_batch == PICKLE_WRITE_BATCH) {
        pickle_write_appends(l->w);
        l->in_batch = 0;
    }
}

static void list_end(list_out *l) {
    if (l->in_batch)
        pickle_write_appends(l->w);
    l->in_batch = 0;
}

static void key_str(pickle_writer *w, const char *k, const char *v) {
    pickle_write_str(w, k);
    pickle_write_str(w, v);
}

static void key_uint(pickle_writer *w, const char *k, uint64_t v) {
    pickle_write_str(w, k);
    pickle_write_uint(w, v);
}

/* Stacks whose frame list is memoized, by stack id (a larger id is written out each time). */
#define TORCH_MEMO_MAX_STACK_ID ((int64_t)1 << 26)

typedef struct torch_out {
    pickle_writer w;
    stack_names *stacks;
    uint32_t *memo_of; /* by stack id: 1 + the memo index of its frame list; 0: not yet */
    size_t memo_cap;
    int oom;   /* out of memory reading a stack */
    int timed; /* the entries have a time_us */
} torch_out;

/* A stack's frames as PyTorch writes them: [{filename, line, name}], innermost first; a stack
 * written before as a BINGET of its first list. */
static void put_frames(torch_out *o, int64_t stack_id) {
    pickle_writer *w = &o->w;
    int memo = stack_id > 0 && stack_id < TORCH_MEMO_MAX_STACK_ID;
    if (memo && (size_t)stack_id < o->memo_cap && o->memo_of[stack_id]) {
        pickle_write_get(w, o->memo_of[stack_id] - 1);
        return;
    }
    const named_stack *st = stack_id ? stack_names_get(o->stacks, stack_id) : NULL;
    if (stack_id && !st)
        o->oom = 1;
    list_out l;
    list_begin(&l, w);
    for (size_t k = 0; st && k < st->frame_count; k++) {
        const named_frame *f = &st->frames[k];
        list_item(&l);
        pickle_write_empty_dict(w);
        pickle_write_mark(w);
        key_str(w, "filename", f->file ? f->file : f->module ? f->module : "??");
        pickle_write_str(w, "line");
        pickle_write_int(w, f->line);
        key_str(w, "name", f->name ? f->name : "??");
        pickle_write_setitems(w);
        list_item_done(&l);
    }
    list_end(&l);
    if (!memo)
        return;
    if (gmt_grow((void **)&o->memo_of, &o->memo_cap, (size_t)stack_id, sizeof *o->memo_of) != 0)
        o->oom = 1;
    else
        o->memo_of[stack_id] = pickle_write_memoize(w) + 1;
}

/* A settings value as the pickle's: dicts and lists, strings, ints, floats, bools, None. */
static void put_value(pickle_writer *w, const torch_value *v) {
    switch (v->type) {
    case TORCH_VALUE_DICT:
    case TORCH_VALUE_LIST: {
        if (v->type == TORCH_VALUE_DICT)
            pickle_write_empty_dict(w);
        else
            pickle_write_empty_list(w);
        if (!v->n)
            return;
        pickle_write_mark(w);
        for (size_t i = 0; i < v->n; i++) {
            if (v->type == TORCH_VALUE_DICT)
                pickle_write_str(w, v->keys[i]);
            put_value(w, &v->items[i]);
        }
        if (v->type == TORCH_VALUE_DICT)
            pickle_write_setitems(w);
        else
            pickle_write_appends(w);
        return;
    }
    case TORCH_VALUE_STR:
        pickle_write_str(w, v->str);
        return;
    case TORCH_VALUE_INT:
        pickle_write_int(w, v->i);
        return;
    case TORCH_VALUE_FLOAT:
        pickle_write_float(w, v->f);
        return;
    case TORCH_VALUE_BOOL:
        pickle_write_bool(w, (int)v->i);
        return;
    case TORCH_VALUE_NULL:
        pickle_write_none(w);
        return;
    }
}

static void put_block(torch_out *o, const layout_block *b) {
    pickle_writer *w = &o->w;
    pickle_write_empty_dict(w);
    pickle_write_mark(w);
    key_uint(w, "address", b->addr);
    key_uint(w, "size", b->size);
    key_uint(w, "requested_size", b->requested);
    key_str(w, "state", layout_state_name(b->state));
    pickle_write_str(w, "frames");
    put_frames(o, b->state == LAYOUT_INACTIVE ? 0 : b->stack_id);
    pickle_write_setitems(w);
}

static void put_segment(torch_out *o, const layout *lay, const layout_segment *s) {
    pickle_writer *w = &o->w;
    pickle_write_empty_dict(w);
    pickle_write_mark(w);
    key_uint(w, "device", (uint64_t)lay->device);
    key_uint(w, "address", s->addr);
    key_uint(w, "total_size", s->size);
    key_uint(w, "allocated_size", s->allocated_bytes - s->pending_bytes);
    key_uint(w, "active_size", s->allocated_bytes);
    key_uint(w, "requested_size", s->requested_bytes);
    key_uint(w, "stream", s->stream);
    key_str(w, "segment_type", s->small_pool ? "small" : "large");
    pickle_write_str(w, "segment_pool_id"); /* a list: pickle's tuples are not written */
    pickle_write_empty_list(w);
    pickle_write_mark(w);
    pickle_write_int(w, 0);
    pickle_write_int(w, 0);
    pickle_write_appends(w);
    pickle_write_str(w, "is_expandable");
    pickle_write_bool(w, s->mapped);
    pickle_write_str(w, "frames");
    put_frames(o, s->stack_id);
    pickle_write_str(w, "blocks");
    list_out l;
    list_begin(&l, w);
    for (size_t k = 0; k < s->block_count; k++) {
        list_item(&l);
        put_block(o, &lay->blocks[s->first_block + k]);
        list_item_done(&l);
    }
    list_end(&l);
    pickle_write_setitems(w);
}

typedef struct trace_out {
    torch_out *o;
    list_out l;
} trace_out;

static int put_event(void *ctx, const torch_event *e) {
    trace_out *t = ctx;
    pickle_writer *w = &t->o->w;
    list_item(&t->l);
    pickle_write_empty_dict(w);
    pickle_write_mark(w);
    key_str(w, "action", e->action);
    key_uint(w, "addr", e->addr);
    key_uint(w, "size", e->size);
    key_uint(w, "stream", e->stream);
    if (t->o->timed) {
        pickle_write_str(w, "time_us");
        pickle_write_int(w, e->time_us);
    }
    if (!strcmp(e->action, "oom"))
        key_uint(w, "device_free", e->device_free);
    pickle_write_str(w, "frames");
    put_frames(t->o, e->stack_id);
    pickle_write_setitems(w);
    list_item_done(&t->l);
    return ferror(w->f) ? -1 : 0; /* a full disk: stop early, write_file says why */
}

int export_pytorch_fill(FILE *f, void *ctx, char *err, size_t errlen) {
    sqlite3 *db = ctx;
    torch_out *o = calloc(1, sizeof *o);
    if (!o || !(o->stacks = stack_names_new(db))) {
        free(o);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int devices = torch_export_device_count(db), rc = 0;
    o->timed = torch_export_timed(db);
    int64_t last = torch_export_last_event(db);
    pickle_writer *w = &o->w;
    pickle_write_begin(w, f);
    pickle_write_empty_dict(w);
    pickle_write_mark(w);
    pickle_write_str(w, "segments");
    list_out segs;
    list_begin(&segs, w);
    for (int d = 0; d < devices && rc == 0; d++) {
        layout *lay;
        if (layout_build(db, d, last, &lay, err, errlen) != 0) {
            rc = -1;
            break;
        }
        for (size_t i = 0; i < lay->segment_count; i++) {
            list_item(&segs);
            put_segment(o, lay, &lay->segments[i]);
            list_item_done(&segs);
        }
        layout_free(lay);
    }
    list_end(&segs);
    pickle_write_str(w, "device_traces");
    list_out traces;
    list_begin(&traces, w);
    for (int d = 0; d < devices && rc == 0; d++) {
        list_item(&traces);
        trace_out t = {.o = o};
        list_begin(&t.l, w);
        char why[256] = "";
        if (torch_export_events(db, d, put_event, &t, why, sizeof why) != 0 && *why) {
            snprintf(err, errlen, "%s", why);
            rc = -1;
        }
        list_end(&t.l);
        list_item_done(&traces);
    }
    list_end(&traces);
    torch_value settings;
    if (torch_export_settings(db, &settings) != 0)
        o->oom = 1;
    if (settings.n) { /* none known (an older snapshot, a driver trace): no key, as there */
        pickle_write_str(w, "allocator_settings");
        put_value(w, &settings);
    }
    torch_value_free(&settings);
    pickle_write_setitems(w);
    pickle_write_stop(w);
    if (rc == 0 && o->oom) {
        snprintf(err, errlen, "out of memory reading a stack");
        rc = -1;
    }
    stack_names_free(o->stacks);
    free(o->memo_of);
    free(o);
    return rc;
}
