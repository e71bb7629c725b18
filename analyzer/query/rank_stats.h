/* rank_stats.h — the numbers across the ranks of one job, from each rank's summary
 * (run_summary.h): the imbalance of peak allocated, the bottleneck rank and the sites that make
 * it so, the ranks that ran out and the first to, the ranks that leak alone, and each rank's
 * devices compared like ranks (device_balance.h).
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

#include "device_balance.h"
#include "run_summary.h"
#include "stack_names.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rank_entry {
    const char *input;
    const char *failed; /* why it could not be read (one line), NULL: read */
    int64_t rank;       /* from the trace's process, else the file name, else numbered in order
                           (rank_from says which) */
    enum { RANK_FROM_TRACE, RANK_FROM_NAME, RANK_FROM_ORDER } rank_from;
    run_summary s;
    int64_t input_ooms;      /* OOMs of its input, all devices (s.ooms: of s.device only) */
    int64_t first_oom_event; /* its input's first OOM, on any device; -1: none */
    int first_oom_device;
    int64_t first_oom_step;  /* the step holding it; -1: none */
    int64_t first_oom_ts_ns; /* into its trace */
    int64_t t0_unix_ns;      /* the trace's wall clock at ts 0; 0: unknown */
    device_balance devices;  /* its devices with events, compared like ranks */
    run_site *sites;         /* at its peak, by key; the strings are the entry's own */
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
 * file descriptors). Its rank: the trace's process's, else an explicit rank in the file name
 * (rank_of_name), else none yet: rank_stats_build numbers those in order. 0, or -1 with a one-line
 * message in err (and the entry holds nothing to release). */
int rank_entry_load(rank_entry *e, const char *input, const char *db_path, int device, char *err,
                    size_t errlen);

/* The rank a file name states, -1: none. Only an explicit pattern of its base name: "rank"
 * (not inside a word) then an optional '-', '_' or '.' and digits (rank3_step500.db, rank-3.zst,
 * RANK_3.pickle), or the digits of a whole dot-separated part right before the input's endings,
 * as `memrec -o trace.%r.zst` writes them (trace.3.zst, job.3.zst.db). Other digits are never a
 * rank: m512.zst, pt20.pickle, memrec-node7-4242.zst (the default pattern memrec-%h-%p.zst
 * ends in the pid). */
int64_t rank_of_name(const char *path);
void rank_entry_release(rank_entry *e);

/* The file name part of an input's path (after its last '/'): how `ranks` and the viewer name an
 * input beside its rank. */
const char *rank_input_name(const char *path);
/* Where an entry's rank came from, as `ranks --json` and /api/inputs say it: "trace",
 * "file name" or "order". */
const char *rank_from_word(const rank_entry *e);

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
    long *ran_out;                     /* indexes of the ranks that ran out, first first */
    size_t nran_out;
    int ran_out_wall_clock; /* 1: ordered by wall clock; 0: by the time into each trace */
    long *forecast;         /* indexes of the forecasts, earliest step first */
    size_t nforecast;
    size_t numbered;         /* read entries whose rank is their place in order (RANK_FROM_ORDER) */
    size_t devices_compared; /* read entries with 2+ devices with events */
    rank_excess *excess;     /* the bottleneck's sites over the median */
    size_t nexcess;
    size_t duplicates;        /* read entries whose rank an earlier entry has too (names misread,
                                 or a rank's process recorded twice): kept, each with its input */
    int64_t *duplicate_ranks; /* those ranks, each once, in order */
    size_t nduplicate_ranks;
} rank_stats;

/* Numbers the entries without a rank (in the order given: the first unranked input gets the
 * lowest number, after the highest rank known when some are known), sorts `ranks` and works out
 * the numbers; `top` bounds the sites kept (0: all). 0, or -1
 * with a one-line message in err. */
int rank_stats_build(rank_entry *ranks, size_t count, size_t top, rank_stats *out, char *err,
                     size_t errlen);
void rank_stats_release(rank_stats *st);

#endif
