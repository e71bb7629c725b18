/* diff.h — what `memanalyze diff` says, as plain structs; its text and its JSON print these and
 * nothing else.
 *
 *   diff INPUT --from WHEN --to WHEN (diff_points_read)
 *     the blocks live at one point only (a block is one alloc row: the same block at both
 *     points is no change), per allocation stack: bytes and counts added and removed, largest
 *     net change first; the segments (segments rows) added and removed; the totals at both
 *     points and their change.
 *   diff A B --at WHEN (diff_runs_add, diff_runs_read)
 *     two runs: stacks matched by their frames' (function, file name) sequence (stack_names.h's
 *     key), since ids and addresses differ between runs; per stack the live bytes and blocks
 *     in A and in B, and the stacks only one run has.
 *
 * The live sets come from layout.h (one pass over the rows for both points of one input), the
 * totals from the timeline (layout_timeline_at), the names from stack_names.h. Nothing here
 * prints. Errors: DIFF_ERR_WHEN, a WHEN that does not resolve (the message is the user's
 * answer as it is); DIFF_ERR, anything else (no events on the device, the layout could not be
 * built, out of memory). */
#ifndef GMT_DIFF_H
#define GMT_DIFF_H

#include "layout.h"
#include "stack_names.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

enum { DIFF_OK = 0, DIFF_ERR_WHEN = -1, DIFF_ERR = -2 };

/* One point of one input: its WHEN resolved, and the totals there. */
typedef struct diff_point {
    const char *when; /* as given */
    int64_t event_id;
    char described[128];  /* when_describe */
    layout_totals totals; /* the timeline row at it (zero when there is none) */
    size_t live_blocks;   /* the layout's (blocks outside any live segment included) */
} diff_point;

/* The second point's totals minus the first's (to - from; B - A). */
typedef struct diff_change {
    int64_t allocated_bytes, requested_bytes, reserved_bytes, segments, live_blocks;
} diff_change;

/* ---- diff INPUT --from WHEN --to WHEN ------------------------------------------------------ */

/* One stack's blocks live at one point only. */
typedef struct diff_stack {
    int64_t stack_id;
    const named_stack *stack; /* frames and site; NULL when out of memory */
    uint64_t added_bytes, added_count, removed_bytes, removed_count;
    int64_t net_bytes, net_count; /* added - removed */
    char label[256];              /* the list's label (stack_labels_distinct over the rows) */
} diff_stack;

typedef struct diff_points {
    int device;
    int all; /* the stacks that replaced blocks only are listed too (--all) */
    diff_point from, to;
    diff_change change;
    uint64_t segments_added, segments_added_bytes, segments_removed, segments_removed_bytes;
    size_t stacks_touched;       /* stacks with a block live at one point only; 0: the same
                                    blocks are live at both */
    size_t stacks_changed;       /* of them, those whose live bytes or block count changed */
    size_t stacks_replaced_only; /* the others: blocks replaced, bytes and count the same */
    uint64_t replaced_bytes;     /* what those replaced, each way */
    size_t stacks_listed;        /* stacks_changed, plus stacks_replaced_only with `all` */
    diff_stack *rows; /* the first `top` listed, largest net change first (either sign), then
                         most net blocks, most added, stack id */
    size_t nrows;
    stack_names *names; /* owned: the rows' stacks */
} diff_points;

/* The diff of `device` (wanted, or the default when < 0: when_default_device) of db between
 * two WHENs, the first `top` stacks (0: all) named. db stays the caller's. DIFF_OK and *d
 * (diff_points_free), or DIFF_ERR_WHEN / DIFF_ERR with a one-line message in err ("INPUT:
 * device N has no events" names the input). */
int diff_points_read(sqlite3 *db, const char *input, long device, const char *from_when,
                     const char *to_when, size_t top, int all, diff_points *d, char *err,
                     size_t errlen);
void diff_points_free(diff_points *d);

/* ---- diff A B --at WHEN -------------------------------------------------------------------- */

/* The stacks of one key: what each run holds of them. */
typedef struct diff_pair {
    const named_stack *stack; /* A's first stack of the key, else B's: site and frames */
    uint64_t a_bytes, a_count, b_bytes, b_count; /* 0 in a run without the key */
    int64_t diff_bytes, diff_count;              /* B - A */
    uint64_t bytes, count; /* the run's that has the key, when only one has it */
    char label[256];       /* stack_labels_distinct over the rows of the three groups shown */
} diff_pair;

/* One group of pairs, largest |diff_bytes| first (then the larger difference, the larger
 * side, the key): the first `top` of `total`. */
typedef struct diff_pairs {
    int matched; /* the keys both runs have, else those of one run */
    diff_pair *rows;
    size_t count, total;
} diff_pairs;

struct diff_site;

typedef struct diff_run {
    const char *input;
    int device;
    diff_point at;
    /* owned, released by diff_runs_free */
    sqlite3 *db;
    stack_names *names;
    struct diff_site *sites; /* the live bytes per key */
    size_t nsites;
} diff_run;

typedef struct diff_runs {
    const char *at; /* the WHEN of both */
    diff_run run[2];
    size_t nruns; /* added so far */
    diff_change change;
    diff_pairs both, only_a, only_b;
    size_t sites; /* keys in either run; 0: no live blocks in either */
} diff_runs;

/* Adds the next run (A, then B): db becomes d's (diff_runs_free closes it, also when this
 * fails), its device `device`, or the default when < 0. DIFF_OK, or DIFF_ERR with "INPUT:
 * device N has no events" in err. */
int diff_runs_add(diff_runs *d, const char *input, sqlite3 *db, long device, char *err,
                  size_t errlen);

/* Both runs at `at`, the first `top` rows of each group (0: all). DIFF_OK, or DIFF_ERR_WHEN /
 * DIFF_ERR with a one-line message in err (naming the input it is about). */
int diff_runs_read(diff_runs *d, const char *at, size_t top, char *err, size_t errlen);

/* Frees what d holds and closes its databases; d may be zeroed (never added to). */
void diff_runs_free(diff_runs *d);

#endif
