/* cmd_watch.c — `memanalyze watch TRACE`: the memory of a running job, live.
 *
 * Every --interval seconds it polls the trace (input/live_trace.h, replay/replay_live.h: only the
 * complete frames appended since the last poll are read and replayed; no database) and prints, per
 * device, the state now, the peak so far, the trapped share of reserved memory, the headroom trend
 * (growth per step and per minute, the forecast and its risk by query/step_stream.h's rules,
 * the same as report's headroom) and the site growing fastest. Plain lines, or with --json one
 * object a refresh. It ends when the trace's END record comes (exit 0), when the file stops
 * growing for --stale seconds without one (exit 3: the writer was killed, or hangs), on
 * SIGINT/SIGTERM (exit 0), after one refresh with --once (exit 0), or on an error (exit 2).
 * --alert rules (watch_alerts.h) print ALERT/CLEAR lines (JSON: "alerts") when they start and
 * stop holding per device; an --exit-on rule that starts holding ends it (exit 4). On a terminal
 * (not --json) each refresh clears the screen and redraws it under a header line. */
#include "watch_private.h"

#include "commands.h"
#include "json_out.h"
#include "stack_names.h"
#include "step_stream.h"
#include "units.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WATCH_DEFAULT_INTERVAL 2.0
#define WATCH_DEFAULT_STALE 30.0

watch_rule watch_rules[WATCH_MAX_RULES];
size_t watch_nrules;

static int take_rule(const char *arg, int exit_on) {
    char err[300];
    if (watch_nrules >= WATCH_MAX_RULES)
        return cli_error("watch: at most %d rules", WATCH_MAX_RULES);
    if (watch_rule_parse(arg, &watch_rules[watch_nrules], err, sizeof err) != 0)
        return cli_error("watch: %s", err);
    watch_rules[watch_nrules++].exit_on = exit_on;
    return 0;
}
static int take_alert(cli_ctx *ctx, const char *arg) {
    (void)ctx;
    return take_rule(arg, 0);
}
static int take_exit_on(cli_ctx *ctx, const char *arg) {
    (void)ctx;
    return take_rule(arg, 1);
}

const char watch_usage[] =
    "usage: memanalyze watch TRACE|DIR... [--interval S] [--once] [--json] [--stale S]\n"
    "                        [--alert RULE]... [--exit-on RULE]...\n"
    "Follows a trace while it is written (memrec writes a complete frame at the start\n"
    "and after every writer round): every S seconds the new frames are replayed and\n"
    "each device's allocated, reserved, peak so far (its step), trapped share, growth\n"
    "per step and per minute, fastest-growing site and forecast (when allocated would\n"
    "reach the device at that growth, and report's risk level) are printed, a line\n"
    "per device, or one JSON object per refresh with --json. No database is written.\n"
    "Exit status: 0 the run ended (its end record), --once, or Ctrl-C; 2 an error\n"
    "(not a trace, a read error); 3 the file stopped growing for --stale seconds\n"
    "without an end record (the writer was killed, or hangs); 4 an --exit-on rule\n"
    "started to hold. On a terminal (not --json) the screen is redrawn each refresh.\n"
    "Several traces, or a directory of them (*.zst, looked at again each refresh, so\n"
    "a rank that starts later is picked up): the ranks of a job, each as above, and\n"
    "across them what `ranks` says: the imbalance of peak allocated, the bottleneck\n"
    "rank and its sites above the median rank's, the first to run out, the ranks\n"
    "that leak alone (JSON: {\"job\": ..., \"ranks\": [...]}). It ends when every trace\n"
    "has ended (0), or has ended or gone stale (3); with a directory, once no new\n"
    "trace has come for --stale seconds too. A directory not made yet: DIR/.\n";

const cli_option watch_options[] = {
    {"interval", 'i', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  --interval S  seconds between refreshes (default 2; fractions allowed)\n", NULL},
    {"once", 0, CLI_FLAG, offsetof(cli_ctx, flag[0]), 0, NULL,
     "  --once        print the state once and exit 0\n", NULL},
    {"stale", 0, CLI_TEXT, offsetof(cli_ctx, text[1]), 0, NULL,
     "  --stale S     no new frame and no end record for S seconds: exit 3 (default 30)\n", NULL},
    {"alert", 0, CLI_CALL, 0, 0, NULL,
     "  --alert RULE  say when RULE starts and stops holding on a device (repeatable):\n"
     "                reserved>90% or >40GiB, allocated>..., risk>=high, leak>10MiB/min\n"
     "                or /step, trapped>30%, oom (an OOM since the last refresh)\n",
     take_alert},
    {"exit-on", 0, CLI_CALL, 0, 0, NULL,
     "  --exit-on RULE an alert that, when it starts holding, ends watch with exit 4\n",
     take_exit_on},
    CLI_OPT_JSON,
    CLI_OPT_STEP_RULE,
    CLI_OPT_END};

volatile sig_atomic_t watch_stop_requested;

static void on_signal(int sig) {
    (void)sig;
    watch_stop_requested = 1;
}

static int parse_seconds(const char *name, const char *text, double def, double *out) {
    *out = def;
    if (!text)
        return 0;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v <= 0 || v > 86400)
        return cli_error("bad --%s %s: seconds, more than 0 and at most 86400", name, text);
    *out = v;
    return 0;
}

int watch_stops(const cli_ctx *ctx, double interval) {
    if (ctx->flag[0] || watch_stop_requested)
        return 1;
    watch_nap(interval);
    return watch_stop_requested != 0;
}

void watch_nap(double s) {
    double until = gmt_seconds() + s;
    while (!watch_stop_requested) {
        double left = until - gmt_seconds();
        if (left <= 0)
            return;
        if (left > 0.05)
            left = 0.05;
        struct timespec ts = {0, (long)(left * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* ---- what a refresh says of a device ------------------------------------------------------ */

size_t watch_stack_frames(live_trace *lv, int64_t stack_id, named_frame *out) {
    live_frame lf[WATCH_FRAMES];
    size_t n = live_trace_stack(lv, stack_id, lf, WATCH_FRAMES);
    for (size_t i = 0; i < n; i++)
        out[i] = (named_frame){lf[i].name, lf[i].file, lf[i].module, lf[i].line, lf[i].ip};
    return n;
}

void watch_view_of(live_trace *lv, const live_facts *f, const live_device *d, device_view *v) {
    memset(v, 0, sizeof *v);
    v->d = d;
    v->trapped_ratio =
        d->split_reserved > 0 ? (double)d->trapped_bytes / (double)d->split_reserved : 0;
    v->growth_per_min =
        d->median_step_ns > 0 ? (double)d->growth_per_step * 60e9 / (double)d->median_step_ns : NAN;
    v->limit_step = headroom_limit_step(d->growth_per_step, d->trend_steps, d->last_step,
                                        d->last_step_allocated, d->total_bytes);
    v->limit_seconds = d->median_step_ns >= 0 && d->trend_steps
                           ? headroom_limit_seconds(v->limit_step, d->last_step, d->last_step_ts_ns,
                                                    d->median_step_ns)
                           : -1;
    v->risk = headroom_risk(d->total_bytes, d->peak_reserved, d->ooms, v->limit_step,
                            d->trend_steps, d->last_step);
    if (d->top_site_stack) {
        named_frame nf[WATCH_FRAMES];
        size_t n = watch_stack_frames(lv, d->top_site_stack, nf);
        stack_site_label(nf, n, v->site, sizeof v->site);
        int64_t steps = f->steps_ended > 1 ? f->steps_ended - 1 : 1;
        v->site_growth_step = d->top_site_growth / steps;
    }
}

/* ---- text ---------------------------------------------------------------------------------- */

void watch_print_text(live_trace *lv, const live_facts *f) {
    char t[32], b[6][32];
    printf("[%s] %" PRId64 " events, ",
           units_duration((uint64_t)(f->last_ts_ns > 0 ? f->last_ts_ns : 0), t, sizeof t),
           f->events);
    if (f->current_step >= 0)
        printf("step %" PRId64 "\n", f->current_step);
    else
        printf("no step open (%" PRId64 " ended)\n", f->steps_ended);
    if (!f->started)
        printf("  waiting for the first event\n");
    for (size_t i = 0; i < f->ndevices; i++) {
        device_view v;
        watch_view_of(lv, f, &f->devices[i], &v);
        const live_device *d = v.d;
        printf("  device %d: allocated %s, reserved %s, peak %s", d->device,
               units_bytes_i64(d->allocated, b[0]), units_bytes_i64(d->reserved, b[1]),
               units_bytes_i64(d->peak_allocated, b[2]));
        if (d->peak_allocated_step >= 0)
            printf(" (step %" PRId64 ")", d->peak_allocated_step);
        printf(", trapped %.1f%%", 100 * v.trapped_ratio);
        if (d->ooms)
            printf(", %" PRId64 " OOM%s", d->ooms, d->ooms == 1 ? "" : "s");
        printf("\n    growth %s/step", units_bytes_signed(d->growth_per_step, b[3]));
        if (!isnan(v.growth_per_min))
            printf(" (%s/min)", units_bytes_signed((int64_t)llround(v.growth_per_min), b[4]));
        printf(" over %zu step ends", d->trend_steps);
        if (v.limit_step >= 0) {
            printf(", reaches %s at step %" PRId64, units_bytes_i64(d->total_bytes, b[5]),
                   v.limit_step);
            if (v.limit_seconds >= 0)
                printf(" (%s)", units_duration((uint64_t)(v.limit_seconds * 1e9), t, sizeof t));
        }
        printf(", risk %s\n", v.risk);
        if (v.site[0])
            printf("    fastest-growing site: %s %s/step (%s live)\n", v.site,
                   units_bytes_signed(v.site_growth_step, b[0]),
                   units_bytes_i64(d->top_site_live, b[1]));
    }
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static void json_int_or_null(const char *key, int64_t v, int null) {
    printf(", \"%s\": ", key);
    if (null)
        printf("null");
    else
        printf("%" PRId64, v);
}

void watch_print_json(live_trace *lv, const live_facts *f, const char *path, const char *state) {
    printf("{\"trace\": ");
    json_string(stdout, path);
    printf(", \"state\": \"%s\", \"started\": %s, \"bytes_read\": %" PRIu64 ", \"events\": %" PRId64
           ", \"last_ts_ns\": %" PRId64,
           state, f->started ? "true" : "false", f->bytes_read, f->events, f->last_ts_ns);
    json_int_or_null("step", f->current_step, f->current_step < 0);
    printf(", \"steps_ended\": %" PRId64 ", \"ended\": %s", f->steps_ended,
           f->ended ? "true" : "false");
    printf(", \"clean_end\": %s", !f->ended ? "null" : f->clean_end ? "true" : "false");
    json_int_or_null("dropped_events", (int64_t)f->dropped_events, !f->ended);
    printf(", \"replay_warnings\": %" PRIu64 ", \"devices\": [", f->warnings);
    for (size_t i = 0; i < f->ndevices; i++) {
        device_view v;
        watch_view_of(lv, f, &f->devices[i], &v);
        const live_device *d = v.d;
        printf("%s{\"device\": %d, \"name\": ", i ? ", " : "", d->device);
        json_string(stdout, d->name);
        json_int_or_null("total_bytes", d->total_bytes, d->total_bytes <= 0);
        printf(", \"allocated_bytes\": %" PRId64 ", \"requested_bytes\": %" PRId64
               ", \"reserved_bytes\": %" PRId64 ", \"segments\": %" PRId64,
               d->allocated, d->requested, d->reserved, d->segments);
        printf(", \"peak_allocated_bytes\": %" PRId64 ", \"peak_allocated_event_id\": %" PRId64
               ", \"peak_allocated_ts_ns\": %" PRId64,
               d->peak_allocated, d->peak_allocated_event_id, d->peak_allocated_ts_ns);
        json_int_or_null("peak_allocated_step", d->peak_allocated_step, d->peak_allocated_step < 0);
        printf(", \"peak_reserved_bytes\": %" PRId64 ", \"peak_reserved_event_id\": %" PRId64,
               d->peak_reserved, d->peak_reserved_event_id);
        printf(", \"trapped_bytes\": %" PRId64 ", \"releasable_bytes\": %" PRId64
               ", \"trapped_ratio\": ",
               d->trapped_bytes, d->releasable_bytes);
        json_number(stdout, v.trapped_ratio);
        printf(", \"ooms\": %" PRId64 ", \"alloc_failed\": %" PRId64, d->ooms, d->alloc_failed);
        printf(", \"trend_steps\": %zu, \"growth_bytes_per_step\": %" PRId64
               ", \"growth_bytes_per_min\": ",
               d->trend_steps, d->growth_per_step);
        if (isnan(v.growth_per_min))
            printf("null");
        else
            json_number(stdout, v.growth_per_min);
        printf(", \"forecast\": {\"limit_step\": ");
        if (v.limit_step < 0)
            printf("null");
        else
            printf("%" PRId64, v.limit_step);
        printf(", \"limit_seconds\": ");
        if (v.limit_seconds < 0)
            printf("null");
        else
            json_number(stdout, v.limit_seconds);
        printf(", \"risk\": \"%s\"}, \"top_site\": ", v.risk);
        if (!v.site[0]) {
            printf("null}");
            continue;
        }
        printf("{\"stack_id\": %" PRId64 ", \"site\": ", d->top_site_stack);
        json_string(stdout, v.site);
        printf(", \"growth_bytes\": %" PRId64 ", \"growth_bytes_per_step\": %" PRId64
               ", \"live_bytes\": %" PRId64 "}}",
               d->top_site_growth, v.site_growth_step, d->top_site_live);
    }
    printf("]");
}

/* ---- alerts -------------------------------------------------------------------------------- */

static const char *const alert_state_names[] = {"start", "holding", "stop"}; /* JSON's words */
_Static_assert(sizeof alert_state_names / sizeof *alert_state_names == ALERT_STOP + 1,
               "a word per alert state");

size_t watch_evaluate(live_trace *lv, const live_facts *f, watch_held *h, alert_event *ev,
                      size_t max, int *fire) {
    size_t n = 0;
    for (size_t i = 0; i < f->ndevices; i++) {
        device_view v;
        watch_view_of(lv, f, &f->devices[i], &v);
        const live_device *d = v.d;
        int slot = d->device;
        assert(slot >= 0 && slot < GMT_MAX_DEVICES); /* the replay keeps no other device */
        watch_figures fig = {d->total_bytes,
                             d->allocated,
                             d->reserved,
                             d->growth_per_step,
                             d->ooms - h->seen_ooms[slot],
                             v.growth_per_min,
                             v.trapped_ratio,
                             v.risk};
        for (size_t r = 0; r < watch_nrules; r++) {
            char why[160];
            int now = watch_rule_holds(&watch_rules[r], &fig, why, sizeof why);
            int was = h->held[r][slot];
            h->held[r][slot] = (unsigned char)now;
            if (!now && !was)
                continue;
            assert(n < max); /* max: a rule on every device */
            (void)max;
            ev[n] = (alert_event){r, d->device,
                                  now && !was ? ALERT_START
                                  : now       ? ALERT_HOLDING
                                              : ALERT_STOP,
                                  ""};
            snprintf(ev[n].why, sizeof ev[n].why, "%s", why);
            n++;
            if (now && !was && watch_rules[r].exit_on)
                *fire = 1;
        }
        h->seen_ooms[slot] = d->ooms;
    }
    return n;
}

void watch_print_alerts_text(const alert_event *ev, size_t n, const char *rank) {
    for (size_t i = 0; i < n; i++)
        if (ev[i].state != ALERT_HOLDING)
            printf("%s %s%sdevice %d: %s (%s)\n", ev[i].state == ALERT_START ? "ALERT" : "CLEAR",
                   rank ? rank : "", rank ? " " : "", ev[i].device, watch_rules[ev[i].rule].text,
                   ev[i].why);
}

void watch_print_alerts_json(const alert_event *ev, size_t n, int64_t rank, int first) {
    for (size_t i = 0; i < n; i++) {
        printf("%s{\"rule\": ", first && !i ? "" : ", ");
        json_string(stdout, watch_rules[ev[i].rule].text);
        if (rank >= 0)
            printf(", \"rank\": %" PRId64, rank);
        printf(", \"device\": %d, \"state\": \"%s\", \"exit_on\": %s, \"detail\": ", ev[i].device,
               alert_state_names[ev[i].state], watch_rules[ev[i].rule].exit_on ? "true" : "false");
        json_string(stdout, ev[i].why);
        printf("}");
    }
}

/* ---- the loop -------------------------------------------------------------------------------- */

/* The terminal screen: cleared and redrawn from the top, a header line above the devices. */
void watch_screen_header(const char *what, const char *state) {
    time_t t = time(NULL);
    char when[32];
    strftime(when, sizeof when, "%H:%M:%S", localtime(&t));
    /* the clear sequence straight to the terminal: stdout quotes control characters
     * (text_out.h), and the rest of the screen, from the trace, stays quoted */
    fflush(NULL);
    static const char clear[] = "\033[H\033[2J";
    if (write(STDOUT_FILENO, clear, sizeof clear - 1) < 0)
        return;
    printf("memanalyze watch %s  [%s]  %s\n", what, state, when);
}

/* One refresh; returns 1 when an --exit-on rule started holding. */
static int refresh(cli_ctx *ctx, live_trace *lv, watch_held *h, const char *state, int screen) {
    live_facts *f = malloc(sizeof *f);
    if (!f)
        return 0;
    live_trace_facts(lv, f);
    size_t max = watch_nrules * f->ndevices;
    alert_event *ev = max ? calloc(max, sizeof *ev) : NULL;
    if (max && !ev) {
        free(f);
        return 0;
    }
    int fire = 0;
    size_t n = watch_evaluate(lv, f, h, ev, max, &fire);
    if (ctx->json) {
        watch_print_json(lv, f, ctx->input, state);
        printf(", \"alerts\": [");
        watch_print_alerts_json(ev, n, -1, 1);
        printf("]}\n");
    } else {
        if (screen)
            watch_screen_header(ctx->input, state);
        watch_print_text(lv, f);
        watch_print_alerts_text(ev, n, NULL);
    }
    free(ev);
    free(f);
    fflush(NULL); /* the quoting stream and the real stdout */
    return fire;
}

int run_watch(cli_ctx *ctx) {
    double interval, stale;
    if (parse_seconds("interval", ctx->text[0], WATCH_DEFAULT_INTERVAL, &interval) != 0 ||
        parse_seconds("stale", ctx->text[1], WATCH_DEFAULT_STALE, &stale) != 0)
        return 2;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct stat st;
    size_t len = strlen(ctx->input);
    if (ctx->ninputs > 1 || (stat(ctx->input, &st) == 0 && S_ISDIR(st.st_mode)) ||
        (len && ctx->input[len - 1] == '/'))    /* a folder, maybe not made yet */
        return watch_job(ctx, interval, stale); /* the ranks of a job */
    static watch_held held;
    char err[600];
    int not_yet;
    double last_growth = gmt_seconds();
    live_trace *lv;
    while (!(lv = live_trace_open(ctx->input, &ctx->io, &not_yet, err, sizeof err))) {
        if (!not_yet || ctx->flag[0])
            return cli_error("watch: %s", err);
        if (gmt_seconds() - last_growth >= stale) {
            fprintf(stderr, "memanalyze: watch: %s: no complete frame after %g s\n", ctx->input,
                    stale);
            return WATCH_EXIT_STALE;
        }
        watch_nap(interval);
        if (watch_stop_requested)
            return 0;
    }
    int rc = 0;
    int screen = !ctx->json && isatty(STDOUT_FILENO);
    for (;;) {
        int64_t got = live_trace_poll(lv, err, sizeof err);
        if (got < 0) {
            rc = cli_error("watch: %s: %s", ctx->input, err);
            break;
        }
        double now = gmt_seconds();
        if (got > 0)
            last_growth = now;
        live_facts *f = malloc(sizeof *f);
        if (!f) {
            rc = cli_error("watch: out of memory");
            break;
        }
        live_trace_facts(lv, f);
        int ended = f->ended, clean = f->clean_end;
        uint64_t dropped = f->dropped_events;
        free(f);
        int is_stale = !ended && now - last_growth >= stale;
        if (refresh(ctx, lv, &held, ended ? "ended" : is_stale ? "stale" : "running", screen)) {
            fprintf(stderr, "memanalyze: watch: %s: an --exit-on rule started to hold\n",
                    ctx->input);
            rc = WATCH_EXIT_RULE;
            break;
        }
        if (ended) {
            if (!ctx->json)
                printf("the run ended: %s end record%s\n",
                       clean ? "an orderly shutdown's" : "an unclean shutdown's",
                       dropped ? " (events were dropped)" : "");
            break;
        }
        if (is_stale) {
            fflush(NULL);
            fprintf(
                stderr,
                "memanalyze: watch: %s: the writer stopped without an end record (killed?): no new "
                "frame for %g s\n",
                ctx->input, stale);
            rc = WATCH_EXIT_STALE;
            break;
        }
        if (watch_stops(ctx, interval))
            break;
    }
    live_trace_close(lv);
    return rc;
}
