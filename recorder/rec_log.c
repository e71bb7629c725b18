/* rec_log.c — the recorder's only way to talk to the user: one line on
 * stderr per warning, printed once.
 *
 * The recorder lives inside somebody else's program, so it must not chatter:
 * every warning has a call-site flag and is printed at most once per process,
 * with a "memrec: " prefix so it is never mistaken for the program's own
 * output. write(2) of a preformatted line keeps it to one syscall, so lines
 * from several threads never interleave. */
#include "rec_core.h"
#include "rec_internal.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_int log_quiet;

void rec_log_set_quiet(int quiet) { atomic_store(&log_quiet, quiet); }

void rec_warn_once(int *once, const char *fmt, ...) {
    if (once && __atomic_exchange_n(once, 1, __ATOMIC_RELAXED))
        return;
    if (atomic_load(&log_quiet))
        return;
    char line[512];
    int n = snprintf(line, sizeof line, "memrec: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
}
