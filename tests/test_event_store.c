/* test_event_store.c — the event store (analyzer/base/event_store.h) against a plain table.
 *
 * The same pseudo-random rows (NULLs, extreme values, ids with gaps, negative seed ids, frees
 * far from their allocs and lifetimes ended twice) go into the store, in chunks of uneven
 * sizes with the alloc_event_id index spilled in many runs, and into a plain table with the
 * index schema.sql gives it. Every query below must answer the same on both, row for row and
 * type for type: the virtual table stands in for the plain table in every query memanalyze
 * and its users run. Then the chunk codec on its own, an empty store and a damaged one. */
#include "check.h"

#include "event_scan.h"
#include "event_store.h"
#include "event_store_chunk.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROWS (3 * EVENT_STORE_CHUNK_ROWS + 123)

static int64_t rows[ROWS][EVENT_STORE_NCOLS];
static uint64_t rng = 88172645463325252ull;

static uint64_t next_random(void) { return check_random(&rng); }

static void make_rows(void) {
    int64_t id = -5; /* seed rows first, as the replay writes them */
    for (int i = 0; i < ROWS; i++) {
        id += 1 + (next_random() % 8 == 0 ? (int64_t)(next_random() % 5) : 0);
        int64_t *r = rows[i];
        for (int c = 0; c < EVENT_STORE_NCOLS; c++)
            r[c] = (int64_t)(next_random() % 1000);
        r[EVENT_COL_event_id] = id;
        r[EVENT_COL_ts_ns] = i * 1000 + (int64_t)(next_random() % 999);
        r[EVENT_COL_device] = (int64_t)(next_random() % 3);
        r[EVENT_COL_op] = (int64_t)(next_random() % 13);
        r[EVENT_COL_addr] = (int64_t)next_random(); /* any 64 bits but INT64_MIN */
        if (r[EVENT_COL_addr] == EVENT_STORE_NULL)
            r[EVENT_COL_addr] = 0;
        if (i % 97 == 0)
            r[EVENT_COL_size] = INT64_MAX;
        if (i % 89 == 0)
            r[EVENT_COL_size] = INT64_MIN + 1;
        if (next_random() % 3 == 0)
            r[EVENT_COL_requested_size] = EVENT_STORE_NULL;
        r[EVENT_COL_largest_free_bytes] = EVENT_STORE_NULL; /* a column all NULL */
        if (i > 10 && next_random() % 2 == 0) { /* a free: of a recent alloc, or a far one */
            int back = next_random() % 10 == 0 ? (int)(next_random() % (unsigned)i) + 1
                                               : (int)(next_random() % 10) + 1;
            r[EVENT_COL_alloc_event_id] = rows[i - back][EVENT_COL_event_id];
        } else {
            r[EVENT_COL_alloc_event_id] = EVENT_STORE_NULL;
        }
        if (i % 500 == 7) /* ended twice (free_requested, then free) */
            r[EVENT_COL_alloc_event_id] = rows[5][EVENT_COL_event_id];
    }
}

static const char plain_sql[] =
    "CREATE TABLE %s (event_id INTEGER PRIMARY KEY, ts_ns INTEGER NOT NULL, device INTEGER,"
    " op INTEGER, level INTEGER, kind INTEGER, source INTEGER, addr INTEGER, size INTEGER,"
    " requested_size INTEGER, stream INTEGER, pool INTEGER, tid INTEGER, stack_id INTEGER,"
    " segment_id INTEGER, alloc_event_id INTEGER, allocated_bytes INTEGER, requested_bytes"
    " INTEGER, reserved_bytes INTEGER, segments INTEGER, largest_free_bytes INTEGER);"
    "CREATE INDEX %s_alloc ON %s (alloc_event_id) WHERE alloc_event_id IS NOT NULL;";

/* The rows into a plain table of that name. */
static void fill_plain(sqlite3 *db, const char *table) {
    char sql[2048];
    snprintf(sql, sizeof sql, plain_sql, table, table, table);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_stmt *st;
    snprintf(sql, sizeof sql, "INSERT INTO %s VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
             table);
    CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
    for (int i = 0; i < ROWS; i++) {
        for (int c = 0; c < EVENT_STORE_NCOLS; c++)
            if (rows[i][c] == EVENT_STORE_NULL)
                sqlite3_bind_null(st, c + 1);
            else
                sqlite3_bind_int64(st, c + 1, rows[i][c]);
        CHECK(sqlite3_step(st) == SQLITE_DONE);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
}

/* The store, in chunks of uneven sizes, with the index in runs of 1,000 pairs. */
static void fill_store(sqlite3 *db) {
    char err[256];
    CHECK(sqlite3_exec(db, event_store_schema_sql, NULL, NULL, NULL) == SQLITE_OK);
    event_store_writer *w = event_store_writer_new(db, 1, err, sizeof err);
    CHECK(w != NULL);
    event_store_writer_set_run_pairs(w, 1000);
    static const size_t sizes[] = {EVENT_STORE_CHUNK_ROWS, 1, 4000, EVENT_STORE_CHUNK_ROWS, 17};
    size_t at = 0;
    for (int k = 0; at < ROWS; k++) {
        size_t n = sizes[k % 5] < ROWS - at ? sizes[k % 5] : ROWS - at;
        CHECK(event_store_write_chunk(w, (const int64_t(*)[EVENT_STORE_NCOLS])rows[at], n, err,
                                      sizeof err) == 0);
        at += n;
    }
    CHECK(event_store_writer_finish(w, err, sizeof err) == 0);
}

/* Every row of a query as text, types included. */
static char *answer(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
        return strdup("(error)");
    }
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            if (cap - len < 128)
                out = realloc(out, cap *= 2);
            int type = sqlite3_column_type(st, c);
            len += (size_t)snprintf(out + len, cap - len, "%d:%s|", type,
                                    type == SQLITE_NULL ? ""
                                                        : (const char *)sqlite3_column_text(st, c));
        }
        out[len++] = '\n';
    }
    out[len] = 0;
    if (rc != SQLITE_DONE)
        fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return out;
}

static void same_answer(sqlite3 *db, const char *query) {
    char store_sql[1024], plain_sql_text[1024];
    /* {T} is the table: event_rows (the store) or plain. */
    const char *p = query;
    size_t a = 0, b = 0;
    while (*p) {
        if (!strncmp(p, "{T}", 3)) {
            a += (size_t)snprintf(store_sql + a, sizeof store_sql - a, "event_rows");
            b += (size_t)snprintf(plain_sql_text + b, sizeof plain_sql_text - b, "plain");
            p += 3;
        } else {
            store_sql[a++] = *p;
            plain_sql_text[b++] = *p++;
        }
    }
    store_sql[a] = plain_sql_text[b] = 0;
    char *x = answer(db, store_sql), *y = answer(db, plain_sql_text);
    if (strcmp(x, y) != 0) {
        fprintf(stderr, "differs: %s\n  store: %.300s\n  plain: %.300s\n", query, x, y);
        check_failures++;
    }
    CHECK(strcmp(x, "(error)") != 0);
    free(x);
    free(y);
}

static const char *const queries[] = {
    "SELECT count(*), sum(ts_ns), total(addr), total(size), count(requested_size) FROM {T}",
    "SELECT * FROM {T}",
    "SELECT * FROM {T} ORDER BY event_id",
    "SELECT event_id, typeof(addr), typeof(largest_free_bytes), requested_size FROM {T}"
    " WHERE event_id BETWEEN 100 AND 5000",
    "SELECT event_id, op FROM {T} WHERE event_id > 4095 AND event_id <= 8193",
    "SELECT event_id FROM {T} WHERE event_id >= 2.5 AND event_id < 77.5",
    "SELECT event_id FROM {T} WHERE event_id < -1",
    "SELECT count(*) FROM {T} WHERE event_id > '100'",
    "SELECT count(*) FROM {T} WHERE event_id > NULL",
    "SELECT * FROM {T} WHERE event_id = 4096",
    "SELECT event_id, size FROM {T} WHERE event_id = 5.0",
    "SELECT event_id FROM {T} WHERE event_id = 5.5",
    "SELECT event_id FROM {T} WHERE event_id = NULL",
    "SELECT event_id FROM {T} WHERE event_id = '17'",
    "SELECT event_id, ts_ns FROM {T} WHERE event_id IN (1, 4096, 99999, -3, 8000)",
    "SELECT event_id FROM {T} WHERE rowid BETWEEN 10 AND 20",
    "SELECT event_id, rowid FROM {T} WHERE event_id > 12000",
    "SELECT event_id, op FROM {T} WHERE alloc_event_id = 50",
    "SELECT event_id FROM {T} WHERE alloc_event_id = (SELECT event_id FROM {T} LIMIT 1 OFFSET 5)",
    "SELECT event_id FROM {T} WHERE alloc_event_id = -1000000",
    "SELECT event_id FROM {T} WHERE alloc_event_id IS NULL AND op = 3",
    "SELECT a.event_id, f.event_id, f.ts_ns FROM {T} a LEFT JOIN {T} f ON f.alloc_event_id ="
    " a.event_id AND f.op IN (1, 4) ORDER BY a.event_id, f.event_id",
    "SELECT f.event_id, a.size, a.addr FROM {T} f JOIN {T} a ON a.event_id = f.alloc_event_id"
    " ORDER BY f.event_id",
    "SELECT event_id FROM {T} ORDER BY event_id DESC LIMIT 10",
    "SELECT event_id, size FROM {T} ORDER BY event_id DESC",
    "SELECT event_id FROM {T} WHERE event_id <= 8000 AND event_id > 4000 ORDER BY event_id DESC",
    "SELECT event_id FROM {T} WHERE event_id <= 4096.5 ORDER BY rowid DESC LIMIT 3",
    "SELECT event_id FROM {T} WHERE event_id < -100 ORDER BY event_id DESC",
    "SELECT event_id FROM {T} WHERE event_id > 1000000 ORDER BY event_id DESC",
    "SELECT e.event_id, (SELECT r.ts_ns FROM {T} r WHERE r.event_id <= e.event_id - 3 AND"
    " r.device = e.device ORDER BY r.event_id DESC LIMIT 1) FROM {T} e WHERE e.event_id % 50 = 0",
    "SELECT event_id, addr FROM {T} WHERE device = 1 AND op = 0 ORDER BY event_id",
    "SELECT max(event_id), min(event_id), max(size), min(size) FROM {T}",
    "SELECT device, count(*), sum(allocated_bytes) FROM {T} GROUP BY device",
    "SELECT (SELECT count(*) FROM {T} f WHERE f.alloc_event_id = e.event_id) AS n, count(*)"
    " FROM {T} e WHERE e.event_id < 3000 GROUP BY n",
    /* several bounds on each side: the tightest of each wins, whatever their order */
    "SELECT event_id FROM {T} WHERE event_id > 0 AND event_id BETWEEN 9000 AND 9100",
    "SELECT event_id FROM {T} WHERE event_id >= 9000 AND event_id > 10 AND event_id < 99999"
    " AND event_id <= 9050 AND event_id >= 12",
    "SELECT event_id FROM {T} WHERE event_id > 4000 AND event_id > 9000.5 AND event_id < 9010",
    "SELECT event_id FROM {T} WHERE event_id > NULL AND event_id > 9000 AND event_id < 9010",
    "SELECT event_id FROM {T} WHERE event_id > '9000' AND event_id > 8990 AND event_id < 9010",
    "SELECT event_id FROM {T} WHERE event_id > 9000 AND event_id > 100 AND event_id < 9000",
    "SELECT event_id FROM {T} WHERE event_id > 5 AND event_id > 6 AND event_id > 7 AND"
    " event_id > 8990 AND event_id < 9005 ORDER BY event_id DESC",
    "SELECT max(e.event_id) FROM {T} AS e WHERE e.event_id > 0 AND e.ts_ns <= 1 << 40 AND"
    " e.event_id BETWEEN (SELECT min(event_id) + 9000 FROM {T}) AND (SELECT 9100)",
};

/* Several bounds on event_id read only the chunks between the tightest (when.c's time lookup
 * gives `event_id > 0 AND event_id BETWEEN ?1 AND ?2`: the first bound alone scanned from the
 * start, 0.6 s at 100 M events). */
static void check_tightest_bounds(const char *path) {
    static const char *const narrow[] = {
        "SELECT max(event_id) FROM event_rows WHERE event_id > 0 AND event_id BETWEEN 12000 AND "
        "12100",
        "SELECT count(*) FROM event_rows WHERE event_id < 99999 AND event_id > 1 AND event_id <= "
        "12100 AND event_id > 12000",
        "SELECT event_id FROM event_rows WHERE event_id > 2 AND event_id <= 12100 AND event_id >"
        " 12000 ORDER BY event_id DESC LIMIT 3",
    };
    for (size_t i = 0; i < sizeof narrow / sizeof narrow[0]; i++) {
        sqlite3 *db; /* its own: no chunk decoded for an earlier query is cached */
        CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
        uint64_t before = event_store_chunks_unpacked();
        free(answer(db, narrow[i]));
        uint64_t chunks = event_store_chunks_unpacked() - before;
        sqlite3_close(db);
        if (chunks > 1) {
            fprintf(stderr, "%s: %llu chunks decoded, want 1\n", narrow[i],
                    (unsigned long long)chunks);
            check_failures++;
        }
    }
}

/* event_scan over [first, last] of a database: every value of the columns asked for, as text. */
static char *scanned(sqlite3 *db, uint32_t columns, int64_t first, int64_t last) {
    char err[256];
    event_scan *s = event_scan_open(db, columns, first, last, err, sizeof err);
    CHECK(s != NULL);
    if (!s)
        return strdup("(error)");
    size_t cap = 1 << 20, len = 0;
    char *out = malloc(cap);
    const int64_t *col[EVENT_STORE_NCOLS];
    long n;
    while ((n = event_scan_next(s, col)) > 0)
        for (long i = 0; i < n; i++)
            for (int c = 0; c < EVENT_STORE_NCOLS; c++)
                if (columns & (1u << c)) {
                    if (cap - len < 32)
                        out = realloc(out, cap *= 2);
                    len += (size_t)snprintf(out + len, cap - len, "%lld%c", (long long)col[c][i],
                                            c == EVENT_STORE_NCOLS - 1 ? '\n' : ' ');
                }
    CHECK(n == 0);
    out[len] = 0;
    event_scan_close(s);
    return out;
}

/* The ids and sizes event_scan gives over [first, last], backward or not, in the order read. */
static size_t scan_ids(sqlite3 *db, int backward, int64_t first, int64_t last, int64_t *ids,
                       int64_t *sizes, size_t cap) {
    char err[256];
    uint32_t mask = EVENT_SCAN_COLUMN(size);
    event_scan *s = backward ? event_scan_open_backward(db, mask, first, last, err, sizeof err)
                             : event_scan_open(db, mask, first, last, err, sizeof err);
    CHECK(s != NULL);
    size_t n = 0;
    const int64_t *col[EVENT_STORE_NCOLS];
    long got;
    while (s && (got = event_scan_next(s, col)) > 0)
        for (long k = 0; k < got; k++) {
            long i = backward ? got - 1 - k : k; /* a backward batch is read from its end */
            if (n < cap) {
                ids[n] = col[EVENT_COL_event_id][i];
                sizes[n] = col[EVENT_COL_size][i];
            }
            n++;
        }
    event_scan_close(s);
    return n;
}

/* Backward is forward reversed, on the store and on a plain table. */
static void check_backward(sqlite3 *db, int64_t first, int64_t last) {
    static int64_t a[ROWS], as[ROWS], b[ROWS], bs[ROWS];
    size_t n = scan_ids(db, 0, first, last, a, as, ROWS);
    size_t m = scan_ids(db, 1, first, last, b, bs, ROWS);
    CHECK_EQ_U64(n, m);
    for (size_t i = 0; i < n && i < m; i++)
        if (a[i] != b[n - 1 - i] || as[i] != bs[n - 1 - i]) {
            fprintf(stderr, "backward scan of [%lld, %lld] differs at %zu\n", (long long)first,
                    (long long)last, i);
            check_failures++;
            break;
        }
}

/* The scan reads the same from the store (decoding chunks) and from a plain table (SQL), and
 * what a query of the same range gives. */
static void check_scan(const char *store_path) {
    sqlite3 *store, *plain;
    CHECK(sqlite3_open_v2(store_path, &store, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(sqlite3_open(":memory:", &plain) == SQLITE_OK);
    fill_plain(plain, "event_rows");
    static const int64_t ranges[][2] = {
        {INT64_MIN, INT64_MAX}, {100, 5000}, {4096, 4096}, {-3, 8200}, {50, 40},
        {13000, INT64_MAX}};
    static const uint32_t masks[] = {(1u << EVENT_STORE_NCOLS) - 1,
                                     EVENT_SCAN_COLUMN(op) | EVENT_SCAN_COLUMN(size) |
                                         EVENT_SCAN_COLUMN(largest_free_bytes),
                                     EVENT_SCAN_COLUMN(event_id)};
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++)
        for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
            char *x = scanned(store, masks[m], ranges[r][0], ranges[r][1]);
            char *y = scanned(plain, masks[m], ranges[r][0], ranges[r][1]);
            if (strcmp(x, y) != 0) {
                fprintf(stderr, "scan of [%lld, %lld] differs\n", (long long)ranges[r][0],
                        (long long)ranges[r][1]);
                check_failures++;
            }
            free(x);
            free(y);
        }
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
        check_backward(store, ranges[r][0], ranges[r][1]);
        check_backward(plain, ranges[r][0], ranges[r][1]);
    }
    char *all = scanned(store, EVENT_SCAN_COLUMN(event_id), 100, 5000);
    size_t lines = 0;
    for (char *p = all; *p; p++)
        lines += *p == ' ' || *p == '\n';
    char *n = answer(store, "SELECT count(*) FROM event_rows WHERE event_id BETWEEN 100 AND 5000");
    char want[32];
    snprintf(want, sizeof want, "1:%zu|\n", lines);
    CHECK_STR_EQ(n, want);
    CHECK(lines > 3000); /* ids advance by 1.25 on average */
    free(all);
    free(n);
    sqlite3_close(store);
    sqlite3_close(plain);
}

/* A store in an attached database answers from its own tables, not main's. */
static void check_attached(const char *main_path) {
    char other[] = "/tmp/test_event_store_b_XXXXXX", err[256];
    int fd = mkstemp(other);
    CHECK(fd >= 0);
    close(fd);
    sqlite3 *db;
    CHECK(sqlite3_open(other, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, event_store_schema_sql, NULL, NULL, NULL) == SQLITE_OK);
    event_store_writer *w = event_store_writer_new(db, 1, err, sizeof err);
    CHECK(w && event_store_write_chunk(w, (const int64_t(*)[EVENT_STORE_NCOLS])rows[9000], 50, err,
                                       sizeof err) == 0);
    CHECK(w && event_store_writer_finish(w, err, sizeof err) == 0);
    sqlite3_close(db);
    CHECK(sqlite3_open(main_path, &db) == SQLITE_OK);
    char sql[256];
    snprintf(sql, sizeof sql, "ATTACH '%s' AS b", other);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    char want[64];
    snprintf(want, sizeof want, "1:50|1:%lld|\n", (long long)rows[9000][EVENT_COL_event_id]);
    char *x = answer(db, "SELECT count(*), min(event_id) FROM b.event_rows");
    CHECK_STR_EQ(x, want);
    free(x);
    snprintf(want, sizeof want, "1:%d|\n", ROWS);
    x = answer(db, "SELECT count(*) FROM main.event_rows");
    CHECK_STR_EQ(x, want);
    free(x);
    sqlite3_close(db);
    unlink(other);
}

/* The table without its store, or with a chunk whose size is absurd: an error that says so,
 * each time it is asked (nothing half-loaded stays behind), and no table named after the
 * module itself. */
static void check_broken_stores(void) {
    sqlite3 *db;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE VIRTUAL TABLE event_rows USING gmt_event_rows", NULL, NULL,
                       NULL) == SQLITE_OK);
    for (int twice = 0; twice < 2; twice++) {
        char *msg = NULL;
        CHECK(sqlite3_exec(db, "SELECT count(*) FROM event_rows", NULL, NULL, &msg) != SQLITE_OK);
        CHECK(msg && strstr(msg, "no event store"));
        sqlite3_free(msg);
    }
    char *msg = NULL;
    CHECK(sqlite3_exec(db, "SELECT * FROM gmt_event_rows", NULL, NULL, &msg) != SQLITE_OK);
    sqlite3_free(msg);
    sqlite3_close(db);

    char err[256];
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, event_store_schema_sql, NULL, NULL, NULL) == SQLITE_OK);
    event_store_writer *w = event_store_writer_new(db, 1, err, sizeof err);
    CHECK(w && event_store_write_chunk(w, (const int64_t(*)[EVENT_STORE_NCOLS])rows[0], 100, err,
                                       sizeof err) == 0);
    CHECK(w && event_store_writer_finish(w, err, sizeof err) == 0);
    CHECK(sqlite3_exec(db, "UPDATE event_chunks SET raw_bytes = 1000000000000", NULL, NULL, NULL) ==
          SQLITE_OK);
    CHECK(sqlite3_exec(db, "SELECT sum(size) FROM event_rows", NULL, NULL, &msg) != SQLITE_OK);
    CHECK(msg && strstr(msg, "damaged"));
    sqlite3_free(msg);
    const int64_t *col[EVENT_STORE_NCOLS];
    event_scan *s =
        event_scan_open(db, EVENT_SCAN_COLUMN(size), INT64_MIN, INT64_MAX, err, sizeof err);
    CHECK(s && event_scan_next(s, col) == -1 && strstr(event_scan_error(s), "damaged"));
    event_scan_close(s);
    sqlite3_close(db);
}

static void check_codec(void) {
    /* One chunk's round trip, column by column. */
    static uint8_t buf[1 << 22];
    size_t n = EVENT_STORE_CHUNK_ROWS;
    CHECK(chunk_encoded_bound(n) <= sizeof buf);
    size_t len = chunk_encode((const int64_t(*)[EVENT_STORE_NCOLS])rows, n, buf);
    chunk_columns cols;
    CHECK(chunk_parse(buf, len, &cols) == 0);
    CHECK_EQ_U64(cols.rows, n);
    static int64_t out[EVENT_STORE_CHUNK_ROWS];
    for (int c = 0; c < EVENT_STORE_NCOLS; c++) {
        CHECK(chunk_decode_column(&cols, c, out) == 0);
        for (size_t i = 0; i < n; i++)
            if (out[i] != rows[i][c]) {
                fprintf(stderr, "column %s row %zu: %lld vs %lld\n", event_store_column_names[c], i,
                        (long long)out[i], (long long)rows[i][c]);
                check_failures++;
                break;
            }
    }
    /* Cut anywhere, it is refused or decodes to something else, never read past its end. */
    for (size_t cut = 0; cut < len; cut += 97) {
        if (chunk_parse(buf, cut, &cols) != 0)
            continue;
        for (int c = 0; c < EVENT_STORE_NCOLS; c++)
            (void)chunk_decode_column(&cols, c, out);
    }
    /* The index's parts. */
    store_end_pair pairs[5] = {{-7, -2}, {3, 9}, {3, 12}, {INT64_MAX - 1, INT64_MAX}, {0, 0}};
    pairs[4] = (store_end_pair){INT64_MAX, INT64_MIN + 1};
    static store_end_pair back[STORE_END_PART_PAIRS];
    len = ends_encode(pairs, 5, buf);
    CHECK(ends_decode(buf, len, back) == 5);
    CHECK(memcmp(pairs, back, sizeof pairs) == 0);
    CHECK(ends_decode(buf, len - 1, back) == -1);
}

int main(void) {
    make_rows();
    check_codec();
    CHECK(event_store_register() == SQLITE_OK);
    sqlite3 *db;
    char path[] = "/tmp/test_event_store_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK);
    fill_store(db);
    fill_plain(db, "plain");
    CHECK(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);

    /* A fresh connection, as memanalyze reads a cached database. */
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++)
        same_answer(db, queries[i]);
    CHECK(sqlite3_exec(db, "INSERT INTO event_rows (event_id, ts_ns) VALUES (1, 1)", NULL, NULL,
                       NULL) != SQLITE_OK); /* read-only, as the schema is an interface */
    sqlite3_close(db);
    check_scan(path);
    check_tightest_bounds(path);

    check_attached(path);
    check_broken_stores();

    /* A damaged chunk: a one-line error, no crash. */
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "UPDATE event_chunks SET data = x'28b52ffd00' WHERE chunk = 1", NULL,
                       NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    char *msg = NULL;
    CHECK(sqlite3_exec(db, "SELECT count(*) FROM event_rows", NULL, NULL, &msg) != SQLITE_OK);
    CHECK(msg && strstr(msg, "damaged"));
    sqlite3_free(msg);
    sqlite3_close(db);

    /* An empty store. */
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, event_store_schema_sql, NULL, NULL, NULL) == SQLITE_OK);
    char err[256];
    event_store_writer *w = event_store_writer_new(db, 1, err, sizeof err);
    CHECK(w && event_store_writer_finish(w, err, sizeof err) == 0);
    char *x = answer(db, "SELECT count(*), max(event_id) FROM event_rows");
    CHECK_STR_EQ(x, "1:0|5:|\n");
    free(x);
    x = answer(db, "SELECT * FROM event_rows WHERE event_id = 1 OR alloc_event_id = 2");
    CHECK_STR_EQ(x, "");
    free(x);
    sqlite3_close(db);
    unlink(path);
    return check_finish("test_event_store");
}
