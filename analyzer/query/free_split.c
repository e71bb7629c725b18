/* free_split.c — releasable and trapped free memory (see free_split.h):
 * the replay's free_splits rows where it kept the moment, else layouts. */
#include "free_split.h"

#include "analysis.h"
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>

/* Layouts for the moments the replay did not keep: out[index_of[i]] gets the i-th. */
typedef struct missing_points {
    free_split *out;
    const size_t *index_of;
} missing_points;

static int split_of(void *ctx, size_t index, layout *l) {
    const missing_points *m = ctx;
    free_split *f = &m->out[m->index_of[index]];
    /* blocks outside every segment count in the layout's allocated, not here */
    f->reserved = (int64_t)l->reserved_bytes;
    f->releasable = (int64_t)l->releasable_bytes;
    f->trapped = (int64_t)l->trapped_bytes;
    f->allocated = f->reserved - f->releasable - f->trapped;
    layout_free(l);
    return 0;
}

/* The replay's row for (device, event_id) into *f: 1, or 0 when it kept none. */
static int stored(sqlite3_stmt *st, int device, free_split *f) {
    sqlite3_reset(st);
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, f->event_id);
    if (sqlite3_step(st) != SQLITE_ROW)
        return 0;
    f->reserved = sqlite3_column_int64(st, 0);
    f->allocated = sqlite3_column_int64(st, 1);
    f->releasable = sqlite3_column_int64(st, 2);
    f->trapped = sqlite3_column_int64(st, 3);
    return 1;
}

int free_split_at(sqlite3 *db, int device, const int64_t *event_ids, size_t n, free_split *out,
                  char *err, size_t errlen) {
    for (size_t i = 0; i < n; i++)
        out[i] = (free_split){.event_id = event_ids[i]};
    /* a database of an older memanalyze has no free_splits: every moment is a layout then */
    sqlite3_stmt *st = NULL;
    if (analysis_summaries_allowed() &&
        sqlite3_prepare_v2(db,
                           "SELECT reserved_bytes, allocated_bytes, releasable_bytes, trapped_bytes"
                           " FROM free_splits WHERE device = ? AND event_id = ?",
                           -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        st = NULL;
    }
    int64_t *ids = malloc((n ? n : 1) * sizeof *ids);
    size_t *index_of = malloc((n ? n : 1) * sizeof *index_of);
    size_t missing = 0;
    int rc = 0;
    if (!ids || !index_of) {
        rc = -1;
        snprintf(err, errlen, "out of memory");
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (st && stored(st, device, &out[i]))
            continue;
        ids[missing] = event_ids[i];
        index_of[missing++] = i;
    }
    sqlite3_finalize(st);
    missing_points m = {out, index_of};
    if (rc == 0 && missing)
        rc = layout_build_each(db, device, ids, missing, split_of, &m, err, errlen);
    free(ids);
    free(index_of);
    return rc;
}

double free_split_trapped_ratio(const free_split *f) {
    return f->reserved > 0 ? (double)f->trapped / (double)f->reserved : 0;
}
