/* memanalyze.c — the command-line entry point and the command table: each row names a command,
 * its option table and the setup it needs (CLI_NEEDS_DB, CLI_NEEDS_DEVICE, CLI_NEEDS_WINDOW ...:
 * cli.h); main finds the row, cli_run_command parses the options, does the setup and calls the
 * command's run function, which returns the exit status. */
#include "commands.h"
#include "db_open.h"
#include "db_query.h"
#include "gmt_env.h"

#ifdef GMT_HAVE_CAIRO
#include "render.h"
#endif

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* A row: the command's run function, the setup it needs (cli.h's CLI_* flags), its option table,
 * the short options getopt takes (as they always were), and its --help text above the options. */
#define SETUP(f, needs, opts, shortopts, text)                                                     \
    .run = f, .setup = needs, .options = opts, .shorts = shortopts, .usage = text
#define PICTURE(f, text)                                                                           \
    SETUP(f, CLI_DEFAULT_DEVICE | CLI_NEEDS_WINDOW, picture_options, "o:h", text),                 \
        .check = picture_check

static const cli_command commands[] = {
    {"report", "peak, fragmentation, leaks, steps, OOMs: one screen",
     SETUP(run_report, CLI_TAKES_JSON, report_options_table, "h", report_usage)},
    {"leaks", "allocation sites whose live bytes grow across steps",
     SETUP(run_leaks, CLI_DEFAULT_DEVICE | CLI_NEEDS_WINDOW | CLI_TAKES_JSON, leaks_options, "h",
           leaks_usage)},
    {"diff", "what is live at one point and not another (or in two inputs)",
     SETUP(run_diff, CLI_MANY_INPUTS | CLI_TAKES_JSON, diff_options, "h", diff_usage),
     .check = diff_check},
    {"segments", "the segment layout at a point in time (text, JSON or a picture)",
     SETUP(run_segments, CLI_DEFAULT_DEVICE | CLI_TAKES_JSON, segments_options,
           "ho:", segments_usage)},
    {"timeline", "picture: bytes over time, by site, steps and peak marked",
     PICTURE(run_timeline, timeline_usage)},
    {"heatmap", "picture: address space x time, coloured by how full it is",
     PICTURE(run_heatmap, heatmap_usage)},
    {"fragmentation", "picture: fragmentation per step with rating bands",
     PICTURE(run_fragmentation, fragmentation_usage)},
    {"simulate", "the run under other allocator settings: peaks, OOMs, memory needed",
     SETUP(run_simulate, CLI_DEFAULT_DEVICE | CLI_TAKES_JSON, simulate_options, "c:d:m:jo:h",
           simulate_usage)},
    {"steps", "a row per step: its peak and phase, end state, fragmentation, anomalies",
     SETUP(run_steps, CLI_NEEDS_DEVICE | CLI_TAKES_JSON, steps_options, "d:jh", steps_usage)},
    {"stages", "memory per NVTX range or annotation name: peak, what it leaves, sites",
     SETUP(run_stages, CLI_NEEDS_DEVICE | CLI_TAKES_JSON, stages_options, "d:jh", stages_usage)},
    {"tensors", "named tensors at a moment: parameters, gradients, optimizer state by layer",
     SETUP(run_tensors, CLI_NEEDS_DEVICE | CLI_TAKES_JSON, tensors_options, "d:jh", tensors_usage)},
    {"compare", "runs side by side: settings, peaks, fragmentation, OOMs, sites",
     SETUP(run_compare, CLI_MANY_INPUTS | CLI_TAKES_JSON, compare_options, "l:a:d:n:jo:h",
           compare_usage),
     .check = compare_check},
    {"ranks", "the ranks of a job: imbalance, the bottleneck and why, one-rank leaks",
     SETUP(run_ranks, CLI_MANY_INPUTS | CLI_TAKES_JSON, ranks_options, "j:d:n:o:h", ranks_usage)},
    {"watch", "a trace (or a job's ranks) while written: memory, growth, forecast",
     SETUP(run_watch, CLI_MANY_INPUTS | CLI_TAKES_JSON, watch_options, "i:js:h", watch_usage)},
    {"info", "record counts, devices, time span, steps, damage of a trace",
     SETUP(run_info, 0, info_options, "h", info_usage)},
    {"import", "replay a trace or snapshot into an SQLite database file",
     SETUP(run_import, 0, import_options, "o:h", import_usage)},
    {"sql", "run an SQL query on the replayed database",
     SETUP(run_sql, CLI_NEEDS_DB | CLI_TWO_ARGS | CLI_TAKES_JSON, sql_options, "h", sql_usage)},
    {"export", "the recording for other tools: flame graphs, MemoryViz, Perfetto",
     SETUP(run_export, CLI_NEEDS_DEVICE, export_options, "o:w:d:h", export_usage),
     .check = export_check},
    {"view", "a local interactive viewer in the browser (127.0.0.1, a token, read-only)",
     SETUP(run_view, CLI_MANY_INPUTS, view_options, "p:b:oh", view_usage), .check = view_check},
    {"symbolize", "name the native frames of a trace recorded on this host",
     SETUP(run_symbolize, CLI_MANY_INPUTS, symbolize_options, "h", symbolize_usage)},
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

/* What a command printed reached its file, as coreutils' close_stdout checks: stdio buffers the
 * output, so a full disk or a closed pipe shows only at the flush, after the command has
 * returned 0. Then "memanalyze CMD: write error: REASON" and exit 1, never 0 with a cut file. */
static int check_stdout(const char *cmd, int rc) {
    int flushed = fflush(stdout) == 0;
    int saved = errno;
    if (flushed && !ferror(stdout))
        return rc;
    if (flushed) /* an earlier write failed; its errno is gone */
        fprintf(stderr, "memanalyze %s: write error\n", cmd);
    else
        fprintf(stderr, "memanalyze %s: write error: %s\n", cmd, strerror(saved));
    return rc ? rc : 1;
}

int main(int argc, char **argv) {
    prefer_huge_pages(argv);
    db_configure_process(); /* SQLite's settings and its log of failures (db_open.h) */
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return check_stdout("--help", argc < 2 ? 2 : 0);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            int rc = cli_run_command(&commands[i], argc - 1, argv + 1);
            if (rc == 0 && db_failure_noted()) {
                fprintf(stderr, "memanalyze %s: %s; what it printed may be incomplete\n", argv[1],
                        db_failure_noted());
                rc = 2;
            }
#ifdef GMT_HAVE_CAIRO
            render_release(); /* fontconfig's caches: nothing left for LeakSanitizer */
#endif
            return check_stdout(argv[1], rc);
        }
    return cli_error("unknown command '%s' (try memanalyze --help)", argv[1]);
}
