/* view_stacks.c — the timeline stacked by site, category, stream or size class (view_stacks.h):
 * view_timeline's buckets, then one forward pass over the rows up to the window's end keeping
 * each live block's series and bytes, each bucket's series taken at its highest allocated row
 * (a sparse copy of the series that hold bytes then), the top series chosen after the pass. */
#include "view_stacks.h"
#include "view_stacks_internal.h"

#include "addr_map.h"
#include "block_sweep.h"
#include "category_store.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_grow.h"
#include "gmt_slots.h"
#include "gmt_vocab.h"
#include "layout.h"
#include "layout_index.h"
#include "stack_names.h"
#include "trace_format.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK_BY_WORD(id, word) word,
static const char *const by_words[] = {STACK_BY_LIST(STACK_BY_WORD)};
#undef STACK_BY_WORD
#define SIZE_CLASS_LABEL(id, label, below) label,
static const char *const size_class_labels[] = {SIZE_CLASS_LIST(SIZE_CLASS_LABEL)};
#undef SIZE_CLASS_LABEL

int view_stack_by_parse(const char *word, view_stack_by *by) {
    for (int i = 0; i < STACK_BY_COUNT; i++)
        if (strcmp(word, by_words[i]) == 0) {
            *by = (view_stack_by)i;
            return 0;
        }
    return -1;
}

const char *view_stack_by_name(view_stack_by by) { return by_words[by]; }

static sweep sweep_new(view_stack_by by) {
    return (sweep){.by = by,
                   .blocks = GMT_SLOTS_INIT(live_block),
                   .cat_id = INT64_MIN,
                   .rest_series = VIEW_STACKS_NO_REST};
}

static void sweep_free(sweep *s) {
    addr_map_free(&s->series_of);
    addr_map_free(&s->whole);
    sqlite3_finalize(s->cat_st);
    addr_map_free(&s->live);
    gmt_slots_free(&s->blocks);
    free(s->keys), free(s->cur), free(s->snap), free(s->snap_off), free(s->snap_cnt),
        free(s->taken), free(s->floor_bytes);
}

int view_stacks_series_index(sweep *s, int64_t key, uint32_t *idx) {
    uint32_t *at = addr_map_get(&s->series_of, 0, (uint64_t)key);
    if (at) {
        *idx = *at - 1;
        return 0;
    }
    if (gmt_grow((void **)&s->keys, &s->cap_keys, s->nseries, sizeof *s->keys) != 0 ||
        gmt_grow((void **)&s->cur, &s->cap_cur, s->nseries, sizeof *s->cur) != 0 ||
        addr_map_put(&s->series_of, 0, (uint64_t)key, (uint32_t)s->nseries + 1) != 0)
        return -1;
    s->keys[s->nseries] = key;
    *idx = (uint32_t)s->nseries++;
    return 0;
}

/* Copies the series that hold bytes now; their place in s->snap through *off, *cnt. */
static int snapshot(sweep *s, size_t *off, size_t *cnt) {
    *off = s->snap_len;
    for (size_t i = 0; i < s->nseries; i++) {
        if (!s->cur[i])
            continue;
        if (gmt_grow_uninit((void **)&s->snap, &s->snap_cap, s->snap_len, sizeof *s->snap, 1024))
            return -1;
        s->snap[s->snap_len++] = (snap_entry){(uint32_t)i, s->cur[i]};
    }
    *cnt = s->snap_len - *off;
    return 0;
}

/* Buckets [from, to) take the state now (carried: no row of theirs). */
static int carry(sweep *s, view_stacks_result *out, size_t from, size_t to) {
    if (from >= to)
        return 0;
    size_t off, cnt;
    if (snapshot(s, &off, &cnt) != 0)
        return -1;
    for (size_t b = from; b < to; b++) /* the timeline knows the row: the last before it */
        s->snap_off[b] = off, s->snap_cnt[b] = cnt,
        out->at_event[b] = out->timeline.buckets[b].last_event_id;
    return 0;
}

/* block_categories in alloc_id order beside the pass (whose allocs come in that order too):
 * one step per row, no map of them all. */
static int open_categories(sqlite3 *db, int64_t after, int64_t last, sqlite3_stmt **st, char *err,
                           size_t errlen) {
    if (db_query_i64(db, "SELECT count(*) FROM (SELECT 1 FROM block_categories LIMIT 1)", 0, 0,
                     0) <= 0) {
        snprintf(err, errlen,
                 "the database has no block categories (memanalyze view adds them "
                 "to its cache; a database given as input needs `import -o`)");
        return -1;
    }
    *st = db_statement(db, "SELECT alloc_id, category FROM block_categories WHERE alloc_id <= ?1 "
                           "AND alloc_id > ?2 ORDER BY alloc_id");
    if (!*st)
        return -1;
    sqlite3_bind_int64(*st, 1, last);
    sqlite3_bind_int64(*st, 2, after);
    return 0;
}

/* The category of the block that alloc `id` made (unknown when block_categories has none). */
static int64_t category_of(sweep *s, int64_t id) {
    while (s->cat_st && s->cat_id < id) {
        int failed = 0;
        if (!db_next_row(s->cat_st, &failed)) {
            s->cat_failed = failed;
            sqlite3_finalize(s->cat_st);
            s->cat_st = NULL;
            break;
        }
        s->cat_id = sqlite3_column_int64(s->cat_st, 0);
        const char *name = (const char *)sqlite3_column_text(s->cat_st, 1);
        int c = name ? gmt_category_from_name(name, strlen(name)) : -1;
        s->cat = c < 0 ? BLOCK_CATEGORY_UNKNOWN : c;
    }
    return s->cat_id == id ? s->cat : BLOCK_CATEGORY_UNKNOWN;
}

enum { ID, TS, DEVICE, OP, LEVEL, KIND, SIZE, STACK, STREAM, ALLOC, ALLOCATED, NCOL };
static const int columns[NCOL] = {
    EVENT_COL_event_id, EVENT_COL_ts_ns,          EVENT_COL_device,         EVENT_COL_op,
    EVENT_COL_level,    EVENT_COL_kind,           EVENT_COL_size,           EVENT_COL_stack_id,
    EVENT_COL_stream,   EVENT_COL_alloc_event_id, EVENT_COL_allocated_bytes};

static int64_t series_key(sweep *s, const int64_t *const *v, long r) {
    switch (s->by) {
    case STACK_BY_SITE:
        return event_value_or(v[STACK][r], 0);
    case STACK_BY_STREAM:
        return event_value_or(v[STREAM][r], 0);
    case STACK_BY_SIZE:
        return gmt_size_class_of(event_value_or(v[SIZE][r], 0));
    case STACK_BY_CATEGORY:
        return category_of(s, v[ID][r]);
    case STACK_BY_COUNT:
        break;
    }
    return 0;
}

/* A row's block change: an alloc (or map) of a block joins its series, its free leaves it. */
static int apply_row(sweep *s, const int64_t *const *v, long r) {
    int64_t op = v[OP][r];
    if (v[KIND][r] != TRACE_KIND_DEVICE)
        return 0;
    if (op == TRACE_OP_ALLOC || op == TRACE_OP_MAP) {
        if (v[LEVEL][r] != TRACE_LEVEL_BLOCK && !addr_map_get(&s->whole, 0, (uint64_t)v[ID][r]))
            return 0;
        uint32_t idx;
        int64_t slot = gmt_slot_take(&s->blocks);
        if (slot < 0 || view_stacks_series_index(s, series_key(s, v, r), &idx) != 0)
            return -1;
        int64_t size = event_value_or(v[SIZE][r], 0);
        *(live_block *)gmt_slot_at(&s->blocks, (uint32_t)slot) = (live_block){size, idx};
        s->cur[idx] += size;
        return addr_map_put(&s->live, 0, (uint64_t)v[ID][r], (uint32_t)slot + 1);
    }
    if ((op != TRACE_OP_FREE && op != TRACE_OP_UNMAP) || v[ALLOC][r] == EVENT_STORE_NULL)
        return 0;
    uint32_t *at = addr_map_get(&s->live, 0, (uint64_t)v[ALLOC][r]);
    if (!at)
        return 0; /* its allocation was not a block */
    uint32_t slot = *at - 1;
    addr_map_remove(&s->live, 0, (uint64_t)v[ALLOC][r]);
    live_block b = *(live_block *)gmt_slot_at(&s->blocks, slot);
    gmt_slot_give(&s->blocks, slot);
    s->cur[b.series] -= b.size;
    return 0;
}

/* The pass over rows [first, last]: every bucket's copy (view_stacks.h). */
static int run_sweep(sqlite3 *db, int device, int event_axis, int64_t first, int64_t last,
                     int seeded, view_stacks_result *out, sweep *s, char *err, size_t errlen) {
    const view_timeline_result *t = &out->timeline;
    int64_t end = t->start + (int64_t)t->n * t->width;
    /* only the columns this `by` reads: each one decoded costs ~10 % of the pass */
    uint32_t mask = event_scan_mask(columns, NCOL);
    if (s->by != STACK_BY_SITE)
        mask &= ~EVENT_SCAN_COLUMN(stack_id);
    if (s->by != STACK_BY_STREAM)
        mask &= ~EVENT_SCAN_COLUMN(stream);
    if (event_axis)
        mask &= ~EVENT_SCAN_COLUMN(ts_ns);
    event_scan *scan = event_scan_open(db, mask, first, last, err, errlen);
    if (!scan)
        return -1;
    int64_t place = INT64_MIN;
    long cur_b = -1;            /* the last bucket that had a row */
    int known = seeded, rc = 0; /* known: a state to carry (rows before, or a seed) */
    const int64_t *cols[EVENT_STORE_NCOLS];
    long got;
    while (rc == 0 && (got = event_scan_next(scan, cols)) > 0) {
        const int64_t *v[NCOL];
        event_scan_pick(cols, columns, NCOL, v);
        out->rows_read += got;
        for (long r = 0; r < got && rc == 0; r++) {
            if (v[DEVICE][r] != device)
                continue;
            int64_t key = event_axis ? v[ID][r] : v[TS][r];
            key = key > 0 ? key : 0;
            place = key > place ? key : place;
            long b = place < t->start ? -1
                     : place < end    ? (long)((place - t->start) / t->width)
                                      : (long)t->n;
            if (b > cur_b + 1 && known)
                rc = carry(s, out, (size_t)(cur_b + 1), (size_t)b);
            if (b > cur_b)
                cur_b = b;
            if (rc == 0)
                rc = apply_row(s, v, r);
            known = 1;
            if (rc == 0 && b >= 0 && (size_t)b < t->n && !s->taken[b] &&
                v[ALLOCATED][r] == t->buckets[b].max_allocated) {
                s->taken[b] = 1;
                out->at_event[b] = v[ID][r];
                rc = snapshot(s, &s->snap_off[b], &s->snap_cnt[b]);
            }
        }
    }
    if (rc == 0 && got < 0) {
        snprintf(err, errlen, "%s", event_scan_error(scan));
        rc = -1;
    }
    event_scan_close(scan);
    if (rc == 0 && known && cur_b + 1 < (long)t->n)
        rc = carry(s, out, (size_t)(cur_b + 1), t->n);
    if (rc != 0 && !*err)
        snprintf(err, errlen, "out of memory");
    return rc;
}

typedef struct ranked {
    int64_t max, key;
    uint32_t series;
} ranked;

/* Highest first; equal ones by key, so the same window reads the same. */
static int by_max_desc(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->max != y->max)
        return x->max < y->max ? 1 : -1;
    return x->key < y->key ? -1 : x->key > y->key;
}

static void series_label(sqlite3 *db, view_stack_by by, view_stack_series *se) {
    switch (by) {
    case STACK_BY_SITE:
        break; /* all at once: stack_labels_of */
    case STACK_BY_CATEGORY:
        snprintf(se->label, sizeof se->label, "%s", gmt_category_name((gmt_category)se->key));
        se->colour = gmt_category_colour((gmt_category)se->key);
        break;
    case STACK_BY_STREAM:
        if (se->key >= 0 && se->key < 65536)
            snprintf(se->label, sizeof se->label, "stream %" PRId64, se->key);
        else
            snprintf(se->label, sizeof se->label, "stream 0x%" PRIx64, (uint64_t)se->key);
        break;
    case STACK_BY_SIZE:
        snprintf(se->label, sizeof se->label, "%s",
                 size_class_labels[(uint64_t)se->key < SIZE_CLASS_COUNT ? se->key : 0]);
        break;
    case STACK_BY_COUNT:
        break;
    }
    (void)db;
}

/* After the pass: the series ranked by their highest value, the top ones kept, the rest one
 * "other"; each bucket's copy spread into its row of out->values. */
int view_stacks_choose(sqlite3 *db, sweep *s, size_t max_series, view_stacks_result *out) {
    const view_timeline_result *t = &out->timeline;
    /* s->cur now holds each series' max over the buckets (the live values are spent) */
    if (s->nseries) /* s->cur is NULL when no series was seen */
        memset(s->cur, 0, s->nseries * sizeof *s->cur);
    for (size_t b = 0; b < t->n; b++)
        for (size_t k = 0; k < s->snap_cnt[b]; k++) {
            const snap_entry *e = &s->snap[s->snap_off[b] + k];
            s->cur[e->series] = e->bytes > s->cur[e->series] ? e->bytes : s->cur[e->series];
        }
    ranked *order = malloc((s->nseries + 1) * sizeof *order);
    uint32_t *col = malloc((s->nseries + 1) * sizeof *col);
    if (!order || !col) {
        free(order), free(col);
        return -1;
    }
    size_t live = 0;
    for (size_t i = 0; i < s->nseries; i++)
        if (s->cur[i] > 0 && i != s->rest_series)
            order[live++] = (ranked){s->cur[i], s->keys[i], (uint32_t)i};
    if (live)
        qsort(order, live, sizeof *order, by_max_desc);
    /* a stored vector's rest (view_stacks_levels.c) is never named: always "others" */
    int rest = s->rest_series != VIEW_STACKS_NO_REST && s->cur[s->rest_series] > 0;
    size_t top = live < max_series ? live : max_series, other = live > top || rest;
    out->series_count = top + other;
    out->series = calloc(out->series_count + 1, sizeof *out->series);
    out->values = calloc(t->n * (out->series_count ? out->series_count : 1), sizeof *out->values);
    if (!out->series || !out->values) {
        free(order), free(col);
        return -1;
    }
    for (size_t i = 0; i < s->nseries; i++)
        col[i] = (uint32_t)top; /* "other" unless among the top */
    for (size_t r = 0; r < top; r++) {
        col[order[r].series] = (uint32_t)r;
        out->series[r].key = order[r].key;
        out->series[r].max_bytes = order[r].max;
        series_label(db, out->by, &out->series[r]);
    }
    if (other) {
        out->others = live - top + rest;
        out->series[top].key = -1;
        snprintf(out->series[top].label, sizeof out->series[top].label,
                 rest ? "others (%zu or more)" : "others (%zu)", out->others);
    }
    for (size_t b = 0; b < t->n; b++) {
        int64_t *row = out->values + b * out->series_count;
        for (size_t k = 0; k < s->snap_cnt[b]; k++) {
            const snap_entry *e = &s->snap[s->snap_off[b] + k];
            row[col[e->series]] += e->bytes;
        }
        if (other && row[top] > out->series[top].max_bytes)
            out->series[top].max_bytes = row[top];
    }
    free(order), free(col);
    if (out->by != STACK_BY_SITE || !top)
        return 0;
    int64_t *ids = malloc(top * sizeof *ids);
    char **labels = malloc(top * sizeof *labels);
    int rc = ids && labels ? 0 : -1;
    for (size_t r = 0; rc == 0 && r < top; r++)
        ids[r] = out->series[r].key, labels[r] = out->series[r].label;
    if (rc == 0)
        rc = stack_labels_of(db, ids, top, labels, sizeof out->series[0].label);
    free(ids), free(labels);
    return rc;
}

/* ---- a start from the layouts' checkpoint ---- */

/* A block's category by a point lookup (the seed's blocks: old ones among them, which the
 * cursor above would reach only by stepping through every block before them). */
int64_t view_stack_block_key(view_stack_by by, int64_t stack_id, int64_t stream, int64_t size,
                             sqlite3_stmt *categories, int64_t alloc_id, int *failed) {
    if (by == STACK_BY_SITE)
        return stack_id;
    if (by == STACK_BY_STREAM)
        return stream;
    if (by == STACK_BY_SIZE)
        return gmt_size_class_of(size);
    int c = categories ? category_stored_of(categories, alloc_id) : -1;
    *failed |= c == -2;
    return c < 0 ? BLOCK_CATEGORY_UNKNOWN : c;
}

/* One block live at the seed joins its series, as its alloc row would have. */
static int seed_block(sweep *s, sqlite3_stmt *cat, int64_t id, int64_t size, int64_t stack,
                      int64_t stream, int *failed) {
    int64_t key = view_stack_block_key(s->by, stack, stream, size, cat, id, failed);
    uint32_t idx;
    int64_t slot = gmt_slot_take(&s->blocks);
    if (slot < 0 || view_stacks_series_index(s, key, &idx) != 0)
        return -1;
    *(live_block *)gmt_slot_at(&s->blocks, (uint32_t)slot) = (live_block){size, idx};
    s->cur[idx] += size;
    return addr_map_put(&s->live, 0, (uint64_t)id, (uint32_t)slot + 1);
}

/* The sweep's state after row `before` from the layout index's checkpoint nearest before it
 * (layout_index.h), when the connection has one and the layouts' pass keeps the sweep's blocks
 * (layout_blocks_are_sweeps): the pass's live blocks and the whole-block segments live then,
 * in alloc id order. 1 with *ck_at the checkpoint's event id, 0 when there is none, -1 on an
 * error. */
static int seed_sweep(sqlite3 *db, int device, int64_t before, sweep *s, int64_t *ck_at, char *err,
                      size_t errlen) {
    const layout_index *ix = layout_index_for(db);
    if (!ix || !layout_blocks_are_sweeps(db))
        return 0;
    layout_pass p = {0};
    int got = layout_index_seed(ix, device, INT64_MIN, before, &p, ck_at, err, errlen);
    size_t n = 0;
    layout_live_block *live = got > 0 ? layout_pass_live(&p, &n) : NULL;
    layout_pass_free(&p);
    if (got <= 0 || !live) {
        free(live);
        return got <= 0 ? got : -1;
    }
    sqlite3_stmt *seg = db_statement(
        db, "SELECT segment_id, size, stack_id, stream FROM segments WHERE device = ?1 AND kind = "
            "'device' AND whole_block = 1 AND segment_id <= ?2 AND (free_event_id IS NULL OR "
            "free_event_id > ?2) ORDER BY segment_id");
    sqlite3_stmt *cat = s->by == STACK_BY_CATEGORY ? category_stored_statement(db) : NULL;
    int rc = seg && (cat || s->by != STACK_BY_CATEGORY) ? 0 : -1, failed = 0;
    if (rc == 0) {
        sqlite3_bind_int(seg, 1, device);
        sqlite3_bind_int64(seg, 2, *ck_at);
    }
    int more = rc == 0 && db_next_row(seg, &failed);
    size_t i = 0;
    while (rc == 0 && (i < n || more)) { /* the two lists merged by alloc id */
        int64_t seg_id = more ? sqlite3_column_int64(seg, 0) : INT64_MAX;
        if (i < n && live[i].alloc_id < seg_id) {
            const layout_live_block *b = &live[i++];
            rc = seed_block(s, cat, b->alloc_id, (int64_t)b->size, b->stack_id, (int64_t)b->stream,
                            &failed);
        } else {
            rc = seed_block(s, cat, seg_id, db_column_i64(seg, 1, 0), db_column_i64(seg, 2, 0),
                            db_column_i64(seg, 3, 0), &failed);
            more = db_next_row(seg, &failed);
        }
    }
    sqlite3_finalize(seg);
    sqlite3_finalize(cat);
    free(live);
    if (rc == 0 && failed)
        rc = -1;
    if (rc != 0 && !*err)
        snprintf(err, errlen, "stacking the timeline: %s", sqlite3_errmsg(db));
    return rc == 0 ? 1 : -1;
}

/* The device's first row placed at or after `start` (the first row of the finest level's
 * first bucket that begins at or after the bucket holding it): every row before it is placed
 * before `start`. 0, with *row INT64_MAX when there is none; -1 on an error. */
static int first_row_from(sqlite3 *db, int device, int64_t start, int64_t *row) {
    int64_t finest;
    int levels;
    if (view_timeline_grid(db, &finest, &levels) != 0)
        finest = 0;
    sqlite3_stmt *st = db_statement(db, "SELECT min(first_event_id) FROM timeline_levels WHERE "
                                        "device = ?1 AND bucket_ns = ?2 AND bucket >= ?3");
    int failed = 0;
    *row = INT64_MAX;
    if (st && finest > 0) {
        sqlite3_bind_int(st, 1, device);
        sqlite3_bind_int64(st, 2, finest);
        sqlite3_bind_int64(st, 3, view_floor_div(start, finest));
        if (db_next_row(st, &failed) && sqlite3_column_type(st, 0) != SQLITE_NULL)
            *row = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return st && finest > 0 && !failed ? 0 : -1;
}

/* The device's rows the window needs: from its first row to the last one placed before the
 * window's end (the last of the finest level's buckets that begin before it). 0: *first >
 * *last when there is none. */
static int window_rows(sqlite3 *db, int device, int64_t end, int64_t *first, int64_t *last) {
    int64_t finest;
    int levels;
    int grid = view_timeline_grid(db, &finest, &levels);
    assert(grid == 0 && finest > 0 && levels > 0); /* view_timeline answered */
    (void)grid;
    int64_t coarsest = finest << (3 * (levels - 1));
    sqlite3_stmt *st = db_statement(db, "SELECT min(first_event_id) FROM timeline_levels WHERE "
                                        "device = ?1 AND bucket_ns = ?2");
    sqlite3_stmt *lt = db_statement(db, "SELECT last_event_id FROM timeline_levels WHERE device "
                                        "= ?1 AND bucket_ns = ?2 AND bucket <= ?3 ORDER BY "
                                        "bucket DESC LIMIT 1");
    int failed = 0;
    *first = 1, *last = 0;
    if (st && lt) {
        sqlite3_bind_int(st, 1, device);
        sqlite3_bind_int64(st, 2, coarsest);
        if (db_next_row(st, &failed) && sqlite3_column_type(st, 0) != SQLITE_NULL)
            *first = sqlite3_column_int64(st, 0);
        sqlite3_bind_int(lt, 1, device);
        sqlite3_bind_int64(lt, 2, finest);
        sqlite3_bind_int64(lt, 3, view_floor_div(end - 1, finest));
        if (!failed && db_next_row(lt, &failed))
            *last = sqlite3_column_int64(lt, 0);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(lt);
    return st && lt && !failed ? 0 : -1;
}

static int stacks(sqlite3 *db, int device, int64_t lo, int64_t hi, size_t nbuckets,
                  view_stack_by by, size_t max_series, int64_t max_rows, int use_levels,
                  view_stacks_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    *err = 0;
    out->by = by;
    if (view_timeline(db, device, lo, hi, nbuckets, &out->timeline, err, errlen) != 0)
        return -1;
    if (max_series < 1)
        max_series = 1;
    if (max_series > VIEW_STACKS_MAX_SERIES)
        max_series = VIEW_STACKS_MAX_SERIES;
    const view_timeline_result *t = &out->timeline;
    sweep s = sweep_new(by);
    int got = use_levels ? view_stacks_from_levels(db, device, &s, out, err, errlen) : 0;
    if (got != 0) { /* the stored vectors: no pass */
        if (got > 0 && view_stacks_choose(db, &s, max_series, out) == 0)
            view_stacks_levels_bound(&s, out);
        else if (got > 0)
            got = -1;
        if (got < 0 && !*err)
            snprintf(err, errlen, "stacking the timeline: %s", sqlite3_errmsg(db));
        sweep_free(&s);
        if (got < 0)
            view_stacks_free(out);
        return got < 0 ? -1 : 0;
    }
    if (use_levels) { /* what a partial read of the levels made: the pass starts afresh */
        sweep_free(&s);
        s = sweep_new(by);
        free(out->at_event);
        out->at_event = NULL;
    }
    int64_t first, last;
    if (window_rows(db, device, t->start + (int64_t)t->n * t->width, &first, &last) != 0) {
        snprintf(err, errlen, "reading timeline_levels: %s", sqlite3_errmsg(db));
        sweep_free(&s);
        view_stacks_free(out);
        return -1;
    }
    /* the rows before the window only build its first state: a checkpoint's state instead */
    int64_t from_row, ck_at = INT64_MIN;
    int rc = 0;
    if (layout_index_for(db) && last >= first &&
        (rc = first_row_from(db, device, t->start, &from_row)) == 0 && from_row != INT64_MAX &&
        from_row > first) {
        rc = seed_sweep(db, device, from_row - 1, &s, &ck_at, err, errlen);
        if (rc > 0) {
            first = ck_at + 1;
            out->seeded_at = ck_at;
            rc = 0;
        }
    }
    out->rows_needed = last >= first ? last - first + 1 : 0;
    if (rc == 0 && out->rows_needed > (max_rows > 0 ? max_rows : VIEW_STACKS_MAX_ROWS)) {
        out->refused = 1;
        sweep_free(&s);
        return 0;
    }
    out->at_event = calloc(t->n, sizeof *out->at_event);
    s.snap_off = calloc(t->n, sizeof *s.snap_off);
    s.snap_cnt = calloc(t->n, sizeof *s.snap_cnt);
    s.taken = calloc(t->n, 1);
    if (rc == 0 && !(out->at_event && s.snap_off && s.snap_cnt && s.taken))
        rc = -1;
    if (rc == 0 && block_sweep_whole_segments(db, &s.whole) != 0)
        rc = -1;
    if (rc == 0 && by == STACK_BY_CATEGORY)
        rc = open_categories(db, ck_at, last, &s.cat_st, err, errlen);
    if (rc == 0 && (out->rows_needed || ck_at != INT64_MIN))
        rc = run_sweep(db, device, t->event_axis, first, last, ck_at != INT64_MIN, out, &s, err,
                       errlen);
    if (rc == 0 && s.cat_failed)
        rc = -1;
    if (rc == 0)
        rc = view_stacks_choose(db, &s, max_series, out);
    if (rc != 0 && !*err)
        snprintf(err, errlen, "stacking the timeline: %s", sqlite3_errmsg(db));
    sweep_free(&s);
    if (rc != 0)
        view_stacks_free(out);
    return rc;
}

int view_stacks(sqlite3 *db, int device, int64_t lo, int64_t hi, size_t nbuckets, view_stack_by by,
                size_t max_series, int64_t max_rows, view_stacks_result *out, char *err,
                size_t errlen) {
    return stacks(db, device, lo, hi, nbuckets, by, max_series, max_rows, 1, out, err, errlen);
}

int view_stacks_by_pass(sqlite3 *db, int device, int64_t lo, int64_t hi, size_t nbuckets,
                        view_stack_by by, size_t max_series, int64_t max_rows,
                        view_stacks_result *out, char *err, size_t errlen) {
    return stacks(db, device, lo, hi, nbuckets, by, max_series, max_rows, 0, out, err, errlen);
}

int view_stacks_fold_last(view_stacks_result *r) {
    size_t sc = r->series_count, named = sc - (r->others > 0);
    if (!named)
        return -1;
    view_stack_series *last = &r->series[named - 1];
    if (!r->others) { /* the last named one becomes "others" */
        last->key = -1, last->colour = 0;
        r->others = 1;
        snprintf(last->label, sizeof last->label, "others (1)");
        return 0;
    }
    size_t n = r->timeline.n;
    for (size_t i = 0; i < n; i++) { /* rows of sc values become rows of sc - 1, in place */
        const int64_t *from = r->values + i * sc;
        int64_t *to = r->values + i * (sc - 1), fold = from[named - 1] + from[sc - 1];
        memmove(to, from, (named - 1) * sizeof *to);
        to[sc - 2] = fold;
        if (fold > r->series[sc - 1].max_bytes)
            r->series[sc - 1].max_bytes = fold;
    }
    r->series[named - 1] = r->series[sc - 1];
    r->series_count = sc - 1;
    r->others++;
    int more = strstr(r->series[sc - 2].label, "or more") != NULL; /* a stored vector's rest */
    snprintf(r->series[sc - 2].label, sizeof r->series[sc - 2].label,
             more ? "others (%zu or more)" : "others (%zu)", r->others);
    return 0;
}

void view_stacks_free(view_stacks_result *out) {
    view_timeline_free(&out->timeline);
    free(out->series), free(out->values), free(out->at_event);
    out->series = NULL, out->values = NULL, out->at_event = NULL;
    out->series_count = 0;
}
