/* event_scan.h — event_rows in event_id order, a batch of columns at a time, for the passes that
 * read every event (the categories' sweep, the phase timeline).
 *
 * Through SQL a full pass costs more in SQLite's per-value calls than in the work itself (a
 * 10 M-event sweep spent ~60 % of its 3 s there). On a database that keeps an event store the
 * scan decodes the chunks itself, only the columns asked for; on a plain table (`import -o`, an
 * older database) it reads the same rows through SQL. Either way the caller sees the same
 * arrays. */
#ifndef GMT_EVENT_SCAN_H
#define GMT_EVENT_SCAN_H

#include "event_store.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define EVENT_SCAN_COLUMN(name) (1u << EVENT_COL_##name)

typedef struct event_scan event_scan;

/* A scan of the rows with first <= event_id <= last, the columns in `columns` (a mask of
 * EVENT_SCAN_COLUMN bits). NULL with a one-line message on an error. */
event_scan *event_scan_open(sqlite3 *db, uint32_t columns, int64_t first, int64_t last, char *err,
                            size_t errlen);

/* The same rows newest first: batches come last first, and the rows inside a batch are still in
 * ascending order (read each batch from its end). */
event_scan *event_scan_open_backward(sqlite3 *db, uint32_t columns, int64_t first, int64_t last,
                                     char *err, size_t errlen);

/* The next batch: its row count (0 at the end, -1 on an error, then event_scan_error says
 * why); cols[c] points at that many values of column c for the columns asked for (NULL as
 * EVENT_STORE_NULL), valid until the next call. */
long event_scan_next(event_scan *s, const int64_t *cols[EVENT_STORE_NCOLS]);

const char *event_scan_error(const event_scan *s);

/* From now on the calling thread's scans end, at their next batch, with an error ("stopped")
 * once *flag is nonzero (read atomically); NULL: they never stop early. For a thread that builds
 * something long while others may ask it to stop (the viewer's builder: a 100 M-event pass is a
 * minute, and a Ctrl-C must not wait for it). Other threads' scans are not affected. */
void event_scan_stop_when(const int *flag);

/* Whether the calling thread was asked to stop (its flag above is set): for the stages of such
 * a build that come after its scan (the blocks index's sorts: half of its minute at 100 M). */
int event_scan_stop_asked(void);

/* A scanned value, or `dflt` where the column is NULL: SQL's coalesce(column, dflt). */
static inline int64_t event_value_or(int64_t v, int64_t dflt) {
    return v == EVENT_STORE_NULL ? dflt : v;
}

/* The mask of the columns want[0..n) (EVENT_COL_* values), for event_scan_open. */
uint32_t event_scan_mask(const int *want, size_t n);

/* After event_scan_next: v[k] = cols[want[k]], the columns in the caller's own order. */
void event_scan_pick(const int64_t *const cols[EVENT_STORE_NCOLS], const int *want, size_t n,
                     const int64_t **v);

void event_scan_close(event_scan *s);

#endif
