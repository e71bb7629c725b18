/* device_balance.c — the devices of one process compared like ranks (see device_balance.h):
 * one query on the devices table. */
#include "device_balance.h"

#include "db_query.h"

#include <string.h>

int device_balance_read(sqlite3 *db, device_balance *out) {
    memset(out, 0, sizeof *out);
    out->imbalance = 1.0;
    out->bottleneck = -1;
    sqlite3_stmt *st = db_statement(db, "SELECT device, peak_allocated_bytes FROM devices WHERE "
                                        "peak_allocated_bytes IS NOT NULL ORDER BY device");
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->kept < DEVICE_BALANCE_MAX) {
            out->device[out->kept] = sqlite3_column_int(st, 0);
            out->peak_allocated[out->kept] = sqlite3_column_int64(st, 1);
            out->kept++;
        }
        out->ndevices++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        memset(out, 0, sizeof *out);
        out->imbalance = 1.0;
        out->bottleneck = -1;
        return -1;
    }
    if (out->kept < 2)
        return 0;
    int64_t max = INT64_MIN, min = INT64_MAX;
    double sum = 0;
    for (size_t i = 0; i < out->kept; i++) {
        int64_t p = out->peak_allocated[i];
        sum += (double)p;
        if (p > max) {
            max = p;
            out->bottleneck = out->device[i];
        }
        if (p < min)
            min = p;
    }
    double mean = sum / (double)out->kept;
    out->mean_peak = (int64_t)mean;
    out->spread = max - min;
    out->imbalance = mean > 0 ? (double)max / mean : 1.0;
    return 0;
}
