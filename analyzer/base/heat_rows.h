/* heat_rows.h — a device's address space squeezed into rows, for the heatmap.
 *
 * The y axis of the heatmap is every address range any segment ever
 * covered, in address order, stacked without the holes between them, and
 * cut into rows of equal bytes. For each row this keeps the bytes reserved
 * (inside live segments) and allocated (inside live blocks) as events come,
 * so the fraction allocated of every row can be taken at any moment. Used
 * by the replay (which stores the fractions per timeline bucket) and by
 * plots_heatmap.c (which sweeps the events itself for a window). */
#ifndef GMT_HEAT_ROWS_H
#define GMT_HEAT_ROWS_H

#include <stddef.h>
#include <stdint.h>

#define HEAT_ROWS 400

typedef struct heat_rows heat_rows;

heat_rows *heat_rows_new(void);
void heat_rows_free(heat_rows *h);

/* Before heat_rows_freeze: a range some segment covers. 0 or -1. */
int heat_rows_add_range(heat_rows *h, uint64_t addr, uint64_t size);
/* Merges the ranges and cuts HEAT_ROWS rows. 0 or -1. */
int heat_rows_freeze(heat_rows *h);

/* [addr, addr + size) became reserved (+1) / not (-1), allocated (+1) / not (-1). */
void heat_rows_change(heat_rows *h, uint64_t addr, uint64_t size, int reserved, int allocated);

/* The fraction allocated of each row (HEAT_ROWS floats; -1 where nothing is
 * reserved). */
void heat_rows_fractions(const heat_rows *h, float *out);

/* The squeezed size, the bytes one row stands for, and the row where each
 * merged range starts (*nbounds of them; the array is the caller's to free). */
uint64_t heat_rows_total(const heat_rows *h);
double heat_rows_bytes_per_row(const heat_rows *h);
size_t *heat_rows_bounds(const heat_rows *h, size_t *nbounds);

#endif
