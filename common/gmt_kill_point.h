/* gmt_kill_point.h — a named place where a test can have the process killed, so that what a
 * kill (SIGKILL, Ctrl-C, a full disk's abort) leaves behind is tested at a chosen moment, not by
 * racing a timer. GMT_TEST_KILL_AT names the point (docs/ENVIRONMENT.md); the process then
 * raises SIGKILL there, or with "POINT:stop" SIGSTOP (the test changes something, then sends
 * SIGCONT: what happens to a file between two reads). Read at the few places a database is built or changed, never per row.
 * Header-only, like gmt_clock.h. */
#ifndef GMT_KILL_POINT_H
#define GMT_KILL_POINT_H

#include "gmt_env.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static inline void gmt_kill_point(const char *point) {
    const char *at = getenv(GMT_ENV_TEST_KILL_AT);
    size_t n = strlen(point);
    if (at && !strncmp(at, point, n) && (!at[n] || !strcmp(at + n, ":stop")))
        raise(at[n] ? SIGSTOP : SIGKILL);
}

#endif
