/* device_balance.h — the devices of one process compared as ranks are (DataParallel, pipeline
 * stages in one process): the peak allocated of each device with events, their imbalance
 * (max / mean, 1.0: balanced) and the bottleneck device (the highest peak; ties: the lowest
 * ordinal). Read from the devices table only, so report and ranks both afford it. Said only when
 * an input has two or more devices with events. */
#ifndef GMT_DEVICE_BALANCE_H
#define GMT_DEVICE_BALANCE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define DEVICE_BALANCE_MAX 64 /* devices kept; more are counted in ndevices, not compared */

typedef struct device_balance {
    size_t ndevices; /* devices with events (their peak allocated is known) */
    size_t kept;     /* min(ndevices, DEVICE_BALANCE_MAX): those in device/peak_allocated */
    int device[DEVICE_BALANCE_MAX];
    int64_t peak_allocated[DEVICE_BALANCE_MAX];
    double imbalance; /* max / mean of peak allocated over the kept devices; 1.0 with < 2 */
    int64_t mean_peak, spread;
    int bottleneck; /* its ordinal; -1: fewer than two devices with events */
} device_balance;

/* The devices of db. 0, or -1 on a database error (out->ndevices then 0). */
int device_balance_read(sqlite3 *db, device_balance *out);

#endif
