/* run_compare.h — what `memanalyze compare` says beyond each run's summary (run_summary.h):
 * each run's sites at its peak allocated (or at a WHEN), the sites whose live bytes differ from
 * the baseline's (the first run's), matched by their frames (stack key), not by ids or
 * addresses, largest difference first; and the picture of every run by step (`compare -o`).
 *
 * Usage: compare_run_read for each run in turn (its database open), compare_against for each
 * run but the baseline, then print; compare_run_release. */
#ifndef GMT_RUN_COMPARE_H
#define GMT_RUN_COMPARE_H

#include "run_summary.h"
#include "stack_names.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* A site's live bytes in the baseline and in a run; one of them may lack it (0 bytes). */
typedef struct site_difference {
    const char *key, *label; /* owned by the compare_run of either */
    int64_t baseline, bytes;
    int64_t difference; /* bytes - baseline: never 0 */
} site_difference;

typedef struct compare_run {
    run_summary s;
    stack_names *names; /* owns the sites' keys and labels */
    run_site *sites;    /* at the moment compared, sorted by key */
    size_t nsites;
    site_difference *differences; /* against the baseline (compare_against), largest |difference|
                                     first, then by key; none for the baseline */
    size_t ndifferences;
} compare_run;

/* The run on `device` of db: its summary and its sites at its peak allocated, or at `at` (a
 * WHEN, when not NULL). 0, or -1 with a one-line message in err (no such device, a bad WHEN,
 * the database's message), *out then holding nothing. */
int compare_run_read(sqlite3 *db, int device, const char *at, compare_run *out, char *err,
                     size_t errlen);

/* run's differences from baseline into run->differences. 0, or -1 when out of memory. */
int compare_against(const compare_run *baseline, compare_run *run);

void compare_run_release(compare_run *r);

/* `compare -o`: every run's allocated and reserved at its step ends, named by labels[i], with
 * the device's memory as a line when all runs agree on it. 0, or -1 with the message in err (also
 * when no run has steps: no empty chart is drawn). */
int compare_plot(const compare_run *runs, const char *const *labels, size_t n, const char *path,
                 char *err, size_t errlen);

#endif
