/* test_view_ranges.c — view_marks' NVTX ranges (analyzer/query/view_marks.h) against a brute
 * force over the `ranges` view, on a database of markers alone (schema.sql's own statements).
 *
 * The ranges: threads whose pushes nest, process-wide start/end ranges that overlap anything,
 * ranges still open at the end, instants, and a burst of more ranges open at once than the index
 * tells rows apart (its last row, where ranges overlap and a window's are not a slice). For 400
 * random windows (the whole run, empty ones, instants, beyond either end) the answer must be the
 * brute force's: every range that overlaps the window counted, the deepest row, and the 300 kept
 * (the outermost rows whole, then the longest) in begin order with their rows and names. */
#include "check.h"

#include "view_marks.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEPT 300

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static int64_t below(int64_t n) { return (int64_t)(check_random(&rng) % (uint64_t)n); }

/* schema.sql's statement that begins with `head`, up to its ';' at a line's end. */
static char *statement(const char *schema, const char *head) {
    const char *a = strstr(schema, head);
    CHECK(a != NULL);
    if (!a)
        return strdup("SELECT 1");
    const char *b = strstr(a, ";\n");
    CHECK(b != NULL);
    return strndup(a, (size_t)(b - a + 1));
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    CHECK(fread(s, 1, (size_t)n, f) == (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

static void exec(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, msg);
        check_failures++;
    }
    sqlite3_free(msg);
}

static int64_t next_marker = 1;

/* A range [begin, end) (end < 0: still open), of thread tid (-1: a process range). */
static void add_range(sqlite3_stmt *ins, int64_t begin, int64_t end, int64_t tid) {
    char name[32];
    snprintf(name, sizeof name, "r%lld", (long long)next_marker);
    int64_t id = next_marker++;
    sqlite3_reset(ins);
    sqlite3_bind_int64(ins, 1, id);
    sqlite3_bind_int64(ins, 2, begin);
    tid >= 0 ? sqlite3_bind_int64(ins, 3, tid) : sqlite3_bind_null(ins, 3);
    sqlite3_bind_text(ins, 4, tid >= 0 ? "push" : "start", -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 5, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_null(ins, 6);
    CHECK(sqlite3_step(ins) == SQLITE_DONE);
    if (end < 0)
        return;
    sqlite3_reset(ins);
    sqlite3_bind_int64(ins, 1, next_marker++);
    sqlite3_bind_int64(ins, 2, end);
    tid >= 0 ? sqlite3_bind_int64(ins, 3, tid) : sqlite3_bind_null(ins, 3);
    sqlite3_bind_text(ins, 4, tid >= 0 ? "pop" : "end", -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 5, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(ins, 6, id);
    CHECK(sqlite3_step(ins) == SQLITE_DONE);
}

/* One thread's nested pushes in [t, t + span): depth levels at most. */
static void nest(sqlite3_stmt *ins, int64_t t, int64_t span, int64_t tid, int depth) {
    while (span > 4 && depth > 0) {
        int64_t len = 1 + below(span / 2), at = t + below(span - len);
        add_range(ins, at, at + len, tid);
        if (below(3))
            nest(ins, at + 1, len - 2, tid, depth - 1);
        span -= at + len - t;
        t = at + len;
    }
}

typedef struct ref_range {
    int64_t begin, end, marker_id;
    int depth;
    char name[32];
} ref_range;

static ref_range *all;
static size_t nall;

static int ref_by_begin(const void *a, const void *b) {
    const ref_range *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return (x->marker_id > y->marker_id) - (x->marker_id < y->marker_id);
}

static int ref_by_keep(const void *a, const void *b) {
    const ref_range *x = *(const ref_range *const *)a, *y = *(const ref_range *const *)b;
    if (x->depth != y->depth)
        return x->depth - y->depth;
    int64_t lx = x->end - x->begin, ly = y->end - y->begin;
    if (lx != ly)
        return lx > ly ? -1 : 1;
    return ref_by_begin(x, y);
}

static int ptr_by_begin(const void *a, const void *b) {
    return ref_by_begin(*(const ref_range *const *)a, *(const ref_range *const *)b);
}

/* The ranges as the view gives them, in their rows over the whole run: the brute force. */
static void load_reference(sqlite3 *db, int64_t last_ts) {
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(db, "SELECT marker_id, name, begin_ts_ns, end_ts_ns FROM ranges", -1,
                             &st, NULL) == SQLITE_OK);
    size_t cap = 1024;
    all = malloc(cap * sizeof *all);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (nall == cap)
            all = realloc(all, (cap *= 2) * sizeof *all);
        ref_range *r = &all[nall++];
        r->marker_id = sqlite3_column_int64(st, 0);
        snprintf(r->name, sizeof r->name, "%s", (const char *)sqlite3_column_text(st, 1));
        r->begin = sqlite3_column_int64(st, 2);
        r->end = sqlite3_column_type(st, 3) == SQLITE_NULL ? last_ts : sqlite3_column_int64(st, 3);
        if (r->end < r->begin)
            r->end = r->begin;
    }
    sqlite3_finalize(st);
    qsort(all, nall, sizeof *all, ref_by_begin);
    int64_t row_end[VIEW_RANGE_ROWS_MAX];
    int rows = 0;
    for (size_t i = 0; i < nall; i++) { /* the lowest row free at its begin; the last takes all */
        int r = 0;
        while (r < rows && row_end[r] > all[i].begin && r < VIEW_RANGE_ROWS_MAX - 1)
            r++;
        if (r == rows)
            row_end[rows++] = all[i].end;
        else if (row_end[r] <= all[i].begin || row_end[r] < all[i].end)
            row_end[r] = all[i].end;
        all[i].depth = r;
    }
    CHECK(rows == VIEW_RANGE_ROWS_MAX); /* the burst reached the last row */
}

static void check_window(sqlite3 *db, const view_ranges_index *x, int64_t lo, int64_t hi) {
    static const ref_range *in[1 << 16];
    size_t n = 0;
    int depth = 0;
    for (size_t i = 0; i < nall; i++)
        if (all[i].begin < hi && (all[i].end > lo || all[i].begin >= lo) && n < 1 << 16) {
            in[n++] = &all[i];
            if (all[i].depth + 1 > depth)
                depth = all[i].depth + 1;
        }
    size_t keep = n < MAX_KEPT ? n : MAX_KEPT;
    qsort(in, n, sizeof *in, ref_by_keep);
    qsort(in, keep, sizeof *in, ptr_by_begin);
    view_marks_result m;
    char err[256];
    CHECK(view_marks(db, 0, 0, lo, hi, 10, x, MAX_KEPT, 0, &m, err, sizeof err) == 0);
    int same = m.ranges_total == (int64_t)n && m.ranges_depth == depth && m.nranges == keep;
    for (size_t i = 0; same && i < keep; i++) {
        const view_range_mark *g = &m.ranges[i];
        same = g->marker_id == in[i]->marker_id && g->depth == in[i]->depth &&
               g->begin == in[i]->begin && g->end == in[i]->end && g->name &&
               !strcmp(g->name, in[i]->name);
    }
    if (!same) {
        fprintf(stderr,
                "window [%lld, %lld): %lld ranges (depth %d, %zu kept), want %zu (depth %d)\n",
                (long long)lo, (long long)hi, (long long)m.ranges_total, m.ranges_depth, m.nranges,
                n, depth);
        check_failures++;
    }
    view_marks_free(&m);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_view_ranges SOURCE_DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/schema/schema.sql", argv[1]);
    char *schema = read_file(path);
    sqlite3 *db;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    static const char *const heads[] = {"CREATE TABLE meta (", "CREATE TABLE steps (",
                                        "CREATE TABLE markers (", "CREATE VIEW ranges AS"};
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        char *sql = statement(schema, heads[i]);
        exec(db, sql);
        free(sql);
    }
    char *index = statement(schema, "CREATE INDEX markers_begin ON markers");
    exec(db, index);
    free(index);
    const int64_t span = 1000000;
    exec(db, "INSERT INTO meta (key, value) VALUES ('last_ts_ns', 1000000)");
    exec(db, "BEGIN");
    sqlite3_stmt *ins;
    CHECK(sqlite3_prepare_v2(db,
                             "INSERT INTO markers (marker_id, ts_ns, tid, kind, name, "
                             "begin_marker_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                             -1, &ins, NULL) == SQLITE_OK);
    for (int64_t tid = 1; tid <= 4; tid++) /* threads whose pushes nest */
        nest(ins, 0, span, tid * 1000, 6);
    for (int i = 0; i < 300; i++) { /* process ranges, anywhere; some open, some instants */
        int64_t b = below(span), len = below(8) == 0 ? 0 : below(span / 20);
        add_range(ins, b, below(10) == 0 ? -1 : b + len, -1);
    }
    for (int i = 0; i < 90; i++) /* a burst: more open at once than rows */
        add_range(ins, 500000 + i, 500000 + 1000 + below(5000), 7000 + i);
    sqlite3_finalize(ins);
    exec(db, "COMMIT");
    load_reference(db, span);
    CHECK(nall > 1000);

    view_ranges_index x;
    char err[256];
    CHECK(view_ranges_index_build(db, 0, &x, err, sizeof err) == 0);
    CHECK(x.n == nall && x.rows == VIEW_RANGE_ROWS_MAX);
    check_window(db, &x, 0, span + 1);
    check_window(db, &x, -5, 0);
    check_window(db, &x, span + 10, span + 20);
    check_window(db, &x, 500000, 502000); /* the burst */
    for (int i = 0; i < 400; i++) {
        int64_t lo = below(span + 100) - 50, w = 1 + below(i % 4 == 0 ? span : span / 1000 + 2);
        check_window(db, &x, lo, lo + w);
    }
    view_ranges_index_free(&x);
    /* the event axis: no ranges, nothing read */
    CHECK(view_ranges_index_build(db, 1, &x, err, sizeof err) == 0 && x.n == 0);
    view_ranges_index_free(&x);
    /* a run without ranges (a snapshot without annotations): an empty index, no window's
     * read finds one (CI's ASan build: qsort was given the NULL of no ranges) */
    exec(db, "DELETE FROM markers");
    CHECK(view_ranges_index_build(db, 0, &x, err, sizeof err) == 0 && x.n == 0 && x.rows == 0);
    view_marks_result m;
    CHECK(view_marks(db, 0, 0, 0, span, 10, &x, MAX_KEPT, 0, &m, err, sizeof err) == 0);
    CHECK(m.nranges == 0 && m.ranges_total == 0 && m.ranges_depth == 0);
    view_marks_free(&m);
    view_ranges_index_free(&x);
    free(all);
    free(schema);
    sqlite3_close(db);
    return check_finish("test_view_ranges");
}
