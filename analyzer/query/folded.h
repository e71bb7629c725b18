/* folded.h — whole stacks and their bytes, for a flame graph (`memanalyze export --to folded`):
 * the bytes live per stack at a moment (the peak, a WHEN), the growth per step per stack as
 * `leaks` measures it (analysis_site_growth), or the bytes allocated per stack in a window.
 *
 * A row is one stack's shown frames (stack_frames_shown: the site's frame, the Python frames,
 * the frames a label may tell stacks apart by; allocator, runtime, interpreter and recording
 * plumbing left out), outermost first, each as every label writes it (stack_frame_label), and
 * its bytes; stacks whose shown frames read the same are one row, their bytes summed. Rows of 0
 * bytes are left out; the rows are sorted by their frames. The text of the frames is the
 * analyzer's: escaping it for a format (a ';' inside a frame) is the printer's. */
#ifndef GMT_FOLDED_H
#define GMT_FOLDED_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct folded_row {
    char **frames; /* outermost first; "no stack" or "unknown stack" for a stack without frames */
    size_t nframes;
    int64_t bytes; /* > 0 */
    size_t stacks; /* the database's stacks that read as these frames */
} folded_row;

typedef struct folded_table {
    folded_row *rows;
    size_t n;
    int64_t total;    /* the sum of the rows' bytes */
    int64_t event_id; /* folded_live_at / folded_peak: the moment */
    size_t windows;   /* folded_leaks: the step-to-step changes measured (0: fewer than two step
                         ends, so no row) */
} folded_table;

/* The bytes live per stack on `device` after event_id (every block allocated at or before it
 * and not freed by then: the sum is the device's allocated bytes there). 0, or -1 with a
 * one-line message in err. */
int folded_live_at(sqlite3 *db, int device, int64_t event_id, folded_table *out, char *err,
                   size_t errlen);

/* folded_live_at at the peak of allocated bytes in [from, to] (the device's peak for the whole
 * run: report's peak_allocated). */
int folded_peak(sqlite3 *db, int device, int64_t from, int64_t to, folded_table *out, char *err,
                size_t errlen);

/* The growth per step of each stack whose live bytes grow (analysis_site_growth's
 * growth_per_step > 0: `leaks`' list of growing sites) in [from, to]. */
int folded_leaks(sqlite3 *db, int device, int64_t from, int64_t to, folded_table *out, char *err,
                 size_t errlen);

/* The bytes of the blocks allocated on `device` in the window (event_id in (from, to], as
 * report's allocations count), per stack. */
int folded_allocated(sqlite3 *db, int device, int64_t from, int64_t to, folded_table *out,
                     char *err, size_t errlen);

void folded_release(folded_table *t);

#endif
