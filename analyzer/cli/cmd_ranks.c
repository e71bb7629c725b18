/* cmd_ranks.c — `memanalyze ranks INPUTS...`: the ranks of one job side by side.
 *
 * The inputs (rank traces, their databases, or directories of them) get their databases in
 * parallel processes (ranks_import.h); a broken one is reported and the rest go on. Each rank is
 * then its summary tables only (run_summary.h), so a fleet of a thousand imported ranks reads
 * in seconds. Across ranks: the imbalance of peak allocated (max / mean, and the spread), the
 * bottleneck rank (the highest peak) and why — the sites whose bytes at its peak exceed the
 * median rank's most, sites matched by frames —, the rank whose growth trend reaches the
 * device first, and the ranks whose growth stands out from the others' (a leak on one rank).
 * --db writes the per-rank summaries to one SQLite file with a `rank` column. */
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "plots.h"
#include "ranks_import.h"
#include "ranks_report.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

const char ranks_usage[] =
    "usage: memanalyze ranks INPUTS... [-j N] [--device N] [--top N] [--json]\n"
    "                        [--db OUT.db] [-o PICTURE]\n"
    "The ranks of a job side by side: per rank its peaks, fragmentation, growth and\n"
    "OOMs; across them the imbalance, the bottleneck rank and the sites that make it\n"
    "so, the first rank to run out, and ranks that leak alone. INPUTS are rank traces\n"
    "(memrec -o trace.%r.zst), their databases, or directories of them; each is\n"
    "imported in a process of its own and cached, so a second run is instant.\n";

static long jobs_given = -1; /* -j; -1: the number of cores */

static int take_jobs(cli_ctx *ctx, const char *arg) {
    (void)ctx;
    return cli_parse_count("jobs", arg, 4096, &jobs_given);
}

/* --db in text[0], -o in text[1]; -j is --jobs, so --json has no letter */
const cli_option ranks_options[] = {
    {"jobs", 'j', CLI_CALL, 0, 0, NULL,
     "  -j N          imports at a time (default: the number of cores)\n", take_jobs},
    {"device", 'd', CLI_COUNT, offsetof(cli_ctx, device), 1 << 20, NULL,
     "  --device N    the device of every rank (default: each rank's highest peak)\n", NULL},
    {"top", 'n', CLI_COUNT, offsetof(cli_ctx, top), 1 << 20, NULL,
     "  --top N       sites named for the bottleneck (default 10; 0: all)\n", NULL},
    {"json", 0, CLI_FLAG, offsetof(cli_ctx, json), 0, NULL,
     "  --json        machine-readable output\n", NULL},
    {"db", 'b', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  --db OUT.db   also write the per-rank summaries (no events) to an SQLite file\n", NULL},
    {"output", 'o', CLI_TEXT, offsetof(cli_ctx, text[1]), 0, NULL,
     "  -o FILE       also draw peak per rank and a rank x step strip (.png, .svg, .pdf)\n", NULL},
    CLI_OPT_END};

/* ---- the inputs ---------------------------------------------------------------------------- */

typedef struct input_list {
    char **paths;
    size_t count, cap;
} input_list;

static int add_path(input_list *l, const char *path) {
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **grown = realloc(l->paths, cap * sizeof *grown);
        if (!grown)
            return -1;
        l->paths = grown;
        l->cap = cap;
    }
    return (l->paths[l->count++] = strdup(path)) ? 0 : -1;
}

/* A file in a directory given as input is a rank's when its name says trace, snapshot or
 * database; other files (logs, the job's scripts) are not inputs. */
static int looks_like_input(const char *name) {
    static const char *const endings[] = {".zst", ".db", ".sqlite", ".pickle", ".pkl"};
    size_t n = strlen(name);
    if (name[0] == '.')
        return 0;
    for (size_t i = 0; i < sizeof endings / sizeof endings[0]; i++) {
        size_t e = strlen(endings[i]);
        if (n > e && !strcmp(name + n - e, endings[i]))
            return 1;
    }
    return 0;
}

static int by_string(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* An input named twice (a file and its directory, or twice over) is read once: the first
 * time, as given, and its other names dropped. */
static void drop_repeats(input_list *l) {
    size_t kept = 0;
    char(*real)[PATH_MAX] = malloc((l->count ? l->count : 1) * sizeof *real);
    for (size_t i = 0; i < l->count; i++) {
        if (real && !realpath(l->paths[i], real[kept]))
            snprintf(real[kept], sizeof real[kept], "%s", l->paths[i]);
        int seen = 0;
        for (size_t k = 0; real && k < kept && !seen; k++)
            seen = !strcmp(real[k], real[kept]);
        if (seen) {
            free(l->paths[i]);
            continue;
        }
        l->paths[kept++] = l->paths[i];
    }
    l->count = kept;
    free(real);
}

static int expand(input_list *l, const char *arg) {
    struct stat st;
    if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode))
        return add_path(l, arg); /* a missing file fails in its import, with its message */
    DIR *dir = opendir(arg);
    if (!dir)
        return add_path(l, arg);
    size_t first = l->count;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(dir))) {
        if (!looks_like_input(e->d_name))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", arg, e->d_name);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            rc = add_path(l, path);
    }
    closedir(dir);
    qsort(l->paths + first, l->count - first, sizeof *l->paths, by_string);
    return rc;
}

/* The rank a file name says: the number after "rank" (rank3_step500.db, rank-3.zst), else the
 * last number in its base name (trace.3.zst, memrec-node7-3.zst). */
static int64_t rank_of_name(const char *path) {
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int64_t rank = -1;
    for (const char *p = base; *p;) {
        if (!strncasecmp(p, "rank", 4)) {
            const char *q = p + 4;
            while (*q == '-' || *q == '_' || *q == '.')
                q++;
            if (isdigit((unsigned char)*q))
                return strtoll(q, NULL, 10);
        }
        if (isdigit((unsigned char)*p)) {
            char *end;
            rank = strtoll(p, &end, 10);
            p = end;
        } else {
            p++;
        }
    }
    return rank;
}

/* ---- the command --------------------------------------------------------------------------- */

int run_ranks(cli_ctx *ctx) {
    long jobs = jobs_given >= 0 ? jobs_given : sysconf(_SC_NPROCESSORS_ONLN), device = ctx->device;
    long top = ctx->top >= 0 ? ctx->top : 10;
    int json = ctx->json;
    const char *db_out = ctx->text[0], *picture = ctx->text[1];
    input_list list = {0};
    for (int i = 0; i < ctx->ninputs; i++)
        if (expand(&list, ctx->inputs[i]) != 0)
            return cli_error("out of memory");
    drop_repeats(&list);
    if (!list.count) {
        free(list.paths);
        return cli_error("no rank inputs in %s", ctx->input);
    }
    rank_input *inputs = calloc(list.count, sizeof *inputs);
    rank_entry *ranks = calloc(list.count, sizeof *ranks);
    int rc = inputs && ranks ? 0 : cli_error("out of memory");
    if (rc == 0) {
        for (size_t i = 0; i < list.count; i++)
            inputs[i].path = list.paths[i];
        input_options io = {0};
        if (ranks_import_all(inputs, list.count, (int)(jobs > 0 ? jobs : 1), &io) != 0)
            rc = cli_error("no process could be started for the imports");
    }
    size_t nranks = 0;
    for (size_t i = 0; rc == 0 && i < list.count; i++) {
        rank_entry *r = &ranks[nranks];
        r->input = inputs[i].path;
        char err[256];
        sqlite3 *db = NULL;
        if (!inputs[i].ok) {
            r->failed = inputs[i].error;
        } else if (cli_open_db_file(inputs[i].db_path, &db, err, sizeof err) != 0) {
            snprintf(inputs[i].error, sizeof inputs[i].error, "%.250s: %.250s", r->input, err);
            r->failed = inputs[i].error;
        } else {
            if (rank_entry_read(r, db, (int)device, err, sizeof err) != 0) {
                snprintf(inputs[i].error, sizeof inputs[i].error, "%.250s: %.250s", r->input, err);
                r->failed = inputs[i].error;
            }
        }
        sqlite3_close(db); /* one at a time: see rank_entry_read */
        if (!r->failed) {
            r->rank = r->s.rank >= 0 ? r->s.rank : rank_of_name(r->input);
            if (r->rank < 0)
                r->rank = (int64_t)i;
        }
        nranks++;
    }
    if (rc == 0) {
        rank_stats stats;
        char err[512];
        if (rank_stats_build(ranks, nranks, (size_t)top, &stats, err, sizeof err) != 0) {
            rc = cli_error("%s", err);
        } else {
            if (json)
                ranks_report_json(stdout, &stats);
            else
                ranks_report_text(stdout, &stats);
            if (db_out && ranks_report_write_db(&stats, db_out, err, sizeof err) != 0)
                rc = cli_error("%s", err);
            if (rc == 0 && picture && plot_ranks(&stats, picture, err, sizeof err) != 0)
                rc = cli_error("%s", err);
            if (rc == 0 && !stats.read)
                rc = cli_error("no rank could be read");
        }
        rank_stats_release(&stats);
    }
    for (size_t i = 0; ranks && i < nranks; i++)
        rank_entry_release(&ranks[i]);
    for (size_t i = 0; i < list.count; i++)
        free(list.paths[i]);
    free(list.paths);
    free(inputs);
    free(ranks);
    return rc;
}
