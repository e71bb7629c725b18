/* watch_alerts.h — memanalyze watch's --alert/--exit-on rules: parsing, and whether a rule
 * holds on a device's figures now (reserved>90%, allocated>40GiB, risk>=high,
 * leak>10MiB/min or /step, trapped>30%, oom: an OOM since the last refresh). */
#ifndef GMT_WATCH_ALERTS_H
#define GMT_WATCH_ALERTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct watch_rule {
    char text[64];
    int metric;   /* WATCH_* in watch_alerts.c */
    int or_equal; /* >= rather than > */
    int percent;  /* value is a share of the device (reserved, allocated) */
    int per_step; /* leak per step rather than per minute */
    double value;
    int exit_on;
} watch_rule;

/* What a rule looks at, of one device now. */
typedef struct watch_figures {
    int64_t total, allocated, reserved, growth_per_step, new_ooms;
    double growth_per_min, trapped_ratio; /* growth_per_min NAN: no step time */
    const char *risk;
} watch_figures;

/* 0, or -1 with a one-line reason in err. */
int watch_rule_parse(const char *text, watch_rule *out, char *err, size_t errlen);
/* 1 when the rule holds, with what it saw in why ("reserved 91.2% of 80.0 GiB"). */
int watch_rule_holds(const watch_rule *r, const watch_figures *f, char *why, size_t whylen);

#endif
