/* window_levels.h — facts of an event window (from, to] of one device answered from the
 * replay's levels of detail instead of a pass over every event in it, so that `memanalyze
 * view`'s window summary costs the same for a window of a thousand events and of a hundred
 * million:
 *
 *   peak   the highest allocated bytes after one of the device's events in the window, the
 *          first event at it, and how many of them are OOMs: from timeline_levels (schema.sql:
 *          each bucket's max_allocated_bytes, max_allocated_event_id and ooms), the buckets
 *          wholly inside the window from their rows, the coarsest that fit, the rest of it (a
 *          part of a finest bucket at each end: ~64 events on average) from its events;
 *   sites  the blocks allocated in the window per allocation stack (blocks of the `allocations`
 *          view of kind 'device', alloc_id in (from, to], as view_window.h counts them): from
 *          site_levels (the chunks of event ids wholly inside it, the coarsest that fit), the
 *          ends (less than one finest chunk each, 16384 event ids) from their events.
 *
 * Each answer equals a pass over the window's events, which is also what a database without
 * the levels (an older memanalyze's) gets: tests/test_window_levels.c holds both to brute force
 * on random windows. */
#ifndef GMT_WINDOW_LEVELS_H
#define GMT_WINDOW_LEVELS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct window_peak {
    int64_t events;        /* the device's rows in the window */
    int64_t max_allocated; /* the highest allocated_bytes after one of them (when events > 0) */
    int64_t max_event_id;  /* the first of them at it */
    int64_t ooms;          /* how many of them are 'oom' events */
    int64_t level_rows;    /* timeline_levels rows read */
    int64_t events_read;   /* event rows decoded for the ends */
} window_peak;

/* The peak of `device` over (from, to] (from <= to). 0; 1 when the database has no timeline
 * levels with peaks (made by an older memanalyze: nothing is set); -1 with a one-line message. */
int window_levels_peak(sqlite3 *db, int device, int64_t from, int64_t to, window_peak *out,
                       char *err, size_t errlen);

typedef struct window_site {
    int64_t stack_id, blocks, bytes;
} window_site;

typedef struct window_sites {
    window_site *sites; /* every stack that allocated in the window, in no order */
    size_t n;
    int64_t blocks, bytes; /* all of theirs */
    int64_t level_rows;    /* site_levels rows read (0: the database has none: a pass) */
    int64_t events_read;   /* event rows decoded */
} window_sites;

/* The sites of `device` over (from, to] (from <= to): from site_levels and the ends' events,
 * or from every event of the window when the database has no site levels. 0, or -1 with a
 * one-line message. */
int window_levels_sites(sqlite3 *db, int device, int64_t from, int64_t to, window_sites *out,
                        char *err, size_t errlen);
void window_sites_free(window_sites *s);

#endif
