/* fail_strdup.c — an LD_PRELOAD library for test_alloc_failures.py: strdup fails once, at its
 * FAIL_STRDUP_AT-th call (1-based; unset or 0: never), and the number of calls is written to
 * the file FAIL_STRDUP_COUNT_TO names at exit. strdup is where memanalyze copies the names it
 * keeps (devices, modules, steps, database rows), so each call is a place where running out of
 * memory must end in a clear error, never a crash or a database silently short of a value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long calls, fail_at = -1;

char *strdup(const char *s) {
    if (fail_at < 0) {
        const char *at = getenv("FAIL_STRDUP_AT");
        fail_at = at ? atol(at) : 0;
    }
    if (++calls == fail_at)
        return NULL;
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

__attribute__((destructor)) static void write_count(void) {
    const char *path = getenv("FAIL_STRDUP_COUNT_TO");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "%ld\n", calls);
        fclose(f);
    }
}
