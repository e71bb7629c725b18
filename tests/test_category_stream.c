/* test_category_stream.c — query/category_stream.h against known answers, on a database of
 * block_categories alone (in memory): the seed's blocks (alloc_id <= 0) live when a pass from 1
 * begins; each alloc gets its row's category, one the table lacks "unknown", rows of allocs
 * the pass never asks for (another device's) skipped; the end of a block gives its category and
 * size and forgets it, so what is held is the live blocks only (10,000 blocks allocated and
 * freed one after another leave one held at a time); a second pass starts afresh; a table
 * whose every row is unknown gives no stream. (The sweep's map, for a database without the
 * table, is test_export_perfetto.sh's.) */
#include "category_stream.h"
#include "check.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

static sqlite3 *make_db(const char *rows, int stored) {
    sqlite3 *db = NULL;
    char sql[4096];
    snprintf(sql, sizeof sql,
             "CREATE TABLE meta (key TEXT PRIMARY KEY, value);"
             "CREATE TABLE block_categories (alloc_id INTEGER PRIMARY KEY, category TEXT);"
             "%s %s",
             stored ? "INSERT INTO meta VALUES ('categories_blocks', 1);" : "", rows);
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    return db;
}

static const char *name_of(gmt_category c) { return gmt_category_name(c); }

static void test_pass(void) {
    sqlite3 *db = make_db("INSERT INTO block_categories VALUES (-1, 'parameter'), (0, 'other'),"
                          " (3, 'activation'), (5, 'gradient'), (6, 'temporary'),"
                          " (9, 'optimizer_state');",
                          1);
    category_stream *s = NULL;
    char err[256] = "";
    CHECK(category_stream_open(db, &s, err, sizeof err) == 0);
    CHECK(s != NULL);
    if (!s) {
        sqlite3_close(db);
        return;
    }
    CHECK(category_stream_bounded(s));
    CHECK(category_stream_begin(s, 1, err, sizeof err) == 0);
    CHECK_EQ_U64(category_stream_live_count(s), 2); /* the seed's */
    gmt_category c;
    int64_t size = -1;
    CHECK(category_stream_live(s, -1, &c, &size) == 1);
    CHECK_STR_EQ(name_of(c), "parameter");
    CHECK_EQ_U64(size, 0);
    CHECK(category_stream_alloc(s, 2, 100, &c, err, sizeof err) == 0); /* not in the table */
    CHECK_STR_EQ(name_of(c), "unknown");
    CHECK(category_stream_alloc(s, 5, 500, &c, err, sizeof err) == 0); /* 3: another device's */
    CHECK_STR_EQ(name_of(c), "gradient");
    CHECK(category_stream_alloc(s, 6, 600, &c, err, sizeof err) == 0);
    CHECK_STR_EQ(name_of(c), "temporary");
    CHECK_EQ_U64(category_stream_live_count(s), 5);
    CHECK(category_stream_end(s, 5, &c, &size) == 1);
    CHECK_STR_EQ(name_of(c), "gradient");
    CHECK_EQ_U64(size, 500);
    CHECK(category_stream_end(s, 5, &c, &size) == 0); /* forgotten */
    CHECK_STR_EQ(name_of(c), "unknown");
    CHECK(category_stream_end(s, 0, &c, NULL) == 1); /* a seeded block ends */
    CHECK_STR_EQ(name_of(c), "other");
    CHECK(category_stream_alloc(s, 9, 900, &c, err, sizeof err) == 0);
    CHECK_STR_EQ(name_of(c), "optimizer_state");
    CHECK(category_stream_alloc(s, 12, 1, &c, err, sizeof err) == 0); /* past the last row */
    CHECK_STR_EQ(name_of(c), "unknown");
    CHECK_EQ_U64(category_stream_live_count(s), 5); /* -1, 2, 6, 9, 12 */
    /* a second pass, from the start: only the seed's again */
    CHECK(category_stream_begin(s, 1, err, sizeof err) == 0);
    CHECK_EQ_U64(category_stream_live_count(s), 2);
    CHECK(category_stream_live(s, 6, &c, NULL) == 0);
    CHECK(category_stream_alloc(s, 3, 300, &c, err, sizeof err) == 0);
    CHECK_STR_EQ(name_of(c), "activation");
    /* a pass from the seed's first id: the seed's blocks come as allocs, none live before */
    CHECK(category_stream_begin(s, -1, err, sizeof err) == 0);
    CHECK_EQ_U64(category_stream_live_count(s), 0);
    CHECK(category_stream_alloc(s, -1, 10, &c, err, sizeof err) == 0);
    CHECK_STR_EQ(name_of(c), "parameter");
    category_stream_close(s);
    sqlite3_close(db);
}

/* 10,000 blocks, each freed before the next: one held at a time, every category right. */
static void test_bounded(void) {
    sqlite3 *db = make_db("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE"
                          " i < 10000) INSERT INTO block_categories SELECT i, CASE i % 3 WHEN 0"
                          " THEN 'activation' WHEN 1 THEN 'temporary' ELSE 'input' END FROM n;",
                          1);
    category_stream *s = NULL;
    char err[256] = "";
    CHECK(category_stream_open(db, &s, err, sizeof err) == 0 && s);
    if (!s) {
        sqlite3_close(db);
        return;
    }
    CHECK(category_stream_begin(s, 1, err, sizeof err) == 0);
    static const char *want[3] = {"activation", "temporary", "input"};
    size_t most = 0, wrong = 0;
    int64_t sum = 0;
    for (int64_t i = 1; i <= 10000; i++) {
        gmt_category c, e;
        int64_t size = 0;
        CHECK(category_stream_alloc(s, i, i, &c, err, sizeof err) == 0);
        if (category_stream_live_count(s) > most)
            most = category_stream_live_count(s);
        wrong += strcmp(name_of(c), want[i % 3]) != 0;
        wrong += category_stream_end(s, i, &e, &size) != 1 || e != c;
        sum += size;
    }
    CHECK_EQ_U64(wrong, 0);
    CHECK_EQ_U64(most, 1);
    CHECK_EQ_U64(sum, 10000 * 10001 / 2);
    CHECK_EQ_U64(category_stream_live_count(s), 0);
    category_stream_close(s);
    sqlite3_close(db);
}

static void test_none_known(void) {
    sqlite3 *db = make_db("INSERT INTO block_categories VALUES (1, 'unknown'), (2, 'unknown');", 1);
    category_stream *s = (category_stream *)1;
    char err[256] = "";
    CHECK(category_stream_open(db, &s, err, sizeof err) == 0);
    CHECK(s == NULL); /* every block unknown: no categories at all */
    sqlite3_close(db);
}

int main(void) {
    test_pass();
    test_bounded();
    test_none_known();
    return check_finish("test_category_stream");
}
