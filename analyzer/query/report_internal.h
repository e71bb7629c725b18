/* report_internal.h — what the files of `report`'s facts share (query/report*.c only):
 * report.c opens the report and gathers each device through report_device.c, which asks
 * report_oom.c for the OOMs and their verdicts. */
#ifndef GMT_REPORT_INTERNAL_H
#define GMT_REPORT_INTERNAL_H

#include "report.h"

/* The OOM events of the window, the first REPORT_MAX_OOMS (no verdict yet). */
void report_ooms_read(sqlite3 *db, int64_t from, int64_t to, report_device *d);

/* Each listed OOM's verdict, once the splits at them are known. */
void report_ooms_judge(report_device *d);

/* The recommendations a number supports. */
void report_recommend(sqlite3 *db, report_device *d);

/* The facts of one device over [from, to]. 0, or -1 (the database). */
int report_device_build(sqlite3 *db, categorizer *cats, int rules, int device, int64_t from,
                        int64_t to, size_t top, report_device *d);

#endif
