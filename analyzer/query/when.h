/* when.h — the WHEN argument of DESIGN.md ("Time, steps and WHEN"), turned
 * into an event id of the replayed database:
 *
 *   step:N     the state just before step N ends  (steps.end_event_id)
 *   event:N    the state after the N-th event (event:0 = the seeded start)
 *   time:1.5s  the state 1.5 s after the first event (also ms, us, ns, m); past the
 *              last event an error, as event:N past it is
 *   peak       the highest allocated bytes on the selected device (the
 *              start in an input without memory events)
 *   end        after the last event
 *   start      the seeded start (= event:0)
 *
 * The selected device is `device` when >= 0, else the device with the
 * highest peak (when_default_device). */
#ifndef GMT_WHEN_H
#define GMT_WHEN_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* The device with the highest peak allocated bytes (0 when none). */
int when_default_device(sqlite3 *db);

/* 1 when `device` can be looked at: it has events, or the input has no
 * memory events at all (an empty snapshot), where every command answers
 * with an empty result instead of an error. */
int when_device_answers(sqlite3 *db, int device);

/* Resolves `spec`; *event_id gets the event id. Returns 0, or -1 with a
 * one-line message (bad syntax, no such step, out of range). */
int when_resolve(sqlite3 *db, const char *spec, int device, int64_t *event_id, char *err,
                 size_t errlen);

/* A --from/--to window: [*from, *to] for the specs (NULL: the start, the
 * end). 0, or -1 with a one-line message (a bad spec, from after to). */
int when_window(sqlite3 *db, const char *from_spec, const char *to_spec, int device, int64_t *from,
                int64_t *to, char *err, size_t errlen);

/* 0 when the input has no timestamps (meta `timestamps` = 0: its times are
 * the events' order, GMT_UNTIMED_EVENT_NS apart), else 1. */
int when_has_timestamps(sqlite3 *db);

/* 0 for a snapshot without history (meta `history` = 0: its final segments
 * only, one moment), else 1. */
int when_has_history(sqlite3 *db);

/* Describes an event id for people: "event 1234 (step 3, 12.5 s)"; without
 * timestamps, no time. */
void when_describe(sqlite3 *db, int64_t event_id, char *buf, size_t len);

#endif
