/* watch_private.h — what `memanalyze watch`'s two modes share: cmd_watch.c (one trace: the
 * options, the figures of a device, the alerts, the single-trace loop) and watch_job.c (several
 * traces or directories of them: the ranks of a job). cli/ only. */
#ifndef GMT_WATCH_PRIVATE_H
#define GMT_WATCH_PRIVATE_H

#include "cli.h"
#include "gmt_clock.h"
#include "gmt_vocab.h"
#include "live_trace.h"
#include "stack_names.h"
#include "watch_alerts.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define WATCH_MAX_RULES 16
#define WATCH_EXIT_STALE 3
#define WATCH_EXIT_RULE 4

extern watch_rule watch_rules[WATCH_MAX_RULES]; /* --alert and --exit-on, in order */
extern size_t watch_nrules;
extern volatile sig_atomic_t watch_stop_requested; /* SIGINT, SIGTERM */

/* Sleeps `s` seconds, or less when a signal asks to stop. */
void watch_nap(double s);
/* After a refresh: 1 when watch stops here (--once, or a signal came before or during the
 * interval's nap), else 0 once the nap is over. */
int watch_stops(const cli_ctx *ctx, double interval);

/* What a refresh says of a device, beside its live_device. */
typedef struct device_view {
    const live_device *d;
    double trapped_ratio;  /* trapped / the segments' reserved; 0 without reserved */
    double growth_per_min; /* bytes; NAN: no step time */
    int64_t limit_step;    /* -1: not reached */
    double limit_seconds;  /* since the origin; < 0: not reached or no step time */
    const char *risk;
    char site[512];           /* the fastest-growing site's label; "" none */
    int64_t site_growth_step; /* its growth per step since the first step end */
} device_view;

/* A live stack's frames as stack_names.h's, innermost first, at most WATCH_FRAMES: their count
 * (0: an unknown stack). The strings are the live replay's, valid until its next stack. */
#define WATCH_FRAMES 256
size_t watch_stack_frames(live_trace *lv, int64_t stack_id, named_frame *out);

void watch_view_of(live_trace *lv, const live_facts *f, const live_device *d, device_view *v);

/* One trace's lines: its events and step, then a few lines per device. */
void watch_print_text(live_trace *lv, const live_facts *f);

/* One trace's JSON object without its closing brace (the caller adds its alerts). */
void watch_print_json(live_trace *lv, const live_facts *f, const char *path, const char *state);

/* The terminal screen: cleared, then a header line. */
void watch_screen_header(const char *what, const char *state);

/* The rules' state on one trace's devices. */
typedef struct watch_held {
    unsigned char held[WATCH_MAX_RULES][GMT_MAX_DEVICES];
    int64_t seen_ooms[GMT_MAX_DEVICES];
} watch_held;

enum { ALERT_START, ALERT_HOLDING, ALERT_STOP };

typedef struct alert_event {
    size_t rule;
    int device;
    int state; /* ALERT_* */
    char why[160];
} alert_event;

/* Every rule on every device of f: the events into ev (at most max: rules x devices), their
 * count; *fire set when an --exit-on rule started holding. */
size_t watch_evaluate(live_trace *lv, const live_facts *f, watch_held *h, alert_event *ev,
                      size_t max, int *fire);
/* The ALERT/CLEAR lines, each after `rank` ("rank 3") when not NULL. */
void watch_print_alerts_text(const alert_event *ev, size_t n, const char *rank);
/* The alerts as JSON objects (with "rank" when rank >= 0), a comma before each unless first. */
void watch_print_alerts_json(const alert_event *ev, size_t n, int64_t rank, int first);

/* watch_job.c: `watch` of several traces or of directories (ranks picked up as they start). */
int watch_job(cli_ctx *ctx, double interval, double stale);

#endif
