/* watch_job.c — `memanalyze watch` of the ranks of a job: several traces, or directories of
 * them (ranks of a job on a shared filesystem), each followed as `watch TRACE` follows one
 * (input/live_trace.h: the replay kept alive between polls), a directory looked at again each
 * refresh so that a rank that starts later is picked up. Each refresh prints every rank's state
 * (cmd_watch.c's lines or JSON object for it) and, across the ranks, what `ranks` says of a
 * finished job (query/rank_stats.h, the same rules): the imbalance of peak allocated, the
 * bottleneck rank and the sites that make it so (its sites at its peak above the median rank's
 * bytes of the same code, matched by frames), the first to run out, the ranks that leak alone.
 * A rank's entry is its device with the highest peak, its sites the WATCH_JOB_SITES largest at
 * that peak (a trace that failed is left out of the job's figures). An input not there yet (the
 * job makes its folder or files later) is looked at again each refresh, for --stale seconds.
 * It ends when every trace has ended (exit 0), when every one has ended or gone stale with one
 * stale (exit 3), or could not be read (exit 2) — with a folder, once no new trace has come for
 * --stale seconds too —, on an --exit-on rule (exit 4), with --once, or on SIGINT/SIGTERM. */
#include "watch_private.h"

#include "json_out.h"
#include "rank_stats.h"
#include "stack_names.h"
#include "units.h"

#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WATCH_MAX_TRACES 1024
#define WATCH_JOB_SITES 256
#define WATCH_JOB_EXCESS 3 /* the bottleneck's sites shown */

typedef enum { T_WAITING, T_RUNNING, T_ENDED, T_STALE, T_FAILED, T_STATES } trace_state;
static const char *const state_words[T_STATES] = {"waiting", "running", "ended", "stale", "failed"};

typedef struct watched {
    char *path, *real; /* as found, and its realpath (one trace named twice is one) */
    live_trace *lv;    /* NULL: not open yet (no complete frame) or failed */
    double last_growth;
    trace_state state;
    char why[600]; /* T_FAILED: the error */
    live_facts *facts;
    int have_facts; /* facts holds a poll's (lv open and polled once at least) */
    watch_held held;
    run_site *sites; /* this refresh's, for its rank entry: keys and labels malloc'd */
    size_t nsites;
} watched;

typedef struct job {
    cli_ctx *ctx;
    const char **dirs;
    size_t ndirs;
    const char **pending; /* inputs not there yet (a job makes its folder or files later) */
    size_t npending;
    watched *t;
    size_t n, cap;
    double added; /* when the last trace was found */
} job;

/* ---- the traces ---------------------------------------------------------------------------- */

static int add_trace(job *j, const char *path, double now) {
    char real[PATH_MAX];
    if (!realpath(path, real)) /* gone again, or missing past --stale: the path then */
        snprintf(real, sizeof real, "%s", path);
    for (size_t i = 0; i < j->n; i++)
        if (!strcmp(j->t[i].real, real))
            return 0;
    if (j->n == WATCH_MAX_TRACES)
        return 0; /* said once in the header: "N traces (at most ...)" */
    if (j->n == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 16;
        watched *grown = realloc(j->t, cap * sizeof *grown);
        if (!grown)
            return -1;
        j->t = grown;
        j->cap = cap;
    }
    watched *w = &j->t[j->n];
    memset(w, 0, sizeof *w);
    w->path = strdup(path);
    w->real = strdup(real);
    w->facts = calloc(1, sizeof *w->facts);
    if (!w->path || !w->real || !w->facts) {
        free(w->path), free(w->real), free(w->facts);
        return -1;
    }
    w->last_growth = now;
    j->n++;
    j->added = now;
    return 0;
}

/* The inputs not there yet, looked at again: a folder now is watched as one, a file as a trace;
 * after `stale` seconds one still missing is a trace that could not be read. */
static int resolve_pending(job *j, double now, double start, double stale) {
    size_t kept = 0;
    for (size_t i = 0; i < j->npending; i++) {
        const char *p = j->pending[i];
        struct stat st;
        int there = stat(p, &st) == 0;
        if (there && S_ISDIR(st.st_mode)) {
            j->dirs[j->ndirs++] = p;
        } else if (there || now - start >= stale) {
            if (add_trace(j, p, now) != 0)
                return -1;
        } else {
            j->pending[kept++] = p;
        }
    }
    j->npending = kept;
    return 0;
}

static int is_trace_name(const char *name) {
    size_t n = strlen(name);
    return name[0] != '.' && n > 4 && !strcmp(name + n - 4, ".zst");
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The directories' traces not seen yet, in name order. */
static int scan_dirs(job *j, double now) {
    for (size_t d = 0; d < j->ndirs; d++) {
        DIR *dir = opendir(j->dirs[d]);
        if (!dir)
            continue; /* gone for now: its traces stay watched */
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *e;
        int rc = 0;
        while (rc == 0 && (e = readdir(dir))) {
            if (!is_trace_name(e->d_name))
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                char **grown = realloc(names, cap * sizeof *grown);
                if (!grown) {
                    rc = -1;
                    break;
                }
                names = grown;
            }
            size_t len = strlen(j->dirs[d]) + strlen(e->d_name) + 2;
            if (!(names[n] = malloc(len))) {
                rc = -1;
                break;
            }
            snprintf(names[n++], len, "%s/%s", j->dirs[d], e->d_name);
        }
        closedir(dir);
        if (n)
            qsort(names, n, sizeof *names, by_name);
        for (size_t i = 0; i < n; i++) {
            struct stat st;
            if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
                rc = add_trace(j, names[i], now);
            free(names[i]);
        }
        free(names);
        if (rc)
            return -1;
    }
    return 0;
}

/* Opens or polls one trace and sets its state. */
static void follow(job *j, watched *w, double now, double stale) {
    if (w->state == T_FAILED || w->state == T_ENDED)
        return;
    if (!w->lv) {
        int not_yet = 0;
        w->lv = live_trace_open(w->path, &j->ctx->io, &not_yet, w->why, sizeof w->why);
        if (!w->lv) {
            w->state = !not_yet ? T_FAILED : now - w->last_growth >= stale ? T_STALE : T_WAITING;
            return;
        }
        w->last_growth = now;
    }
    int64_t got = live_trace_poll(w->lv, w->why, sizeof w->why);
    if (got < 0) {
        w->state = T_FAILED;
        return;
    }
    if (got > 0)
        w->last_growth = now;
    live_trace_facts(w->lv, w->facts);
    w->have_facts = 1;
    w->state = w->facts->ended ? T_ENDED : now - w->last_growth >= stale ? T_STALE : T_RUNNING;
}

/* ---- the ranks' entries (rank_stats.h) ---------------------------------------------------- */

static void free_sites(watched *w) {
    for (size_t i = 0; i < w->nsites; i++) {
        free((char *)w->sites[i].key);
        free((char *)w->sites[i].label);
    }
    free(w->sites);
    w->sites = NULL;
    w->nsites = 0;
}

static int by_key(const void *a, const void *b) {
    return strcmp(((const run_site *)a)->key, ((const run_site *)b)->key);
}

/* The trace's device with the highest peak; NULL: none yet. */
static const live_device *peak_device(const watched *w) {
    const live_device *best = NULL;
    for (size_t i = 0; w->have_facts && w->facts->started && i < w->facts->ndevices; i++)
        if (!best || w->facts->devices[i].peak_allocated > best->peak_allocated)
            best = &w->facts->devices[i];
    return best;
}

/* The sites of d at its peak, by frames key (one per key: its stacks' bytes added). 0 or -1. */
static int sites_of(watched *w, const live_device *d) {
    live_site ls[WATCH_JOB_SITES];
    size_t n = live_trace_sites_at_peak(w->lv, d->device, ls, WATCH_JOB_SITES);
    w->sites = calloc(n ? n : 1, sizeof *w->sites);
    if (!w->sites)
        return -1;
    for (size_t i = 0; i < n; i++) {
        named_frame nf[WATCH_FRAMES];
        size_t k = ls[i].stack_id ? watch_stack_frames(w->lv, ls[i].stack_id, nf) : 0;
        char label[512];
        if (ls[i].stack_id)
            stack_site_label(nf, k, label, sizeof label);
        else
            snprintf(label, sizeof label, "no stack");
        char *key = ls[i].stack_id ? stack_key_of(nf, k) : strdup("-");
        char *text = strdup(label);
        if (!key || !text) {
            free(key), free(text);
            return -1;
        }
        w->sites[w->nsites++] = (run_site){key, text, NULL, ls[i].bytes};
    }
    qsort(w->sites, w->nsites, sizeof *w->sites, by_key);
    size_t kept = 0;
    for (size_t i = 0; i < w->nsites; i++) {
        if (kept && !strcmp(w->sites[kept - 1].key, w->sites[i].key)) {
            w->sites[kept - 1].bytes += w->sites[i].bytes;
            free((char *)w->sites[i].key);
            free((char *)w->sites[i].label);
        } else {
            w->sites[kept++] = w->sites[i];
        }
    }
    w->nsites = kept;
    return 0;
}

/* A rank entry per trace: read (its peak device's figures and sites) or failed (why not yet). */
static int entries_of(job *j, rank_entry *e) {
    for (size_t i = 0; i < j->n; i++) {
        watched *w = &j->t[i];
        free_sites(w);
        memset(&e[i], 0, sizeof e[i]);
        e[i].input = w->path;
        e[i].first_oom_event = -1;
        e[i].same_rank_as = -1;
        e[i].devices.bottleneck = -1;
        int64_t named = rank_of_name(w->path);
        const live_device *d = peak_device(w);
        int traced = w->have_facts && w->facts->rank >= 0;
        e[i].rank = traced ? w->facts->rank : named;
        e[i].rank_from = traced ? RANK_FROM_TRACE : named >= 0 ? RANK_FROM_NAME : RANK_FROM_ORDER;
        if (!d || w->state == T_FAILED) { /* a failed one's last figures are not the job's */
            e[i].failed = w->state == T_FAILED ? w->why : "no event yet";
            continue;
        }
        device_view v;
        watch_view_of(w->lv, w->facts, d, &v);
        run_summary *s = &e[i].s;
        s->device = d->device;
        s->rank = e[i].rank;
        s->total_bytes = d->total_bytes;
        s->peak_allocated = d->peak_allocated;
        s->peak_allocated_event = d->peak_allocated_event_id;
        s->peak_allocated_step = d->peak_allocated_step;
        s->peak_reserved = d->peak_reserved;
        s->ooms = d->ooms;
        s->growth_per_step = d->growth_per_step;
        s->limit_step = v.limit_step;
        s->steps = w->facts->steps_ended;
        for (size_t k = 0; k < w->facts->ndevices; k++)
            e[i].input_ooms += w->facts->devices[k].ooms;
        if (sites_of(w, d) != 0)
            return -1;
        e[i].sites = w->sites;
        e[i].nsites = w->nsites;
    }
    return 0;
}

/* ---- printing ------------------------------------------------------------------------------ */

static size_t count_in(const job *j, trace_state s) {
    size_t n = 0;
    for (size_t i = 0; i < j->n; i++)
        n += j->t[i].state == s;
    return n;
}

static watched *watched_of(job *j, const rank_entry *e) {
    for (size_t i = 0; i < j->n; i++)
        if (j->t[i].path == e->input)
            return &j->t[i];
    return NULL;
}

static void rank_name(const rank_entry *e, char *buf, size_t len) {
    if (e->failed && e->rank_from == RANK_FROM_ORDER)
        snprintf(buf, len, "rank ?");
    else
        snprintf(buf, len, "rank %" PRId64, e->rank);
}

static void print_job_text(job *j, const rank_stats *st) {
    char b[4][32];
    printf("%zu trace%s:", j->n, j->n == 1 ? "" : "s");
    for (int s = 0; s < T_STATES; s++)
        if (count_in(j, (trace_state)s))
            printf(" %zu %s", count_in(j, (trace_state)s), state_words[s]);
    printf("%s\n", j->n == WATCH_MAX_TRACES ? " (the most watch follows)" : "");
    if (st->read >= 2 && st->bottleneck >= 0) {
        const rank_entry *b0 = &st->ranks[st->bottleneck];
        printf("imbalance %.2f (max / mean of peak allocated, spread %s), bottleneck rank %" PRId64
               " (peak %s on device %d)\n",
               st->imbalance, units_bytes_i64(st->spread, b[0]), b0->rank,
               units_bytes_i64(b0->s.peak_allocated, b[1]), b0->s.device);
        for (size_t i = 0; i < st->nexcess; i++)
            printf("  %s %s, the median rank %s (+%s)\n", st->excess[i].site,
                   units_bytes_i64(st->excess[i].bytes, b[0]),
                   units_bytes_i64(st->excess[i].median_bytes, b[1]),
                   units_bytes_i64(st->excess[i].over_median, b[2]));
    }
    if (st->first_to_run_out >= 0) {
        const rank_entry *r = &st->ranks[st->first_to_run_out];
        if (r->input_ooms > 0)
            printf("first to run out: rank %" PRId64 " (an OOM)\n", r->rank);
        else
            printf("first to run out: rank %" PRId64
                   " (its growth reaches the device at step %" PRId64 ")\n",
                   r->rank, r->s.limit_step);
    }
    for (size_t r = 0; r < st->read; r++)
        if (st->ranks[r].leaking)
            printf("leaking alone: rank %" PRId64 " (%s/step, the median rank %s/step)\n",
                   st->ranks[r].rank, units_bytes_signed(st->ranks[r].s.growth_per_step, b[0]),
                   units_bytes_signed(st->median_growth, b[1]));
}

static void print_json_job(job *j, const rank_stats *st) {
    printf("{\"job\": {\"traces\": %zu", j->n);
    for (int s = 0; s < T_STATES; s++)
        printf(", \"%s\": %zu", state_words[s], count_in(j, (trace_state)s));
    printf(", \"ranks_read\": %zu, \"imbalance\": ", st->read);
    if (st->read >= 2)
        json_number(stdout, st->imbalance);
    else
        printf("null");
    printf(", \"mean_peak_allocated_bytes\": %" PRId64 ", \"spread_bytes\": %" PRId64
           ", \"bottleneck\": ",
           st->mean_peak, st->spread);
    if (st->read >= 2 && st->bottleneck >= 0) {
        const rank_entry *b = &st->ranks[st->bottleneck];
        printf("{\"rank\": %" PRId64 ", \"trace\": ", b->rank);
        json_string(stdout, b->input);
        printf(", \"device\": %d, \"peak_allocated_bytes\": %" PRId64 ", \"sites_over_median\": [",
               b->s.device, b->s.peak_allocated);
        for (size_t i = 0; i < st->nexcess; i++) {
            printf("%s{\"site\": ", i ? ", " : "");
            json_string(stdout, st->excess[i].site);
            printf(", \"bytes\": %" PRId64 ", \"median_bytes\": %" PRId64
                   ", \"bytes_over_median\": %" PRId64 "}",
                   st->excess[i].bytes, st->excess[i].median_bytes, st->excess[i].over_median);
        }
        printf("]}");
    } else {
        printf("null");
    }
    printf(", \"first_to_run_out\": ");
    if (st->first_to_run_out >= 0) {
        const rank_entry *r = &st->ranks[st->first_to_run_out];
        printf("{\"rank\": %" PRId64 ", \"trace\": ", r->rank);
        json_string(stdout, r->input);
        printf(", \"how\": \"%s\", \"limit_step\": ", r->input_ooms > 0 ? "oom" : "forecast");
        if (r->input_ooms > 0)
            printf("null}");
        else
            printf("%" PRId64 "}", r->s.limit_step);
    } else {
        printf("null");
    }
    printf(", \"median_growth_bytes_per_step\": %" PRId64 ", \"leaking_ranks\": [",
           st->median_growth);
    for (size_t r = 0, k = 0; r < st->read; r++)
        if (st->ranks[r].leaking)
            printf("%s%" PRId64, k++ ? ", " : "", st->ranks[r].rank);
    printf("]}");
}

/* One refresh; 1 when an --exit-on rule started holding. */
static int refresh(job *j, int screen) {
    cli_ctx *ctx = j->ctx;
    rank_entry *e = calloc(j->n ? j->n : 1, sizeof *e);
    alert_event *ev = watch_nrules ? calloc(watch_nrules * GMT_MAX_DEVICES, sizeof *ev) : NULL;
    rank_stats st;
    char err[256];
    if (!e || (watch_nrules && !ev) || entries_of(j, e) != 0 ||
        rank_stats_build(e, j->n, WATCH_JOB_EXCESS, &st, err, sizeof err) != 0) {
        free(e), free(ev);
        fprintf(stderr, "memanalyze: watch: out of memory\n");
        return 0;
    }
    int fire = 0;
    if (screen)
        watch_screen_header(ctx->input, count_in(j, T_RUNNING)   ? "running"
                                        : count_in(j, T_WAITING) ? "waiting"
                                                                 : "ended");
    if (ctx->json)
        print_json_job(j, &st);
    else
        print_job_text(j, &st);
    size_t printed = 0;
    if (ctx->json)
        printf(", \"ranks\": [");
    for (size_t r = 0; r < j->n; r++) { /* in rank_stats' order: by rank, the unread last */
        const rank_entry *en = &st.ranks[r];
        watched *w = watched_of(j, en);
        char name[64];
        rank_name(en, name, sizeof name);
        if (!w)
            continue;
        size_t n = 0;
        if (w->have_facts && w->facts->started)
            n = watch_evaluate(w->lv, w->facts, &w->held, ev, watch_nrules * GMT_MAX_DEVICES,
                               &fire);
        if (ctx->json) {
            printf("%s", printed++ ? ", " : "");
            if (w->have_facts) {
                watch_print_json(w->lv, w->facts, w->path, state_words[w->state]);
            } else {
                printf("{\"trace\": ");
                json_string(stdout, w->path);
                printf(", \"state\": \"%s\"", state_words[w->state]);
            }
            printf(", \"rank\": ");
            if (en->failed && en->rank_from == RANK_FROM_ORDER)
                printf("null");
            else
                printf("%" PRId64, en->rank);
            printf(", \"rank_from\": \"%s\", \"error\": ", rank_from_word(en));
            if (w->state == T_FAILED)
                json_string(stdout, w->why);
            else
                printf("null");
            printf(", \"alerts\": [");
            watch_print_alerts_json(ev, n, -1, 1);
            printf("]}");
        } else {
            printf("%s  %s  [%s]", name, rank_input_name(w->path), state_words[w->state]);
            if (w->state == T_FAILED)
                printf(": %s", w->why);
            printf("\n");
            if (w->have_facts && w->facts->started)
                watch_print_text(w->lv, w->facts);
            watch_print_alerts_text(ev, n, name);
        }
    }
    if (ctx->json)
        printf("]}\n");
    rank_stats_release(&st);
    free(e);
    free(ev);
    fflush(NULL);
    return fire;
}

/* ---- the loop ------------------------------------------------------------------------------ */

int watch_job(cli_ctx *ctx, double interval, double stale) {
    job j = {.ctx = ctx};
    j.dirs = calloc((size_t)ctx->ninputs, sizeof *j.dirs);
    j.pending = calloc((size_t)ctx->ninputs, sizeof *j.pending);
    if (!j.dirs || !j.pending) {
        free(j.dirs), free(j.pending);
        return cli_error("watch: out of memory");
    }
    double start = gmt_seconds();
    int rc = 0;
    for (int i = 0; rc == 0 && i < ctx->ninputs; i++) {
        struct stat st;
        if (stat(ctx->inputs[i], &st) != 0)
            j.pending[j.npending++] = ctx->inputs[i]; /* not there yet */
        else if (S_ISDIR(st.st_mode))
            j.dirs[j.ndirs++] = ctx->inputs[i];
        else if (add_trace(&j, ctx->inputs[i], start) != 0)
            rc = cli_error("watch: out of memory");
    }
    int screen = !ctx->json && isatty(STDOUT_FILENO);
    while (rc == 0) {
        double now = gmt_seconds();
        if (resolve_pending(&j, now, start, stale) != 0 || scan_dirs(&j, now) != 0) {
            rc = cli_error("watch: out of memory");
            break;
        }
        for (size_t i = 0; i < j.n; i++)
            follow(&j, &j.t[i], now, stale);
        if (j.n == 0) {
            if (now - start >= stale) {
                fprintf(stderr, "memanalyze: watch: no trace (*.zst) in %s after %g s\n",
                        ctx->input, stale);
                rc = WATCH_EXIT_STALE;
                break;
            }
        } else if (refresh(&j, screen)) {
            fprintf(stderr, "memanalyze: watch: an --exit-on rule started to hold\n");
            rc = WATCH_EXIT_RULE;
            break;
        }
        size_t ended = count_in(&j, T_ENDED), stale_n = count_in(&j, T_STALE),
               failed = count_in(&j, T_FAILED);
        /* every trace done; with a folder, and none found for --stale seconds (a rank that
         * starts late is one of the job's) */
        int done = j.n && ended + stale_n + failed == j.n && !j.npending &&
                   (!j.ndirs || now - j.added >= stale || ctx->flag[0]);
        if (done) {
            if (stale_n) {
                fprintf(stderr,
                        "memanalyze: watch: %zu of %zu traces stopped without an end record "
                        "(killed?): no new frame for %g s\n",
                        stale_n, j.n, stale);
                rc = WATCH_EXIT_STALE;
            } else if (failed) {
                rc = cli_error("watch: %zu of %zu traces could not be read", failed, j.n);
            } else if (!ctx->json) {
                printf("the job ended: %zu trace%s ended\n", j.n, j.n == 1 ? "" : "s");
            }
            break;
        }
        if (watch_stops(ctx, interval))
            break;
    }
    for (size_t i = 0; i < j.n; i++) {
        live_trace_close(j.t[i].lv);
        free_sites(&j.t[i]);
        free(j.t[i].path), free(j.t[i].real), free(j.t[i].facts);
    }
    free(j.t);
    free(j.dirs);
    free(j.pending);
    return rc;
}
