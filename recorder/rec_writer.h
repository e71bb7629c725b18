/* rec_writer.h — the writer thread: owns the trace file and the
 * trace_writer, drains the per-thread rings in time order, turns the
 * recorder's stack ids into FRAME/STACK records, writes a zstd frame at
 * least every half second, and closes the trace with an END record. */
#ifndef GMT_REC_WRITER_H
#define GMT_REC_WRITER_H

#include "rec_core.h"

/* Creates the trace file, writes the process record and the module map,
 * appends the path to the manifest and starts the thread. Returns 0, or -1
 * with err filled (the file could not be created). */
int rec_writer_start(const rec_config *c, char *err, size_t errlen);

/* Wakes the thread early (a ring passed half full). Async-signal-safe. */
void rec_writer_wake(void);

/* Stops the thread, writes what is left and the END record, closes the
 * file. Returns 0, or -1 when the trace could not be written completely. */
int rec_writer_stop(void);

/* Memory events written so far. */
uint64_t rec_writer_events_written(void);

/* Tests only: while held, the writer does not drain (so rings fill). */
void rec_writer_hold_for_test(int hold);

/* In a child after fork: forget the thread and the file without touching
 * them (they belong to the parent). */
void rec_writer_abandon_after_fork(void);

#endif
