/* analysis.h — the numbers behind `report` and `leaks`, computed from the
 * replayed database for one device and an event window [from, to].
 *
 * Kept apart from the commands so text and JSON print the same facts and
 * tests can check the facts without parsing either. Definitions are
 * DESIGN.md's: reserved, allocated, requested, fragmentation =
 * (reserved - allocated) / reserved, growth = the median of a site's
 * per-step changes in live bytes at step ends. */
#ifndef GMT_ANALYSIS_H
#define GMT_ANALYSIS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct moment {
    int64_t event_id, ts_ns;
    int64_t allocated, requested, reserved, largest_free;
} moment;

typedef struct device_summary {
    int device;
    char name[128];
    int64_t total_bytes; /* 0: unknown */
    moment start;        /* the state entering the window (event 0 for the whole run) */
    moment end;          /* the state at its end */
    moment peak_allocated, peak_requested, peak_reserved;
    moment worst_fragmentation; /* among states with reserved >= 10 % of the peak reserved */
    int64_t allocs, frees;      /* block allocations / completed frees in the window */
    int64_t never_freed_count, never_freed_bytes; /* allocated in the window, live at its end
                                                     (bytes as requested) */
    int64_t ooms, alloc_failed;
    int64_t untracked_at_peak; /* (total - driver free) - reserved; -1: no driver samples */
    int64_t untracked_max;
} device_summary;

/* 1 when [from, to] is the whole run, so the replay's summary tables
 * answer (unless GMT_NO_SUMMARIES is set, which forces the scans). */
int analysis_whole_run(sqlite3 *db, int64_t from, int64_t to);

/* 0 when GMT_NO_SUMMARIES asks for the scans instead of the replay's
 * summaries (the tests hold the two to identical answers), else 1. */
int analysis_summaries_allowed(void);

double frag_of(const moment *m);               /* 0 when nothing is reserved */
const char *frag_rating(double fragmentation); /* good, moderate, serious, severe */

/* The last event of the database and the devices that have events. */
int64_t analysis_last_event(sqlite3 *db);
int analysis_devices(sqlite3 *db, int *devices, int max);

/* A moment from a row whose columns `first`.. are event_id, ts_ns, allocated, requested,
 * reserved and largest free bytes, in that order. */
void analysis_read_moment(sqlite3_stmt *st, int first, moment *m);

/* The state of `device` after event_id (its last row at or before it). */
int analysis_moment(sqlite3 *db, int device, int64_t event_id, moment *out);

int analysis_device_summary(sqlite3 *db, int device, int64_t from, int64_t to, device_summary *out);
/* The same without worst_fragmentation (left the start's) and untracked_* (left -1): on the
 * whole run the rest is a few reads of the summary tables, those two read every step end and
 * the event rows at every driver sample (~0.15 s at 10 M events). For what shows neither (the
 * viewer's /api/summary). */
int analysis_device_summary_brief(sqlite3 *db, int device, int64_t from, int64_t to,
                                  device_summary *out);

/* A site (allocation stack) and how its live bytes move across steps. */
typedef struct site_growth {
    int64_t stack_id;
    int64_t growth_per_step; /* median per-step change at step ends, bytes */
    double bytes_per_min;
    int64_t live_first_step, live_last_step;      /* live bytes at the first/last step end */
    int64_t live_end;                             /* live bytes at the window's end */
    int64_t never_freed_count, never_freed_bytes; /* allocated in the window, live at its end */
    int64_t steps_grown;                          /* steps in which its live bytes went up */
} site_growth;

/* Per site growth over the window's steps, sorted by growth (then by
 * never-freed bytes). Sites with neither growth nor never-freed blocks are
 * left out. *windows gets the number of step-to-step changes used (0 when
 * there are fewer than two step ends: no growth can be measured).
 * *out is malloc'ed (caller frees). */
int analysis_site_growth(sqlite3 *db, int device, int64_t from, int64_t to, site_growth **out,
                         size_t *count, size_t *windows);

/* Top stacks holding memory at an event: bytes and blocks per stack. */
typedef struct stack_bytes {
    int64_t stack_id, bytes, blocks;
} stack_bytes;

int analysis_top_stacks_at(sqlite3 *db, int device, int64_t event_id, size_t limit,
                           stack_bytes **out, size_t *count);

#endif
