/* memrec_traces.c — what memrec does after the command ended: learn which
 * traces exist, make them self-contained, and say so in one line each.
 *
 * Which traces: every process that creates a trace appends its path to the
 * manifest (MEMREC_MANIFEST), so memrec needs neither to guess the names
 * the %p/%h/%r patterns expanded to nor to scan directories, and traces
 * from child processes (data loaders, torchrun workers) are all found.
 * A line that starts with "#note " is no trace but something a process
 * wants said after the run (which CUPTI and driver it used: rec_core.h's
 * rec_manifest_note): the manifest is already the one file every process
 * of the run can append to and the launcher reads once they are done, and
 * a trace may be created before CUPTI is chosen (an NVTX marker first), so
 * its process record could not carry it. Each distinct note is printed
 * once, so eight ranks on one driver make one line. "#warned " lines say
 * a process already warned (no usable CUPTI): then a run without traces
 * is not said to have made no CUDA calls.
 *
 * Symbolization runs here, on the recording host, because the binaries the
 * frames point into (libtorch_cuda.so, ...) exist only here. A trace that
 * cannot be symbolized is still reported: its frames keep their raw ips. */
#include "gmt_grow.h"
#include "memrec_launch.h"
#include "trace_format.h"
#ifdef GMT_HAVE_SYMBOLIZE
#include "trace_symbolize.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_TRACES 4096

int memrec_manifest_create(char *path, size_t pathlen, char *err, size_t errlen) {
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    if ((size_t)snprintf(path, pathlen, "%s/memrec-manifest-XXXXXX", dir) >= pathlen) {
        snprintf(err, errlen, "TMPDIR is too long");
        return -1;
    }
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a file in %s: %s", dir, strerror(errno));
        return -1;
    }
    close(fd);
    return 0;
}

/* rec_core.h's REC_MANIFEST_NOTE and REC_MANIFEST_WARNED */
static const char *const kinds[] = {"", "#note ", "#warned "};
enum { TRACES, NOTES, WARNED };

/* The manifest's distinct lines of one kind, in order (without their
 * prefix). Returns the count (the array and its strings are the caller's),
 * -1 when out of memory. */
static int read_manifest(const char *manifest, int kind, char ***out) {
    *out = NULL;
    FILE *f = fopen(manifest, "r");
    if (!f)
        return 0;
    char **paths = NULL;
    int n = 0;
    size_t cap = 0;
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t len;
    while ((len = getline(&line, &line_cap, f)) > 0 && n < MAX_TRACES) {
        if (line[len - 1] == '\n')
            line[--len] = 0;
        int line_kind = line[0] != '#'                                         ? TRACES
                        : !strncmp(line, kinds[NOTES], strlen(kinds[NOTES]))   ? NOTES
                        : !strncmp(line, kinds[WARNED], strlen(kinds[WARNED])) ? WARNED
                                                                               : -1;
        if (line_kind != kind || len == 0)
            continue;
        const char *text = line + strlen(kinds[kind]);
        int seen = 0;
        for (int i = 0; i < n && !seen; i++)
            seen = strcmp(paths[i], text) == 0;
        if (seen)
            continue;
        if (gmt_grow((void **)&paths, &cap, (size_t)n, sizeof *paths) != 0)
            break;
        if (!(paths[n] = strdup(text)))
            break;
        n++;
    }
    free(line);
    fclose(f);
    *out = paths;
    return n;
}

/* 1 when a process still holds the trace's writer lock (an exclusive flock,
 * taken before its first frame is out) — a grandchild the command left
 * behind; a pid check would take a zombie or a reused pid for the writer. */
static int writer_alive(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int alive = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return alive;
}

/* Memory events in a trace, read through the codec (when the symbolizer,
 * which counts them too, does not run); *clean_end: its writer closed it. */
static uint64_t count_events(const char *path, int *clean_end) {
    char err[256];
    trace_reader *r = trace_reader_open(path, err, sizeof err);
    *clean_end = 0;
    if (!r)
        return 0;
    trace_record rec;
    while (trace_reader_next(r, &rec) == 1) {
    }
    uint64_t events = trace_reader_get_stats(r)->events;
    *clean_end = trace_reader_get_stats(r)->clean_end;
    trace_reader_close(r);
    return events;
}

#ifdef GMT_HAVE_SYMBOLIZE
static void print_symbolize_warning(void *ctx, const char *message) {
    if (!*(const int *)ctx)
        fprintf(stderr, "memrec: %s\n", message);
}
#endif

/* Symbolizes one trace (warnings printed unless quiet); returns its
 * memory event count, and in *unclosed whether its process ended without
 * closing it (a trace still being written has not ended). */
static uint64_t finish_trace(const char *path, int symbolize, int quiet, int *unclosed) {
    int clean_end = 1;
    *unclosed = 0;
    if (writer_alive(path)) { /* symbolizing renames a copy over the file: its writer would
                                 lose the rest */
        if (!quiet)
            fprintf(stderr,
                    "memrec: %s is still being written by a process the command left "
                    "running: not symbolized (run memanalyze symbolize on it once it ends)\n",
                    path);
        return count_events(path, &clean_end);
    }
#ifdef GMT_HAVE_SYMBOLIZE
    if (symbolize) {
        trace_symbolize_result res;
        char err[1024];
        if (trace_symbolize_file(path, &res, print_symbolize_warning, &quiet, err, sizeof err) ==
            0) {
            *unclosed = !res.clean_end;
            return res.events;
        }
        if (!quiet)
            fprintf(stderr, "memrec: %s: not symbolized: %s\n", path, err);
    }
#else
    static int said;
    if (symbolize && !quiet && !said++)
        fprintf(stderr, "memrec: built without libdw: traces are not symbolized\n");
#endif
    uint64_t events = count_events(path, &clean_end);
    *unclosed = !clean_end;
    return events;
}

int memrec_report_traces(const char *manifest, const char *cwd, int symbolize, int quiet,
                         int quiet_if_none) {
    char **paths;
    int n = read_manifest(manifest, NOTES, &paths);
    for (int i = 0; i < n; i++) {
        if (!quiet)
            fprintf(stderr, "memrec: %s\n", paths[i]);
        free(paths[i]);
    }
    free(paths);
    int warned = read_manifest(manifest, WARNED, &paths);
    for (int i = 0; i < warned; i++)
        free(paths[i]);
    free(paths);
    n = read_manifest(manifest, TRACES, &paths);
    unlink(manifest);
    size_t cwd_len = cwd ? strlen(cwd) : 0;
    int reported = 0;
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            if (!quiet)
                fprintf(stderr, "memrec: trace %s was created but is gone\n", paths[i]);
            free(paths[i]);
            continue;
        }
        int unclosed = 0;
        uint64_t events = finish_trace(paths[i], symbolize, quiet, &unclosed);
        if (stat(paths[i], &st) != 0)
            st.st_size = 0;
        const char *shown = paths[i];
        if (cwd_len > 1 && !strncmp(shown, cwd, cwd_len) && shown[cwd_len] == '/')
            shown += cwd_len + 1;
        if (!quiet) {
            static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
            double size = (double)st.st_size;
            unsigned u = 0;
            while (size >= 1024 && u + 1 < sizeof units / sizeof units[0])
                size /= 1024, u++;
            fprintf(stderr, "memrec: trace written: %s (%" PRIu64 " events, %.*f %s)%s\n", shown,
                    events, u ? 1 : 0, size, units[u],
                    unclosed ? "; its process ended without closing it (_exit(2), a kill or "
                               "a crash): what the writer had not written yet (its last "
                               "0.2 s, or up to 2 s of records held for PyTorch's history) "
                               "is missing"
                             : "");
        }
        reported++;
        free(paths[i]);
    }
    free(paths);
    if (!reported && !quiet && !quiet_if_none && warned <= 0)
        fprintf(stderr, "memrec: no trace written (the program made no CUDA calls)\n");
    return reported;
}
