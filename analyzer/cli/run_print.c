/* run_print.c — run summaries as compare and ranks print them (see run_print.h). */
#include "run_print.h"

#include "json_out.h"
#include "units.h"

#include <stdio.h>

static void member_i64(FILE *out, const char *key, int64_t v) {
    fprintf(out, ", \"%s\": %lld", key, (long long)v);
}

/* a step number, or null when there is none (-1) */
static void member_step(FILE *out, const char *key, int64_t step) {
    if (step < 0)
        fprintf(out, ", \"%s\": null", key);
    else
        member_i64(out, key, step);
}

static void member_ratio(FILE *out, const char *key, double v) {
    fprintf(out, ", \"%s\": ", key);
    json_number(out, v);
}

static void member_text(FILE *out, const char *key, const char *text) {
    fprintf(out, ", \"%s\": ", key);
    if (text && *text)
        json_string(out, text);
    else
        fputs("null", out);
}

void run_print_json_fields(FILE *out, const run_summary *s, int64_t rank) {
    fprintf(out, "\"device\": %d, \"rank\": ", s->device);
    if (rank >= 0)
        fprintf(out, "%lld", (long long)rank);
    else
        fputs("null", out);
    member_text(out, "host", s->host);
    member_text(out, "settings", s->settings);
    member_text(out, "command", s->command);
    member_i64(out, "steps", s->steps);
    member_i64(out, "peak_allocated_bytes", s->peak_allocated);
    member_step(out, "peak_allocated_step", s->peak_allocated_step);
    member_i64(out, "peak_requested_bytes", s->peak_requested);
    member_i64(out, "peak_reserved_bytes", s->peak_reserved);
    member_step(out, "peak_reserved_step", s->peak_reserved_step);
    member_ratio(out, "fragmentation_at_peak", s->frag_at_peak);
    member_ratio(out, "trapped_ratio_at_peak", s->trapped_at_peak);
    member_ratio(out, "fragmentation_at_end", s->frag_at_end);
    member_ratio(out, "trapped_ratio_at_end", s->trapped_at_end);
    if (s->steps > 0) {
        member_ratio(out, "fragmentation_mean", s->frag_mean);
        member_ratio(out, "fragmentation_max", s->frag_max);
        member_ratio(out, "trapped_ratio_mean", s->trapped_mean);
        member_ratio(out, "trapped_ratio_max", s->trapped_max);
    } else { /* no step ends to take them over */
        fputs(", \"fragmentation_mean\": null, \"fragmentation_max\": null", out);
        fputs(", \"trapped_ratio_mean\": null, \"trapped_ratio_max\": null", out);
    }
    member_i64(out, "segments_max", s->segments_max);
    member_i64(out, "ooms", s->ooms);
    if (s->total_bytes > 0)
        member_i64(out, "device_memory_bytes", s->total_bytes);
    else
        fputs(", \"device_memory_bytes\": null", out);
    member_i64(out, "growth_bytes_per_step", s->growth_per_step);
    member_step(out, "limit_step", s->limit_step);
    fputs(", \"top_growth\": ", out);
    if (s->top_growth_per_step > 0) {
        fputs("{\"site\": ", out);
        json_string(out, s->top_growth_site);
        fprintf(out, ", \"bytes_per_step\": %lld}", (long long)s->top_growth_per_step);
    } else {
        fputs("null", out);
    }
}

const char *run_print_fragmentation(const run_summary *s, int trapped, int mark, char *buf,
                                    size_t len) {
    if (s->steps > 0)
        snprintf(buf, len, "%.2f / %.2f", trapped ? s->trapped_mean : s->frag_mean,
                 trapped ? s->trapped_max : s->frag_max);
    else
        snprintf(buf, len, "%.2f / %.2f%s", trapped ? s->trapped_at_end : s->frag_at_end,
                 trapped ? s->trapped_at_peak : s->frag_at_peak, mark ? "*" : "");
    return buf;
}

const char *run_print_bytes_at_step(int64_t bytes, int64_t step, char *buf, size_t len) {
    char b[32];
    units_bytes(bytes > 0 ? (uint64_t)bytes : 0, b, sizeof b);
    if (step >= 0)
        snprintf(buf, len, "%s (step %lld)", b, (long long)step);
    else
        snprintf(buf, len, "%s", b);
    return buf;
}

/* {"count", "imbalance", "mean_peak_allocated_bytes", "spread_bytes", "bottleneck_device",
 * "peak_allocated": [{"device", "bytes"}]}, or null with fewer than two devices with events */
void run_print_devices_json(FILE *out, const device_balance *d) {
    if (d->bottleneck < 0) {
        fputs("null", out);
        return;
    }
    fprintf(out, "{\"count\": %zu, \"imbalance\": ", d->ndevices);
    json_number(out, d->imbalance);
    fprintf(out,
            ", \"mean_peak_allocated_bytes\": %lld, \"spread_bytes\": %lld, "
            "\"bottleneck_device\": %d, \"peak_allocated\": [",
            (long long)d->mean_peak, (long long)d->spread, d->bottleneck);
    for (size_t i = 0; i < d->kept; i++)
        fprintf(out, "%s{\"device\": %d, \"bytes\": %lld}", i ? ", " : "", d->device[i],
                (long long)d->peak_allocated[i]);
    fputs("]}", out);
}

void run_print_devices_text(FILE *out, const device_balance *d) {
    char b[3][32];
    int64_t peak = 0;
    for (size_t i = 0; i < d->kept; i++)
        if (d->device[i] == d->bottleneck)
            peak = d->peak_allocated[i];
    fprintf(out,
            "%zu devices, imbalance: max / mean of peak allocated %.2f (mean %s, spread %s); "
            "bottleneck: device %d, peak allocated %s",
            d->ndevices, d->imbalance, units_bytes_i64(d->mean_peak, b[0]),
            units_bytes_i64(d->spread, b[1]), d->bottleneck, units_bytes_i64(peak, b[2]));
}
