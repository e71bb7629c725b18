/* render.h — gpumemtrace's pictures, drawn with Cairo.
 *
 * Pure functions from data the analyzer has already reduced (per-bucket
 * summaries, a layout, per-step values) to an image file. Nothing here
 * knows SQLite or the trace format: the analyzer fills these structs, so
 * the pictures can be tested with hand-made data and drawn from any source.
 *
 * The format follows the file extension: .png, .svg or .pdf (any case).
 * Sizes are pixels (PNG, SVG) or points (PDF), 64..16384 a side; default
 * 1600 x 900. Text is DejaVu Sans. Bytes are labelled in binary units
 * (KiB, MiB, GiB), times in ns/µs/ms/s/min/h. A site (allocation stack)
 * keeps the same colour in every picture: the colour is a function of its
 * `key` (render_site_color).
 *
 * Every function returns 0, or -1 with a one-line message in err (an
 * unknown extension, a file that cannot be written, inconsistent input);
 * on failure no file is left behind. Empty input (no buckets, cells,
 * segments or points) is not an error: the picture says "no data". The
 * title is also written into the file itself: SVG <title> (and the subtitle
 * as <desc>), PDF metadata. Pointers in the input structs are borrowed for
 * the call only. */
#ifndef GMT_RENDER_H
#define GMT_RENDER_H

#include <stddef.h>
#include <stdint.h>

/* Called once for every piece of text a picture draws, with the box it
 * occupies (pixels, or points for SVG/PDF; origin top-left). For image maps
 * and tooltips, and for tests: Cairo draws SVG and PDF text as glyph
 * outlines, so labels cannot be found in the files themselves. */
typedef void (*render_text_fn)(void *ctx, const char *text, double x, double y, double w, double h);

typedef struct render_options {
    int width, height;      /* 0: 1600 x 900 */
    render_text_fn on_text; /* optional, NULL: none */
    void *text_ctx;         /* passed to on_text */
    /* > 0: the input has no timestamps (an old PyTorch snapshot): its times are the events'
     * order, ns_per_event apart, and time axes say "events, in order" instead of a duration */
    int64_t ns_per_event;
} render_options;

/* An RGB colour, components 0..1. */
typedef struct render_rgb {
    double r, g, b;
} render_rgb;

/* The colour of a site, stable across pictures and runs: a function of the
 * key. Key 0 is "other" (grey); keys 1..20 are twenty distinct palette
 * colours in order (number sites by a run-wide rank to keep the top twenty
 * apart); any other key (e.g. a hash of the site's label) is mixed onto the
 * palette, so two such keys may share a colour. */
render_rgb render_site_color(uint64_t key);

/* A key that asks for one colour, 0xRRGGBB (the categories' profiler colours), rather than a
 * site's: render_site_color(RENDER_COLOR_KEY(0x006400)) is that dark green. */
#define RENDER_COLOR_KEY(rgb) ((1ULL << 63) | ((uint64_t)(rgb)&0xFFFFFFULL))

/* Frees the font caches Cairo and fontconfig keep for the whole process.
 * Optional: call once after the last picture (e.g. before exit) so leak
 * checkers such as ASan's see nothing left; drawing again afterwards works
 * but loads the fonts anew. */
void render_release(void);

/* ---- timeline: bytes over time --------------------------------------- */

typedef struct render_timeline {
    const char *title;              /* e.g. "train.zst — device 0 (NVIDIA H100, 80.0 GiB)" */
    const char *subtitle;           /* e.g. the time span and event count; may be NULL */
    size_t nbuckets;                /* columns of data, in time order, >= 1 */
    const int64_t *bucket_start_ns; /* [nbuckets] start of each bucket, ns from the first event */
    int64_t end_ns;                 /* end of the last bucket */
    /* envelopes per bucket, bytes: drawn as lines with their min..max band */
    const int64_t *allocated_min, *allocated_max; /* [nbuckets] */
    const int64_t *reserved_min, *reserved_max;   /* [nbuckets] */
    /* the state after each bucket's last event [nbuckets] (NULL: unknown): a bucket wider
     * than a column draws it as a line up to its last column, which alone spans min..max, so a
     * short input's few buckets draw no band wider than a column */
    const int64_t *allocated_end, *reserved_end;
    /* stacked areas: the allocated bytes broken down by series (top sites
     * and "other", or streams, or size classes), value at each bucket's end,
     * row-major [nseries][nbuckets]; nseries 0 draws no areas */
    size_t nseries;
    const char *series_heading;      /* their legend's heading; NULL: "allocated by site" */
    const char *const *series_label; /* [nseries] legend text, e.g. "model.py:54 forward" */
    const uint64_t *series_key;      /* [nseries] colour key (render_site_color) */
    const int64_t *series_bytes;     /* [nseries * nbuckets] */
    /* markers */
    size_t nsteps;
    const int64_t *step_ns;        /* [nsteps] step boundaries (begin), ns */
    const char *const *step_label; /* [nsteps] e.g. "3" (labels are thinned to avoid overlap) */
    int64_t peak_ns, peak_bytes;   /* the peak of allocated, marked with its value; bytes 0: none */
    int64_t device_total_bytes;    /* limit line; 0: unknown (not drawn) */
    size_t nooms;
    const int64_t *oom_ns; /* [nooms] OOM events, marked */
} render_timeline;

int render_timeline_draw(const render_timeline *t, const char *path, const render_options *opt,
                         char *err, size_t errlen);

/* ---- heatmap: address space x time ------------------------------------ */

typedef struct render_heatmap {
    const char *title, *subtitle;
    size_t ncols, nrows; /* time columns (left to right), address rows (top = lowest address) */
    int64_t start_ns, end_ns; /* the time the columns cover */
    int64_t bytes_per_row;    /* address space each row stands for (y axis in bytes) */
    /* [nrows * ncols] row-major: the fraction of the row's reserved bytes
     * that is allocated in that column, 0..1; a negative value means
     * nothing of the row is reserved then (drawn as background) */
    const float *fraction;
    /* optional segment boundaries (row indices where a new segment starts)
     * drawn as thin lines; NULL/0: none */
    size_t nbounds;
    const size_t *bound_rows;
} render_heatmap;

int render_heatmap_draw(const render_heatmap *h, const char *path, const render_options *opt,
                        char *err, size_t errlen);

/* ---- segments: the layout at one moment -------------------------------- */

typedef enum render_block_state {
    RENDER_BLOCK_ALLOCATED = 0,
    RENDER_BLOCK_PENDING_FREE = 1, /* freed by the program, still used by a stream */
    RENDER_BLOCK_FREE = 2          /* an inactive gap: drawn as a gap */
} render_block_state;

typedef struct render_block {
    uint64_t offset, size; /* within the segment, bytes */
    uint8_t state;         /* render_block_state */
    uint64_t site_key;     /* colour key of its site (allocated/pending blocks) */
} render_block;

typedef struct render_segment {
    uint64_t address, size;
    const char *label; /* e.g. "0x7f0000000000  20.0 MiB"; NULL: made from address and size */
    size_t nblocks;
    const render_block *blocks; /* tile the segment, in address order */
} render_segment;

typedef struct render_layout {
    const char *title, *subtitle;
    size_t nsegments;
    const render_segment *segments; /* in address order; each drawn as a bar scaled to its size */
    /* legend: the sites shown, most bytes first */
    size_t nlegend;
    const char *const *legend_label;
    const uint64_t *legend_key;
} render_layout;

int render_segments_draw(const render_layout *l, const char *path, const render_options *opt,
                         char *err, size_t errlen);

/* ---- fragmentation per step (or over time) ------------------------------ */

/* A rating band: ratios from `from` (inclusive) up to the next band's
 * `from`, named `name` ("good", "moderate", ...). The caller says which
 * bands there are (the analyzer's are in schema/gmt_vocab.h); the picture
 * gives band i the i-th of its RENDER_MAX_BANDS shades. */
#define RENDER_MAX_BANDS 4
typedef struct render_band {
    double from;
    const char *name;
} render_band;

typedef struct render_fragmentation {
    const char *title, *subtitle;
    size_t nbands; /* 0..RENDER_MAX_BANDS, in rising `from` order */
    const render_band *bands;
    const char *bands_rate; /* the ratio the bands rate, in the legend's heading ("rating of
                               trapped / reserved"); NULL: "rating" */
    size_t npoints;
    const double *x; /* [npoints] step numbers, or seconds when x_is_time */
    int x_is_time;
    const double *fragmentation; /* [npoints] (reserved - allocated) / reserved, 0..1 */
    const double *trapped; /* [npoints] its trapped part: trapped / reserved, 0..1; NULL: none */
    const int64_t *largest_free; /* [npoints] largest free block, bytes (second axis); NULL: none */
} render_fragmentation;

/* The bands are shaded behind the line and listed in the legend. */
int render_fragmentation_draw(const render_fragmentation *f, const char *path,
                              const render_options *opt, char *err, size_t errlen);

/* ---- simulate: reserved memory under several configurations ------------------------ */

#define RENDER_MAX_CONFIGS 17
typedef struct render_simulation {
    const char *title, *subtitle;
    size_t nconfigs;              /* 0..RENDER_MAX_CONFIGS; the first is the run's own */
    const char *const *label;     /* [nconfigs] e.g. "expandable_segments:True" */
    const int64_t *peak_reserved; /* [nconfigs] bytes, for the legend */
    size_t ncolumns;              /* columns of requests, in order */
    uint64_t requests;            /* how many events the columns cover (the x axis) */
    /* [nconfigs * ncolumns] the highest reserved bytes in each column; < 0: no request there */
    const int64_t *reserved_max;
    /* [nconfigs * ncolumns] nonzero: the configuration ran out of memory in that column, marked
     * on its line; NULL: none */
    const uint8_t *oom;
    uint64_t device_memory_bytes; /* the limit line; 0: none */
    /* NULL: simulate's words ("PyTorch events, in order", "reserved", "(own) " before the
     * first line's legend); `compare -o` draws runs over their steps with the same picture */
    const char *x_label, *y_label, *first_prefix, *peak_word; /* peak_word NULL: "peak" */
} render_simulation;

int render_simulation_draw(const render_simulation *s, const char *path, const render_options *opt,
                           char *err, size_t errlen);

/* ---- ranks: the ranks of one job ----------------------------------------------------- */

enum { RENDER_RANK_BOTTLENECK = 1, RENDER_RANK_LEAKING = 2 };
typedef struct render_ranks {
    const char *title, *subtitle;
    size_t nranks;                 /* bars and strip rows, in order */
    const int64_t *rank;           /* [nranks] the numbers shown */
    const int64_t *peak_allocated; /* [nranks] bytes */
    const int64_t *peak_reserved;  /* [nranks] bytes */
    const uint8_t *flag;           /* [nranks] RENDER_RANK_* bits; NULL: none */
    uint64_t device_memory_bytes;  /* the limit line; 0: none */
    size_t nsteps;                 /* strip columns; 0: no strip */
    const int64_t *allocated;      /* [nranks * nsteps] at step ends; < 0: no step */
} render_ranks;

int render_ranks_draw(const render_ranks *r, const char *path, const render_options *opt, char *err,
                      size_t errlen);

#endif
