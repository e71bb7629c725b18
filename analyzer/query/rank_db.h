/* rank_db.h — `ranks --db`: the per-rank summaries of a job (rank_stats.h) in one SQLite file,
 * a `rank` column in each table and no events, for SQL across a fleet. Here, not in cli/, since
 * it is SQL: the command hands over the facts it printed and a path, and prints the error.
 *
 * Tables: ranks (one row per rank read: its summary, leaking, bottleneck, first_to_run_out,
 * where its rank came from, whether it ran out, its devices' imbalance),
 * rank_steps (allocated and reserved at each step end), rank_sites (each site's bytes at the
 * rank's peak, with its cross-run key), failed (the inputs that could not be read, and why). */
#ifndef GMT_RANK_DB_H
#define GMT_RANK_DB_H

#include "rank_stats.h"

#include <stddef.h>

/* Writes (replaces) path; nothing is left there on failure. 0, or -1 with a one-line message
 * in err. */
int rank_db_write(const rank_stats *st, const char *path, char *err, size_t errlen);

#endif
