/* progress.h — the progress line of a long import, for a person waiting at a
 * terminal: the phase, the share done and how long the phase has left.
 *
 * The time left is the replay's own average rate so far, measured from its
 * first report (the pass that reads the trace once before it is not
 * counted), applied to what is left, and shown only once it means
 * something (two seconds and 2 % of the input in): a replay's rate is
 * steady over a trace, so this is what the clock will say. The phase after
 * the replay (the indexes) is named when it starts, not guessed at in
 * advance. The caller decides whether there is a terminal; this module only
 * writes the line. */
#ifndef GMT_PROGRESS_H
#define GMT_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct progress {
    FILE *out;         /* where the line goes (stderr); NULL: nowhere */
    const char *input; /* the input's name, as the user gave it */
    double started;    /* when the rate's measure started (monotonic seconds) */
    uint64_t base;     /* bytes done then */
    int measuring;     /* 1 once the replay reported */
    double last_shown; /* when the line was last written */
    int shown;         /* 1 while a line is on the terminal */
} progress;

/* Starts the line for `input` on `out` (NULL: no line at all). */
void progress_start(progress *p, FILE *out, const char *input);

/* The replay is `done` of `total` bytes in: rewrites the line, at most four
 * times a second. */
void progress_update(progress *p, uint64_t done, uint64_t total);

/* A phase without a measure of its own ("building the indexes of"): the
 * line names it and the input until the next update or clear. */
void progress_phase(progress *p, const char *phase);

/* Clears the line. */
void progress_clear(progress *p);

/* Seconds left when `done` of `total` is done, `done_since` of it in the
 * last `elapsed` seconds; < 0 while too early to tell. For the tests. */
double progress_seconds_left(uint64_t done, uint64_t total, uint64_t done_since, double elapsed);

/* The line at `fraction` (0..1) of the replay with `seconds_left` (< 0:
 * unknown) in buf: "replaying F: 45 % (about 12 s left)". Returns what
 * snprintf returns. */
int progress_format(char *buf, size_t len, const char *input, double fraction, double seconds_left);

/* A duration as a person reads it: "12 s", "3 min 05 s", "2 h 07 min". */
int progress_duration(char *buf, size_t len, double seconds);

#endif
