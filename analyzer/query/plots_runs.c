/* plots_runs.c — `compare -o`: runs over their steps. Each run's allocated and reserved at
 * its step ends become two lines of the simulate picture (render_simulation), one column per
 * step, so runs of different lengths share the step axis. */
#include "plots.h"

#ifdef GMT_HAVE_CAIRO

#include "rank_stats.h"
#include "render.h"

#include <stdio.h>
#include <stdlib.h>

int plot_compare(const plot_runs *pr, const char *path, char *err, size_t errlen) {
    size_t nlines = 2 * pr->nruns, ncolumns = 1;
    if (nlines > RENDER_MAX_CONFIGS) {
        snprintf(err, errlen, "compare -o: at most %d runs in one picture", RENDER_MAX_CONFIGS / 2);
        return -1;
    }
    for (size_t i = 0; i < pr->nruns; i++)
        if (pr->nsteps[i] > ncolumns)
            ncolumns = pr->nsteps[i];
    int64_t *values = malloc(nlines * ncolumns * sizeof *values);
    int64_t *peaks = calloc(nlines ? nlines : 1, sizeof *peaks);
    char(*names)[160] = malloc((nlines ? nlines : 1) * sizeof *names);
    const char **labels = malloc((nlines ? nlines : 1) * sizeof *labels);
    int rc = -1;
    if (values && peaks && names && labels) {
        for (size_t i = 0; i < pr->nruns; i++)
            for (size_t k = 0; k < 2; k++) {
                size_t line = 2 * i + k;
                const int64_t *v = k ? pr->reserved[i] : pr->allocated[i];
                snprintf(names[line], sizeof names[line], "%s %s", pr->label[i],
                         k ? "reserved" : "allocated");
                labels[line] = names[line];
                for (size_t c = 0; c < ncolumns; c++) {
                    int64_t x = c < pr->nsteps[i] ? v[c] : -1; /* -1: no step there */
                    values[line * ncolumns + c] = x;
                    if (x > peaks[line])
                        peaks[line] = x;
                }
            }
        /* the device's line only when a run comes near it: 80 GiB over runs of 2 GiB would
         * flatten the lines it is there to compare */
        int near_limit = 0;
        for (size_t line = 0; line < nlines; line++)
            near_limit |= pr->device_memory && (uint64_t)peaks[line] >= pr->device_memory / 2;
        char subtitle[160];
        snprintf(subtitle, sizeof subtitle,
                 "at each step end, aligned by step; the first run is the baseline");
        render_simulation rs = {.title = "runs compared: allocated and reserved per step",
                                .subtitle = subtitle,
                                .nconfigs = nlines,
                                .label = labels,
                                .peak_reserved = peaks,
                                .ncolumns = ncolumns,
                                .requests = ncolumns,
                                .reserved_max = values,
                                .device_memory_bytes = near_limit ? pr->device_memory : 0,
                                .x_label = "step",
                                .y_label = "bytes",
                                .first_prefix = "",
                                .peak_word = "step ends up to"};
        render_options ro = {0};
        rc = render_simulation_draw(&rs, path, &ro, err, errlen);
    } else {
        snprintf(err, errlen, "out of memory");
    }
    free(values);
    free(peaks);
    free(names);
    free(labels);
    return rc;
}

int plot_ranks(const rank_stats *st, const char *path, char *err, size_t errlen) {
    size_t n = st->read, nsteps = 0;
    uint64_t device = n ? (uint64_t)st->ranks[0].s.total_bytes : 0;
    for (size_t i = 0; i < n; i++) {
        if ((size_t)st->ranks[i].s.steps > nsteps)
            nsteps = (size_t)st->ranks[i].s.steps;
        if ((uint64_t)st->ranks[i].s.total_bytes != device)
            device = 0; /* no one line for devices of different sizes */
    }
    int64_t *numbers = malloc((n ? n : 1) * 3 * sizeof *numbers);
    uint8_t *flags = calloc(n ? n : 1, 1);
    size_t cells = n * nsteps;
    int64_t *strip = malloc((cells ? cells : 1) * sizeof *strip);
    int rc = -1;
    if (numbers && flags && strip) {
        for (size_t i = 0; i < n; i++) {
            const run_summary *s = &st->ranks[i].s;
            numbers[i] = st->ranks[i].rank;
            numbers[n + i] = s->peak_allocated;
            numbers[2 * n + i] = s->peak_reserved;
            flags[i] = (uint8_t)(((long)i == st->bottleneck ? RENDER_RANK_BOTTLENECK : 0) |
                                 (st->ranks[i].leaking ? RENDER_RANK_LEAKING : 0));
            for (size_t k = 0; k < nsteps; k++)
                strip[i * nsteps + k] = k < (size_t)s->steps ? s->allocated_at_step[k] : -1;
        }
        char subtitle[200];
        snprintf(subtitle, sizeof subtitle,
                 "%zu ranks; imbalance (max / mean of peak allocated) %.2f", n, st->imbalance);
        render_ranks rr = {.title = nsteps ? "ranks: peak per rank, and allocated per step"
                                           : "ranks: peak per rank (no steps)",
                           .subtitle = subtitle,
                           .nranks = n,
                           .rank = numbers,
                           .peak_allocated = numbers + n,
                           .peak_reserved = numbers + 2 * n,
                           .flag = flags,
                           .device_memory_bytes = device,
                           .nsteps = nsteps,
                           .allocated = strip};
        render_options ro = {0};
        rc = render_ranks_draw(&rr, path, &ro, err, errlen);
    } else {
        snprintf(err, errlen, "out of memory");
    }
    free(numbers);
    free(flags);
    free(strip);
    return rc;
}

#else

#include <stdio.h>

int plot_compare(const plot_runs *pr, const char *path, char *err, size_t errlen) {
    (void)pr, (void)path;
    snprintf(err, errlen, "pictures are off in this build: Cairo was not found at configure time");
    return -1;
}

int plot_ranks(const struct rank_stats *st, const char *path, char *err, size_t errlen) {
    (void)st, (void)path;
    snprintf(err, errlen, "pictures are off in this build: Cairo was not found at configure time");
    return -1;
}

#endif
