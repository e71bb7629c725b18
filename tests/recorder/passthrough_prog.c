/* passthrough_prog.c — the program test_memrec_cli.sh runs under memrec.
 *
 *   passthrough_prog exit CODE     known bytes on stdout and stderr (binary
 *                                  ones, no final newline), then exit(CODE)
 *   passthrough_prog signal SIG    the same bytes, then dies of signal SIG
 *   passthrough_prog annotate      memrec.h calls from known functions: two
 *                                  steps and a region alloc/free, so a trace
 *                                  is written without any GPU; prints the
 *                                  line in main() that calls the alloc
 *   passthrough_prog linger        a region alloc, 2 s of sleep, its free (a
 *                                  process that outlives its launcher)
 *   passthrough_prog steps         steps 0..4, each leaking one 4 KiB region
 *                                  and making and freeing a 64 KiB one, after
 *                                  a 1 MiB region live all along
 *   passthrough_prog env NAME      prints $NAME (what memrec set)
 *   passthrough_prog rawexit MS    a region alloc, MS ms of sleep, another
 *                                  alloc, then _exit(5): no atexit, no
 *                                  destructor, nothing of the recorder runs
 *
 * The script compares what arrives with and without memrec in between. */
#include "memrec.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void write_known_bytes(void) {
    static const char out[] = "stdout line 1\nstdout \x01\xff binary\nno newline at the end";
    static const char err[] = "stderr line 1\r\nstderr \x02\xfe binary";
    fwrite(out, 1, sizeof out - 1, stdout);
    fflush(stdout);
    fwrite(err, 1, sizeof err - 1, stderr);
    fflush(stderr);
}

static char pool[1 << 16];
static volatile int sink;

__attribute__((noinline)) void annotated_alloc(void);
__attribute__((noinline)) void annotated_alloc(void) {
    memrec_region_alloc(pool, 4096, 0);
    sink++;
}

__attribute__((noinline)) void annotated_free(void);
__attribute__((noinline)) void annotated_free(void) {
    memrec_region_free(pool);
    sink++;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "exit")) {
        write_known_bytes();
        return atoi(argv[2]);
    }
    if (argc == 3 && !strcmp(argv[1], "signal")) {
        write_known_bytes();
        int sig = atoi(argv[2]);
        signal(sig, SIG_DFL);
        raise(sig);
        return 99; /* not reached */
    }
    if (argc == 2 && !strcmp(argv[1], "annotate")) {
        memrec_step_begin(1);
        int line = __LINE__ + 1; /* the next line */
        annotated_alloc();
        annotated_free();
        memrec_step_end(1);
        printf("%d\n", line);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "linger")) { /* records, then outlives its launcher */
        annotated_alloc();
        sleep(2);
        annotated_free();
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "steps")) {
        static char arena[2 << 20];
        memrec_region_alloc(arena, 1 << 20, 0);
        for (int step = 0; step < 5; step++) {
            memrec_step_begin(step);
            memrec_region_alloc(arena + (1 << 20) + step * 4096, 4096, 0);
            memrec_region_alloc(arena + (1 << 20) + 65536, 65536, 0);
            memrec_region_free(arena + (1 << 20) + 65536);
            memrec_step_end(step);
        }
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "rawexit")) {
        memrec_region_alloc(pool, 4096, 0);
        usleep((useconds_t)atoi(argv[2]) * 1000u);
        memrec_region_alloc(pool + 4096, 4096, 0);
        _exit(5);
    }
    if (argc == 3 && !strcmp(argv[1], "env")) {
        const char *v = getenv(argv[2]);
        printf("%s\n", v ? v : "(unset)");
        return 0;
    }
    fprintf(stderr, "usage: passthrough_prog exit CODE | signal SIG | annotate | linger | steps | "
                    "env NAME | rawexit MS\n");
    return 2;
}
