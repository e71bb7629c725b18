/* progress.c — the import's progress line (progress.h). */
#include "progress.h"

#include "gmt_clock.h"

#define MIN_SECONDS_FOR_ETA 2.0
#define MIN_FRACTION_FOR_ETA 0.02 /* of the input */
#define REDRAW_SECONDS 0.25

int progress_duration(char *buf, size_t len, double seconds) {
    long s = seconds < 0 ? 0 : (long)(seconds + 0.5);
    if (s < 60)
        return snprintf(buf, len, "%ld s", s);
    if (s < 3600)
        return snprintf(buf, len, "%ld min %02ld s", s / 60, s % 60);
    return snprintf(buf, len, "%ld h %02ld min", s / 3600, s / 60 % 60);
}

double progress_seconds_left(uint64_t done, uint64_t total, uint64_t done_since, double elapsed) {
    if (!total || done >= total || done_since == 0 || elapsed < MIN_SECONDS_FOR_ETA ||
        (double)done / (double)total < MIN_FRACTION_FOR_ETA)
        return -1;
    return elapsed * (double)(total - done) / (double)done_since;
}

int progress_format(char *buf, size_t len, const char *input, double fraction,
                    double seconds_left) {
    int percent = fraction <= 0 ? 0 : fraction >= 1 ? 100 : (int)(fraction * 100);
    if (seconds_left < 0)
        return snprintf(buf, len, "replaying %s: %d %%", input, percent);
    char left[32];
    progress_duration(left, sizeof left, seconds_left);
    return snprintf(buf, len, "replaying %s: %d %% (about %s left)", input, percent, left);
}

void progress_start(progress *p, FILE *out, const char *input) {
    *p = (progress){.out = out, .input = input, .started = gmt_seconds()};
}

static void show(progress *p, const char *text) {
    fprintf(p->out, "\rmemanalyze: %s\033[K", text);
    fflush(p->out);
    p->shown = 1;
}

void progress_update(progress *p, uint64_t done, uint64_t total) {
    if (!p->out)
        return;
    double t = gmt_seconds();
    if (!p->measuring) {
        p->measuring = 1;
        p->started = t;
        p->base = done;
    }
    if (p->shown && t - p->last_shown < REDRAW_SECONDS)
        return;
    p->last_shown = t;
    char text[512];
    double left = progress_seconds_left(done, total, done - p->base, t - p->started);
    progress_format(text, sizeof text, p->input, total ? (double)done / (double)total : 0, left);
    show(p, text);
}

void progress_phase(progress *p, const char *phase) {
    if (!p->out)
        return;
    char text[512];
    snprintf(text, sizeof text, "%s %s", phase, p->input);
    show(p, text);
    p->started = p->last_shown = gmt_seconds();
}

void progress_clear(progress *p) {
    if (p->out && p->shown)
        fprintf(p->out, "\r\033[K");
    p->shown = 0;
}
