/* run_summary.h — one run (one device of one input) in a few numbers, read from the replay's
 * summary tables only (devices, steps, step_ends, free_splits, segments, site_stats,
 * site_steps, meta), never the events: what `compare` puts side by side and `ranks` gathers
 * over a fleet, so a summary costs the same for a thousand events or a billion.
 *
 * Definitions are DESIGN.md's and report's: fragmentation = (reserved - allocated) / reserved,
 * the trapped ratio = trapped / reserved (free_split.h), both at step ends (and at the peak and
 * the end, what a run without steps is said by); growth = the median
 * change of allocated bytes from one step end to the next, and the step at which that trend
 * reaches the device's memory (analysis_headroom). */
#ifndef GMT_RUN_SUMMARY_H
#define GMT_RUN_SUMMARY_H

#include "stack_names.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct run_summary {
    int device;
    int64_t rank;        /* meta rank (RANK of torchrun, SLURM_PROCID, ...); -1: unknown */
    char host[128];      /* "": unknown */
    char command[256];   /* the command line; "": unknown */
    char settings[512];  /* allocator settings as PYTORCH_CUDA_ALLOC_CONF text; "": unknown */
    int64_t total_bytes; /* the device's memory; 0: unknown */
    int64_t steps;       /* step ends on the device */
    int64_t peak_allocated, peak_allocated_event, peak_allocated_step; /* step: -1 none */
    int64_t peak_requested;
    int64_t peak_reserved, peak_reserved_event, peak_reserved_step;
    double frag_at_peak, trapped_at_peak; /* at the peak allocated */
    double frag_at_end, trapped_at_end;   /* after the device's last event */
    double frag_mean, frag_max;           /* over step ends (0 without steps: say the end and */
    double trapped_mean, trapped_max;     /* the peak instead, never these) */
    int64_t segments_max;                 /* the most segments live at once */
    int64_t ooms;
    int64_t growth_per_step; /* bytes */
    int64_t limit_step;      /* -1: the trend never reaches the device (or its size is unknown) */
    int64_t top_growth_stack, top_growth_per_step; /* the site growing fastest; stack 0: none */
    char top_growth_site[256];                     /* its label (stack_label) */
    int64_t *allocated_at_step, *reserved_at_step; /* per step end, in order (malloc'ed) */
    int64_t *step_numbers;
} run_summary;

/* The summary of `device` (-1: the device with the highest peak). 0, or -1 with a one-line
 * message in err (no such device, out of memory, a database without summaries). */
int run_summary_read(sqlite3 *db, int device, run_summary *out, char *err, size_t errlen);
void run_summary_release(run_summary *s);

/* A site's live bytes at a moment, sites matched across runs by their frames (stack key). */
typedef struct run_site {
    const char *key;          /* named_stack.key: owned by the stack_names cache */
    const char *label;        /* stack_labels_distinct over the run's sites: owned by the cache */
    const named_stack *stack; /* the key's first stack: owned by the cache */
    int64_t bytes;
} run_site;

/* The live bytes per site key of `device` at its peak allocated (site_stats), or at
 * `event_id` when it is not -1 (a pass over the events up to it), sorted by key; stacks with
 * the same key are one site. *out is malloc'ed. 0, or -1 when out of memory or on a database
 * error. */
int run_sites_at(sqlite3 *db, int device, int64_t event_id, stack_names *names, run_site **out,
                 size_t *count);

/* Labels n sites (stack_labels_distinct over their stacks), the labels kept by names. 0, or
 * -1 when out of memory. */
int run_sites_label(stack_names *names, run_site *sites, size_t n);

/* The bytes of `key` among n sites sorted by key (run_sites_at), 0 when absent. */
int64_t run_site_bytes(const run_site *sites, size_t n, const char *key);

#endif
