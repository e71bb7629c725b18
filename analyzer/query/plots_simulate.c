/* plots_simulate.c — `simulate -o`: the picture of reserved memory under each
 * configuration, on the event numbers report and WHEN use (event:N), each
 * configuration's OOMs marked. The simulation gathers the columns as it runs
 * (simulate.h); this file only titles them and hands them to render/. */
#include "plots.h"

#ifdef GMT_HAVE_CAIRO

#include "render.h"
#include "units.h"

#include <stdio.h>

int plot_simulate(const plot_simulation *ps, const char *path, char *err, size_t errlen) {
    char title[512], subtitle[256], mem[32];
    snprintf(title, sizeof title, "%s \xe2\x80\x94 device %d: reserved under each configuration",
             ps->input, ps->device);
    if (ps->device_memory)
        snprintf(subtitle, sizeof subtitle,
                 "%llu PyTorch events replayed through the caching allocator model; device memory "
                 "%s",
                 (unsigned long long)ps->events, units_bytes(ps->device_memory, mem, sizeof mem));
    else
        snprintf(subtitle, sizeof subtitle,
                 "%llu PyTorch events replayed through the caching allocator model",
                 (unsigned long long)ps->events);
    render_simulation rs = {.title = title,
                            .subtitle = subtitle,
                            .nconfigs = ps->nconfigs,
                            .label = ps->label,
                            .peak_reserved = ps->peak_reserved,
                            .ncolumns = ps->ncolumns,
                            .requests = ps->last_event + 1,
                            .reserved_max = ps->reserved_max,
                            .oom = ps->oom,
                            .device_memory_bytes = ps->device_memory,
                            .x_label = "event (as report numbers them)"};
    render_options ro = {.width = ps->width, .height = ps->height};
    return render_simulation_draw(&rs, path, &ro, err, errlen);
}

#else

#include <stdio.h>

int plot_simulate(const plot_simulation *ps, const char *path, char *err, size_t errlen) {
    (void)ps, (void)path;
    snprintf(err, errlen, "pictures are off in this build: Cairo was not found at configure time");
    return -1;
}

#endif
