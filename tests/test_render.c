/* test_render.c — the pictures (render.h) against hand-built data with
 * known answers.
 *
 * Each PNG is decoded again with Cairo and looked at: its size, that it is
 * not blank, and the colour of pixels at places the data fixes (the
 * reserved line at its byte value, a site's colour inside its block, the
 * severe band at 0.5 fragmentation). Places are found through the pictures'
 * own tick labels, reported with their boxes by the on_text hook, so the
 * test does not depend on margins. The same hook checks the labels (title,
 * units, steps) and that no two labels overlap: Cairo writes SVG and PDF
 * text as glyph outlines, so the files themselves are checked for what they
 * do carry (the title as SVG <title>, as PDF metadata). Errors: unknown
 * extensions, unwritable paths, inconsistent input — one line each. */
#include "check.h"
#include "render.h"

#include <cairo.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1024.0 * 1024)
#define GiB (1024.0 * MiB)

static char dir[64];

static const char *out(const char *name) {
    static char path[4][256];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

/* ---- the labels a picture drew ------------------------------------------ */

#define MAX_TEXTS 4096
typedef struct text {
    char s[128];
    double x, y, w, h;
} text;
static text texts[MAX_TEXTS];
static size_t ntexts;

static void on_text(void *ctx, const char *s, double x, double y, double w, double h) {
    (void)ctx;
    if (ntexts < MAX_TEXTS) {
        text *t = &texts[ntexts++];
        snprintf(t->s, sizeof t->s, "%s", s);
        t->x = x;
        t->y = y;
        t->w = w;
        t->h = h;
    }
}

static render_options options(int w, int h) {
    ntexts = 0;
    render_options o = {.width = w, .height = h, .on_text = on_text};
    return o;
}

static const text *find(const char *s) {
    for (size_t i = 0; i < ntexts; i++)
        if (strcmp(texts[i].s, s) == 0)
            return &texts[i];
    return NULL;
}

static int has_prefix(const char *prefix) {
    for (size_t i = 0; i < ntexts; i++)
        if (strncmp(texts[i].s, prefix, strlen(prefix)) == 0)
            return 1;
    return 0;
}

/* No two labels share a pixel. */
static int no_overlaps(void) {
    for (size_t i = 0; i < ntexts; i++)
        for (size_t k = i + 1; k < ntexts; k++) {
            const text *a = &texts[i], *b = &texts[k];
            if (a->x + 0.5 < b->x + b->w && b->x + 0.5 < a->x + a->w && a->y + 0.5 < b->y + b->h &&
                b->y + 0.5 < a->y + a->h) {
                fprintf(stderr, "labels overlap: \"%s\" and \"%s\"\n", a->s, b->s);
                return 0;
            }
        }
    return 1;
}

/* The value of a tick label "1.5 GiB", "256 MiB", "4 s", "0.3" (unit ""). */
static int tick_value(const char *s, const char *unit, double *v) {
    double num;
    int n = 0;
    char u[8] = "";
    if (*unit) {
        if (sscanf(s, "%lf %7s%n", &num, u, &n) != 2 || s[n] || strcmp(u, unit) != 0)
            return 0;
    } else if (sscanf(s, "%lf%n", &num, &n) != 1 || s[n])
        return 0;
    *v = num;
    return 1;
}

/* The picture coordinate of value v along an axis, from two of its tick
 * labels: a y axis's labels share their right edge (or left, on the right
 * side), an x axis's their top. unit "" reads plain numbers; "bytes" reads
 * any binary unit. */
static int label_value(const char *s, const char *unit, double *v) {
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (strcmp(unit, "bytes") != 0)
        return tick_value(s, unit, v);
    double scale = 1;
    for (size_t i = 0; i < 5; i++, scale *= 1024)
        if (tick_value(s, names[i], v)) {
            *v *= scale;
            return 1;
        }
    return 0;
}

static int axis_at(const char *unit, int vertical, double v, double *at) {
    for (size_t i = 0; i < ntexts; i++) {
        double vi, vk;
        if (!label_value(texts[i].s, unit, &vi))
            continue;
        const text *a = &texts[i];
        for (size_t k = i + 1; k < ntexts; k++) {
            const text *b = &texts[k];
            if (!label_value(b->s, unit, &vk) || vk == vi)
                continue;
            int lined_up = vertical ? fabs(a->x + a->w - b->x - b->w) < 1 : fabs(a->y - b->y) < 1;
            double pa = vertical ? a->y + a->h / 2 : a->x + a->w / 2;
            double pb = vertical ? b->y + b->h / 2 : b->x + b->w / 2;
            if (!lined_up || fabs(pa - pb) < 5)
                continue;
            *at = pa + (v - vi) / (vk - vi) * (pb - pa);
            return 1;
        }
    }
    return 0;
}

/* ---- decoded pictures ---------------------------------------------------- */

typedef struct px {
    double r, g, b;
} px;

static cairo_surface_t *load(const char *path, int w, int h) {
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
        fprintf(stderr, "%s: %s\n", path, cairo_status_to_string(cairo_surface_status(s)));
        CHECK(0);
        cairo_surface_destroy(s);
        return NULL;
    }
    CHECK_EQ_U64(cairo_image_surface_get_width(s), w);
    CHECK_EQ_U64(cairo_image_surface_get_height(s), h);
    return s;
}

static px pixel(cairo_surface_t *s, double x, double y) {
    int ix = (int)floor(x), iy = (int)floor(y);
    px p = {-1, -1, -1};
    if (ix < 0 || iy < 0 || ix >= cairo_image_surface_get_width(s) ||
        iy >= cairo_image_surface_get_height(s))
        return p;
    cairo_surface_flush(s);
    const unsigned char *row =
        cairo_image_surface_get_data(s) + (size_t)iy * cairo_image_surface_get_stride(s);
    uint32_t v = ((const uint32_t *)(const void *)row)[ix];
    p.r = ((v >> 16) & 0xff) / 255.0;
    p.g = ((v >> 8) & 0xff) / 255.0;
    p.b = (v & 0xff) / 255.0;
    return p;
}

static double lum(px p) { return 0.2126 * p.r + 0.7152 * p.g + 0.0722 * p.b; }
static int near(px p, render_rgb c, double tol) {
    return fabs(p.r - c.r) <= tol && fabs(p.g - c.g) <= tol && fabs(p.b - c.b) <= tol;
}
static int white(px p) { return p.r == 1 && p.g == 1 && p.b == 1; }

/* Many colours, and most of the picture not the background. */
static int distinct_colours(cairo_surface_t *s) {
    static uint32_t seen[4096];
    size_t n = 0;
    int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
    for (int y = 0; y < h; y += 3)
        for (int x = 0; x < w; x += 3) {
            px p = pixel(s, x, y);
            uint32_t v =
                (uint32_t)(p.r * 255) << 16 | (uint32_t)(p.g * 255) << 8 | (uint32_t)(p.b * 255);
            size_t i = 0;
            while (i < n && seen[i] != v)
                i++;
            if (i == n && n < 4096)
                seen[n++] = v;
        }
    return (int)n;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int file_contains(const char *path, const char *needle) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return memmem(buf, n, needle, strlen(needle)) != NULL;
}

/* ---- data ------------------------------------------------------------------ */

#define NB 100
static int64_t starts[NB], amin[NB], amax[NB], rmin[NB], rmax[NB], series[2 * NB];

/* 10 s in 100 buckets: reserved 2 GiB, allocated 1 GiB, one series (key 7)
 * holding all of it. */
static render_timeline flat_timeline(void) {
    for (size_t i = 0; i < NB; i++) {
        starts[i] = (int64_t)i * 100000000;
        amin[i] = amax[i] = (int64_t)GiB;
        rmin[i] = rmax[i] = (int64_t)(2 * GiB);
        series[i] = (int64_t)GiB;
    }
    render_timeline t;
    memset(&t, 0, sizeof t);
    t.title = "flat run";
    t.subtitle = "reserved 2 GiB, allocated 1 GiB";
    t.nbuckets = NB;
    t.bucket_start_ns = starts;
    t.end_ns = 10000000000LL;
    t.allocated_min = amin;
    t.allocated_max = amax;
    t.reserved_min = rmin;
    t.reserved_max = rmax;
    return t;
}

static void test_timeline_lines(void) {
    render_timeline t = flat_timeline();
    render_options o = options(1200, 700);
    char err[256];
    const char *path = out("flat.png");
    CHECK(render_timeline_draw(&t, path, &o, err, sizeof err) == 0);
    CHECK(find("flat run") != NULL);
    CHECK(no_overlaps());
    double y_res = 0, y_alloc = 0, y_mid = 0, x_mid = 0;
    CHECK(axis_at("bytes", 1, 2 * GiB, &y_res));
    CHECK(axis_at("bytes", 1, 1 * GiB, &y_alloc));
    CHECK(axis_at("bytes", 1, 1.37 * GiB, &y_mid));
    CHECK(axis_at("s", 0, 5, &x_mid));
    cairo_surface_t *s = load(path, 1200, 700);
    if (!s)
        return;
    CHECK(distinct_colours(s) > 20);
    /* the reserved line at 2 GiB (dark), nothing above it or between */
    px on = pixel(s, x_mid, y_res);
    CHECK(lum(on) < 0.5 && on.b > on.r);
    CHECK(white(pixel(s, x_mid, y_res - 12)));
    CHECK(lum(pixel(s, x_mid, y_alloc)) < 0.3);
    CHECK(white(pixel(s, x_mid, y_mid)));
    cairo_surface_destroy(s);

    /* the same run with its one site stacked under allocated */
    const char *label = "model.py:54 forward";
    uint64_t key = 7;
    t.nseries = 1;
    t.series_label = &label;
    t.series_key = &key;
    t.series_bytes = series;
    o = options(1200, 700);
    CHECK(render_timeline_draw(&t, path, &o, err, sizeof err) == 0);
    CHECK(find(label) != NULL);
    double y_half = 0;
    CHECK(axis_at("bytes", 1, 0.5 * GiB, &y_half));
    CHECK(axis_at("s", 0, 5, &x_mid));
    s = load(path, 1200, 700);
    if (!s)
        return;
    CHECK(near(pixel(s, x_mid, y_half), render_site_color(7), 2.0 / 255));
    CHECK(white(pixel(s, x_mid, y_mid)));
    cairo_surface_destroy(s);
}

/* Many steps: labels thinned, none overlapping; peak, limit, OOM shown. */
static void test_timeline_markers(void) {
    static int64_t step_ns[500];
    static char names[500][8];
    static const char *step_label[500];
    for (size_t i = 0; i < 500; i++) {
        step_ns[i] = (int64_t)i * 20000000;
        snprintf(names[i], sizeof names[i], "%zu", i);
        step_label[i] = names[i];
    }
    render_timeline t = flat_timeline();
    int64_t oom = 9500000000LL;
    t.nsteps = 500;
    t.step_ns = step_ns;
    t.step_label = step_label;
    t.peak_ns = 4000000000LL;
    t.peak_bytes = (int64_t)GiB;
    t.device_total_bytes = (int64_t)(3 * GiB);
    t.nooms = 1;
    t.oom_ns = &oom;
    render_options o = options(0, 0);
    char err[256];
    CHECK(render_timeline_draw(&t, out("markers.png"), &o, err, sizeof err) == 0);
    CHECK(no_overlaps());
    size_t steps_shown = 0;
    for (size_t i = 0; i < 500; i++)
        steps_shown += find(names[i]) != NULL;
    CHECK(steps_shown >= 10 && steps_shown < 100);
    CHECK(find("100") != NULL);
    CHECK(find("step") != NULL);
    CHECK(find("OOM") != NULL);
    CHECK(find("device total 3.00 GiB") != NULL);
    CHECK(has_prefix("peak 1.00 GiB at 4.000 s"));
    cairo_surface_t *s = load(out("markers.png"), 1600, 900);
    if (s)
        cairo_surface_destroy(s);
}

/* 4096 buckets x 20 series: a large picture draws whole. */
static void test_timeline_large(void) {
    enum { N = 4096, S = 20 };
    int64_t *st = malloc(N * sizeof *st), *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    int64_t *sb = malloc((size_t)N * S * sizeof *sb);
    const char *labels[S];
    uint64_t keys[S];
    for (size_t i = 0; i < N; i++) {
        st[i] = (int64_t)i * 1000000;
        a[i] = (int64_t)(GiB * (1 + sin(i / 50.0)));
        b[i] = a[i] + (int64_t)(GiB / 4);
        for (size_t k = 0; k < S; k++)
            sb[k * N + i] = a[i] / S;
    }
    for (size_t k = 0; k < S; k++) {
        labels[k] = "site";
        keys[k] = k;
    }
    render_timeline t;
    memset(&t, 0, sizeof t);
    t.title = "speed";
    t.nbuckets = N;
    t.bucket_start_ns = st;
    t.end_ns = (int64_t)N * 1000000;
    t.allocated_min = t.allocated_max = a;
    t.reserved_min = t.reserved_max = b;
    t.nseries = S;
    t.series_label = labels;
    t.series_key = keys;
    t.series_bytes = sb;
    char err[256];
    /* It draws; how fast is bench/run_render.sh's to say (no timed checks in tests: they fail on
     * a loaded machine, and under ctest -j 16 this one did). */
    CHECK(render_timeline_draw(&t, out("speed.png"), NULL, err, sizeof err) == 0);
    free(st);
    free(a);
    free(b);
    free(sb);
}

static void test_heatmap(void) {
    enum { C = 10, R = 4 };
    float f[R * C];
    for (size_t c = 0; c < C; c++) {
        f[0 * C + c] = 1;
        f[1 * C + c] = 1;
        f[2 * C + c] = 0;
        f[3 * C + c] = -1;
    }
    size_t bounds[] = {2};
    render_heatmap h;
    memset(&h, 0, sizeof h);
    h.title = "heat";
    h.ncols = C;
    h.nrows = R;
    h.start_ns = 0;
    h.end_ns = 10000000000LL;
    h.bytes_per_row = (int64_t)(256 * MiB);
    h.fraction = f;
    h.nbounds = 1;
    h.bound_rows = bounds;
    render_options o = options(1000, 600);
    char err[256];
    CHECK(render_heatmap_draw(&h, out("heat.png"), &o, err, sizeof err) == 0);
    CHECK(no_overlaps());
    double x = 0, y0 = 0, y2 = 0, y3 = 0;
    CHECK(axis_at("s", 0, 5, &x));
    CHECK(axis_at("bytes", 1, 128 * MiB, &y0));
    CHECK(axis_at("bytes", 1, 640 * MiB, &y2));
    CHECK(axis_at("bytes", 1, 896 * MiB, &y3));
    cairo_surface_t *s = load(out("heat.png"), 1000, 600);
    if (!s)
        return;
    px full = pixel(s, x, y0), free_ = pixel(s, x, y2), none = pixel(s, x, y3);
    CHECK(lum(full) < 0.35 && full.b > full.r); /* allocated: dark blue */
    CHECK(!white(free_) && lum(free_) > 0.8);   /* reserved, free: pale … */
    CHECK(free_.r > free_.b + 0.2);             /* … and warm */
    CHECK(white(none));                         /* not reserved: background */
    cairo_surface_destroy(s);

    /* a grid finer than the plot is averaged, not dropped */
    enum { BC = 4000, BR = 300 };
    float *big = malloc((size_t)BC * BR * sizeof *big);
    for (size_t r = 0; r < BR; r++)
        for (size_t c = 0; c < BC; c++)
            big[r * BC + c] = c < BC / 2 ? 1.0f : -1.0f;
    h.ncols = BC;
    h.nrows = BR;
    h.fraction = big;
    h.nbounds = 0;
    h.bytes_per_row = (int64_t)(4 * MiB);
    o = options(1000, 600);
    CHECK(render_heatmap_draw(&h, out("heat_big.png"), &o, err, sizeof err) == 0);
    double xl = 0, xr = 0, ym = 0;
    CHECK(axis_at("s", 0, 2.5, &xl));
    CHECK(axis_at("s", 0, 7.5, &xr));
    CHECK(axis_at("bytes", 1, 600 * MiB, &ym));
    s = load(out("heat_big.png"), 1000, 600);
    if (s) {
        CHECK(lum(pixel(s, xl, ym)) < 0.35);
        CHECK(white(pixel(s, xr, ym)));
        cairo_surface_destroy(s);
    }
    free(big);
}

static void test_segments(void) {
    render_block a[] = {{0, (uint64_t)(24 * MiB), RENDER_BLOCK_ALLOCATED, 3},
                        {(uint64_t)(24 * MiB), (uint64_t)(24 * MiB), RENDER_BLOCK_FREE, 0},
                        {(uint64_t)(48 * MiB), (uint64_t)(16 * MiB), RENDER_BLOCK_PENDING_FREE, 5}};
    render_block b[] = {{0, (uint64_t)(32 * MiB), RENDER_BLOCK_ALLOCATED, 9}};
    render_segment segs[] = {{0x7f0000000000ULL, (uint64_t)(64 * MiB), "segment A", 3, a},
                             {0x7f0010000000ULL, (uint64_t)(32 * MiB), "segment B", 1, b}};
    const char *legend[] = {"site three", "site five", "site nine"};
    uint64_t keys[] = {3, 5, 9};
    render_layout l;
    memset(&l, 0, sizeof l);
    l.title = "layout";
    l.nsegments = 2;
    l.segments = segs;
    l.nlegend = 3;
    l.legend_label = legend;
    l.legend_key = keys;
    render_options o = options(1200, 700);
    char err[256];
    CHECK(render_segments_draw(&l, out("seg.png"), &o, err, sizeof err) == 0);
    CHECK(no_overlaps());
    CHECK(find("segment A") && find("segment B") && find("site nine"));
    const text *ta = find("24.0 MiB"), *tf = find("free 24.0 MiB"), *tb = find("32.0 MiB");
    const text *tp = find("16.0 MiB");
    CHECK(ta && tf && tb && tp);
    cairo_surface_t *s = load(out("seg.png"), 1200, 700);
    if (!s || !ta || !tf || !tb || !tp) {
        if (s)
            cairo_surface_destroy(s);
        return;
    }
    CHECK(near(pixel(s, ta->x - 5, ta->y + ta->h / 2), render_site_color(3), 1.0 / 255));
    CHECK(white(pixel(s, tf->x - 5, tf->y + tf->h / 2)));
    CHECK(near(pixel(s, tb->x - 5, tb->y + tb->h / 2), render_site_color(9), 1.0 / 255));
    /* pending free: paler than the site, and hatched in its colour */
    render_rgb c5 = render_site_color(5);
    int pale = 0, hatch = 0;
    for (int dx = 3; dx < 30; dx++) {
        px p = pixel(s, tp->x - dx, tp->y + tp->h / 2);
        pale |= !white(p) && lum(p) > 0.2126 * c5.r + 0.7152 * c5.g + 0.0722 * c5.b + 0.1;
        hatch |= near(p, c5, 0.12);
    }
    CHECK(pale && hatch);
    cairo_surface_destroy(s);

    /* a segment of many small blocks: drawn (its time: bench/run_render.sh) */
    enum { NBLK = 200000 };
    render_block *many = malloc(NBLK * sizeof *many);
    for (size_t i = 0; i < NBLK; i++)
        many[i] = (render_block){i * 512, 512, (uint8_t)(i % 3), i % 11};
    render_segment big = {0x7f0000000000ULL, (uint64_t)NBLK * 512, NULL, NBLK, many};
    l.segments = &big;
    l.nsegments = 1;
    CHECK(render_segments_draw(&l, out("seg_many.png"), NULL, err, sizeof err) == 0);
    free(many);
}

static void test_fragmentation(void) {
    double x[10], fr[10];
    int64_t lf[10];
    for (size_t i = 0; i < 10; i++) {
        x[i] = (double)i;
        fr[i] = 0.5;
        lf[i] = (int64_t)(GiB / 2);
    }
    render_fragmentation f;
    memset(&f, 0, sizeof f);
    static const render_band bands[] = {
        {0.0, "good"}, {0.15, "moderate"}, {0.30, "serious"}, {0.40, "severe"}};
    f.bands = bands;
    f.nbands = 4;
    f.title = "frag";
    f.npoints = 10;
    f.x = x;
    f.fragmentation = fr;
    f.largest_free = lf;
    render_options o = options(1200, 700);
    char err[256];
    CHECK(render_fragmentation_draw(&f, out("frag.png"), &o, err, sizeof err) == 0);
    CHECK(no_overlaps());
    CHECK(find("severe") && find("good"));
    CHECK(find("moderate  0.15 \xe2\x80\x93 0.30") && find("severe  \xe2\x89\xa5 0.40"));
    double xm = 0, y50 = 0, y45 = 0, y35 = 0, y20 = 0, y05 = 0;
    const text *t4 = find("4"), *t5 = find("5");
    CHECK(t4 && t5);
    if (t4 && t5)
        xm = (t4->x + t4->w / 2 + t5->x + t5->w / 2) / 2;
    CHECK(axis_at("", 1, 0.5, &y50));
    CHECK(axis_at("", 1, 0.45, &y45));
    CHECK(axis_at("", 1, 0.35, &y35));
    CHECK(axis_at("", 1, 0.23, &y20));
    CHECK(axis_at("", 1, 0.05, &y05));
    cairo_surface_t *s = load(out("frag.png"), 1200, 700);
    if (!s)
        return;
    px on = pixel(s, xm, y50), severe = pixel(s, xm, y45), serious = pixel(s, xm, y35);
    px moderate = pixel(s, xm, y20), good = pixel(s, xm, y05);
    int red = severe.r > severe.g + 0.1 && severe.r > severe.b + 0.1 && lum(severe) > 0.7;
    CHECK(red);
    CHECK(lum(on) < 0.3 || (on.r > on.g + 0.1 && on.r > on.b + 0.1));
    CHECK(serious.r > serious.g + 0.05 && serious.g > serious.b + 0.1);
    CHECK(moderate.r > moderate.b + 0.15 && moderate.g > moderate.b + 0.15);
    CHECK(good.g > good.r && good.g > good.b);
    cairo_surface_destroy(s);

    /* The largest free block is dashed, in the plot and in the legend; with more points than
     * columns both are solid (each column is a min..max stroke). */
    CHECK(render_fragmentation_draw(&f, out("frag-few.svg"), &o, err, sizeof err) == 0);
    CHECK(file_contains(out("frag-few.svg"), "stroke-dasharray"));
    CHECK(!find("trapped (empty_cache() cannot return it)"));
    /* the trapped part of the fragmentation is a line of its own, in the legend */
    double tr[10];
    for (size_t i = 0; i < 10; i++)
        tr[i] = 0.1;
    f.trapped = tr;
    o = options(1200, 700);
    CHECK(render_fragmentation_draw(&f, out("frag-trapped.png"), &o, err, sizeof err) == 0);
    CHECK(find("trapped (empty_cache() cannot return it)") != NULL);
    f.trapped = NULL;
    enum { MANY = 6000 };
    static double mx[MANY], mfr[MANY];
    static int64_t mlf[MANY];
    for (size_t i = 0; i < MANY; i++) {
        mx[i] = (double)i;
        mfr[i] = 0.2 + 0.1 * (double)(i % 7) / 7;
        mlf[i] = (int64_t)(i % 13) << 20;
    }
    f.npoints = MANY;
    f.x = mx;
    f.fragmentation = mfr;
    f.largest_free = mlf;
    o = options(1200, 700);
    CHECK(render_fragmentation_draw(&f, out("frag-many.svg"), &o, err, sizeof err) == 0);
    CHECK(!file_contains(out("frag-many.svg"), "stroke-dasharray"));
}

/* simulate -o: one line per configuration at its reserved bytes, the device's memory dashed, a
 * column without events drawn at the level before it. */
static void test_simulation(void) {
    enum { COLS = 100 };
    static int64_t cols[2 * COLS];
    for (size_t i = 0; i < COLS; i++) {
        cols[i] = (int64_t)GiB;
        cols[COLS + i] = 2 * (int64_t)GiB;
    }
    cols[COLS / 2] = -1; /* no event in that column */
    const char *labels[] = {"a", "b"};
    const int64_t peaks[] = {(int64_t)GiB, 2 * (int64_t)GiB};
    render_simulation sim = {.title = "sim",
                             .nconfigs = 2,
                             .label = labels,
                             .peak_reserved = peaks,
                             .ncolumns = COLS,
                             .requests = 1000,
                             .reserved_max = cols,
                             .device_memory_bytes = 3 * GiB};
    render_options o = options(1200, 700);
    char err[256];
    CHECK(render_simulation_draw(&sim, out("sim.png"), &o, err, sizeof err) == 0);
    CHECK(no_overlaps());
    CHECK(find("(own) a: peak 1.00 GiB") && find("b: peak 2.00 GiB") && find("device memory"));
    double xm = 0, y1 = 0, y2 = 0;
    CHECK(axis_at("", 0, 505, &xm)); /* the empty column's middle */
    CHECK(axis_at("bytes", 1, (double)GiB, &y1));
    CHECK(axis_at("bytes", 1, 2.0 * (double)GiB, &y2));
    cairo_surface_t *s = load(out("sim.png"), 1200, 700);
    if (!s)
        return;
    render_rgb a = render_site_color(1), b = render_site_color(2);
    px pa = pixel(s, xm, y1), pb = pixel(s, xm, y2);
    CHECK(fabs(pa.r - a.r) < 0.1 && fabs(pa.g - a.g) < 0.1 && fabs(pa.b - a.b) < 0.1);
    CHECK(fabs(pb.r - b.r) < 0.1 && fabs(pb.g - b.g) < 0.1 && fabs(pb.b - b.b) < 0.1);
    cairo_surface_destroy(s);
    sim.nconfigs = 18;
    CHECK(render_simulation_draw(&sim, out("sim-bad.png"), &o, err, sizeof err) != 0);
}

/* Every picture of nothing says so, and is still a picture. */
static void test_empty(void) {
    render_timeline t;
    render_heatmap h;
    render_layout l;
    render_fragmentation f;
    memset(&t, 0, sizeof t);
    memset(&h, 0, sizeof h);
    memset(&l, 0, sizeof l);
    memset(&f, 0, sizeof f);
    t.title = h.title = l.title = f.title = "empty";
    char err[256];
    render_options o = options(800, 450);
    CHECK(render_timeline_draw(&t, out("e1.png"), &o, err, sizeof err) == 0);
    CHECK(find("no data") != NULL);
    o = options(800, 450);
    CHECK(render_heatmap_draw(&h, out("e2.png"), &o, err, sizeof err) == 0);
    CHECK(find("no data") != NULL);
    o = options(800, 450);
    CHECK(render_segments_draw(&l, out("e3.png"), &o, err, sizeof err) == 0);
    CHECK(find("no data") != NULL);
    o = options(800, 450);
    CHECK(render_fragmentation_draw(&f, out("e4.svg"), &o, err, sizeof err) == 0);
    CHECK(find("no data") != NULL);
    cairo_surface_t *s = load(out("e1.png"), 800, 450);
    if (s) {
        CHECK(distinct_colours(s) > 5);
        cairo_surface_destroy(s);
    }
}

static void test_formats_and_errors(void) {
    render_timeline t = flat_timeline();
    t.title = "formats & <escapes>";
    char err[256];
    CHECK(render_timeline_draw(&t, out("f.png"), NULL, err, sizeof err) == 0);
    CHECK(render_timeline_draw(&t, out("f.svg"), NULL, err, sizeof err) == 0);
    CHECK(render_timeline_draw(&t, out("f.pdf"), NULL, err, sizeof err) == 0);
    CHECK(render_timeline_draw(&t, out("F.PNG"), NULL, err, sizeof err) == 0);
    CHECK(file_size(out("f.png")) > 1000 && file_size(out("f.svg")) > 1000);
    CHECK(file_size(out("f.pdf")) > 1000 && file_size(out("F.PNG")) > 1000);
    cairo_surface_t *s = load(out("F.PNG"), 1600, 900);
    if (s)
        cairo_surface_destroy(s);
    CHECK(file_contains(out("f.svg"), "<title>formats &amp; &lt;escapes&gt;</title>"));
    CHECK(file_contains(out("f.svg"), "<desc>reserved 2 GiB, allocated 1 GiB</desc>"));
    CHECK(file_contains(out("f.svg"), "width=\"1600px\""));
    CHECK(file_contains(out("f.pdf"), "/Title (formats & <escapes>)"));
    /* the SVG draws the same labels: units, a tick, the title */
    render_options o = options(0, 0);
    CHECK(render_timeline_draw(&t, out("f.svg"), &o, err, sizeof err) == 0);
    CHECK(find("formats & <escapes>") && find("2 GiB") && find("bytes"));
    /* and carries them as text (a transparent layer over Cairo's glyph outlines) */
    CHECK(file_contains(out("f.svg"), ">formats &amp; &lt;escapes&gt;</text>"));
    CHECK(file_contains(out("f.svg"), ">2 GiB</text>"));
    CHECK(file_contains(out("f.svg"), ">bytes</text>"));

    /* unknown or missing extension: one line naming it, no file */
    err[0] = '\0';
    CHECK(render_timeline_draw(&t, out("f.bmp"), NULL, err, sizeof err) == -1);
    CHECK(strstr(err, ".bmp") != NULL && strchr(err, '\n') == NULL);
    CHECK(file_size(out("f.bmp")) == -1);
    CHECK(render_timeline_draw(&t, out("noext"), NULL, err, sizeof err) == -1);
    CHECK(strstr(err, ".png") != NULL);
    /* unwritable path */
    CHECK(render_timeline_draw(&t, "/nonexistent-dir/x.png", NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "cannot write /nonexistent-dir/x.png") != NULL);
    CHECK(render_segments_draw(&(render_layout){0}, "/nonexistent-dir/x.svg", NULL, err,
                               sizeof err) == -1);
    /* sizes: the smallest allowed still makes a picture; smaller is refused */
    render_options small = {.width = 64, .height = 64};
    CHECK(render_timeline_draw(&t, out("small.png"), &small, err, sizeof err) == 0);
    cairo_surface_t *sp = load(out("small.png"), 64, 64);
    if (sp)
        cairo_surface_destroy(sp);
    render_options tiny = {.width = 10, .height = 10};
    CHECK(render_timeline_draw(&t, out("tiny.png"), &tiny, err, sizeof err) == -1);
    CHECK(strstr(err, "10x10") != NULL);
    /* inconsistent input: refused before a file is made */
    int64_t bad[NB];
    memcpy(bad, starts, sizeof bad);
    bad[5] = 0;
    t.bucket_start_ns = bad;
    CHECK(render_timeline_draw(&t, out("bad.png"), NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "bucket 5") != NULL);
    CHECK(file_size(out("bad.png")) == -1);
    render_block over[] = {{0, 100, RENDER_BLOCK_ALLOCATED, 1}, {50, 100, RENDER_BLOCK_FREE, 0}};
    render_segment seg = {0x1000, 200, NULL, 2, over};
    render_layout l = {0};
    l.nsegments = 1;
    l.segments = &seg;
    CHECK(render_segments_draw(&l, out("bad.png"), NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "overlaps") != NULL);
    CHECK(render_timeline_draw(NULL, out("bad.png"), NULL, err, sizeof err) == -1);
    double fx[] = {1, 0}, fy[] = {0.1, 0.2};
    render_fragmentation f = {0};
    f.npoints = 2;
    f.x = fx;
    f.fragmentation = fy;
    CHECK(render_fragmentation_draw(&f, out("bad.pdf"), NULL, err, sizeof err) == -1);
    CHECK(file_size(out("bad.pdf")) == -1);
    /* bands out of order are refused */
    static const render_band unordered[] = {{0.0, "good"}, {0.4, "severe"}, {0.3, "serious"}};
    render_fragmentation fb = {.nbands = 3, .bands = unordered};
    CHECK(render_fragmentation_draw(&fb, out("bad-bands.png"), NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "band 2") != NULL);
    /* bytes that are not UTF-8 in a label still make a picture */
    t.bucket_start_ns = starts;
    t.title = "bad \xff\xfe utf-8 \xe2\x82";
    CHECK(render_timeline_draw(&t, out("utf8.png"), NULL, err, sizeof err) == 0);
}

static void test_site_colors(void) {
    render_rgb other = render_site_color(0);
    CHECK(fabs(other.r - other.g) < 0.05 && fabs(other.g - other.b) < 0.05);
    for (uint64_t a = 1; a <= 20; a++)
        for (uint64_t b = a + 1; b <= 20; b++) {
            render_rgb x = render_site_color(a), y = render_site_color(b);
            CHECK(fabs(x.r - y.r) + fabs(x.g - y.g) + fabs(x.b - y.b) > 0.1);
        }
    render_rgb h1 = render_site_color(0x9e3779b97f4a7c15ULL);
    render_rgb h2 = render_site_color(0x9e3779b97f4a7c15ULL);
    CHECK(h1.r == h2.r && h1.g == h2.g && h1.b == h2.b);
    CHECK(h1.r >= 0 && h1.r <= 1 && h1.g >= 0 && h1.g <= 1 && h1.b >= 0 && h1.b <= 1);
}

static void remove_outputs(void) {
    static const char *const names[] = {"flat.png",
                                        "markers.png",
                                        "speed.png",
                                        "heat.png",
                                        "heat_big.png",
                                        "seg.png",
                                        "seg_many.png",
                                        "frag.png",
                                        "e1.png",
                                        "e2.png",
                                        "e3.png",
                                        "e4.svg",
                                        "f.png",
                                        "f.svg",
                                        "f.pdf",
                                        "F.PNG",
                                        "utf8.png",
                                        "frag-few.svg",
                                        "frag-trapped.png",
                                        "frag-many.svg"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(out(names[i]));
    rmdir(dir);
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "/tmp/test_render.XXXXXX");
    if (!mkdtemp(dir))
        CHECK_SKIP("cannot make a temporary directory");
    test_site_colors();
    test_formats_and_errors();
    test_empty();
    test_timeline_lines();
    test_timeline_markers();
    test_timeline_large();
    test_heatmap();
    test_segments();
    test_fragmentation();
    test_simulation();
    if (!check_failures)
        remove_outputs();
    else
        fprintf(stderr, "pictures kept in %s\n", dir);
    render_release();
    return check_finish("test_render");
}
