/* test_btree_write.c — pages written by analyzer/base/btree_write.c against SQLite's own.
 *
 * Two tables of the same shape, `ref` filled by SQLite's INSERTs and `t` written page by page by
 * btree_write (each in a database of its own), each with a partial index like event_rows'
 * alloc_event_id index. SQLite must then find the file sound (PRAGMA integrity_check, which checks
 * every page, cell, key order, the free space and that every index entry matches its row) and both
 * tables must hold the same rows, value for value and type for type, through the table and through
 * the index. Page sizes from 512 bytes (trees of four levels from a few thousand rows) to 65536
 * (what import -o uses); every row count from 0 to a few hundred, so each way a leaf or an interior
 * page can end is met (a full leaf, a divider with nothing after it, a last page of one child);
 * values at every width SQLite stores; SQLite's lock-byte page moved low
 * (SQLITE_TESTCTRL_PENDING_BYTE) so the trees cross it. Then the refusals. */
#include "check.h"
#include "check_sqlite.h"

#include "btree_write.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COLS 5 /* id INTEGER PRIMARY KEY, a NOT NULL, b (indexed), c, d */
#define LOW_PENDING_BYTE 0x40000u

static char dir[] = "/tmp/test_btree_write_XXXXXX";
static uint64_t pending_byte = 0x40000000u;

static const int64_t widths[] = {0,
                                 1,
                                 -1,
                                 2,
                                 127,
                                 128,
                                 -128,
                                 -129,
                                 32767,
                                 32768,
                                 -32768,
                                 -32769,
                                 8388607,
                                 8388608,
                                 -8388608,
                                 -8388609,
                                 2147483647,
                                 2147483648LL,
                                 -2147483648LL,
                                 -2147483649LL,
                                 140737488355327LL,
                                 140737488355328LL,
                                 -140737488355328LL,
                                 -140737488355329LL,
                                 INT64_MAX,
                                 INT64_MIN + 1};

static uint64_t rng;

static uint64_t next_random(void) { return check_random(&rng); }

static int64_t random_value(int nullable) {
    uint64_t r = next_random() % 10;
    if (nullable && r < 2)
        return BTREE_NULL;
    if (r < 5)
        return widths[next_random() % (sizeof widths / sizeof widths[0])];
    if (r < 8)
        return (int64_t)(next_random() % 2000) - 1000;
    return (int64_t)next_random();
}

/* Row i of a database: the same for every row count (the rows of n are a prefix of n+1's), so
 * sweeping n meets every way the last page can end. monotone: b grows with the row, so the
 * index keys are a prefix too. */
static void make_rows(int64_t (*rows)[COLS], int n, int monotone) {
    rng = 0x9E3779B97F4A7C15ull;
    int64_t id = -40;
    for (int i = 0; i < n; i++) {
        id += 1 + (next_random() % 6 == 0 ? (int64_t)(next_random() % 1000) : 0);
        if (i == n / 2 && n > 10)
            id += (int64_t)1 << 40; /* a rowid of 6 bytes in the middle */
        rows[i][0] = id;
        rows[i][1] = random_value(0);
        rows[i][2] = monotone ? (next_random() % 4 == 0 ? BTREE_NULL : i / 3) : random_value(1);
        rows[i][3] = random_value(1);
        rows[i][4] = random_value(1);
    }
}

static uint32_t root_of(sqlite3 *db, const char *name) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT rootpage FROM sqlite_schema WHERE name = '%s'", name);
    return (uint32_t)check_query_int(db, sql);
}

/* SQLite's verdict on the main database: 1 when sound, else the failure is counted and shown. */
static int sound(sqlite3 *db, const char *what) {
    char *integrity = check_query_text(db, "PRAGMA main.integrity_check");
    int ok = integrity && strcmp(integrity, "ok") == 0;
    if (!ok) {
        fprintf(stderr, "%s: integrity_check: %s\n", what, integrity ? integrity : "(none)");
        check_failures++;
    }
    free(integrity);
    return ok;
}

/* Makes the databases: ref (filled by SQLite) in ref_path, then t (by btree_write) in path. ref
 * has a file of its own so that t's pages begin low and cross the lock-byte page. */
static int build(const char *path, const char *ref_path, int page_size, int64_t (*rows)[COLS],
                 int n) {
    static const char *const shape = " (id INTEGER PRIMARY KEY, a INTEGER NOT NULL, b INTEGER,"
                                     " c INTEGER, d INTEGER);";
    unlink(path);
    unlink(ref_path);
    sqlite3 *db;
    char sql[512];
    sqlite3_open(ref_path, &db);
    snprintf(sql, sizeof sql,
             "PRAGMA page_size=%d; PRAGMA synchronous=OFF; PRAGMA journal_mode=OFF;"
             "CREATE TABLE ref%s CREATE INDEX ref_b ON ref (b) WHERE b IS NOT NULL; BEGIN",
             page_size, shape);
    check_exec(db, sql);
    sqlite3_stmt *ins;
    sqlite3_prepare_v2(db, "INSERT INTO ref VALUES (?,?,?,?,?)", -1, &ins, NULL);
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < COLS; c++)
            if (rows[i][c] == BTREE_NULL)
                sqlite3_bind_null(ins, c + 1);
            else
                sqlite3_bind_int64(ins, c + 1, rows[i][c]);
        CHECK(sqlite3_step(ins) == SQLITE_DONE);
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    check_exec(db, "COMMIT");
    sqlite3_close(db);
    sqlite3_open(path, &db);
    snprintf(sql, sizeof sql,
             "PRAGMA page_size=%d; PRAGMA synchronous=OFF; PRAGMA journal_mode=OFF;"
             "CREATE TABLE t%s CREATE INDEX t_b ON t (b) WHERE b IS NOT NULL;",
             page_size, shape);
    check_exec(db, sql);
    uint32_t t_root = root_of(db, "t"), idx_root = root_of(db, "t_b");
    sqlite3_close(db);

    char err[256] = "";
    btree_file *f = btree_file_open(path, err, sizeof err);
    CHECK(f != NULL);
    if (!f) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    btree_file_set_pending_byte(f, pending_byte);
    btree_table *t = btree_table_begin(f, t_root);
    btree_table_not_null(t, 1u << 1);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = btree_table_add(t, rows[i][0], rows[i], COLS, 0);
    rc |= btree_table_end(t);
    int64_t(*keys)[2] = malloc(((size_t)n + 1) * sizeof *keys);
    int nkeys = 0;
    for (int i = 0; i < n; i++)
        if (rows[i][2] != BTREE_NULL) {
            keys[nkeys][0] = rows[i][2];
            keys[nkeys++][1] = rows[i][0];
        }
    qsort(keys, (size_t)nkeys, sizeof *keys, check_pair_cmp);
    btree_index *x = btree_index_begin(f, idx_root);
    for (int i = 0; i < nkeys && rc == 0; i++)
        rc = btree_index_add(x, keys[i], 2);
    rc |= btree_index_end(x);
    free(keys);
    if (btree_file_close(f, err, sizeof err) != 0 || rc != 0) {
        fprintf(stderr, "%s: %s\n", path, err);
        check_failures++;
        return -1;
    }
    return 0;
}

/* SQLite's verdict on the file, and t against ref. */
static void verify(const char *path, const char *ref_path, int n, const char *what) {
    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    char attach[300];
    snprintf(attach, sizeof attach, "ATTACH '%s' AS r", ref_path);
    check_exec(db, attach);
    if (!sound(db, what)) { /* the comparisons would only repeat it */
        sqlite3_close(db);
        return;
    }
    int64_t count = check_query_int(db, "SELECT count(*) FROM t");
    if (count != n) {
        fprintf(stderr, "%s: %lld rows, not %d\n", what, (long long)count, n);
        check_failures++;
    }
    /* row for row in rowid order, value and type (the hash covers both) */
    static const char *const same[] = {
        "SELECT (SELECT count(*) FROM (SELECT * FROM t EXCEPT SELECT * FROM ref)) +"
        " (SELECT count(*) FROM (SELECT * FROM ref EXCEPT SELECT * FROM t))",
        "SELECT (SELECT group_concat(id || typeof(a) || typeof(b) || typeof(c) || typeof(d), ',')"
        " FROM (SELECT * FROM t ORDER BY id)) IS NOT"
        " (SELECT group_concat(id || typeof(a) || typeof(b) || typeof(c) || typeof(d), ',')"
        " FROM (SELECT * FROM ref ORDER BY id))",
        /* the index, read alone (a covering scan) and to find rows */
        "SELECT (SELECT group_concat(b || ':' || id, ',') FROM t INDEXED BY t_b"
        " WHERE b IS NOT NULL) IS NOT (SELECT group_concat(b || ':' || id, ',') FROM"
        " (SELECT b, id FROM ref WHERE b IS NOT NULL ORDER BY b, id))",
        "SELECT count(*) FROM ref r WHERE r.b IS NOT NULL AND r.id NOT IN"
        " (SELECT id FROM t INDEXED BY t_b WHERE t.b = r.b)",
        /* rowid lookups and ranges through the interior pages */
        "SELECT count(*) FROM ref r WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.id = r.id"
        " AND t.a = r.a AND t.c IS r.c)",
        "SELECT (SELECT count(*) FROM t WHERE id BETWEEN 0 AND 5000) -"
        " (SELECT count(*) FROM ref WHERE id BETWEEN 0 AND 5000)",
        "SELECT (SELECT max(id) FROM t) IS NOT (SELECT max(id) FROM ref)",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        int64_t differ = check_query_int(db, same[i]);
        if (differ != 0) {
            fprintf(stderr, "%s: t and ref differ (%lld): %s\n", what, (long long)differ, same[i]);
            check_failures++;
        }
    }
    /* SQLite can still write the file: a row in the middle, then sound again */
    check_exec(db, "INSERT INTO t VALUES (3, 4, 5, 6, 7) ON CONFLICT DO NOTHING;"
                   "DELETE FROM t WHERE id IN (SELECT id FROM t ORDER BY id LIMIT 2)");
    sound(db, what);
    sqlite3_close(db);
}

static void sweep(int page_size, const int *counts, size_t ncounts, int monotone) {
    int max = 0;
    for (size_t i = 0; i < ncounts; i++)
        max = counts[i] > max ? counts[i] : max;
    int64_t(*rows)[COLS] = malloc(((size_t)max + 1) * sizeof *rows);
    char path[256], ref_path[256], what[128];
    snprintf(path, sizeof path, "%s/t.db", dir);
    snprintf(ref_path, sizeof ref_path, "%s/ref.db", dir);
    for (size_t i = 0; i < ncounts; i++) {
        make_rows(rows, counts[i], monotone);
        snprintf(what, sizeof what, "page %d, %d rows%s", page_size, counts[i],
                 monotone ? ", monotone keys" : "");
        int failures = check_failures;
        if (build(path, ref_path, page_size, rows, counts[i]) == 0)
            verify(path, ref_path, counts[i], what);
        if (check_failures != failures && getenv("KEEP_FAILED")) { /* for a look with sqlite3 */
            fprintf(stderr, "kept %s\n", path);
            exit(1);
        }
    }
    unlink(path);
    unlink(ref_path);
    free(rows);
}

/* ---- text ------------------------------------------------------------------------- */

/* Rows (id, name TEXT NOT NULL, x) with names of every length class: empty, short, long enough
 * that the serial type and the record header take two bytes, multi-byte UTF-8. */
static const char *name_of(int i, char *buf, size_t cap) {
    static const char *const fixed[] = {"", "a", "activations", "optimizer state",
                                        "h\xc3\xa9llo \xe2\x9c\x93"};
    if (i % 7 < 5)
        return fixed[i % 7];
    size_t len = (size_t)(i * 37 % 300);
    if (len >= cap)
        len = cap - 1;
    for (size_t k = 0; k < len; k++)
        buf[k] = (char)('a' + (i + (int)k) % 26);
    buf[len] = 0;
    return buf;
}

/* The table through SQLite's INSERTs (in ref_path) or as pages (in path). */
static void text_table(const char *file, int page_size, int n, int pages) {
    char sql[512], err[256], buf[400];
    unlink(file);
    sqlite3 *db;
    sqlite3_open(file, &db);
    snprintf(sql, sizeof sql,
             "PRAGMA page_size=%d; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
             "CREATE TABLE %s (id INTEGER PRIMARY KEY, name TEXT NOT NULL, x INTEGER)",
             page_size, pages ? "t" : "ref");
    check_exec(db, sql);
    if (!pages) {
        sqlite3_stmt *ins;
        sqlite3_prepare_v2(db, "INSERT INTO ref VALUES (?, ?, ?)", -1, &ins, NULL);
        check_exec(db, "BEGIN");
        for (int i = 0; i < n; i++) {
            sqlite3_bind_int64(ins, 1, 3 * i - 7);
            sqlite3_bind_text(ins, 2, name_of(i, buf, sizeof buf), -1, SQLITE_TRANSIENT);
            if (i % 3)
                sqlite3_bind_int64(ins, 3, widths[i % 26]);
            else
                sqlite3_bind_null(ins, 3);
            CHECK(sqlite3_step(ins) == SQLITE_DONE);
            sqlite3_reset(ins);
        }
        sqlite3_finalize(ins);
        check_exec(db, "COMMIT");
        sqlite3_close(db);
        return;
    }
    uint32_t root = root_of(db, "t");
    sqlite3_close(db);
    btree_file *f = btree_file_open(file, err, sizeof err);
    CHECK(f != NULL);
    if (!f)
        return;
    btree_file_set_pending_byte(f, pending_byte);
    btree_table *t = btree_table_begin(f, root);
    btree_table_not_null(t, 1u << 1);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        int64_t cols[3] = {3 * i - 7, 0, i % 3 ? widths[i % 26] : BTREE_NULL};
        const char *texts[3] = {NULL, name_of(i, buf, sizeof buf), NULL};
        rc = btree_table_add_text(t, cols[0], cols, texts, 3, 0);
    }
    rc |= btree_table_end(t);
    CHECK(btree_file_close(f, err, sizeof err) == 0 && rc == 0);
}

static void text_rows(int page_size, int n) {
    char path[256], ref_path[256], what[64], q[512];
    snprintf(path, sizeof path, "%s/text.db", dir);
    snprintf(ref_path, sizeof ref_path, "%s/text_ref.db", dir);
    snprintf(what, sizeof what, "text rows, page %d, %d rows", page_size, n);
    text_table(ref_path, page_size, n, 0);
    text_table(path, page_size, n, 1);
    sqlite3 *db;
    sqlite3_open(path, &db);
    snprintf(q, sizeof q, "ATTACH '%s' AS r", ref_path);
    check_exec(db, q);
    sound(db, what);
    snprintf(q, sizeof q,
             "SELECT (SELECT count(*) FROM (SELECT * FROM t EXCEPT SELECT * FROM ref)) +"
             " (SELECT count(*) FROM (SELECT * FROM ref EXCEPT SELECT * FROM t)) +"
             " (SELECT count(*) FROM t WHERE typeof(name) <> 'text') +"
             " abs((SELECT count(*) FROM t) - %d)",
             n);
    if (check_query_int(db, q) != 0) {
        fprintf(stderr, "%s: t and ref differ\n", what);
        check_failures++;
    }
    sqlite3_close(db);
    unlink(path);
    unlink(ref_path);
}

/* ---- refusals ------------------------------------------------------------------- */

static void refusals(void) {
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/bad.db", dir);
    FILE *fp = fopen(path, "w");
    fputs("not a database at all, but long enough to have a header of a hundred bytes ......"
          "......................................",
          fp);
    fclose(fp);
    CHECK(btree_file_open(path, err, sizeof err) == NULL);
    CHECK(strstr(err, "not an SQLite database") != NULL);
    CHECK(btree_file_open("/nonexistent/x.db", err, sizeof err) == NULL);
    CHECK(strstr(err, "No such file") != NULL);

    unlink(path);
    sqlite3 *db;
    sqlite3_open(path, &db);
    check_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, a)");
    sqlite3_close(db);
    CHECK(btree_file_open(path, err, sizeof err) == NULL);
    CHECK(strstr(err, "WAL") != NULL);

    unlink(path);
    sqlite3_open(path, &db);
    check_exec(db, "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER NOT NULL, b);"
                   "CREATE INDEX t_b ON t (b)");
    uint32_t root = root_of(db, "t"), idx = root_of(db, "t_b");
    sqlite3_close(db);
    btree_file *f = btree_file_open(path, err, sizeof err);
    CHECK(f != NULL);
    btree_table *t = btree_table_begin(f, root);
    btree_table_not_null(t, 1u << 1);
    int64_t r1[3] = {5, 1, 2}, r2[3] = {5, 1, 2}, r3[3] = {6, BTREE_NULL, 2};
    CHECK(btree_table_add(t, 5, r1, 3, 0) == 0);
    CHECK(btree_table_add(t, 5, r2, 3, 0) == -1);
    CHECK(strstr(btree_file_error(f), "out of order") != NULL);
    CHECK(btree_table_end(t) == -1); /* the error stands */
    btree_file_abort(f);

    f = btree_file_open(path, err, sizeof err);
    t = btree_table_begin(f, root);
    btree_table_not_null(t, 1u << 1);
    CHECK(btree_table_add(t, 6, r3, 3, 0) == -1);
    CHECK(strstr(btree_file_error(f), "NOT NULL") != NULL);
    btree_table_free(t);
    CHECK(btree_file_close(f, err, sizeof err) == -1);
    CHECK(strstr(err, "NOT NULL") != NULL);

    f = btree_file_open(path, err, sizeof err);
    btree_index *x = btree_index_begin(f, idx);
    int64_t k1[2] = {7, 1}, k2[2] = {7, 1}, k3[2] = {BTREE_NULL, 2};
    CHECK(btree_index_add(x, k1, 2) == 0);
    CHECK(btree_index_add(x, k2, 2) == -1);
    CHECK(strstr(btree_file_error(f), "out of order") != NULL);
    btree_index_free(x);
    btree_file_abort(f);
    f = btree_file_open(path, err, sizeof err);
    x = btree_index_begin(f, idx);
    CHECK(btree_index_add(x, k3, 2) == -1);
    btree_index_free(x);
    btree_file_abort(f);

    /* nothing was written: the file is as SQLite left it */
    sqlite3_open(path, &db);
    CHECK(sound(db, "after the refusals"));
    CHECK(check_query_int(db, "SELECT count(*) FROM t") == 0);
    sqlite3_close(db);
    unlink(path);
}

int main(void) {
    /* SQLite's lock-byte page, moved low so that the trees below cross it (a build without
     * test controls answers 0: then it stays at 1 GiB, which no tree here reaches). */
    if (sqlite3_test_control(SQLITE_TESTCTRL_PENDING_BYTE, LOW_PENDING_BYTE) != 0)
        pending_byte = LOW_PENDING_BYTE;
    else
        fprintf(stderr, "note: SQLite without test controls: the lock-byte page is not met\n");
    if (!mkdtemp(dir))
        CHECK_SKIP("cannot create a temporary directory");

    int every[301];
    for (int i = 0; i <= 300; i++)
        every[i] = i;
    sweep(512, every, 301, 1);
    sweep(512, every, 301, 0);
    static const int big[] = {1000, 4000, 9000, 20000};
    sweep(512, big, 4, 0);
    static const int mid[] = {0, 1, 2, 150, 151, 152, 2000, 20000};
    sweep(4096, mid, 8, 0);
    sweep(4096, mid, 8, 1);
    static const int large[] = {0, 1, 1000, 5000, 60000};
    sweep(65536, large, 5, 0);
    for (int n = 0; n <= 40; n++)
        text_rows(512, n);
    text_rows(512, 3000);
    text_rows(65536, 20000);
    refusals();
    rmdir(dir);
    return check_finish("test_btree_write");
}
