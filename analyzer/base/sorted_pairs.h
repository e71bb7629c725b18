/* sorted_pairs.h — pairs of integers given in any order, handed back sorted, in memory bounded
 * however many there are.
 *
 * Two writers need this: the event store's alloc_event_id index (pairs (alloc_event_id,
 * event_id), which frees give in any order) and import -o's block_categories (blocks are
 * classified when they end, the table is keyed by the alloc that began them). Pairs gather in
 * a run of up to `run_pairs` (16 MiB by default); a full run is sorted and spilled to a file
 * beside the database being made (the cache directory or import -o's destination, which have
 * room for the database itself; /tmp may be a small tmpfs: ~16 B per pair), unlinked at once
 * so it vanishes with the process; the runs are merged at the end. A run that never fills
 * needs no file.
 *
 * Ownership: sorted_pairs_drain frees nothing; sorted_pairs_free closes the file. */
#ifndef GMT_SORTED_PAIRS_H
#define GMT_SORTED_PAIRS_H

#include <stddef.h>
#include <stdint.h>

typedef struct sorted_pairs sorted_pairs;

#define SORTED_PAIRS_RUN_DEFAULT (1u << 20)

/* beside: a file whose folder takes the spilled runs (NULL or "": a temporary file).
 * run_pairs: 0 for the default. NULL when out of memory. */
sorted_pairs *sorted_pairs_new(const char *beside, size_t run_pairs);

/* 0, or -1 with a one-line message (a run could not be written). */
int sorted_pairs_add(sorted_pairs *s, int64_t first, int64_t second, char *err, size_t errlen);

size_t sorted_pairs_count(const sorted_pairs *s);

/* Gets the pairs in ascending order (by first, then second), in batches of at most `batch`. It
 * returns 0, or -1 with a message in err (which stops the drain). */
typedef int (*sorted_pairs_sink)(void *ctx, const int64_t (*pairs)[2], size_t n, char *err,
                                 size_t errlen);

/* Every pair added, once, to sink. 0 or -1 (the sink's error, or reading the runs). */
int sorted_pairs_drain(sorted_pairs *s, size_t batch, sorted_pairs_sink sink, void *ctx, char *err,
                       size_t errlen);

void sorted_pairs_free(sorted_pairs *s);

#endif
