/* plots_heatmap.c — the address-space heatmap from the database.
 *
 * The replay keeps, for every timeline bucket, the fraction allocated of
 * each row of the squeezed address space (heatmap_rows; the rows are
 * heat_rows.h's). Drawing is then reading those small rows: each time column
 * of the picture shows the last bucket that began before the column ends.
 * The segment boundaries come from the same squeeze, rebuilt from the
 * segments table (the ranges the replay saw). */
#include "plots.h"

#ifdef GMT_HAVE_CAIRO

#include "db_query.h"
#include "gmt_vocab.h"
#include "heat_rows.h"
#include "render.h"
#include "units.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLUMNS 800

/* The squeeze of the device's address space, for the boundaries and the
 * y axis: the ranges of its segments rows. */
static heat_rows *load_rows(sqlite3 *db, int device) {
    heat_rows *h = heat_rows_new();
    sqlite3_stmt *st = NULL;
    if (!h || db_prepare(db,
                         "SELECT addr, size FROM segments WHERE device = ? AND "
                         "kind = 'device'",
                         &st) != SQLITE_OK) {
        heat_rows_free(h);
        return NULL;
    }
    sqlite3_bind_int(st, 1, device);
    while (sqlite3_step(st) == SQLITE_ROW)
        if (heat_rows_add_range(h, (uint64_t)sqlite3_column_int64(st, 0),
                                (uint64_t)sqlite3_column_int64(st, 1)) != 0)
            break;
    sqlite3_finalize(st);
    heat_rows_freeze(h);
    return h;
}

/* When column `col` of the picture ends, ns from the first event. */
static int64_t column_end(int64_t t0, int64_t t1, size_t col) {
    return t0 + (int64_t)((double)(col + 1) * (double)(t1 - t0) / COLUMNS);
}

static void put_column(float *grid, size_t col, const float *rows) {
    for (size_t r = 0; r < HEAT_ROWS; r++)
        grid[r * COLUMNS + col] = rows[r];
}

int plot_heatmap(sqlite3 *db, const plot_request *rq, const char *path, char *err, size_t errlen) {
    int64_t bucket_ns = db_query_int(db, "SELECT value FROM meta WHERE key = 'bucket_ns'", 1);
    int64_t t0 = db_query_i64(db, "SELECT ts_ns FROM event_rows WHERE event_id = ?1",
                              rq->from > 0 ? rq->from : 1, 0, 0);
    int64_t t1 = db_query_i64(db, "SELECT ts_ns FROM event_rows WHERE event_id = ?1", rq->to, 0, 1);
    if (t1 <= t0)
        t1 = t0 + 1;
    heat_rows *h = load_rows(db, rq->device);
    float *fraction = calloc((size_t)HEAT_ROWS * COLUMNS, sizeof *fraction);
    float current[HEAT_ROWS];
    for (size_t r = 0; r < HEAT_ROWS; r++)
        current[r] = -1.0f; /* before the first bucket: nothing reserved */
    sqlite3_stmt *st = NULL;
    int rc = h && fraction ? 0 : -1;
    if (rc == 0 && db_prepare(db,
                              "SELECT bucket, fractions FROM heatmap_rows WHERE "
                              "device = ?1 AND bucket_ns = ?2 AND bucket * ?2 < ?3 "
                              "ORDER BY bucket",
                              &st) != SQLITE_OK)
        rc = -1;
    if (rc == 0) {
        sqlite3_bind_int(st, 1, rq->device);
        sqlite3_bind_int64(st, 2, bucket_ns);
        sqlite3_bind_int64(st, 3, t1);
    }
    /* Where each column ends, in the events' times. Without timestamps the axis counts the
     * report's event ids (GMT_UNTIMED_EVENT_NS apart: render_options.ns_per_event), and one
     * snapshot entry can make several events, so a column ends at the time of its last
     * event id rather than at an even share of the times. */
    int untimed = !when_has_timestamps(db);
    int64_t first_id = rq->from > 0 ? rq->from : 1, last_id = rq->to > first_id ? rq->to : first_id;
    int64_t *ends = calloc(COLUMNS, sizeof *ends);
    if (!ends)
        rc = -1;
    for (size_t c = 0; ends && c < COLUMNS; c++)
        ends[c] = !untimed
                      ? column_end(t0, t1, c)
                      : db_query_i64(db, "SELECT ts_ns FROM event_rows WHERE event_id = ?1",
                                     first_id + (int64_t)((double)(c + 1) *
                                                          (double)(last_id - first_id) / COLUMNS),
                                     0, t1);
    size_t col = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int64_t start = sqlite3_column_int64(st, 0) * bucket_ns;
        /* the columns that end before this bucket begins show the state so far */
        for (; col < COLUMNS && ends[col] < start; col++)
            put_column(fraction, col, current);
        const void *blob = sqlite3_column_blob(st, 1);
        if (blob && (size_t)sqlite3_column_bytes(st, 1) == sizeof current)
            memcpy(current, blob, sizeof current);
    }
    for (; rc == 0 && col < COLUMNS; col++)
        put_column(fraction, col, current);
    sqlite3_finalize(st);
    free(ends);
    size_t nbounds = 0, *bounds = h ? heat_rows_bounds(h, &nbounds) : NULL;
    char title[512], subtitle[256], b1[32];
    snprintf(title, sizeof title, "Heatmap: %s, device %d",
             rq->input ? (strrchr(rq->input, '/') ? strrchr(rq->input, '/') + 1 : rq->input)
                       : "trace",
             rq->device);
    snprintf(subtitle, sizeof subtitle,
             "address space (segments stacked, %s) over time; colour: the fraction of reserved "
             "memory that is allocated",
             units_bytes(h ? heat_rows_total(h) : 0, b1, sizeof b1));
    int history = when_has_history(db);
    render_heatmap rh = {.title = title,
                         .subtitle = history ? subtitle : PLOT_NO_HISTORY,
                         .ncols = history ? COLUMNS : 0,
                         .nrows = HEAT_ROWS,
                         .start_ns = untimed ? first_id * GMT_UNTIMED_EVENT_NS : t0,
                         .end_ns = untimed ? last_id * GMT_UNTIMED_EVENT_NS : t1,
                         .bytes_per_row = h ? (int64_t)heat_rows_bytes_per_row(h) : 1,
                         .fraction = fraction,
                         .nbounds = bounds ? nbounds : 0,
                         .bound_rows = bounds};
    render_options ro = {
        .width = rq->width, .height = rq->height, .ns_per_event = ns_per_event(db)};
    if (rc != 0)
        snprintf(err, errlen, "reading the database for the heatmap: %s", sqlite3_errmsg(db));
    else
        rc = render_heatmap_draw(&rh, path, &ro, err, errlen);
    free(bounds);
    free(fraction);
    heat_rows_free(h);
    return rc;
}

#endif
