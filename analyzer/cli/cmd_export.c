/* cmd_export.c — `memanalyze export INPUT --to FORMAT -o FILE`: a recording in the format of a
 * tool people already use. `folded` (flamegraph.pl, inferno, speedscope): a line per stack,
 * `frame;frame;...;frame BYTES`, outermost frame first, from folded.h's rows (what is live at the
 * peak or a WHEN, the growth per step per stack, what was allocated in a window). `pytorch`
 * (MemoryViz, torch.cuda._memory_viz): the pickle torch.cuda.memory._dump_snapshot writes
 * (export_pytorch.h). `perfetto` (ui.perfetto.dev) and `chrome-json` (chrome://tracing): the
 * timeline, each device's totals (and each category's bytes), allocations with their stacks,
 * OOMs, steps and NVTX ranges (export_perfetto.h). Those three read every block's category in
 * event order (category_stream.h), which the first of them adds to a trace's cached database.
 * The file is written under a temporary name beside
 * FILE and renamed over it once complete, only over a regular file or nothing (db_file.h's
 * rule): a bad input or a failed write leaves no file behind. */
#include "category_store.h"
#include "cli.h"
#include "commands.h"
#include "db_file.h"
#include "export_perfetto.h"
#include "export_pytorch.h"
#include "folded.h"
#include "timeline_export.h"
#include "torch_export.h"
#include "units.h"
#include "when.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

const char export_usage[] =
    "usage: memanalyze export INPUT --to FORMAT -o FILE [--what WHAT] [--device N]\n"
    "                         [--from WHEN] [--until WHEN]\n"
    "Writes the recording in a format other tools read. FILE is written whole or\n"
    "not at all (a temporary beside it, renamed over it), never through a link.\n"
    "Formats:\n"
    "  folded        one line per stack, `frame;frame;...;frame BYTES`, the outermost\n"
    "                frame first, for flamegraph.pl, inferno-flamegraph and speedscope;\n"
    "                frames are labelled as report labels them (allocator, runtime and\n"
    "                interpreter plumbing left out), a ';' inside a frame written ':',\n"
    "                control characters (a newline) as a space\n"
    "  pytorch       the pickle torch.cuda.memory._dump_snapshot writes, for MemoryViz\n"
    "                (pytorch.org/memory_viz) and python -m torch.cuda._memory_viz: every\n"
    "                device's history (device_traces) and its segments at the end; a\n"
    "                driver allocation no allocator splits is a segment of one block;\n"
    "                takes no --what, --from or --until (nor --device: every device);\n"
    "                steps and NVTX ranges as external_annotations (and user_defined\n"
    "                entries), each entry's category when the analyzer knows them; FILE\n"
    "                ending in .json: the same structure as JSON\n"
    "  perfetto      a Perfetto trace (protobuf, .perfetto-trace) for ui.perfetto.dev:\n"
    "                a process per device (and rank) with counter tracks of allocated,\n"
    "                reserved and requested bytes, and of each category's bytes when\n"
    "                the analyzer knows them; each allocation an instant with its\n"
    "                stack weighted by its bytes (select a window: who allocated in it,\n"
    "                as a flame graph); OOMs as instants with their facts; steps and NVTX\n"
    "                ranges as slices; the whole run, every device: takes no --what,\n"
    "                --from, --until or --device\n"
    "  chrome-json   the same counters, instants and slices as Chrome trace-event JSON\n"
    "                (chrome://tracing, other viewers), for inputs of at most 1000000\n"
    "                events (larger: use perfetto)\n";

/* text[0] --to, text[1] -o, text[2] --what */
const cli_option export_options[] = {
    {"to", 0, CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  --to FORMAT   the format: folded, pytorch, perfetto or chrome-json\n", NULL},
    {"output", 'o', CLI_TEXT, offsetof(cli_ctx, text[1]), 0, NULL,
     "  -o, --output FILE  where to write it (a regular file is replaced)\n", NULL},
    {"what", 'w', CLI_TEXT, offsetof(cli_ctx, text[2]), 0, NULL,
     "  --what WHAT   peak: the bytes live at the peak, per stack (the default; with a\n"
     "                window, the window's peak); at:WHEN: live at WHEN (step:N,\n"
     "                event:N, time:1.5s, peak, start, end); leaks: the growth per\n"
     "                step of each growing stack, as `leaks` measures it; allocated:\n"
     "                the bytes allocated in the window\n",
     NULL},
    CLI_OPT_DEVICE,
    CLI_OPT_FROM("  --from/--until WHEN  the window (default: the whole run); --to names\n"
                 "                the format, so the window ends at --until\n"),
    {"until", 0, CLI_TEXT, offsetof(cli_ctx, to), 0, NULL, NULL, NULL},
    CLI_OPT_STEP_RULE,
    CLI_OPT_END};

enum { WHAT_PEAK, WHAT_AT, WHAT_LEAKS, WHAT_ALLOCATED };

#define FORMATS "folded, pytorch, perfetto, chrome-json"

/* The formats of the timeline (export_perfetto.h): the whole run, no options. */
static int timeline_format(const char *format) {
    return !strcmp(format, "perfetto") || !strcmp(format, "chrome-json");
}

/* --what as one of WHAT_*, and the WHEN of at:WHEN; -1 when it is none. */
static int what_of(const char *what, const char **when) {
    *when = NULL;
    if (!what || !strcmp(what, "peak"))
        return WHAT_PEAK;
    if (!strcmp(what, "leaks"))
        return WHAT_LEAKS;
    if (!strcmp(what, "allocated"))
        return WHAT_ALLOCATED;
    if (!strncmp(what, "at:", 3) && what[3]) {
        *when = what + 3;
        return WHAT_AT;
    }
    return -1;
}

/* The options, before the database is built: the format, -o, --what. */
int export_check(cli_ctx *c) {
    const char *format = c->text[0], *out = c->text[1], *when;
    if (!format)
        return cli_error("export needs --to FORMAT (the formats: %s)", FORMATS);
    if (strcmp(format, "folded") != 0 && strcmp(format, "pytorch") != 0 && !timeline_format(format))
        return cli_error("unknown --to '%s' (the formats: %s)", format, FORMATS);
    if (!strcmp(format, "pytorch") && (c->text[2] || c->from || c->to))
        return cli_error("--to pytorch writes the whole run: it takes no --what, --from or "
                         "--until");
    if (timeline_format(format) && (c->text[2] || c->from || c->to || c->device >= 0))
        return cli_error("--to %s writes the whole run, every device: it takes no --what, "
                         "--from, --until or --device",
                         format);
    if (!out || !*out)
        return cli_error("export needs -o FILE");
    int what = what_of(c->text[2], &when);
    if (what < 0)
        return cli_error("bad --what '%s': peak, at:WHEN, leaks or allocated", c->text[2]);
    if (what == WHAT_AT && (c->from || c->to))
        return cli_error("--what at:WHEN is one moment: it takes no --from/--until");
    char err[PATH_MAX + 128];
    if (db_file_replaceable(out, err, sizeof err) != 0)
        return cli_error("%s", err);
    struct stat in_st, out_st;
    if (stat(c->input, &in_st) == 0 && stat(out, &out_st) == 0 && in_st.st_dev == out_st.st_dev &&
        in_st.st_ino == out_st.st_ino)
        return cli_error("-o %s is the input: not replaced", out);
    return 0;
}

/* A frame as a folded line may hold it: ';' (the separator) as ':', control characters (a
 * newline would end the line) as a space, runs of spaces as one, none at either end ("?" when
 * nothing is left), so that the last space of a line is the one before its bytes. */
static void put_frame(FILE *f, const char *frame) {
    int pending = 0, any = 0;
    for (const unsigned char *p = (const unsigned char *)frame; *p; p++) {
        unsigned char ch = *p == ';' ? ':' : *p;
        if (ch < 0x20 || ch == 0x7f || ch == ' ') {
            pending = any;
            continue;
        }
        if (pending)
            fputc(' ', f);
        pending = 0;
        fputc(ch, f);
        any = 1;
    }
    if (!any)
        fputc('?', f);
}

static void write_folded(FILE *f, const folded_table *t) {
    for (size_t i = 0; i < t->n; i++) {
        const folded_row *r = &t->rows[i];
        for (size_t k = 0; k < r->nframes; k++) {
            if (k)
                fputc(';', f);
            put_frame(f, r->frames[k]);
        }
        fprintf(f, " %lld\n", (long long)r->bytes);
    }
}

/* What fills the file: 0, or -1 with a one-line message in err (the file is then not kept). */
typedef int (*fill_fn)(FILE *f, void *ctx, char *err, size_t errlen);

static int fill_folded(FILE *f, void *ctx, char *err, size_t errlen) {
    (void)err, (void)errlen;
    write_folded(f, ctx);
    return 0;
}

/* Writes what fill writes to a temporary beside path and renames it into place. 0; 1 on a write
 * error (a full disk), 2 when the file cannot be made or moved or fill fails; the error printed,
 * the temporary removed. */
static int write_file(const char *path, fill_fn fill, void *ctx) {
    char tmp[PATH_MAX + 64], err[PATH_MAX + 256] = "", dir[PATH_MAX], base[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    snprintf(base, sizeof base, "%s", path);
    db_file_sweep(dirname(dir), basename(base)); /* what a killed export left beside it */
    int fd = db_file_temp(path, "", 0666, tmp, sizeof tmp, err, sizeof err);
    if (fd < 0)
        return cli_error("%s", err);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return cli_error("cannot write %s: %s", path, strerror(e));
    }
    errno = 0;
    char why[512] = "";
    if (fill(f, ctx, why, sizeof why) != 0) {
        fclose(f);
        unlink(tmp);
        return cli_error("%s", why);
    }
    int e = 0;
    if (fflush(f) != 0 || ferror(f)) /* a full disk shows here, or at an earlier write */
        e = errno ? errno : EIO;
    else if (fsync(fileno(f)) != 0)
        e = errno;
    if (fclose(f) != 0 && !e)
        e = errno;
    if (e) {
        unlink(tmp);
        cli_error("export: write error: %s: %s", path, strerror(e));
        return 1;
    }
    /* db_file_publish's rule (a regular file or nothing), without its removal of a database's
     * -journal/-wal/-shm beside it: those would be the user's files here */
    if (db_file_replaceable(path, err, sizeof err) != 0 || rename(tmp, path) != 0) {
        if (!*err)
            snprintf(err, sizeof err, "cannot move %s into place: %s", path, strerror(errno));
        unlink(tmp);
        return cli_error("%s", err);
    }
    return 0;
}

/* The window --from/--until (when_window's, with --until's name in the error): 0, or 2. */
static int export_window(cli_ctx *c) {
    int64_t ignored;
    char err[256];
    if (when_window(c->db, c->from, NULL, (int)c->device, &c->from_event, &ignored, err,
                    sizeof err) != 0 ||
        when_window(c->db, NULL, c->to, (int)c->device, &ignored, &c->to_event, err, sizeof err) !=
            0)
        return cli_error("%s", err);
    if (c->from_event > c->to_event)
        return cli_error("--from is after --until (event %lld > %lld)", (long long)c->from_event,
                         (long long)c->to_event);
    return 0;
}

/* Every block's category in the cached database before pytorch, perfetto or chrome-json read
 * them (as `sql` adds them: on a copy renamed over it, input.h), so that the export streams
 * them in alloc_id order (category_stream.h) and holds only the live blocks'. Never added to a
 * database the user gave: one without them (an older memanalyze's; import -o writes them) is
 * categorized in memory as before, a map of every block, so the file says the same whatever
 * the input's form. 0, or 2 (the error printed). */
static int add_block_categories(cli_ctx *c) {
    input_kind kind;
    char err[PATH_MAX + 512];
    if (category_blocks_stored(c->db) || input_detect(c->input, &kind, err, sizeof err) != 0 ||
        kind == INPUT_DATABASE)
        return 0;
    input_options io = c->io;
    db_close(c->db);
    c->db = NULL;
    if (input_change_cache(c->input, &io, category_blocks_add, NULL, err, sizeof err) != 0)
        return cli_error("%s: the blocks' categories: %s", c->input, err);
    return cli_open_db(c->input, &io, &c->db);
}

int run_export(cli_ctx *c) {
    const char *when;
    int what = what_of(c->text[2], &when), dev = (int)c->device, rc;
    folded_table t;
    char err[512];
    int refused = !strcmp(c->text[0], "chrome-json") && /* its fill says why */
                  timeline_export_event_count(c->db) > EXPORT_CHROME_MAX_EVENTS;
    if ((!strcmp(c->text[0], "pytorch") || timeline_format(c->text[0])) && !refused &&
        (rc = add_block_categories(c)) != 0)
        return rc;
    if (!strcmp(c->text[0], "pytorch")) {
        size_t len = strlen(c->text[1]);
        int json = len >= 5 && !strcasecmp(c->text[1] + len - 5, ".json");
        if ((rc = write_file(c->text[1], json ? export_pytorch_fill_json : export_pytorch_fill,
                             c->db)) != 0)
            return rc;
        int devices = torch_export_device_count(c->db);
        printf("wrote %s: a PyTorch memory snapshot of %d device%s, the segments at the end "
               "(event %lld)%s\n",
               c->text[1], devices, devices == 1 ? "" : "s",
               (long long)torch_export_last_event(c->db), json ? ", as JSON" : "");
        return 0;
    }
    if (timeline_format(c->text[0])) {
        int perfetto = !strcmp(c->text[0], "perfetto");
        if ((rc = write_file(c->text[1], perfetto ? export_perfetto_fill : export_chrome_fill,
                             c->db)) != 0)
            return rc;
        const export_timeline_counts *n = &export_timeline_last;
        printf(
            "wrote %s: %s of %d device%s, %lld allocation%s, %lld OOM%s, %lld slice%s (steps and "
            "ranges), %lld counter sample%s\n",
            c->text[1], perfetto ? "a Perfetto trace" : "Chrome trace-event JSON", n->devices,
            n->devices == 1 ? "" : "s", (long long)n->allocations, n->allocations == 1 ? "" : "s",
            (long long)n->ooms, n->ooms == 1 ? "" : "s", (long long)n->slices,
            n->slices == 1 ? "" : "s", (long long)n->counter_samples,
            n->counter_samples == 1 ? "" : "s");
        return 0;
    }
    if ((rc = export_window(c)) != 0)
        return rc;
    if (what == WHAT_AT) {
        int64_t at;
        if (when_resolve(c->db, when, dev, &at, err, sizeof err) != 0)
            return cli_error("%s", err);
        rc = folded_live_at(c->db, dev, at, &t, err, sizeof err);
    } else if (what == WHAT_PEAK)
        rc = folded_peak(c->db, dev, c->from_event, c->to_event, &t, err, sizeof err);
    else if (what == WHAT_LEAKS)
        rc = folded_leaks(c->db, dev, c->from_event, c->to_event, &t, err, sizeof err);
    else
        rc = folded_allocated(c->db, dev, c->from_event, c->to_event, &t, err, sizeof err);
    if (rc != 0)
        return cli_error("%s: %s", c->input, err);
    if ((rc = write_file(c->text[1], fill_folded, &t)) != 0) {
        folded_release(&t);
        return rc;
    }
    char total[32], moment[256];
    units_bytes_i64(t.total, total);
    printf("wrote %s: %zu line%s, device %d, %s ", c->text[1], t.n, t.n == 1 ? "" : "s", dev,
           total);
    if (what == WHAT_AT || what == WHAT_PEAK) {
        when_describe(c->db, t.event_id, moment, sizeof moment);
        printf("live at %s\n", moment);
    } else if (what == WHAT_LEAKS && !t.windows)
        printf("of growth: fewer than two step ends in the window, none measured\n");
    else if (what == WHAT_LEAKS)
        printf("of growth per step, over %zu step ends\n", t.windows + 1);
    else
        printf("allocated in the window\n");
    folded_release(&t);
    return 0;
}
