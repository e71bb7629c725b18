/* view_stacks_levels.c — the stacked timeline of a wide window from the replay's stored vectors
 * (schema.sql: series_levels; view_stacks.h says when and what): per bucket one point read of
 * the vector at its highest moment, as the copies the pass would have made; the rest of a
 * vector is a series of its own that is never named. */
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

/* The width of series_levels' buckets for `by` (0: none stored). */
static int64_t stored_width(sqlite3 *db, view_stack_by by) {
    if (!db_has_table(db, "series_levels"))
        return 0;
    /* categories as the pass has them: with block_categories (else both say there are none) */
    if (by == STACK_BY_CATEGORY &&
        (db_query_i64(db, "SELECT value FROM meta WHERE key = 'series_level_categories'", 0, 0,
                      0) != 1 ||
         !category_blocks_stored(db)))
        return 0;
    return db_query_i64(db, "SELECT value FROM meta WHERE key = 'series_level_ns'", 0, 0, 0);
}

int view_stacks_from_levels(sqlite3 *db, int device, sweep *s, view_stacks_result *out, char *err,
                            size_t errlen) {
    const view_timeline_result *t = &out->timeline;
    int64_t width = stored_width(db, s->by);
    /* every bucket made of whole stored buckets: its max is one of theirs */
    if (width <= 0 || t->level_width < width)
        return 0;
    sqlite3_stmt *st = db_statement(db, "SELECT key, bytes FROM series_levels WHERE device = ?1 "
                                        "AND series_by = ?2 AND event_id = ?3 ORDER BY rank");
    out->at_event = calloc(t->n, sizeof *out->at_event);
    s->snap_off = calloc(t->n, sizeof *s->snap_off);
    s->snap_cnt = calloc(t->n, sizeof *s->snap_cnt);
    s->floor_bytes = calloc(t->n, sizeof *s->floor_bytes);
    int oom = !(out->at_event && s->snap_off && s->snap_cnt && s->floor_bytes);
    int rc = st && !oom ? 0 : -1;
    if (rc == 0) {
        sqlite3_bind_int(st, 1, device);
        sqlite3_bind_int(st, 2, (int)s->by);
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
        int found;
        s->snap_off[b] = s->snap_len;
        rc = read_vector(st, event, s, &s->floor_bytes[b], &found);
        oom |= rc == -2;
        s->snap_cnt[b] = s->snap_len - s->snap_off[b];
        if (rc == 0 && !found)
            rc = 1; /* not stored (a database made otherwise): the pass answers */
    }
    if (rc < 0)
        snprintf(err, errlen, "reading series_levels: %s",
                 oom ? "out of memory" : sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (rc != 0) /* the caller frees what was made (and starts the pass afresh) */
        return rc < 0 ? -1 : 0;
    out->from_levels = 1;
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
