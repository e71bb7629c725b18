/* simulate.h — the run's allocation requests replayed through the caching
 * allocator model under another configuration (issue 14, `memanalyze simulate`).
 *
 * The request stream is PyTorch's own, as the database holds it: each block
 * alloc (its requested size and stream), each free_requested and each
 * completed free of the device, in event order; a burst of PyTorch segment
 * frees or unmaps that no allocation retry explains is an empty_cache() call
 * (PyTorch writes no entry for it): replayed as one. The model decides where
 * every block goes and when segments come and go (model/alloc_model.h,
 * decide mode), so rounding, splitting, the pools, expandable segments and
 * the device's capacity all act as PyTorch's would. What existed when the
 * recording started (the seed: a snapshot's ring began mid-run) has no
 * history: for the run's own configuration it is taken as recorded (its
 * segments and blocks where they were), for any other its blocks are
 * allocated first, in the order the seed lists them.
 *
 * With the run's own configuration the simulation should reproduce what was
 * recorded; `reproduction` says how closely (the reserved bytes after each
 * request against the recorded ones), so a difference is stated rather than
 * hidden behind a confident number. */
#ifndef GMT_SIMULATE_H
#define GMT_SIMULATE_H

#include "alloc_model.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sim_oom {
    int64_t event_id;   /* the recorded alloc that the model could not place */
    uint64_t requested; /* its requested bytes */
    uint64_t free;      /* what the device had left then (capacity - reserved) */
} sim_oom;

typedef struct sim_result {
    uint64_t requests;                      /* allocs replayed (the seed's included) */
    uint64_t peak_reserved, peak_allocated; /* bytes */
    int64_t peak_reserved_event, peak_allocated_event;
    uint64_t releasable_at_peak, trapped_at_peak; /* at the peak reserved */
    uint64_t reserved_end, releasable_end, trapped_end;
    uint64_t driver_allocations; /* segments allocated and pages mapped (cudaMalloc/cuMemMap) */
    uint64_t empty_caches;       /* empty_cache() calls found in the stream and replayed */
    uint64_t ooms;               /* requests the model could not place */
    uint64_t recorded_ooms;      /* the recording's OOMs (requests it could not place) */
    uint64_t recorded_ooms_kept; /* ... that happen here too */
    sim_oom first_oom;           /* when ooms > 0 */
    uint64_t seed_blocks;        /* blocks live at the start of the recording */
    /* reproduction: the reserved bytes after each request against the recorded row's (only
     * when the device's memory is PyTorch's alone: no other source of segments) */
    int compared;                    /* 1 when the comparison was possible */
    uint64_t compared_events;        /* requests, frees and free requests compared */
    uint64_t differing;              /* ... after which the two differ */
    int64_t first_difference;        /* the first such event, or 0 */
    uint64_t recorded_peak_reserved; /* the device's, as the replay found it */
} sim_result;

/* What a simulation does beyond PyTorch's settings. */
typedef struct sim_options {
    int seed_as_recorded;     /* the start state as recorded (the run's own configuration)
                                 rather than allocated */
    int empty_cache_per_step; /* torch.cuda.empty_cache() after every step's end (the
                                 fragmentation guides' remedy) */
    int lifetime_pools;       /* blocks that outlive the step they were made in (found from
                                 their recorded free) in pools of their own, the short-lived in
                                 theirs: the best such a policy can do, it knows the future */
    /* reserved over the run, for a picture: the device's PyTorch events split into ncolumns
     * columns in order, the highest reserved bytes of each in reserved_max (the caller's
     * array, set to -1 first; a column without events stays so). 0 / NULL: none */
    size_t ncolumns;
    int64_t *reserved_max;
} sim_options;

/* Replays device `device`'s requests of the database through a model of `cfg` (its
 * device_capacity the memory limit, 0 for none) with `opt` (NULL: none). 0, or -1 with a
 * one-line message in err (the database cannot be read, the host is out of memory). */
int simulate_run(sqlite3 *db, int device, const am_config *cfg, const sim_options *opt,
                 sim_result *out, char *err, size_t errlen);

/* The number of the device's PyTorch events (what sim_options' columns split). */
int64_t simulate_events(sqlite3 *db, int device);

/* The number of PyTorch block allocations of `device` in the database: 0 means there is no
 * caching allocator to simulate (a plain CUDA program's trace). -1 when it cannot be read. */
int64_t simulate_requests(sqlite3 *db, int device);

#endif
