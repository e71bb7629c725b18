/* site_stats.h — per allocation site summaries kept during the replay.
 *
 * For each (device, stack) the replay reports every change of live block
 * bytes; this module keeps, in O(1) per change:
 *   - the site's live bytes at the device's peak, with a lazy snapshot: a
 *     new peak only bumps a version; a site saves its value the first time
 *     it changes after a peak, so sites untouched since keep their current
 *     value as the peak's;
 *   - its change between consecutive step ends (written as site_steps rows
 *     when nonzero);
 *   - the largest allocations of each device.
 * At the end it writes site_stats, site_steps and largest_allocations
 * (schema/schema.sql), so report and leaks over a whole run read small
 * tables instead of rescanning every event. */
#ifndef GMT_SITE_STATS_H
#define GMT_SITE_STATS_H

#include "db_writer.h"

#include <stdint.h>

typedef struct site_stats site_stats;

site_stats *site_stats_new(void);
void site_stats_free(site_stats *s);

/* Live bytes/blocks of (device, stack) change by (bytes, blocks). 0 or -1. */
int site_stats_change(site_stats *s, uint32_t device, int64_t stack, int64_t bytes, int64_t blocks);

/* `device` reached a new peak of allocated bytes (after the last change). */
void site_stats_new_peak(site_stats *s, uint32_t device);

/* After each row of `device` (in timeline bucket `bucket`): its allocated
 * bytes. The highest of a bucket group is where site_stats_bucket_end
 * samples the sites (what filled the spike, not what was left after it). */
void site_stats_allocated(site_stats *s, uint32_t device, int64_t allocated, int64_t bucket);

/* A block allocation, for the largest-allocations list. */
void site_stats_alloc(site_stats *s, uint32_t device, int64_t alloc_id, int64_t size,
                      int64_t stack);

/* A step ended after event `event_id`: writes the per-site changes since
 * the previous step end. 0 or -1. */
int site_stats_step_end(site_stats *s, int64_t event_id, db_writer *db);

/* `device`'s timeline bucket `bucket` (of width bucket_ns), the last of a
 * group, ended: writes, for the sites that changed since the previous group,
 * their live bytes at the group's end and at its highest allocated bytes,
 * as the row of the bucket where that highest point was. */
int site_stats_bucket_end(site_stats *s, uint32_t device, int64_t bucket_ns, int64_t bucket,
                          db_writer *db);

/* The site of `device` whose live bytes grew most since the first step end (a site born after
 * it from 0): its stack, that growth and its live bytes now. 1, or 0 when none grew (or no
 * step has ended). O(sites): memanalyze watch asks once a refresh. */
int site_stats_top_growth(const site_stats *s, uint32_t device, int64_t *stack, int64_t *growth,
                          int64_t *live);

/* The sites of `device` with live bytes at its last peak: their stacks and bytes, the most
 * bytes first (equal bytes: the lower stack first), at most max; their count. O(sites x max). */
size_t site_stats_at_peak(const site_stats *s, uint32_t device, int64_t *stacks, int64_t *bytes,
                          size_t max);

/* A block allocated during the recording is still live at the end. */
int site_stats_never_freed(site_stats *s, uint32_t device, int64_t stack, int64_t requested);

/* Writes site_stats and largest_allocations. 0 or -1. */
int site_stats_finish(site_stats *s, db_writer *db);

#endif
