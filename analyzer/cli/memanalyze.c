/* memanalyze.c — the command-line entry point: finds the subcommand and
 * hands it the rest of argv. Each command parses its own options (they
 * differ), prints its own errors, and returns the exit status. */
#include "commands.h"
#include "db_query.h"
#include "gmt_env.h"

#ifdef GMT_HAVE_CAIRO
#include "render.h"
#endif

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"report", cmd_report, "peak, fragmentation, leaks, steps, OOMs: one screen"},
    {"leaks", cmd_leaks, "allocation sites whose live bytes grow across steps"},
    {"diff", cmd_diff, "what is live at one point and not another (or in two inputs)"},
    {"segments", cmd_segments, "the segment layout at a point in time (text, JSON or a picture)"},
    {"timeline", cmd_timeline, "picture: bytes over time, by site, steps and peak marked"},
    {"heatmap", cmd_heatmap, "picture: address space x time, coloured by how full it is"},
    {"fragmentation", cmd_fragmentation, "picture: fragmentation per step with rating bands"},
    {"simulate", cmd_simulate,
     "the run under other allocator settings: peaks, OOMs, memory needed"},
    {"steps", cmd_steps, "a row per step: its peak and phase, end state, fragmentation, anomalies"},
    {"stages", cmd_stages, "memory per NVTX range or annotation name: peak, what it leaves, sites"},
    {"tensors", cmd_tensors,
     "named tensors at a moment: parameters, gradients, optimizer state by layer"},
    {"compare", cmd_compare, "runs side by side: settings, peaks, fragmentation, OOMs, sites"},
    {"ranks", cmd_ranks, "the ranks of a job: imbalance, the bottleneck and why, one-rank leaks"},
    {"info", cmd_info, "record counts, devices, time span, steps, damage of a trace"},
    {"import", cmd_import, "replay a trace or snapshot into an SQLite database file"},
    {"sql", cmd_sql, "run an SQL query on the replayed database"},
    {"symbolize", cmd_symbolize, "name the native frames of a trace recorded on this host"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: memanalyze COMMAND [options] INPUT\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`memanalyze COMMAND --help` describes a command.\n");
}

/* An import allocates hundreds of MB that are written once; with 4 KiB
 * pages the page faults cost 10-15 % of it (dev-2c, KVM: 10 M events 9.0 ->
 * 8.4 s, a 1 M-entry snapshot 2.0 -> 1.7 s). glibc (2.35+) backs malloc with
 * transparent huge pages only when told at process start, through
 * GLIBC_TUNABLES, so memanalyze re-executes itself once with
 * glibc.malloc.hugetlb=1 (an older glibc ignores it). Same pid, same argv;
 * GMT_NO_HUGEPAGES=1 turns it off, a failed exec just goes on, and it is not
 * tried where /proc/self/exe is not memanalyze itself. */
/* 1 when /proc/self/exe is the file this code was loaded from: not so when
 * memanalyze was started through ld.so (exe is the loader) or under valgrind
 * (its preloads are in LD_PRELOAD; an exec would leave valgrind). */
static int exe_is_this_program(void) {
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload"))
        return 0;
    struct stat exe;
    if (stat("/proc/self/exe", &exe) != 0)
        return 0;
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps)
        return 0;
    uintptr_t here = (uintptr_t)&exe_is_this_program;
    char line[4352];
    int same = 0;
    while (fgets(line, sizeof line, maps)) {
        unsigned long lo, hi, inode;
        unsigned major, minor;
        if (sscanf(line, "%lx-%lx %*s %*x %x:%x %lu", &lo, &hi, &major, &minor, &inode) == 5 &&
            here >= lo && here < hi) {
            same = inode == (unsigned long)exe.st_ino && makedev(major, minor) == exe.st_dev;
            break;
        }
    }
    fclose(maps);
    return same;
}

static void prefer_huge_pages(char **argv) {
    if (getenv(GMT_ENV_NO_HUGEPAGES) || getenv(GMT_ENV_HUGEPAGES_ASKED) || !exe_is_this_program())
        return;
    const char *tunables = getenv("GLIBC_TUNABLES");
    if (tunables && strstr(tunables, "glibc.malloc.hugetlb"))
        return;
    char value[2048];
    int n = snprintf(value, sizeof value, "%s%sglibc.malloc.hugetlb=1", tunables ? tunables : "",
                     tunables && *tunables ? ":" : "");
    if (n < 0 || (size_t)n >= sizeof value)
        return;
    char *saved = tunables ? strdup(tunables) : NULL;
    if (setenv("GLIBC_TUNABLES", value, 1) == 0 && setenv(GMT_ENV_HUGEPAGES_ASKED, "1", 1) == 0)
        execv("/proc/self/exe", argv);
    if (saved) /* the exec failed: as we were */
        setenv("GLIBC_TUNABLES", saved, 1);
    else
        unsetenv("GLIBC_TUNABLES");
    free(saved);
}

/* SQLite's failures that a command may not see: a query helper that gets no row takes it for
 * an empty answer, so running out of memory or a read error in the middle of a report printed
 * wrong facts and exited 0. SQLite logs each such failure (SQLITE_CONFIG_LOG, from any thread);
 * it is noted like any failure that cannot be returned (db_note_failure), and the command fails
 * when it ends, whatever it printed before. Other logged codes (a missing file, a schema
 * change, notices) are answers the commands handle. */
static void note_sqlite_failure(void *ctx, int code, const char *message) {
    (void)ctx;
    int primary = code & 0xff;
    if (primary != SQLITE_NOMEM && primary != SQLITE_IOERR && primary != SQLITE_FULL &&
        primary != SQLITE_CORRUPT)
        return;
    char what[256];
    snprintf(what, sizeof what, "SQLite failed under it: %s (%s)", message ? message : "",
             sqlite3_errstr(code));
    db_note_failure(what);
}

int main(int argc, char **argv) {
    prefer_huge_pages(argv);
    /* Debian's SQLite keeps memory statistics, a global mutex on every allocation; nothing
     * here reads them. Off: imports 4 % faster (before any connection opens, or ignored). */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    sqlite3_config(SQLITE_CONFIG_LOG, note_sqlite_failure, NULL);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            int rc = commands[i].run(argc - 1, argv + 1);
            if (rc == 0 && db_failure_noted()) {
                fprintf(stderr, "memanalyze %s: %s; what it printed may be incomplete\n", argv[1],
                        db_failure_noted());
                rc = 2;
            }
#ifdef GMT_HAVE_CAIRO
            render_release(); /* fontconfig's caches: nothing left for LeakSanitizer */
#endif
            return rc;
        }
    fprintf(stderr, "memanalyze: unknown command '%s' (try memanalyze --help)\n", argv[1]);
    return 2;
}
