/* watch_alerts.c — the rules of memanalyze watch's --alert and --exit-on (watch_alerts.h). */
#include "watch_alerts.h"

#include "gmt_size.h"
#include "step_stream.h"
#include "units.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WATCH_RESERVED, WATCH_ALLOCATED, WATCH_RISK, WATCH_LEAK, WATCH_TRAPPED, WATCH_OOM };
static const char *const metric_names[] = {"reserved", "allocated", "risk",
                                           "leak",     "trapped",   "oom"};

int watch_rule_parse(const char *text, watch_rule *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    snprintf(out->text, sizeof out->text, "%s", text);
    if (strcmp(text, "oom") == 0) {
        out->metric = WATCH_OOM;
        return 0;
    }
    size_t n = strcspn(text, "><=");
    int m = -1;
    for (int i = 0; i < WATCH_OOM; i++)
        if (strlen(metric_names[i]) == n && strncmp(text, metric_names[i], n) == 0)
            m = i;
    const char *p = text + n;
    if (m < 0 || *p != '>') {
        snprintf(err, errlen,
                 "bad rule '%s': reserved>N%%|SIZE, allocated>N%%|SIZE, risk>=LEVEL, "
                 "leak>SIZE/min|/step, trapped>N%% or oom",
                 text);
        return -1;
    }
    out->metric = m;
    p++;
    if (*p == '=')
        out->or_equal = 1, p++;
    char v[64];
    snprintf(v, sizeof v, "%s", p);
    size_t len = strlen(v);
    if (m == WATCH_RISK) {
        int lv = headroom_risk_level(v);
        if (lv < 0) {
            snprintf(err, errlen, "bad rule '%s': risk levels unknown, low, medium, high, critical",
                     text);
            return -1;
        }
        out->value = lv;
        return 0;
    }
    if (m == WATCH_LEAK) {
        char *slash = strchr(v, '/');
        if (!slash || (strcmp(slash, "/min") && strcmp(slash, "/step"))) {
            snprintf(err, errlen, "bad rule '%s': a leak rate is SIZE/min or SIZE/step", text);
            return -1;
        }
        out->per_step = strcmp(slash, "/step") == 0;
        *slash = 0;
    } else if (len && v[len - 1] == '%') {
        v[len - 1] = 0;
        char *end;
        double x = strtod(v, &end);
        if (end == v || *end || !isfinite(x) || x < 0 || x > 100) {
            snprintf(err, errlen, "bad rule '%s': a share is 0%% to 100%%", text);
            return -1;
        }
        out->percent = 1;
        out->value = x / 100;
        return 0;
    } else if (m == WATCH_TRAPPED) {
        snprintf(err, errlen, "bad rule '%s': trapped takes a share (trapped>30%%)", text);
        return -1;
    }
    uint64_t bytes;
    if (gmt_parse_size(v, &bytes) != 0) {
        snprintf(err, errlen, "bad rule '%s': '%s' is no size (e.g. 40GiB)", text, v);
        return -1;
    }
    out->value = (double)bytes;
    return 0;
}

static int above(const watch_rule *r, double x) {
    return r->or_equal ? x >= r->value : x > r->value;
}

int watch_rule_holds(const watch_rule *r, const watch_figures *f, char *why, size_t whylen) {
    char b[2][32];
    why[0] = 0;
    switch (r->metric) {
    case WATCH_OOM:
        snprintf(why, whylen, "%lld new OOM%s", (long long)f->new_ooms,
                 f->new_ooms == 1 ? "" : "s");
        return f->new_ooms > 0;
    case WATCH_RISK:
        snprintf(why, whylen, "risk %s", f->risk);
        return above(r, headroom_risk_level(f->risk));
    case WATCH_TRAPPED:
        snprintf(why, whylen, "trapped %.1f%% of reserved", 100 * f->trapped_ratio);
        return above(r, f->trapped_ratio);
    case WATCH_LEAK:
        if (r->per_step) {
            snprintf(why, whylen, "growth %s/step", units_bytes_signed(f->growth_per_step, b[0]));
            return above(r, (double)f->growth_per_step);
        }
        if (isnan(f->growth_per_min)) {
            snprintf(why, whylen, "no step time");
            return 0;
        }
        snprintf(why, whylen, "growth %s/min",
                 units_bytes_signed((int64_t)llround(f->growth_per_min), b[0]));
        return above(r, f->growth_per_min);
    default: {
        int64_t x = r->metric == WATCH_RESERVED ? f->reserved : f->allocated;
        const char *name = metric_names[r->metric];
        if (!r->percent) {
            snprintf(why, whylen, "%s %s", name, units_bytes_i64(x, b[0]));
            return above(r, (double)x);
        }
        if (f->total <= 0) {
            snprintf(why, whylen, "the device's size is unknown");
            return 0;
        }
        double share = (double)x / (double)f->total;
        snprintf(why, whylen, "%s %.1f%% of %s", name, 100 * share,
                 units_bytes_i64(f->total, b[1]));
        return above(r, share);
    }
    }
}
