/* rank_stats.h — the numbers across the ranks of one job, from each rank's summary
 * (run_summary.h): the imbalance of peak allocated, the bottleneck rank and the sites that make
 * it so, the first rank to run out, and the ranks that leak alone.
 *
 * Definitions:
 *   imbalance          max / mean of the ranks' peak allocated (1.0: balanced); spread = max - min
 *   bottleneck         the rank with the highest peak allocated
 *   its sites          the sites whose live bytes at the bottleneck's peak exceed the median
 *                      rank's bytes of the same site (at that rank's own peak; a rank without
 *                      the site counts 0), sites matched by frames, largest excess first
 *   first_to_run_out   the rank whose growth trend reaches its device's memory at the earliest
 *                      step (run_summary.limit_step); none when no rank's trend does
 *   leaking            a rank whose growth per step stands out: above the median rank's by more
 *                      than 3 median absolute deviations and by at least 1 MiB per step (a
 *                      leak on one rank, not the job's own growth) */
#ifndef GMT_RANK_STATS_H
#define GMT_RANK_STATS_H

#include "run_summary.h"
#include "stack_names.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rank_entry {
    const char *input;
    const char *failed; /* why it could not be read (one line), NULL: read */
    int64_t rank;       /* from the trace's process, else the file name, else its place */
    run_summary s;
    run_site *sites; /* at its peak, by key; the strings are the entry's own */
    size_t nsites;
    char *strings;
    int leaking;       /* set by rank_stats_build */
    long same_rank_as; /* set by rank_stats_build: the entry just before it when that one has
                          the same rank (both kept, each with its input); -1: none */
} rank_entry;

/* The entry of `input` (kept as the entry's name, not copied) from its database at db_path:
 * its summary of `device` (-1: its highest peak) and its sites at the peak, the database opened
 * as every command opens one (db_open.h) and closed again before this returns: a fleet is read one
 * database at a time (thousands of open connections would hold a page cache each, and run out of
 * file descriptors). Its rank: the trace's process's, else the number after "rank" in the file name
 * (rank3_step500.db, rank-3.zst), else the last number in its base name (trace.3.zst,
 * memrec-node7-3.zst), else `place`. 0, or -1 with a one-line message in err (and the entry
 * holds nothing to release). */
int rank_entry_load(rank_entry *e, const char *input, const char *db_path, size_t place, int device,
                    char *err, size_t errlen);
void rank_entry_release(rank_entry *e);

typedef struct rank_excess {
    const char *site, *key;
    int64_t bytes, median_bytes;
    int64_t over_median; /* bytes - median_bytes, > 0 */
} rank_excess;

typedef struct rank_stats {
    rank_entry *ranks;  /* the caller's array, sorted here: by rank, the failed ones last */
    size_t count, read; /* entries, and those read (the first `read` after sorting) */
    size_t failed;      /* count - read: the entries that could not be read (the last ones) */
    double imbalance;
    int64_t mean_peak, spread, median_growth;
    long bottleneck, first_to_run_out; /* indexes into ranks; -1: none */
    rank_excess *excess;               /* the bottleneck's sites over the median */
    size_t nexcess;
    size_t duplicates;        /* read entries whose rank an earlier entry has too (names misread,
                                 or a rank's process recorded twice): kept, each with its input */
    int64_t *duplicate_ranks; /* those ranks, each once, in order */
    size_t nduplicate_ranks;
} rank_stats;

/* Sorts `ranks` and works out the numbers; `top` bounds the sites kept (0: all). 0, or -1
 * with a one-line message in err. */
int rank_stats_build(rank_entry *ranks, size_t count, size_t top, rank_stats *out, char *err,
                     size_t errlen);
void rank_stats_release(rank_stats *st);

#endif
