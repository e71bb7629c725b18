/* view_blocks_file.h — the layout of view_blocks.h's sidecar, shared by its writer
 * (view_blocks_build.c) and its reader (view_blocks.c); nothing else includes it.
 *
 * One file, mapped read-only by the reader (opening it reads a header, not the blocks): a header
 * with the identity of the database it was made for, then per device a directory of runs. A run
 * is a sequence of entries packed as LEB128 varints (deltas inside a group), cut into groups of
 * VB_GROUP entries; each group has a fixed-size header (its first key, the count and bytes of
 * the entries before it, where its bytes begin), so a lookup is a binary search over the group
 * headers and the decoding of one group. Per device:
 * - `sizes`: the device's distinct block sizes, largest first; entries name a size by its index.
 * - the blocks' rank: by size (largest first), then lifetime (longest first, never freed the
 *   longest), then alloc time, then alloc_id. Ranks fall in tiers of doubling width (the first
 *   VB_TIER0 ranks, the next VB_TIER0, the next 2 VB_TIER0, ...), and each tier's blocks in
 *   lifetime levels (widths 8x apart: a block sits in the finest level whose width exceeds its
 *   lifetime; the blocks never freed in a level of their own). One run per (tier, level),
 *   ordered by alloc time: entry = alloc time (delta), lifetime, ordinal (zigzag delta), size
 *   index; key = the group's first alloc time. A window reads, at each level, the entries born
 *   in [t0 - width, t1): a block of that level alive in the window was born there.
 * - `allocs`, `frees`: the blocks by alloc time and the freed ones by free time (entry = time
 *   delta, size index; the group header's n_before and bytes_before the running totals): a
 *   window's blocks are A(t1) - F(t0).
 * - `details`: per block, in ordinal (alloc_id) order, what an answer shows besides the times
 *   and the size: alloc_id (delta), free_event_id (from alloc_id), and its shape's index;
 *   `shapes`: the distinct (addr, size index, requested, stream, stack_id, segment_id) of the
 *   device's blocks, the most frequent first (small indexes: one byte for the 128 commonest). */
#ifndef GMT_VIEW_BLOCKS_FILE_H
#define GMT_VIEW_BLOCKS_FILE_H

#include "varint.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define VB_MAGIC "GMTVBLK3"
#define VB_IDENTITY_LEN 2048
#define VB_GROUP 256 /* entries per group of the ranked, allocs and frees runs */
#define VB_DGROUP 64 /* entries per group of the details run */
#define VB_SGROUP 16 /* entries per group of the shapes run */
#define VB_TIER0 4096
#define VB_MAX_LEVELS 24

typedef struct vb_group {
    int64_t key;                    /* the first entry's time (details: unused) */
    int64_t n_before, bytes_before; /* the run's entries before this group, their bytes */
    uint64_t off;                   /* where its bytes begin, from the start of the file */
} vb_group;

typedef struct vb_run {
    uint64_t groups_off; /* vb_group[ngroups], from the start of the file */
    uint64_t ngroups, n;
    uint64_t end_off; /* the end of the run's bytes */
} vb_run;

typedef struct vb_device {
    int64_t device, nblocks, nsizes, ntiers;
    int64_t quantum;    /* every time a multiple of it: the runs' time deltas are divided by it */
    uint64_t sizes_off; /* int64_t[nsizes], largest first */
    uint64_t runs_off;  /* vb_run[ntiers * (levels + 1)]: tier-major, the live level last */
    vb_run allocs, frees, details, shapes;
} vb_device;

typedef struct vb_header {
    char magic[8];
    char identity[VB_IDENTITY_LEN];
    int64_t shift, levels; /* lifetime level l: width 2^(shift + 3 l), l < levels */
    int64_t ndevices;
    uint64_t file_size;
    /* vb_device[ndevices] follow */
} vb_header;

/* view_blocks_build.c: the sidecar of `db` written at `path` (a temporary file renamed into
 * place), `identity` in its header. 0, or -1 with a one-line message. */
int vb_build(sqlite3 *db, const char *path, const char *identity, char *err, size_t errlen);

#endif
