/* view_timeline.c — a window of a device's timeline in buckets with their exact min/max/last
 * (view_timeline.h): the rows of one level of timeline_levels when the buckets are at least
 * the finest level's width, else the window's events, decoded through base/event_scan.h. */
#include "view_timeline.h"

#include "analysis.h"
#include "db_query.h"
#include "event_scan.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct levels_info {
    int64_t finest; /* width of level 0 */
    int count;
    int event_axis;
} levels_info;

int view_timeline_grid(sqlite3 *db, int64_t *finest, int *count) {
    *finest = db_query_i64(db, "SELECT value FROM meta WHERE key = 'timeline_level_ns'", 0, 0, 0);
    *count = (int)db_query_i64(db, "SELECT value FROM meta WHERE key = 'timeline_levels'", 0, 0, 0);
    return *finest > 0 && *count > 0 && db_has_table(db, "timeline_levels") ? 0 : -1;
}

static int read_levels(sqlite3 *db, levels_info *li, char *err, size_t errlen) {
    char axis[16];
    db_meta_text(db, "timeline_level_axis", axis, sizeof axis);
    li->event_axis = strcmp(axis, "event") == 0;
    if (view_timeline_grid(db, &li->finest, &li->count) != 0) {
        snprintf(err, errlen, "the database has no timeline levels (an older memanalyze made it)");
        return -1;
    }
    return 0;
}

/* |lo| and |hi| at most: the grid's arithmetic (start + n * width) stays in range. */
#define VIEW_TIMELINE_LIMIT ((int64_t)1 << 60)

/* Folds one event's (or one level row's) values into bucket b. */
static void add(view_bucket *b, int64_t events, int64_t amin, int64_t amax, int64_t aend,
                int64_t rmin, int64_t rmax, int64_t rend, int64_t max_id, int64_t last_id) {
    if (!b->events || amax > b->max_allocated) /* the first row at the max: later ones come later */
        b->max_event_id = max_id;
    b->last_event_id = last_id;
    if (!b->events) {
        b->min_allocated = amin, b->max_allocated = amax;
        b->min_reserved = rmin, b->max_reserved = rmax;
    } else {
        b->min_allocated = amin < b->min_allocated ? amin : b->min_allocated;
        b->max_allocated = amax > b->max_allocated ? amax : b->max_allocated;
        b->min_reserved = rmin < b->min_reserved ? rmin : b->min_reserved;
        b->max_reserved = rmax > b->max_reserved ? rmax : b->max_reserved;
    }
    b->last_allocated = aend;
    b->last_reserved = rend;
    b->events += events;
}

typedef struct carried {
    int known;
    int64_t allocated, reserved;
    int64_t event_id; /* the row whose state it is */
} carried;

/* The state after the device's last row of level `width` before bucket `before`. */
static int carried_in(sqlite3 *db, int device, int64_t width, int64_t before, carried *c) {
    sqlite3_stmt *st = db_statement(db, "SELECT end_allocated_bytes, end_reserved_bytes, "
                                        "last_event_id FROM "
                                        "timeline_levels WHERE device = ?1 AND bucket_ns = ?2 "
                                        "AND bucket < ?3 ORDER BY bucket DESC LIMIT 1");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, width);
    sqlite3_bind_int64(st, 3, before);
    int failed = 0;
    c->known = 0;
    if (db_next_row(st, &failed)) {
        c->known = 1;
        c->allocated = sqlite3_column_int64(st, 0);
        c->reserved = sqlite3_column_int64(st, 1);
        c->event_id = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    return failed ? -1 : 0;
}

/* The buckets from the rows of level `width` (a divisor of out->width). */
static int from_level(sqlite3 *db, int device, int64_t width, view_timeline_result *out,
                      carried *c) {
    int64_t b_lo = view_floor_div(out->start, width);
    int64_t b_hi = view_floor_div(out->start + (int64_t)out->n * out->width, width) - 1;
    if (carried_in(db, device, width, b_lo, c) != 0)
        return -1;
    sqlite3_stmt *st = db_statement(
        db, "SELECT bucket, events, min_allocated_bytes, max_allocated_bytes, "
            "end_allocated_bytes, min_reserved_bytes, max_reserved_bytes, end_reserved_bytes, "
            "max_allocated_event_id, last_event_id FROM timeline_levels WHERE device = ?1 AND "
            "bucket_ns = ?2 AND bucket BETWEEN ?3 AND "
            "?4 ORDER BY bucket");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, width);
    sqlite3_bind_int64(st, 3, b_lo);
    sqlite3_bind_int64(st, 4, b_hi);
    int failed = 0;
    while (db_next_row(st, &failed)) {
        int64_t i = (sqlite3_column_int64(st, 0) * width - out->start) / out->width;
        assert(i >= 0 && (size_t)i < out->n);
        int64_t v[9];
        for (int k = 0; k < 9; k++)
            v[k] = sqlite3_column_int64(st, k + 1);
        add(&out->buckets[i], v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]);
    }
    sqlite3_finalize(st);
    out->level_width = width;
    return failed ? -1 : 0;
}

/* The buckets from the window's events: those of the finest buckets that hold it. */
static int from_events(sqlite3 *db, int device, const levels_info *li, view_timeline_result *out,
                       carried *c, char *err, size_t errlen) {
    int64_t end = out->start + (int64_t)out->n * out->width;
    int64_t f_lo = view_floor_div(out->start, li->finest),
            f_hi = view_floor_div(end - 1, li->finest);
    if (carried_in(db, device, li->finest, f_lo, c) != 0)
        return -1;
    sqlite3_stmt *st = db_statement(db, "SELECT min(first_event_id), max(last_event_id) FROM "
                                        "timeline_levels WHERE device = ?1 AND bucket_ns = ?2 "
                                        "AND bucket BETWEEN ?3 AND ?4");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, li->finest);
    sqlite3_bind_int64(st, 3, f_lo);
    sqlite3_bind_int64(st, 4, f_hi);
    int failed = 0, any = 0;
    int64_t first = 0, last = -1;
    if (db_next_row(st, &failed) && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        any = 1;
        first = sqlite3_column_int64(st, 0);
        last = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (failed)
        return -1;
    if (!any)
        return 0;
    static const int want[] = {EVENT_COL_event_id, EVENT_COL_ts_ns, EVENT_COL_device,
                               EVENT_COL_allocated_bytes, EVENT_COL_reserved_bytes};
    event_scan *s = event_scan_open(db, event_scan_mask(want, 5), first, last, err, errlen);
    if (!s)
        return -1;
    /* The first row of a finest bucket is placed at its own key: the row before it was in an
     * earlier bucket, below this one's start (timeline_levels' rule). */
    int64_t place = INT64_MIN;
    const int64_t *cols[EVENT_STORE_NCOLS];
    long got;
    while ((got = event_scan_next(s, cols)) > 0) {
        const int64_t *v[5];
        event_scan_pick(cols, want, 5, v);
        out->events_read += got;
        for (long r = 0; r < got; r++) {
            if (v[2][r] != device)
                continue;
            int64_t key = li->event_axis ? v[0][r] : v[1][r];
            key = key > 0 ? key : 0;
            place = key > place ? key : place;
            int64_t a = v[3][r], res = v[4][r];
            if (place < out->start) {
                c->known = 1, c->allocated = a, c->reserved = res, c->event_id = v[0][r];
            } else if (place < end) {
                add(&out->buckets[(place - out->start) / out->width], 1, a, a, a, res, res, res,
                    v[0][r], v[0][r]);
            }
        }
    }
    if (got < 0)
        snprintf(err, errlen, "%s", event_scan_error(s));
    event_scan_close(s);
    return got < 0 ? -1 : 0;
}

int view_timeline(sqlite3 *db, int device, int64_t lo, int64_t hi, size_t nbuckets,
                  view_timeline_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    levels_info li;
    if (read_levels(db, &li, err, errlen) != 0)
        return -1;
    if (hi <= lo) {
        snprintf(err, errlen, "an empty window: its end %lld is not after its start %lld",
                 (long long)hi, (long long)lo);
        return -1;
    }
    if (lo < -VIEW_TIMELINE_LIMIT || hi > VIEW_TIMELINE_LIMIT) {
        snprintf(err, errlen, "a window beyond +-2^60 on the axis");
        return -1;
    }
    if (nbuckets < 1)
        nbuckets = 1;
    if (nbuckets > VIEW_TIMELINE_MAX_BUCKETS)
        nbuckets = VIEW_TIMELINE_MAX_BUCKETS;
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    uint64_t need = (span + nbuckets - 1) / nbuckets;
    int64_t width = 1;
    while ((uint64_t)width < need)
        width <<= 1;
    out->event_axis = li.event_axis;
    out->width = width;
    out->start = view_floor_div(lo, width) * width;
    out->n =
        (size_t)(((uint64_t)hi - (uint64_t)out->start + (uint64_t)width - 1) / (uint64_t)width);
    assert(out->n >= 1 && out->n <= nbuckets + 1);
    out->buckets = calloc(out->n, sizeof *out->buckets);
    if (!out->buckets) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    carried c = {0, 0, 0, 0};
    int rc;
    if (width < li.finest) {
        rc = from_events(db, device, &li, out, &c, err, errlen);
    } else {
        int k = 0;
        while (k + 1 < li.count && (li.finest << (3 * (k + 1))) <= width)
            k++;
        rc = from_level(db, device, li.finest << (3 * k), out, &c);
    }
    if (rc != 0) {
        if (!*err)
            snprintf(err, errlen, "reading timeline_levels: %s", sqlite3_errmsg(db));
        view_timeline_free(out);
        return -1;
    }
    out->first_known = out->n;
    for (size_t i = 0; i < out->n; i++) {
        view_bucket *b = &out->buckets[i];
        if (b->events) {
            c.known = 1, c.allocated = b->last_allocated, c.reserved = b->last_reserved;
            c.event_id = b->last_event_id;
        } else if (c.known) {
            b->min_allocated = b->max_allocated = b->last_allocated = c.allocated;
            b->min_reserved = b->max_reserved = b->last_reserved = c.reserved;
            b->max_event_id = b->last_event_id = c.event_id;
        }
        if (!c.known)
            continue;
        if (out->first_known == out->n)
            out->first_known = i;
        out->max_allocated =
            b->max_allocated > out->max_allocated ? b->max_allocated : out->max_allocated;
        out->max_reserved =
            b->max_reserved > out->max_reserved ? b->max_reserved : out->max_reserved;
    }
    return 0;
}

int view_timeline_axis(sqlite3 *db, int *event_axis, int64_t *end, char *err, size_t errlen) {
    levels_info li;
    if (read_levels(db, &li, err, errlen) != 0)
        return -1;
    *event_axis = li.event_axis;
    *end = li.event_axis
               ? analysis_last_event(db) /* not max(): a walk over every row */
               : db_query_i64(db, "SELECT value FROM meta WHERE key = 'last_ts_ns'", 0, 0, 0);
    *end = (*end > 0 ? *end : 0) + 1;
    return 0;
}

void view_timeline_free(view_timeline_result *out) {
    free(out->buckets);
    out->buckets = NULL;
    out->n = 0;
}
