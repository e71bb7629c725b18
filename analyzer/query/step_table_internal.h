/* step_table_internal.h — what step_table.c and step_table_part.c share (no other file
 * includes it): the pass over a set of steps' events and the anomalies over a part of the
 * table, so that a part is measured exactly as the whole. */
#ifndef GMT_STEP_TABLE_INTERNAL_H
#define GMT_STEP_TABLE_INTERNAL_H

#include "step_table.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* Steps on each side an anomaly is measured against. */
#define NEIGHBOURS 5

/* A step's end state from a row of the table's query (columns: step, begin_event_id,
 * end_event_id, allocated and reserved at its end, column 5 left to the caller, the trapped
 * free bytes and the split's reserved bytes (NULL: not known), open). *r is cleared first. */
void step_row_read(sqlite3_stmt *st, step_row *r);

/* The peak inside each of rows[0, n) (the first event at the highest allocated), its stack's
 * phase, the allocations and frees: one pass over the device's events from the earliest begin
 * to the latest end among them. 0, or -1 (SQL, out of memory). */
int step_table_insides(sqlite3 *db, int device, step_row *rows, size_t n);

/* The reserved jump of row i (see step_table.h) whose previous row's reserved at its end is
 * reserved_before, or 0. */
int64_t step_table_reserved_jump(int64_t reserved_before, const step_row *r, size_t i);

/* The anomalies of rows [from, to) of a table of n rows. rows[k] is row base + k, and it holds
 * [base, to + NEIGHBOURS) at least (n where shorter): the end states of all of them, the peaks,
 * counts and growth of [from - NEIGHBOURS, to + NEIGHBOURS) (what the rows' neighbours are).
 * base 0: every row before from is there (the first reserved jump is looked for from row 0);
 * else base < from, and jumped says whether one of rows [2, base] is a reserved jump (the first
 * is the only one), found by the caller. scratch: room for 2 * NEIGHBOURS + 2 values. */
void step_table_anomalies(step_row *rows, size_t base, size_t n, size_t from, size_t to, int jumped,
                          int64_t *scratch);

#endif
