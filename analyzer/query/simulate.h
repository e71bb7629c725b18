/* simulate.h — the run's allocation requests replayed through the caching
 * allocator model under another configuration (issue 14, `memanalyze simulate`).
 *
 * The request stream is PyTorch's own, as the database holds it: each block
 * alloc (its requested size and stream), each free_requested and each
 * completed free of the device, in event order; a burst of PyTorch segment
 * frees or unmaps is an empty_cache() call (PyTorch writes no entry for it),
 * replayed as one, unless it is PyTorch's own release-and-retry: the frees
 * right before the segment a retried request got on the recorded device when
 * it was full (sim_options.recorded_capacity), or right before an OOM entry
 * (the retry failed too); the model makes those releases itself. Where every
 * block goes and when segments come and go the model decides
 * (model/alloc_model.h, decide mode), so rounding, splitting, the pools,
 * expandable segments and the device's capacity all act as PyTorch's would. What existed when the
 * recording started (the seed: a snapshot's ring began mid-run) has no
 * history: for the run's own configuration it is taken as recorded (its
 * segments and blocks where they were), for any other its blocks are
 * allocated first, in the order the seed lists them.
 *
 * With the run's own configuration the simulation should reproduce what was
 * recorded; `reproduction` says how closely (the reserved bytes after each
 * request against the recorded ones: the first that differs, how many, the
 * largest difference), so a difference is stated rather than hidden behind a
 * confident number. */
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
    uint64_t asked;     /* what the last failed cudaMalloc (or map of pages) asked for: the
                           request rounded to a segment, else its rounded size */
    uint64_t shortfall; /* asked - free: how much more memory would have done (0: none) */
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
    int compared;             /* 1 when the comparison was possible */
    uint64_t compared_events; /* requests, frees and free requests compared */
    uint64_t differing;       /* ... after which the two differ */
    int64_t first_difference; /* the first such event, or 0 */
    int first_difference_op;  /* its op (TRACE_OP_*) */
    uint64_t first_recorded_reserved, first_simulated_reserved; /* reserved after it, bytes */
    int64_t largest_difference;       /* simulated - recorded reserved where it is largest in
                                         magnitude, bytes (0 when none differ) */
    int64_t largest_difference_event; /* ... after that event */
    uint64_t recorded_peak_reserved;  /* the device's, as the replay found it */
} sim_result;

/* What a simulation does beyond PyTorch's settings. */
typedef struct sim_options {
    int seed_as_recorded;     /* the start state as recorded (the run's own configuration)
                                 rather than allocated */
    int empty_cache_per_step; /* torch.cuda.empty_cache() after every step's end (the
                                 fragmentation guides' remedy) */
    /* the recorded device's memory limit (0: unknown), to tell PyTorch's own release-and-retry
     * (the cached segments freed after a cudaMalloc that failed on a full device, right before
     * the allocation retried, or the OOM entry when the retry failed too) from an
     * empty_cache() call: a fact of the recording, whatever capacity the model runs under */
    uint64_t recorded_capacity;
    int lifetime_pools; /* blocks that outlive the step they were made in (found from
                           their recorded free) in pools of their own, the short-lived in
                           theirs: the best such a policy can do, it knows the future */
    /* reserved over the run, for a picture: the event numbers from 0 (the start) to the device's
     * last PyTorch event (simulate_last_event) split into ncolumns columns, the highest reserved
     * bytes of each in reserved_max (the caller's array, set to -1 first; a column without
     * events stays so), and in oom_columns (the caller's, zeroed; NULL: none) 1 where the model
     * ran out of memory. 0 / NULL: none */
    size_t ncolumns;
    int64_t *reserved_max;
    uint8_t *oom_columns;
} sim_options;

/* Replays device `device`'s requests of the database through a model of `cfg` (its
 * device_capacity the memory limit, 0 for none) with `opt` (NULL: none). 0, or -1 with a
 * one-line message in err (the database cannot be read, the host is out of memory). */
int simulate_run(sqlite3 *db, int device, const am_config *cfg, const sim_options *opt,
                 sim_result *out, char *err, size_t errlen);

/* The number of the device's PyTorch events. */
int64_t simulate_events(sqlite3 *db, int device);

/* The number of the device's last PyTorch event (the end of what sim_options' columns split);
 * 0 when none. */
int64_t simulate_last_event(sqlite3 *db, int device);

/* The number of PyTorch block allocations of `device` in the database: 0 means there is no
 * caching allocator to simulate (a plain CUDA program's trace). -1 when it cannot be read. */
int64_t simulate_requests(sqlite3 *db, int device);

#endif
