/* when.c — WHEN specifications to event ids (see when.h).
 *
 * Everything is answered from the database with indexed lookups (steps by
 * number, times through timeline_buckets and event-id ranges), so resolving
 * a WHEN costs milliseconds even on a 10 M-event trace. */
#include "when.h"

#include "db_query.h"
#include "units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int when_default_device(sqlite3 *db) {
    return (int)db_query_i64(db,
                             "SELECT device FROM devices WHERE peak_allocated_bytes IS NOT NULL "
                             "ORDER BY peak_allocated_bytes DESC, device LIMIT 1",
                             0, 0, 0);
}

static int input_has_events(sqlite3 *db) {
    return db_query_i64(db, "SELECT count(*) FROM devices WHERE peak_allocated_bytes IS NOT NULL",
                        0, 0, 0) > 0;
}

int when_device_answers(sqlite3 *db, int device) {
    return db_query_i64(db,
                        "SELECT count(*) FROM devices WHERE device = ? AND "
                        "peak_allocated_bytes IS NOT NULL",
                        device, 0, 0) > 0 ||
           !input_has_events(db);
}

/* "1.5s", "200ms", "30us", "12ns", "2m", "1h" -> ns; -1 when malformed. */
static int64_t parse_duration(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    double scale = !strcmp(end, "s") || !*end ? 1e9
                   : !strcmp(end, "ms")       ? 1e6
                   : !strcmp(end, "us")       ? 1e3
                   : !strcmp(end, "ns")       ? 1
                   : !strcmp(end, "m")        ? 60e9
                   : !strcmp(end, "h")        ? 3600e9
                                              : -1;
    return scale < 0 ? -1 : (int64_t)(v * scale + 0.5);
}

static int parse_int(const char *s, int64_t *out) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end)
        return -1;
    *out = v;
    return 0;
}

int when_resolve(sqlite3 *db, const char *spec, int device, int64_t *event_id, char *err,
                 size_t errlen) {
    int64_t last = db_query_i64(db, "SELECT max(event_id) FROM event_rows", 0, 0, 0);
    int64_t n;
    if (!strcmp(spec, "end")) {
        *event_id = last;
        return 0;
    }
    if (!strcmp(spec, "start")) {
        *event_id = 0;
        return 0;
    }
    if (!strcmp(spec, "peak")) {
        if (device < 0)
            device = when_default_device(db);
        *event_id = db_query_i64(db, "SELECT peak_allocated_event_id FROM devices WHERE device = ?",
                                 device, 0, INT64_MIN);
        if (*event_id == INT64_MIN && !input_has_events(db))
            *event_id = 0; /* nothing was ever allocated: the peak is the start */
        if (*event_id == INT64_MIN) {
            snprintf(err, errlen, "peak: device %d has no events", device);
            return -1;
        }
        return 0;
    }
    if (!strncmp(spec, "event:", 6) && parse_int(spec + 6, &n) == 0) {
        if (n < 0 || n > last) {
            snprintf(err, errlen, "%s: the trace has events 0..%lld", spec, (long long)last);
            return -1;
        }
        *event_id = n;
        return 0;
    }
    if (!strncmp(spec, "step:", 5) && parse_int(spec + 5, &n) == 0) {
        *event_id =
            db_query_i64(db, "SELECT end_event_id FROM steps WHERE step = ?", n, 0, INT64_MIN);
        if (*event_id == INT64_MIN) {
            int64_t count = db_query_i64(db, "SELECT count(*) FROM steps", 0, 0, 0);
            if (count == 0)
                snprintf(err, errlen, "%s: the trace has no steps", spec);
            else
                snprintf(err, errlen, "%s: no such step (steps %lld..%lld)", spec,
                         (long long)db_query_i64(db, "SELECT min(step) FROM steps", 0, 0, 0),
                         (long long)db_query_i64(db, "SELECT max(step) FROM steps", 0, 0, 0));
            return -1;
        }
        return 0;
    }
    if (!strncmp(spec, "time:", 5) && (n = parse_duration(spec + 5)) >= 0) {
        /* past the last event: out of range, as event: past it is */
        int64_t end_ns =
            db_query_i64(db, "SELECT ts_ns FROM event_rows WHERE event_id = ?1", last, 0, 0);
        if (n > end_ns) {
            char span[32];
            units_duration((uint64_t)(end_ns > 0 ? end_ns : 0), span, sizeof span);
            snprintf(err, errlen, "%s: the trace spans time:0 .. %s", spec, span);
            return -1;
        }
        /* The last event at or before that time. event_rows has no index on
         * ts_ns: the buckets wholly before the time give a lower bound, and
         * only the events of the bucket holding it are looked at. */
        int64_t whole = db_query_i64(db,
                                     "SELECT max(last_event_id) FROM timeline_buckets WHERE "
                                     "(bucket + 1) * bucket_ns <= ?1 AND last_event_id > 0",
                                     n, 0, 0);
        int64_t part =
            db_query_i64(db,
                         "SELECT max(e.event_id) FROM event_rows AS e WHERE e.event_id > 0 "
                         "AND e.ts_ns <= ?1 AND e.event_id BETWEEN "
                         "(SELECT min(first_event_id) FROM timeline_buckets WHERE "
                         " bucket = ?1 / bucket_ns) AND "
                         "(SELECT max(last_event_id) FROM timeline_buckets WHERE "
                         " bucket = ?1 / bucket_ns)",
                         n, 0, 0);
        *event_id = part > whole ? part : whole;
        return 0;
    }
    snprintf(err, errlen, "bad WHEN '%s': use step:N, event:N, time:1.5s, peak, start or end",
             spec);
    return -1;
}

int when_window(sqlite3 *db, const char *from_spec, const char *to_spec, int device, int64_t *from,
                int64_t *to, char *err, size_t errlen) {
    *from = 0;
    *to = db_query_i64(db, "SELECT max(event_id) FROM event_rows", 0, 0, 0);
    if ((from_spec && when_resolve(db, from_spec, device, from, err, errlen) != 0) ||
        (to_spec && when_resolve(db, to_spec, device, to, err, errlen) != 0))
        return -1;
    if (*from > *to) {
        snprintf(err, errlen, "--from is after --to (event %lld > %lld)", (long long)*from,
                 (long long)*to);
        return -1;
    }
    return 0;
}

int when_has_timestamps(sqlite3 *db) {
    return db_query_int(db, "SELECT value FROM meta WHERE key = 'timestamps'", 1) != 0;
}

int when_has_history(sqlite3 *db) {
    return db_query_int(db, "SELECT value FROM meta WHERE key = 'history'", 1) != 0;
}

void when_describe(sqlite3 *db, int64_t event_id, char *buf, size_t len) {
    if (event_id <= 0) {
        snprintf(buf, len, "the start (event 0)");
        return;
    }
    int64_t ts =
        db_query_i64(db, "SELECT ts_ns FROM event_rows WHERE event_id = ?", event_id, 0, 0);
    int64_t step = db_query_i64(db,
                                "SELECT step FROM steps WHERE begin_event_id < ?1 AND "
                                "end_event_id >= ?1 ORDER BY begin_event_id DESC LIMIT 1",
                                event_id, 0, INT64_MIN);
    char t[32];
    units_duration(ts > 0 ? (uint64_t)ts : 0, t, sizeof t);
    int timestamps = when_has_timestamps(db);
    if (!timestamps && step != INT64_MIN)
        snprintf(buf, len, "event %lld (step %lld)", (long long)event_id, (long long)step);
    else if (!timestamps)
        snprintf(buf, len, "event %lld", (long long)event_id);
    else if (step != INT64_MIN)
        snprintf(buf, len, "event %lld (step %lld, %s)", (long long)event_id, (long long)step, t);
    else
        snprintf(buf, len, "event %lld (%s)", (long long)event_id, t);
}
