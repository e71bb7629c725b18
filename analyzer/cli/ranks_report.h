/* ranks_report.h — `ranks` output: the table and the findings as text, the JSON of the
 * contract, and --db (the per-rank summaries in one SQLite file, a `rank` column in each
 * table, no events). */
#ifndef GMT_RANKS_REPORT_H
#define GMT_RANKS_REPORT_H

#include "rank_stats.h"

#include <stdio.h>

void ranks_report_text(FILE *out, const rank_stats *st);
void ranks_report_json(FILE *out, const rank_stats *st);

/* Writes (replaces) path. 0, or -1 with a one-line message in err. */
int ranks_report_write_db(const rank_stats *st, const char *path, char *err, size_t errlen);

#endif
