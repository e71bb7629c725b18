/* view_stacks_levels.c — the stacked timeline of a wide window from the replay's stored vectors
 * (schema.sql: series_levels, series_deltas; view_stacks.h says when and what): per bucket the
 * vector at its highest moment, as the copies the pass would have made — one point read of a
 * whole vector where the buckets are series_levels' or wider, else the chain of deltas walked
 * from the whole vector at or before the window's first bucket; the rest of a vector is a
 * series of its own that is never named. */
#include "category_store.h"
#include "db_query.h"
#include "gmt_grow.h"
#include "view_stacks_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One stored vector into s's copies; 0 with *found 0 when there is none for `event_id`, -1 a
 * read error, -2 out of memory. */
static int read_vector(sqlite3_stmt *st, int64_t event_id, sweep *s, int64_t *floor_bytes,
                       int *found) {
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 3, event_id);
    int failed = 0;
    *found = 0;
    *floor_bytes = 0;
    int64_t smallest = 0;
    while (db_next_row(st, &failed)) {
        *found = 1;
        int64_t bytes = sqlite3_column_int64(st, 1);
        uint32_t idx;
        if (sqlite3_column_type(st, 0) == SQLITE_NULL) { /* the rest: the last row */
            if (s->rest_series == VIEW_STACKS_NO_REST) {
                if (view_stacks_series_index(s, INT64_MIN, &s->rest_series) != 0)
                    return -2;
            }
            idx = s->rest_series;
            *floor_bytes = bytes > 0 ? smallest : 0;
        } else {
            if (view_stacks_series_index(s, sqlite3_column_int64(st, 0), &idx) != 0)
                return -2;
            smallest = bytes;
        }
        if (!bytes)
            continue;
        if (gmt_grow_uninit((void **)&s->snap, &s->snap_cap, s->snap_len, sizeof *s->snap, 1024))
            return -2;
        s->snap[s->snap_len++] = (snap_entry){idx, bytes};
    }
    return failed ? -1 : 0;
}

/* The widths of series_levels' and series_deltas' buckets for `by` (0: none stored). */
static void stored_widths(sqlite3 *db, view_stack_by by, int64_t *whole, int64_t *chain) {
    *whole = *chain = 0;
    if (!db_has_table(db, "series_levels"))
        return;
    /* categories as the pass has them: with block_categories (else both say there are none) */
    if (by == STACK_BY_CATEGORY &&
        (db_query_i64(db, "SELECT value FROM meta WHERE key = 'series_level_categories'", 0, 0,
                      0) != 1 ||
         !category_blocks_stored(db)))
        return;
    *whole = db_query_i64(db, "SELECT value FROM meta WHERE key = 'series_level_ns'", 0, 0, 0);
    if (db_has_table(db, "series_deltas"))
        *chain = db_query_i64(db, "SELECT value FROM meta WHERE key = 'series_delta_ns'", 0, 0, 0);
}

/* The chain's state: the vector at `at` (its named series, the rest). */
typedef struct chain_state {
    int started; /* 0: no state yet */
    int64_t at;  /* INT64_MIN: before the device's first vector (nothing live) */
    /* twice a vector: one event's delta names the new series before those that left */
    int64_t keys[2 * SERIES_VECTOR_TOP], bytes[2 * SERIES_VECTOR_TOP];
    size_t n;
    int64_t rest;
    sqlite3_stmt *start, *whole, *deltas;
} chain_state;

/* The whole vector at or before `event_id` into c, when it is after c->at; none: the state
 * before the device's first vector (the chain's first names all it holds). 0, or -1 a read
 * error. */
static int chain_start(chain_state *c, int64_t event_id) {
    sqlite3_reset(c->start);
    sqlite3_bind_int64(c->start, 3, event_id);
    int failed = 0;
    if (!db_next_row(c->start, &failed)) {
        if (!failed && !c->started)
            c->started = 1, c->at = INT64_MIN, c->n = 0, c->rest = 0;
        return failed ? -1 : 0;
    }
    int64_t at = sqlite3_column_int64(c->start, 0);
    if (c->started && at <= c->at)
        return 0; /* the chain from c->at is nearer */
    c->started = 1;
    sqlite3_reset(c->whole);
    sqlite3_bind_int64(c->whole, 3, at);
    c->n = 0, c->rest = 0, c->at = at;
    while (db_next_row(c->whole, &failed)) {
        if (sqlite3_column_type(c->whole, 0) == SQLITE_NULL) {
            c->rest = sqlite3_column_int64(c->whole, 1);
        } else if (c->n < SERIES_VECTOR_TOP) {
            c->keys[c->n] = sqlite3_column_int64(c->whole, 0);
            c->bytes[c->n++] = sqlite3_column_int64(c->whole, 1);
        } else {
            return 1; /* more than a vector names: not this build's rows */
        }
    }
    return failed ? -1 : 0;
}

/* c moved along the chain to `event_id`. 0; 1 when the chain holds no vector there (the pass
 * answers); -1 a read error. */
static int chain_walk(chain_state *c, int64_t event_id) {
    if (c->at == event_id)
        return 0;
    sqlite3_reset(c->deltas);
    sqlite3_bind_int64(c->deltas, 3, c->at);
    sqlite3_bind_int64(c->deltas, 4, event_id);
    int failed = 0, bad = 0;
    int64_t last = c->at;
    while (!bad && db_next_row(c->deltas, &failed)) {
        last = sqlite3_column_int64(c->deltas, 0);
        int64_t bytes = sqlite3_column_int64(c->deltas, 2);
        if (sqlite3_column_type(c->deltas, 1) == SQLITE_NULL) {
            c->rest = bytes;
            continue;
        }
        int64_t key = sqlite3_column_int64(c->deltas, 1);
        size_t k = 0;
        while (k < c->n && c->keys[k] != key)
            k++;
        if (k == c->n && bytes) { /* newly named */
            bad = c->n == 2 * SERIES_VECTOR_TOP;
            if (!bad)
                c->keys[c->n] = key, c->bytes[c->n++] = bytes;
        } else if (k < c->n && bytes) {
            c->bytes[k] = bytes;
        } else if (k < c->n) { /* no longer named */
            c->n--;
            c->keys[k] = c->keys[c->n], c->bytes[k] = c->bytes[c->n];
        }
    }
    if (failed)
        return -1;
    c->at = event_id;
    return bad || last != event_id || c->n > SERIES_VECTOR_TOP ? 1 : 0;
}

/* The state's vector into s's copies, ranked as a stored whole vector is (more bytes first, then
 * the lower key); the smallest named one into *floor_bytes when there is a rest. 0, -2 out of
 * memory. */
static int chain_copy(const chain_state *c, sweep *s, int64_t *floor_bytes) {
    size_t order[2 * SERIES_VECTOR_TOP];
    for (size_t k = 0; k < c->n; k++) { /* insertion: at most SERIES_VECTOR_TOP */
        size_t j = k;
        while (j > 0 &&
               (c->bytes[order[j - 1]] < c->bytes[k] ||
                (c->bytes[order[j - 1]] == c->bytes[k] && c->keys[order[j - 1]] > c->keys[k])))
            order[j] = order[j - 1], j--;
        order[j] = k;
    }
    for (size_t r = 0; r <= c->n; r++) {
        uint32_t idx;
        int64_t bytes;
        if (r == c->n) { /* the rest */
            if (s->rest_series == VIEW_STACKS_NO_REST &&
                view_stacks_series_index(s, INT64_MIN, &s->rest_series) != 0)
                return -2;
            idx = s->rest_series, bytes = c->rest;
        } else {
            if (view_stacks_series_index(s, c->keys[order[r]], &idx) != 0)
                return -2;
            bytes = c->bytes[order[r]];
        }
        if (!bytes)
            continue;
        if (gmt_grow_uninit((void **)&s->snap, &s->snap_cap, s->snap_len, sizeof *s->snap, 1024))
            return -2;
        s->snap[s->snap_len++] = (snap_entry){idx, bytes};
    }
    *floor_bytes = c->rest > 0 && c->n ? c->bytes[order[c->n - 1]] : 0;
    return 0;
}

/* The chain's vector at `event_id` into s's copies: 0, 1 none there, -1, -2 as read_vector. */
static int chain_vector(chain_state *c, int64_t event_id, sweep *s, int64_t *floor_bytes) {
    int rc = chain_start(c, event_id);
    if (rc == 0)
        rc = chain_walk(c, event_id);
    return rc == 0 ? chain_copy(c, s, floor_bytes) : rc;
}

int view_stacks_from_levels(sqlite3 *db, int device, sweep *s, view_stacks_result *out, char *err,
                            size_t errlen) {
    const view_timeline_result *t = &out->timeline;
    int64_t whole_width, chain_width;
    stored_widths(db, s->by, &whole_width, &chain_width);
    /* every bucket made of whole stored buckets: its max is one of theirs */
    int whole = whole_width > 0 && t->level_width >= whole_width;
    if (!whole && (chain_width <= 0 || t->level_width < chain_width))
        return 0;
    chain_state c = {0};
    sqlite3_stmt *st = db_statement(db, "SELECT key, bytes FROM series_levels WHERE device = ?1 "
                                        "AND series_by = ?2 AND event_id = ?3 ORDER BY rank");
    if (!whole) {
        c.whole = st;
        c.start = db_statement(db, "SELECT event_id FROM series_levels WHERE device = ?1 AND "
                                   "series_by = ?2 AND event_id <= ?3 ORDER BY event_id DESC "
                                   "LIMIT 1");
        c.deltas = db_statement(db, "SELECT event_id, key, bytes FROM series_deltas WHERE device "
                                    "= ?1 AND series_by = ?2 AND event_id > ?3 AND event_id <= "
                                    "?4 ORDER BY event_id, entry");
    }
    out->at_event = calloc(t->n, sizeof *out->at_event);
    s->snap_off = calloc(t->n, sizeof *s->snap_off);
    s->snap_cnt = calloc(t->n, sizeof *s->snap_cnt);
    s->floor_bytes = calloc(t->n, sizeof *s->floor_bytes);
    int oom = !(out->at_event && s->snap_off && s->snap_cnt && s->floor_bytes);
    int rc = st && (whole || (c.start && c.deltas)) && !oom ? 0 : -1;
    sqlite3_stmt *bind[] = {st, c.start, c.deltas};
    for (size_t i = 0; rc == 0 && i < sizeof bind / sizeof bind[0]; i++)
        if (bind[i]) {
            sqlite3_bind_int(bind[i], 1, device);
            sqlite3_bind_int(bind[i], 2, (int)s->by);
        }
    int64_t prev_event = INT64_MIN;
    for (size_t b = t->first_known; rc == 0 && b < t->n; b++) {
        const view_bucket *vb = &t->buckets[b];
        int64_t event = vb->events ? vb->max_event_id : vb->last_event_id;
        out->at_event[b] = event;
        if (b > t->first_known && event == prev_event) { /* carried on: the same copy */
            s->snap_off[b] = s->snap_off[b - 1], s->snap_cnt[b] = s->snap_cnt[b - 1];
            s->floor_bytes[b] = s->floor_bytes[b - 1];
            continue;
        }
        prev_event = event;
        int found = 1;
        s->snap_off[b] = s->snap_len;
        if (whole) {
            rc = read_vector(st, event, s, &s->floor_bytes[b], &found);
        } else {
            rc = chain_vector(&c, event, s, &s->floor_bytes[b]);
            found = rc != 1;
            rc = rc == 1 ? 0 : rc;
        }
        oom |= rc == -2;
        s->snap_cnt[b] = s->snap_len - s->snap_off[b];
        if (rc == 0 && !found)
            rc = 1; /* not stored (a database made otherwise): the pass answers */
    }
    if (rc < 0)
        snprintf(err, errlen, "reading %s: %s", whole ? "series_levels" : "series_deltas",
                 oom ? "out of memory" : sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_finalize(c.start);
    sqlite3_finalize(c.deltas);
    if (rc != 0) /* the caller frees what was made (and starts the pass afresh) */
        return rc < 0 ? -1 : 0;
    out->from_levels = whole ? 1 : 2;
    return 1;
}

void view_stacks_levels_bound(const sweep *s, view_stacks_result *out) {
    const view_timeline_result *t = &out->timeline;
    size_t named = out->series_count - (out->others > 0);
    for (size_t b = 0; b < t->n; b++) {
        int64_t floor = s->floor_bytes[b];
        if (floor <= out->inexact_bytes)
            continue; /* a full vector: a named series missing from it may be in its rest */
        for (size_t r = 0; r < named; r++) {
            int here = 0;
            for (size_t k = 0; k < s->snap_cnt[b] && !here; k++)
                here = s->keys[s->snap[s->snap_off[b] + k].series] == out->series[r].key;
            if (!here) {
                out->inexact_bytes = floor;
                break;
            }
        }
    }
}
