/* test_view_facts.c — the facts behind `memanalyze view` (query/view_timeline.h,
 * query/view_blocks.h, query/view_stacks.h) against brute force over the same database: every
 * event_rows row of the device placed by the header's rule, and SQL on the `allocations` view.
 * Inputs: synthetic traces (steps, a leak, two devices, OOMs on a small device, an event cap) built
 * by synth, and the real snapshots of ../shared/data/pytorch (one without times: the event axis);
 * random windows at random zooms, empty ones, windows before the first and after the last event,
 * one event wide. Both event stores: the cache's compressed chunks and `import -o`'s plain table.
 * The stacks: each bucket's series sum to view_timeline's max there (before the first known
 * bucket: nothing), by site, stream and size (category: refused without block categories), and
 * a window ending past the row limit refused with nothing in it (tests/test_view_stacks.py
 * holds each series to the blocks live then). The steps (query/step_table.h): step_table_part's
 * rows [K, K + N) the same as step_table's whole answer, field by field, at offsets around the
 * anomalies' neighbourhood and the warm-up, and step_table_overlap's range of a window the one
 * step_table's rows give (the first row that overlaps it to the last); on every input, and on a
 * copy of a synthetic one whose steps were made to nest and overlap (a step holding many, ones
 * inside one, one ending with another, a NULL begin, negative numbers), with reserved jumps
 * planted at the second row and further on (only the first one counts) and open steps at the
 * end.
 *
 * argv: SOURCE_DIR SYNTH */
#include "check.h"
#include "db_open.h"
#include "event_store.h"
#include "input.h"
#include "step_table.h"
#include "view_blocks.h"
#include "view_stacks.h"
#include "view_timeline.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/gmt_view_facts_XXXXXX";
static uint64_t rng = 0x9e3779b97f4a7c15ull;

typedef struct dev_rows {
    size_t n;
    int64_t *place, *alloc, *res, *id;
} dev_rows;

/* The device's rows in event_id order, each placed by view_timeline.h's rule. */
static dev_rows load_rows(sqlite3 *db, int device, int event_axis) {
    dev_rows d = {0, NULL, NULL, NULL, NULL};
    size_t cap = 0;
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db,
                             "SELECT event_id, ts_ns, allocated_bytes, reserved_bytes FROM "
                             "event_rows WHERE device = ?1 ORDER BY event_id",
                             -1, &st, NULL) == SQLITE_OK);
    sqlite3_bind_int(st, 1, device);
    int64_t place = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (d.n == cap) {
            cap = cap ? cap * 2 : 1024;
            d.place = realloc(d.place, cap * sizeof *d.place);
            d.alloc = realloc(d.alloc, cap * sizeof *d.alloc);
            d.res = realloc(d.res, cap * sizeof *d.res);
            d.id = realloc(d.id, cap * sizeof *d.id);
        }
        int64_t key = sqlite3_column_int64(st, event_axis ? 0 : 1);
        key = key > 0 ? key : 0;
        place = key > place ? key : place;
        d.place[d.n] = place;
        d.alloc[d.n] = sqlite3_column_int64(st, 2);
        d.res[d.n] = sqlite3_column_int64(st, 3);
        d.id[d.n] = sqlite3_column_int64(st, 0);
        d.n++;
    }
    sqlite3_finalize(st);
    return d;
}

static void free_rows(dev_rows *d) { free(d->place), free(d->alloc), free(d->res), free(d->id); }

static int windows_checked, from_levels, from_events;

/* One window: the answer against the rows, bucket by bucket. */
static void check_window(sqlite3 *db, int device, const dev_rows *d, int64_t lo, int64_t hi,
                         size_t nb) {
    char err[256] = "";
    view_timeline_result r;
    int rc = view_timeline(db, device, lo, hi, nb, &r, err, sizeof err);
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "view_timeline: %s\n", err);
        return;
    }
    windows_checked++;
    from_levels += r.level_width > 0;
    from_events += r.level_width == 0;
    /* the grid: a power of two, the window inside, at most nb + 1 buckets */
    CHECK(r.width > 0 && (r.width & (r.width - 1)) == 0);
    CHECK(r.start <= lo && r.start % r.width == 0);
    CHECK(r.start + (int64_t)r.n * r.width >= hi);
    CHECK(r.start + (int64_t)(r.n - 1) * r.width < hi);
    size_t want_nb = nb < 1 ? 1 : nb > VIEW_TIMELINE_MAX_BUCKETS ? VIEW_TIMELINE_MAX_BUCKETS : nb;
    CHECK(r.n <= want_nb + 1);
    CHECK(r.width == 1 || (hi - lo + r.width / 2 - 1) / (r.width / 2) > (int64_t)want_nb);
    view_bucket *want = calloc(r.n, sizeof *want);
    int known = 0;
    int64_t ca = 0, cr = 0, cid = 0;
    int64_t end = r.start + (int64_t)r.n * r.width;
    for (size_t i = 0; i < d->n; i++) {
        int64_t p = d->place[i];
        if (p < r.start) {
            known = 1, ca = d->alloc[i], cr = d->res[i], cid = d->id[i];
            continue;
        }
        if (p >= end)
            break;
        view_bucket *b = &want[(p - r.start) / r.width];
        if (!b->events) {
            b->min_allocated = b->max_allocated = d->alloc[i];
            b->min_reserved = b->max_reserved = d->res[i];
            b->max_event_id = d->id[i];
        }
        b->events++;
        b->last_event_id = d->id[i];
        if (d->alloc[i] < b->min_allocated)
            b->min_allocated = d->alloc[i];
        if (d->alloc[i] > b->max_allocated)
            b->max_allocated = d->alloc[i], b->max_event_id = d->id[i]; /* the first at it */
        if (d->res[i] < b->min_reserved)
            b->min_reserved = d->res[i];
        if (d->res[i] > b->max_reserved)
            b->max_reserved = d->res[i];
        b->last_allocated = d->alloc[i];
        b->last_reserved = d->res[i];
    }
    size_t first_known = r.n;
    int64_t max_a = 0, max_r = 0;
    int bad = 0;
    for (size_t i = 0; i < r.n; i++) {
        view_bucket *b = &want[i];
        if (b->events) {
            known = 1, ca = b->last_allocated, cr = b->last_reserved, cid = b->last_event_id;
        } else if (known) {
            b->min_allocated = b->max_allocated = b->last_allocated = ca;
            b->min_reserved = b->max_reserved = b->last_reserved = cr;
            b->max_event_id = b->last_event_id = cid;
        }
        if (known && first_known == r.n)
            first_known = i;
        if (known) {
            max_a = b->max_allocated > max_a ? b->max_allocated : max_a;
            max_r = b->max_reserved > max_r ? b->max_reserved : max_r;
        }
        if (memcmp(b, &r.buckets[i], sizeof *b) != 0 && bad++ < 3)
            fprintf(stderr,
                    "device %d window [%lld, %lld) /%zu bucket %zu: events %lld/%lld alloc "
                    "%lld..%lld>%lld vs %lld..%lld>%lld\n",
                    device, (long long)lo, (long long)hi, nb, i, (long long)r.buckets[i].events,
                    (long long)b->events, (long long)r.buckets[i].min_allocated,
                    (long long)r.buckets[i].max_allocated, (long long)r.buckets[i].last_allocated,
                    (long long)b->min_allocated, (long long)b->max_allocated,
                    (long long)b->last_allocated);
    }
    CHECK(bad == 0);
    CHECK_EQ_U64(r.first_known, first_known);
    CHECK_EQ_U64(r.max_allocated, max_a);
    CHECK_EQ_U64(r.max_reserved, max_r);
    free(want);
    view_timeline_free(&r);
}

static int64_t rand_in(int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)(check_random(&rng) % (uint64_t)(hi - lo + 1));
}

static void timeline_windows(sqlite3 *db, int device, int expect_event_axis) {
    char err[256];
    int event_axis = -1;
    int64_t end = 0;
    CHECK(view_timeline_axis(db, &event_axis, &end, err, sizeof err) == 0);
    if (expect_event_axis >= 0)
        CHECK(event_axis == expect_event_axis);
    dev_rows d = load_rows(db, device, event_axis);
    if (d.n == 0) {
        free_rows(&d);
        return;
    }
    int64_t first = d.place[0], last = d.place[d.n - 1];
    CHECK(end > last);
    static const size_t nbs[] = {1, 2, 7, 100, 1000, 2000, 4096, 10000};
    /* the whole run, before it, after it, one event, empty and bad windows */
    check_window(db, device, &d, 0, end, 2000);
    check_window(db, device, &d, -1000, first > -999 ? first : -999, 10);
    check_window(db, device, &d, last + 1, last + 1000000, 50);
    check_window(db, device, &d, last, last + 1, 1);
    check_window(db, device, &d, 0, 1, 4096);
    view_timeline_result r;
    CHECK(view_timeline(db, device, 5, 5, 10, &r, err, sizeof err) == -1 && err[0]);
    CHECK(view_timeline(db, device, 0, INT64_MAX, 10, &r, err, sizeof err) == -1);
    check_window(db, device, &d, -((int64_t)1 << 60), (int64_t)1 << 60, 3);
    for (int k = 0; k < 150; k++) {
        size_t nb = nbs[check_random(&rng) % (sizeof nbs / sizeof nbs[0])];
        int64_t span = end - first + 1;
        /* zoom: a window of 1 / 8^z of the run */
        int z = (int)(check_random(&rng) % (k % 2 ? 8 : 3));
        int64_t w = span >> (3 * z);
        w = w > 0 ? w : 1;
        w = rand_in(1, w);
        int64_t lo = rand_in(first - w / 4, end);
        if (k % 10 == 0) { /* around one event */
            size_t i = (size_t)(check_random(&rng) % d.n);
            lo = d.place[i] - (int64_t)(check_random(&rng) % 3);
            w = rand_in(1, 3);
        }
        check_window(db, device, &d, lo, lo + w, nb);
    }
    free_rows(&d);
}

static int stack_windows_checked;

static void check_stacks(sqlite3 *db, int device, int64_t lo, int64_t hi, size_t nb,
                         view_stack_by by) {
    char err[256];
    view_stacks_result s;
    view_timeline_result t;
    CHECK(view_timeline(db, device, lo, hi, nb, &t, err, sizeof err) == 0);
    int rc = view_stacks(db, device, lo, hi, nb, by, 12, 0, &s, err, sizeof err);
    if (by == STACK_BY_CATEGORY && rc != 0) { /* built without categories */
        CHECK(strstr(err, "no block categories") != NULL);
        view_timeline_free(&t);
        return;
    }
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "view_stacks: %s\n", err);
        view_timeline_free(&t);
        return;
    }
    CHECK(!s.refused && s.timeline.n == t.n && s.timeline.start == t.start &&
          s.timeline.first_known == t.first_known && s.series_count <= 13);
    for (size_t i = 0; i < t.n && s.timeline.n == t.n; i++) {
        int64_t sum = 0;
        for (size_t k = 0; k < s.series_count; k++)
            sum += s.values[i * s.series_count + k];
        if (sum != (i >= t.first_known ? t.buckets[i].max_allocated : 0)) {
            fprintf(stderr, "dev %d by %s [%lld, %lld) bucket %zu: stack %lld, max %lld\n", device,
                    view_stack_by_name(by), (long long)lo, (long long)hi, i, (long long)sum,
                    (long long)t.buckets[i].max_allocated);
            CHECK(!"each bucket's stack is its max allocated");
            break;
        }
    }
    stack_windows_checked++;
    /* every named series folded into "others", one at a time: each bucket's sum kept */
    int64_t *sums = calloc(t.n + 1, sizeof *sums);
    CHECK(sums != NULL);
    for (size_t i = 0; sums && i < t.n; i++)
        for (size_t k = 0; k < s.series_count; k++)
            sums[i] += s.values[i * s.series_count + k];
    for (size_t before = s.series_count; view_stacks_fold_last(&s) == 0; before = s.series_count)
        CHECK(s.series_count == before || s.series_count + 1 == before);
    CHECK(s.series_count <= 1 && (s.series_count == 0 || s.series[0].key == -1));
    for (size_t i = 0; sums && i < t.n; i++)
        CHECK(sums[i] == (s.series_count ? s.values[i] : 0));
    free(sums);
    int64_t needed = s.rows_needed;
    view_stacks_free(&s);
    view_timeline_free(&t);
    if (needed > 1) { /* the same window under a smaller limit: refused, nothing in it */
        CHECK(view_stacks(db, device, lo, hi, nb, by, 12, needed - 1, &s, err, sizeof err) == 0);
        CHECK(s.refused && s.series_count == 0 && !s.values && s.rows_read == 0);
        view_stacks_free(&s);
    }
}

static void stacks_windows(sqlite3 *db, int device) {
    char err[256];
    int event_axis;
    int64_t end;
    CHECK(view_timeline_axis(db, &event_axis, &end, err, sizeof err) == 0);
    for (int by = STACK_BY_SITE; by <= STACK_BY_SIZE; by++) {
        check_stacks(db, device, 0, end, 1000, (view_stack_by)by);
        for (int k = 0; k < 6; k++) {
            int64_t w = end >> (3 * (check_random(&rng) % 5));
            w = rand_in(1, w > 0 ? w : 1);
            int64_t lo = rand_in(0, end);
            check_stacks(db, device, lo, lo + w, (size_t)rand_in(1, 2000), (view_stack_by)by);
        }
    }
}

static int build(const char *input, const char *db_path, int plain) {
    input_kind kind;
    char err[512];
    input_options opt;
    memset(&opt, 0, sizeof opt);
    opt.quiet = 1;
    opt.plain_events = plain;
    if (input_detect(input, &kind, err, sizeof err) != 0 ||
        input_build_database(input, kind, db_path, &opt, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", input, err);
        return -1;
    }
    return 0;
}

static sqlite3 *open_db(const char *path) {
    sqlite3 *db = NULL;
    char err[256];
    if (db_open_readonly(path, &db, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", path, err);
        return NULL;
    }
    return db;
}

static int devices_of(sqlite3 *db, int *devs, int max) {
    sqlite3_stmt *st = NULL;
    int n = 0;
    CHECK(sqlite3_prepare_v2(db, "SELECT device FROM devices ORDER BY device", -1, &st, NULL) ==
          SQLITE_OK);
    while (n < max && sqlite3_step(st) == SQLITE_ROW)
        devs[n++] = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* ---- the steps: parts and window ranges against the whole table ---------------------------- */

static int step_parts_checked, step_windows_checked;

static int same_text(const char *a, const char *b) {
    return a == b || (a && b && strcmp(a, b) == 0);
}

static int same_step(const step_row *a, const step_row *b) {
    return a->step == b->step && a->begin_event_id == b->begin_event_id &&
           a->end_event_id == b->end_event_id && a->peak_allocated == b->peak_allocated &&
           a->peak_event_id == b->peak_event_id && same_text(a->peak_phase, b->peak_phase) &&
           a->allocated_at_end == b->allocated_at_end && a->reserved_at_end == b->reserved_at_end &&
           a->segments_at_end == b->segments_at_end &&
           a->fragmentation_at_end == b->fragmentation_at_end &&
           a->trapped_at_end == b->trapped_at_end && a->allocs == b->allocs &&
           a->frees == b->frees && a->growth == b->growth && a->growth_known == b->growth_known &&
           strcmp(a->anomaly, b->anomaly) == 0 && a->open == b->open && a->partial == b->partial &&
           a->implicit == b->implicit;
}

static int same_history(const step_history *a, const step_history *b) {
    return a->mid_run == b->mid_run && a->first_event == b->first_event &&
           a->first_step == b->first_step && a->before == b->before &&
           (!a->before || (a->before_first == b->before_first && a->before_last == b->before_last));
}

static void check_step_window(sqlite3 *db, int device, const step_row *all, size_t n, int implicit,
                              const step_order *order, int64_t a, int64_t b) {
    size_t want_first = 0, want_count = 0; /* the viewer's rule over the whole table */
    for (size_t i = 0; i < n; i++)
        if (all[i].begin_event_id < b && all[i].end_event_id > a) {
            if (!want_count)
                want_first = i;
            want_count = i - want_first + 1;
        }
    size_t first = 7, count = 7;
    char err[256];
    int rc = step_table_overlap(db, device, a, b, order, &first, &count, err, sizeof err);
    step_windows_checked++;
    if (implicit) {
        CHECK(rc == 1);
        return;
    }
    if (rc != 0 || first != want_first || count != want_count) {
        fprintf(stderr,
                "device %d window (%" PRId64 ", %" PRId64 "]%s: rc %d, rows %zu + %zu, the "
                "table's %zu + %zu (%s)\n",
                device, a, b, order ? " (the order kept)" : "", rc, first, count, want_first,
                want_count, rc ? err : "");
        CHECK(!"step_table_overlap's range is the whole table's");
    }
}

static void check_step_part(sqlite3 *db, int device, const step_row *all, size_t n,
                            const step_history *h, int implicit, step_order *order, size_t first,
                            size_t count) {
    step_row *some = NULL;
    size_t got = 0, total = 0;
    step_history ph;
    char err[256];
    int rc =
        step_table_part(db, device, first, count, order, &some, &got, &total, &ph, err, sizeof err);
    step_parts_checked++;
    if (implicit) {
        CHECK(rc == 1);
        free(some);
        return;
    }
    size_t from = first < n ? first : n, want = count < n - from ? count : n - from;
    int same = rc == 0 && got == want && total == n && same_history(&ph, h);
    for (size_t i = 0; same && i < got; i++)
        if (!same_step(&some[i], &all[from + i])) {
            fprintf(stderr, "device %d part %zu + %zu%s: row %zu (step %" PRId64 ") differs%s%s\n",
                    device, first, count, order ? " (the order kept)" : "", from + i,
                    all[from + i].step,
                    some[i].anomaly[0] || all[from + i].anomaly[0] ? ": anomaly " : "",
                    some[i].anomaly[0] || all[from + i].anomaly[0] ? some[i].anomaly : "");
            same = 0;
        }
    if (!same) {
        fprintf(stderr, "device %d part %zu + %zu: rc %d, %zu rows of %zu (want %zu of %zu) %s\n",
                device, first, count, rc, got, total, want, n, rc ? err : "");
        CHECK(!"step_table_part's rows are the whole table's");
    }
    free(some);
}

/* Parts and windows of the device's steps against step_table's whole answer. */
static void step_checks(sqlite3 *db, int device) {
    step_row *all = NULL;
    size_t n = 0;
    step_history h;
    char err[256];
    if (step_table(db, device, &all, &n, &h, err, sizeof err) != 0) {
        fprintf(stderr, "device %d: step_table: %s\n", device, err);
        CHECK(!"step_table answers");
        return;
    }
    int implicit = n && all[0].implicit;
    size_t anomalies = 0, jump = SIZE_MAX; /* the first reserved jump's row */
    for (size_t i = 0; i < n; i++) {
        anomalies += all[i].anomaly[0] != 0;
        if (jump == SIZE_MAX && strncmp(all[i].anomaly, "reserved first jumps", 20) == 0)
            jump = i;
    }
    step_order kept; /* as the viewer keeps it: made once, the jump added by the first part */
    CHECK(step_table_order(db, device, &kept, err, sizeof err) == 0 && !kept.jump_known);
    int64_t last = 0;
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, "SELECT max(event_id) FROM event_rows", -1, &st, NULL) ==
          SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        last = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    for (int mode = 0; mode < 2; mode++) { /* without an order, then with the kept one */
        step_order *order = mode ? &kept : NULL;
        const size_t firsts[] = {0,
                                 1,
                                 2,
                                 3,
                                 5,
                                 6,
                                 7,
                                 8,
                                 11,
                                 12,
                                 13,
                                 17,
                                 25,
                                 33,
                                 n / 3,
                                 n / 2,
                                 n > 7 ? n - 7 : 0,
                                 n ? n - 1 : 0,
                                 n,
                                 n + 4};
        const size_t counts[] = {0, 1, 2, 9, 200};
        for (size_t i = 0; i < sizeof firsts / sizeof firsts[0]; i++)
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
                check_step_part(db, device, all, n, &h, implicit, order, firsts[i], counts[k]);
        for (size_t i = 0; i < n; i++) /* the part at each anomaly and around it */
            if (all[i].anomaly[0])
                for (size_t d = 0; d < 3; d++)
                    check_step_part(db, device, all, n, &h, implicit, order,
                                    i > 6 * d ? i - 6 * d : 0, 3);
        const int64_t fixed[][2] = {{0, last},
                                    {0, 0},
                                    {0, 1},
                                    {last, last},
                                    {last - 1, last},
                                    {last / 2, last / 2},
                                    {last / 3, 2 * last / 3}};
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            check_step_window(db, device, all, n, implicit, order, fixed[i][0], fixed[i][1]);
        size_t stride = n > 40 ? n / 40 : 1;
        for (size_t i = 0; i < n; i += stride) { /* at each end of a step, inside, around it */
            int64_t b = all[i].begin_event_id, e = all[i].end_event_id;
            const int64_t w[][2] = {{b, e},     {b + 1, e - 1}, {e - 1, e + 1}, {e, e},
                                    {b - 4, b}, {e, e + 3},     {b, b + 1},     {e - 1, e}};
            for (size_t k = 0; k < sizeof w / sizeof w[0]; k++)
                if (w[k][0] <= w[k][1])
                    check_step_window(db, device, all, n, implicit, order, w[k][0], w[k][1]);
        }
        for (int k = 0; k < 40; k++) {
            int64_t a = rand_in(0, last), b = rand_in(a, a + rand_in(0, last / 4 + 1));
            check_step_window(db, device, all, n, implicit, order, a, b > last ? last : b);
        }
    }
    /* the kept order: the jump where the whole table says it (a row with another anomaly does
     * not), once a part needed it */
    CHECK(implicit || !kept.jump_known || jump == SIZE_MAX || kept.first_jump == jump);
    CHECK(implicit || n < 8 || kept.jump_known);
    fprintf(stderr, "  device %d: %zu steps (%zu anomalies%s%s), %d parts and %d windows so far\n",
            device, n, anomalies, implicit ? ", implicit" : "",
            kept.begins_sorted ? "" : ", not sorted", step_parts_checked, step_windows_checked);
    free(all);
}

static void exec_sql(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, msg ? msg : "?");
        CHECK(!"the statement runs");
    }
    sqlite3_free(msg);
}

typedef struct added_step {
    int num;
    const char *begin; /* from the begin_k-th step's row, b */
    int begin_k, end_k;
} added_step;

/* Steps that nest and overlap the run's: begins out of the table's order. */
static const added_step nesting[] = {
    {1000, "b.begin_event_id", 3, 40},      /* holds steps 3 to 40 */
    {1001, "b.begin_event_id + 3", 20, 23}, /* from inside step 20 to the end of 23 */
    {1002, "b.end_event_id - 2", 30, 30},   /* inside one, ending with it: after it */
    {-5, "b.begin_event_id + 1", 31, 31},   /* the same, before it (a lower number) */
    {-7, "b.end_event_id - 1", 12, 12},     /* a late begin, before its neighbour */
    {1003, "b.end_event_id", 15, 15},       /* empty: begins where it ends */
    {1004, "NULL", 9, 9},                   /* a NULL begin: read as 0 */
    {1005, "b.begin_event_id", 26, 26},     /* the same as a step of the run */
    {1006, "b.begin_event_id", 1, 47},      /* a long one, ending with the run */
};
/* Steps that tie with the run's and keep the begins in order (the seeks' ties). */
static const added_step ties[] = {
    {1005, "b.begin_event_id", 26, 26}, /* the same as a step of the run: after it */
    {-3, "b.begin_event_id", 26, 26},   /* and before it */
    {1007, "b.begin_event_id", 10, 10}, /* three of one step */
    {1008, "b.begin_event_id", 10, 10},
    {1009, "b.end_event_id", 47, 47}, /* empty, at the run's end, after its last */
};

/* A copy of a synthetic input's database with steps added (each ends where one of the run's
 * ends, so the devices' step_ends rows are its too), reserved jumps planted and open steps at
 * the end; then step_checks on each device. sorted: what step_table_order must say. */
static void added_steps(const char *synth_bin, const char *name, const added_step *added,
                        size_t nadded, int sorted) {
    char path[512], db_path[600], cmd[2048];
    snprintf(path, sizeof path, "%s/%s.zst", dir, name);
    snprintf(cmd, sizeof cmd, "%s -o %s --steps 48 --layers 2 --hidden 256 --devices 2 >/dev/null",
             synth_bin, path);
    CHECK(system(cmd) == 0);
    snprintf(db_path, sizeof db_path, "%s/%s.sqlite", dir, name);
    if (build(path, db_path, 0) != 0) {
        CHECK(!"the input builds");
        return;
    }
    unlink(path);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    /* run_steps: the run's steps by end, row k + 1 the k-th, before any is added */
    exec_sql(db, "BEGIN; CREATE TEMP TABLE run_steps AS SELECT * FROM steps ORDER BY "
                 "end_event_id, step");
    for (size_t i = 0; i < nadded; i++) {
        snprintf(cmd, sizeof cmd,
                 "INSERT INTO steps (step, name, begin_ts_ns, end_ts_ns, begin_event_id, "
                 "end_event_id) SELECT %d, 'step %d', b.begin_ts_ns, e.end_ts_ns, %s, "
                 "e.end_event_id FROM run_steps b, run_steps e WHERE b.rowid = %d AND "
                 "e.rowid = %d",
                 added[i].num, added[i].num, added[i].begin, added[i].begin_k + 1,
                 added[i].end_k + 1);
        exec_sql(db, cmd);
    }
    /* reserved jumps: at the run's second end (warm-up: none), then two (the first counts) */
    static const struct { int gib, at_k; } jumps[] = {{4, 1}, {4, 14}, {16, 33}};
    for (size_t i = 0; i < sizeof jumps / sizeof jumps[0]; i++) {
        snprintf(cmd, sizeof cmd,
                 "UPDATE step_ends SET reserved_bytes = reserved_bytes + (%d << 30) WHERE "
                 "end_event_id >= (SELECT end_event_id FROM run_steps WHERE rowid = %d)",
                 jumps[i].gib, jumps[i].at_k + 1);
        exec_sql(db, cmd);
    }
    /* open at the end: the steps that end with the run's last one */
    exec_sql(db, "UPDATE steps SET end_ts_ns = NULL WHERE end_event_id = (SELECT "
                 "max(end_event_id) FROM steps); COMMIT");
    CHECK(sqlite3_close(db) == SQLITE_OK);
    db = open_db(db_path);
    CHECK(db != NULL);
    if (!db)
        return;
    int64_t inverted = 0; /* begins out of the table's order: what the ranges must get right */
    sqlite3_stmt *st = NULL;
    CHECK(
        sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM (SELECT begin_event_id AS b, lag(begin_event_id) "
                           "OVER (ORDER BY end_event_id, step) AS p FROM steps) WHERE b < p",
                           -1, &st, NULL) == SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        inverted = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    CHECK(sorted ? inverted == 0 : inverted >= 4);
    fprintf(stderr, "%s: %" PRId64 " begins out of the table's order\n", name, inverted);
    step_order o;
    char err[256];
    CHECK(step_table_order(db, 0, &o, err, sizeof err) == 0 && o.begins_sorted == sorted);
    int devs[8];
    int n = devices_of(db, devs, 8);
    CHECK(n == 2);
    for (int i = 0; i < n; i++)
        step_checks(db, devs[i]);
    db_close(db);
}

typedef struct all_blocks {
    size_t n;
    view_block *b;
    int64_t *lo, *hi;
} all_blocks;

/* The device's blocks from the allocations view, their lifetimes on the axis. */
static all_blocks load_blocks(sqlite3 *db, int device, int event_axis) {
    all_blocks a = {0, NULL, NULL, NULL};
    size_t cap = 0;
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(
              db,
              "SELECT alloc_id, addr, size, coalesce(requested_size, -1), alloc_ts_ns, "
              "free_ts_ns, coalesce(free_event_id, -1), coalesce(stream, -1), "
              "coalesce(alloc_stack_id, -1), coalesce(segment_id, -1) FROM allocations "
              "WHERE device = ?1 AND kind = 'device' ORDER BY alloc_id",
              -1, &st, NULL) == SQLITE_OK);
    sqlite3_bind_int(st, 1, device);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (a.n == cap) {
            cap = cap ? cap * 2 : 1024;
            a.b = realloc(a.b, cap * sizeof *a.b);
            a.lo = realloc(a.lo, cap * sizeof *a.lo);
            a.hi = realloc(a.hi, cap * sizeof *a.hi);
        }
        int64_t v[10];
        for (int i = 0; i < 10; i++)
            v[i] = sqlite3_column_int64(st, i);
        int freed = sqlite3_column_type(st, 5) != SQLITE_NULL;
        int64_t lo = event_axis ? v[0] : v[4];
        int64_t hi = !freed ? VIEW_BLOCK_LIVE : event_axis ? v[6] : v[5];
        hi = hi < lo ? lo : hi;
        a.b[a.n] = (view_block){v[0], v[1], v[2], v[3], lo, hi, v[6], v[7], v[8], v[9]};
        a.lo[a.n] = lo;
        a.hi[a.n] = hi;
        a.n++;
    }
    sqlite3_finalize(st);
    return a;
}

static int by_size_desc(const void *x, const void *y) {
    const view_block *a = x, *b = y;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    int64_t la = a->free_ts == VIEW_BLOCK_LIVE ? INT64_MAX : a->free_ts - a->alloc_ts;
    int64_t lb = b->free_ts == VIEW_BLOCK_LIVE ? INT64_MAX : b->free_ts - b->alloc_ts;
    if (la != lb) /* the longest-lived first */
        return la > lb ? -1 : 1;
    if (a->alloc_ts != b->alloc_ts)
        return a->alloc_ts < b->alloc_ts ? -1 : 1;
    return (a->alloc_id > b->alloc_id) - (a->alloc_id < b->alloc_id);
}

static int block_windows_checked;

static void check_blocks_window(view_blocks_index *ix, int device, const all_blocks *a, int64_t t0,
                                int64_t t1, size_t k) {
    char err[256] = "";
    view_blocks_result r;
    int rc = view_blocks(ix, device, t0, t1, k, &r, err, sizeof err);
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "view_blocks: %s\n", err);
        return;
    }
    block_windows_checked++;
    view_block *want = malloc((a->n + 1) * sizeof *want);
    size_t n = 0;
    int64_t bytes = 0;
    for (size_t i = 0; i < a->n; i++)
        if (t0 < t1 && a->lo[i] < t1 && a->hi[i] >= t0) {
            want[n++] = a->b[i];
            bytes += a->b[i].size;
        }
    CHECK_EQ_U64(r.window_blocks, n);
    CHECK_EQ_U64(r.window_bytes, bytes);
    qsort(want, n, sizeof *want, by_size_desc);
    size_t kk = k > VIEW_BLOCKS_MAX ? VIEW_BLOCKS_MAX : k;
    size_t top = n < kk ? n : kk;
    CHECK_EQ_U64(r.n, top);
    int64_t shown = 0;
    int bad = 0;
    for (size_t i = 0; i < top && i < r.n; i++) {
        shown += want[i].size;
        if (memcmp(&want[i], &r.blocks[i], sizeof want[i]) != 0 && bad++ < 3) {
            const int64_t *g = &r.blocks[i].alloc_id, *w = &want[i].alloc_id;
            int f = 0;
            while (f < 9 && g[f] == w[f]) /* the first field that differs */
                f++;
            fprintf(stderr,
                    "device %d [%lld, %lld) k %zu: #%zu is alloc %lld (%lld B), not %lld (%lld "
                    "B); field %d: %lld, not %lld\n",
                    device, (long long)t0, (long long)t1, k, i, (long long)r.blocks[i].alloc_id,
                    (long long)r.blocks[i].size, (long long)want[i].alloc_id,
                    (long long)want[i].size, f, (long long)g[f], (long long)w[f]);
        }
    }
    CHECK(bad == 0);
    CHECK_EQ_U64(r.rest_blocks, n - top);
    CHECK_EQ_U64(r.rest_bytes, bytes - shown);
    int64_t cn = -1, cb = -1;
    CHECK(view_block_count_in_window(ix, device, t0, t1, &cn, &cb, err, sizeof err) == 0);
    CHECK_EQ_U64(cn, n);
    CHECK_EQ_U64(cb, bytes);
    free(want);
    view_blocks_free(&r);
}

static char last_sidecar[600];

static void blocks_windows(sqlite3 *db, const char *db_path, int device) {
    char err[256] = "", side[600], cmd[1400];
    snprintf(side, sizeof side, "%s.blocks", db_path);
    if (last_sidecar[0] && access(side, F_OK) != 0) { /* another database's sidecar: rebuilt */
        snprintf(cmd, sizeof cmd, "cp %s %s", last_sidecar, side);
        CHECK(system(cmd) == 0);
    }
    int built = -1, once = 0;
    view_blocks_index *ix = view_blocks_index_open(db, side, &built, err, sizeof err);
    CHECK(ix != NULL);
    if (!ix) {
        fprintf(stderr, "view_blocks_index_open: %s\n", err);
        return;
    }
    if (strcmp(last_sidecar, side) != 0)
        CHECK(built == 1); /* missing, or another database's */
    view_blocks_index_close(ix);
    ix = view_blocks_index_open(db, side, &once, err, sizeof err); /* kept: not built again */
    CHECK(ix != NULL && once == 0);
    if (!ix)
        return;
    view_blocks_index_close(ix);
    struct stat st; /* a damaged sidecar (cut short) is built again */
    CHECK(stat(side, &st) == 0 && truncate(side, st.st_size / 2) == 0);
    ix = view_blocks_index_open(db, side, &built, err, sizeof err);
    CHECK(ix != NULL && built == 1);
    if (!ix)
        return;
    snprintf(last_sidecar, sizeof last_sidecar, "%s", side);
    int event_axis = 0;
    int64_t end = 0;
    CHECK(view_timeline_axis(db, &event_axis, &end, err, sizeof err) == 0);
    all_blocks a = load_blocks(db, device, event_axis);
    static const size_t ks[] = {0, 1, 3, 10, 100, 2000, 20000};
    check_blocks_window(ix, device, &a, 0, end, 2000);
    /* as many as an answer holds: past the first tiers of ranks (view_blocks_file.h) */
    check_blocks_window(ix, device, &a, 0, end, VIEW_BLOCKS_MAX);
    check_blocks_window(ix, device, &a, end / 3, end / 3 + end / 20 + 1, VIEW_BLOCKS_MAX);
    check_blocks_window(ix, device, &a, -100, 0, 10);
    check_blocks_window(ix, device, &a, end, end + 1000, 10);
    check_blocks_window(ix, device, &a, 7, 7, 10);
    for (int i = 0; i < 120; i++) {
        size_t k = ks[check_random(&rng) % (sizeof ks / sizeof ks[0])];
        int z = (int)(check_random(&rng) % 6);
        int64_t w = (end + 1) >> (3 * z);
        w = rand_in(1, w > 0 ? w : 1);
        int64_t t0 = rand_in(-w / 4, end);
        if (i % 8 == 0 && a.n) { /* at one block's birth or death */
            size_t j = (size_t)(check_random(&rng) % a.n);
            t0 = (i % 16 ? a.lo[j] : a.hi[j] == VIEW_BLOCK_LIVE ? end : a.hi[j]) + rand_in(-1, 1);
            w = rand_in(1, 2);
        }
        check_blocks_window(ix, device, &a, t0, t0 + w, k);
    }
    free(a.b), free(a.lo), free(a.hi);
    view_blocks_index_close(ix);
}

/* Every check on one input. expect_event_axis: 1, 0, or -1 (either). */
static void check_input(const char *input, int plain, int expect_event_axis) {
    char db_path[512];
    snprintf(db_path, sizeof db_path, "%s/db%d.sqlite", dir, windows_checked);
    if (build(input, db_path, plain) != 0) {
        CHECK(!"the input builds");
        return;
    }
    sqlite3 *db = open_db(db_path);
    CHECK(db != NULL);
    if (!db)
        return;
    int devs[8];
    int n = devices_of(db, devs, 8);
    for (int i = 0; i < n; i++) {
        timeline_windows(db, devs[i], expect_event_axis);
        blocks_windows(db, db_path, devs[i]);
        stacks_windows(db, devs[i]);
        step_checks(db, devs[i]);
    }
    db_close(db);
    fprintf(stderr,
            "%s%s: %d device(s), %d windows so far (%d from levels, %d from events), %d of "
            "blocks, %d of stacks\n",
            input, plain ? " (plain)" : "", n, windows_checked, from_levels, from_events,
            block_windows_checked, stack_windows_checked);
}

static void synth(const char *synth_bin, const char *name, const char *args, int plain) {
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/%s.zst", dir, name);
    snprintf(cmd, sizeof cmd, "%s -o %s %s >/dev/null", synth_bin, path, args);
    CHECK(system(cmd) == 0);
    check_input(path, plain, 0);
    unlink(path);
}

int main(int argc, char **argv) {
    if (argc < 3)
        CHECK_SKIP("usage: test_view_facts SOURCE_DIR SYNTH");
    if (!mkdtemp(dir))
        CHECK_SKIP("cannot create a temporary directory");
    db_configure_process();
    CHECK(event_store_register() == SQLITE_OK);
    const char *sy = argv[2];
    synth(sy, "steps", "--steps 6 --layers 2 --hidden 256 --tokens 512", 0);
    synth(sy, "leak2dev",
          "--steps 5 --layers 2 --hidden 256 --leak 1000000 --devices 2 --streams 3", 0);
    synth(sy, "oom",
          "--steps 8 --layers 4 --hidden 512 --tokens 2048 --leak 50000000 "
          "--device-memory 760000000",
          0);
    synth(sy, "plain", "--events 20000 --layers 2 --hidden 256", 1);
    synth(sy, "big", "--events 300000 --devices 2 --seed 7", 0);
    added_steps(sy, "nested", nesting, sizeof nesting / sizeof nesting[0], 0);
    added_steps(sy, "ties", ties, sizeof ties / sizeof ties[0], 1);
    char path[1024];
    static const char *const snaps[] = {
        "train-step-m512", "lm-ctx512-forward", "pt21-no-timestamps", "cache-mostly-free",
        "empty",           "segments-only"};
    int found = 0;
    for (size_t i = 0; i < sizeof snaps / sizeof snaps[0]; i++) {
        snprintf(path, sizeof path, "%s/../shared/data/pytorch/%s.pickle", argv[1], snaps[i]);
        if (access(path, R_OK) != 0)
            continue;
        found++;
        check_input(path, 0,
                    strstr(snaps[i], "no-timestamps") ? 1
                    : strstr(snaps[i], "train")       ? 0
                                                      : -1);
    }
    if (!found)
        fprintf(stderr, "no ../shared/data/pytorch snapshots here: only the synthetic traces\n");
    /* enough windows checked: the synthetic traces alone make 7 devices' worth (126 block and 21
     * stack windows each: 882 and 147; 906 step parts), the snapshots add theirs; a clone
     * without ../shared runs the synthetic ones only */
    CHECK(from_levels > 100 && from_events > 100 && block_windows_checked > (found ? 1000 : 800) &&
          stack_windows_checked > (found ? 200 : 140) &&
          step_parts_checked > (found ? 1000 : 850) && step_windows_checked > 1000);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return check_finish("test_view_facts");
}
