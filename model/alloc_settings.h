/* alloc_settings.h — PyTorch's CUDA caching-allocator settings (PYTORCH_CUDA_ALLOC_CONF), read
 * and written in one place.
 *
 * Where settings come from: a snapshot's `allocator_settings` dict (PyTorch's names, e.g.
 * max_split_size in bytes and -1 for unlimited, roundup_power2_divisions keyed by MiB), the raw
 * PYTORCH_CUDA_ALLOC_CONF string the dict also carries (settings that have no key of their own,
 * such as max_non_split_rounding_mb, appear only there), or a `--config` the user gives. All of
 * them become one am_settings; am_settings_config turns it into the model's configuration and
 * am_settings_json into the text the database keeps (meta 'allocator_settings').
 *
 * The syntax is PyTorch's (c10/core/AllocatorConfig.cpp, c10/cuda/CUDAAllocatorConfig.cpp):
 * `key:value` pairs separated by commas, spaces ignored, roundup_power2_divisions either one
 * number for every interval or `[MiB:divisions, ..., >:divisions]`. The checks are PyTorch's
 * too (max_split_size_mb >= 20, divisions a power of two or 0, a threshold in (0, 1), True or
 * False for flags); a key PyTorch does not know is an error, as it is there.
 *
 * Pure data and pure functions: nothing allocates, nothing prints. */
#ifndef GMT_ALLOC_SETTINGS_H
#define GMT_ALLOC_SETTINGS_H

#include "alloc_model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AM_SETTINGS_CONF_MAX 512 /* the raw string is kept up to this many bytes */

/* am_settings.known: which settings the source stated. */
enum {
    AM_SET_CONF = 1u << 0,                   /* alloc_conf: the raw PYTORCH_CUDA_ALLOC_CONF */
    AM_SET_EXPANDABLE = 1u << 1,             /* expandable_segments */
    AM_SET_MAX_SPLIT = 1u << 2,              /* max_split_size */
    AM_SET_MAX_NON_SPLIT_ROUNDING = 1u << 3, /* max_non_split_rounding */
    AM_SET_GC_THRESHOLD = 1u << 4,           /* garbage_collection_threshold */
    AM_SET_ROUNDUP = 1u << 5,                /* roundup_power2_divisions */
    AM_SET_RELEASE_LOCK = 1u << 6,           /* release_lock_on_cudamalloc */
    AM_SET_PINNED_REGISTER = 1u << 7,        /* pinned_use_cuda_host_register */
    AM_SET_PINNED_THREADS = 1u << 8,         /* pinned_num_register_threads */
    AM_SET_PINNED_BACKGROUND = 1u << 9,      /* pinned_use_background_threads */
    AM_SET_PINNED_RESERVE = 1u << 10,        /* pinned_reserve_segment_size_mb */
    AM_SET_GRAPH_REUSE = 1u << 11,           /* graph_capture_record_stream_reuse */
    AM_SET_BACKEND = 1u << 12,               /* backend_async */
    AM_SET_MEMORY_FRACTION = 1u << 13,       /* per_process_memory_fraction */
    AM_SET_LARGE_SEGMENT = 1u << 14          /* large_segment_size */
};

typedef struct am_settings {
    uint32_t known;           /* AM_SET_* bits; a field whose bit is clear holds the default */
    bool expandable_segments; /* false */
    uint64_t max_split_size;  /* bytes; UINT64_MAX: unlimited (PyTorch's default) */
    uint64_t max_non_split_rounding;                         /* bytes; AM_LARGE_BUFFER */
    uint64_t large_segment_size;                             /* bytes; AM_LARGE_BUFFER */
    double garbage_collection_threshold;                     /* 0: off */
    uint32_t roundup_power2_divisions[AM_ROUNDUP_INTERVALS]; /* all 0: off */
    bool release_lock_on_cudamalloc;                         /* false */
    bool pinned_use_cuda_host_register;                      /* false */
    bool pinned_use_background_threads;                      /* false */
    bool graph_capture_record_stream_reuse;                  /* false */
    uint64_t pinned_num_register_threads;                    /* 1 */
    uint64_t pinned_reserve_segment_size_mb;                 /* 0 */
    bool backend_async; /* backend:cudaMallocAsync: PyTorch's caching allocator is not in use */
    double per_process_memory_fraction;    /* 1: the whole device; set, the allocator refuses to
                                              reserve past this share of it and
                                              garbage_collection_threshold works */
    char alloc_conf[AM_SETTINGS_CONF_MAX]; /* "" */
} am_settings;

/* Nothing known, every field at PyTorch's default. */
am_settings am_settings_default(void);

/* Parses a PYTORCH_CUDA_ALLOC_CONF string into *s: each setting it states replaces the one in
 * *s and sets its bit in s->known (alloc_conf is not touched). Returns 0, or -1 with a one-line
 * message in err (the first error: malformed text, an unknown key, a value PyTorch refuses);
 * settings before the error are kept. */
int am_settings_parse(am_settings *s, const char *conf, char *err, size_t errlen);

/* The index of the interval a roundup_power2_divisions key of `mib` MiB (a power of two) sets:
 * log2(mib), clamped to the table. */
unsigned am_roundup_interval_of_mib(uint64_t mib);

/* `base` with the settings of *s that the model follows applied (expandable_segments,
 * max_split_size, max_non_split_rounding, roundup_power2_divisions,
 * garbage_collection_threshold: the caller gives device_capacity, the memory fraction's
 * bytes, without which it does nothing); a size below 20 MiB,
 * which PyTorch refuses, is left out. The result is always accepted by am_model_new (when
 * `base` is). */
am_config am_settings_config(const am_settings *s, am_config base);

/* The known settings as one JSON object with PyTorch's names: the snapshot dict's
 * (PYTORCH_CUDA_ALLOC_CONF, expandable_segments, max_split_size in bytes with -1 for unlimited,
 * garbage_collection_threshold, roundup_power2_divisions keyed by MiB, ...) and, for settings
 * that have none, the PYTORCH_CUDA_ALLOC_CONF key (max_non_split_rounding_mb in MiB,
 * pinned_reserve_segment_size_mb, backend). "{}" when nothing is known. Writes at most `len`
 * bytes including the NUL and returns the length the whole text needs (as snprintf). */
size_t am_settings_json(const am_settings *s, char *out, size_t len);

/* Reads the text am_settings_json wrote (meta 'allocator_settings') into *s, over what it
 * holds: the PYTORCH_CUDA_ALLOC_CONF string first, then the dict's values (the ones in effect)
 * over it. Keys it does not know are skipped; malformed text leaves what it could not read. */
void am_settings_from_json(am_settings *s, const char *json);

/* The settings the model follows as a PYTORCH_CUDA_ALLOC_CONF (expandable_segments always,
 * then whatever differs from PyTorch's defaults, roundup_power2_divisions in the list form
 * that parses back to the same table): what a user would paste to get this configuration.
 * Writes at most `len` bytes including the NUL; returns the length the whole text needs. */
size_t am_settings_conf_text(const am_settings *s, char *out, size_t len);

#endif
