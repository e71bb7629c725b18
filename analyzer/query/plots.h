/* plots.h — the pictures of a replayed database: each function reads what
 * it needs from the database (per-bucket summaries, step ends, a layout, one
 * sweep of the events for per-site series), fills render/'s structs and
 * draws the file. Used by the picture commands and by `report --plots`.
 *
 * Only built with Cairo (GMT_HAVE_CAIRO); without it plots_available() is 0
 * and every function fails with a one-line message saying so. */
#ifndef GMT_PLOTS_H
#define GMT_PLOTS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct plot_request {
    int device;
    int64_t from, to;  /* event window (timeline, heatmap, fragmentation) */
    int64_t at;        /* the moment (segments) */
    const char *by;    /* timeline areas: "site" (default), "stream", "size-class" */
    size_t top;        /* series / legend entries (default 8) */
    int width, height; /* 0: 1600 x 900 */
    const char *input; /* the input's name, for titles */
} plot_request;

int plots_available(void);

int plot_timeline(sqlite3 *db, const plot_request *rq, const char *path, char *err, size_t errlen);
int plot_heatmap(sqlite3 *db, const plot_request *rq, const char *path, char *err, size_t errlen);
int plot_segments(sqlite3 *db, const plot_request *rq, const char *path, char *err, size_t errlen);
int plot_fragmentation(sqlite3 *db, const plot_request *rq, const char *path, char *err,
                       size_t errlen);

/* simulate -o: reserved memory over the device's PyTorch events under each configuration (the
 * columns come from simulate.h's sim_options). */
typedef struct plot_simulation {
    const char *input;
    int device;
    int width, height;
    size_t nconfigs;
    const char *const *label;     /* [nconfigs] */
    const int64_t *peak_reserved; /* [nconfigs] */
    size_t ncolumns;
    uint64_t events;             /* how many PyTorch events were replayed */
    uint64_t last_event;         /* the columns span event numbers 0 to this, as report's */
    const int64_t *reserved_max; /* [nconfigs * ncolumns] */
    const uint8_t *oom;          /* [nconfigs * ncolumns] 1: an OOM there; NULL: none */
    uint64_t device_memory;      /* 0: none */
} plot_simulation;

int plot_simulate(const plot_simulation *ps, const char *path, char *err, size_t errlen);

/* `compare -o`: allocated (and reserved) at each step end of several runs, on one axis,
 * aligned by step; a run without steps has no line. */
typedef struct plot_runs {
    size_t nruns;
    const char *const *label;                          /* [nruns] */
    const size_t *nsteps;                              /* [nruns] */
    const int64_t *const *allocated, *const *reserved; /* [nruns][nsteps[i]] */
    uint64_t device_memory;                            /* the limit line; 0: none */
} plot_runs;

int plot_compare(const plot_runs *pr, const char *path, char *err, size_t errlen);

/* `ranks -o`: peak per rank against the device, and a rank x step strip of allocated. */
struct rank_stats;
int plot_ranks(const struct rank_stats *st, const char *path, char *err, size_t errlen);

/* A picture over time of an input without history has nothing to draw:
 * its subtitle says so. */
#define PLOT_NO_HISTORY                                                                            \
    "no history: the snapshot holds one moment, its end (memanalyze segments INPUT -o FILE "       \
    "draws it)"

/* For render_options.ns_per_event: GMT_UNTIMED_EVENT_NS when the input has no
 * timestamps, else 0. */
int64_t ns_per_event(sqlite3 *db);

/* The colour key of a site label (stable across pictures and runs). */
uint64_t plot_site_key(const char *label);

#endif
