/* category_store.c — category_peaks and block_categories (see category_store.h). */
#include "category_store.h"

#include "btree_write.h"
#include "categories.h"
#include "category_levels.h"
#include "db_query.h"
#include "event_store.h"
#include "gmt_clock.h"
#include "gmt_env.h"
#include "gmt_kill_point.h"
#include "sorted_pairs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* block_categories as pages: a pair (alloc_id, visit << CATEGORY_BITS | category) per block, so
 * of two visits of one block the last stays, as INSERT OR REPLACE keeps it. */
#define CATEGORY_BITS 5
_Static_assert(BLOCK_CATEGORY_COUNT <= 1 << CATEGORY_BITS, "a category fits its bits");

/* What the sweep keeps, for every device at once. */
typedef struct store {
    int64_t peak_id[GMT_MAX_DEVICES];         /* devices.peak_allocated_event_id; INT64_MIN: none */
    int64_t (*at_peak)[BLOCK_CATEGORY_COUNT]; /* [device][category] */
    sorted_pairs *pages; /* (alloc_id, category) for block_categories' pages; NULL: peaks only */
    char pages_error[160];
    sqlite3_stmt *named;     /* tensor_peaks */
    category_levels *levels; /* series_levels' category rows; NULL: the database has none */
} store;

static int step_done(sqlite3_stmt *st) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int keep(void *ctx, const classified_block *b) {
    store *s = ctx;
    if (b->device < 0 || b->device >= GMT_MAX_DEVICES)
        return 0;
    int64_t peak = s->peak_id[b->device];
    int at_peak = b->alloc_id <= peak && b->free_event_id > peak;
    if (at_peak)
        s->at_peak[b->device][b->category] += b->size;
    if (s->levels)
        category_levels_add(s->levels, b->device, b->alloc_id, b->free_event_id, b->size,
                            b->category);
    if (at_peak && b->has_name) {
        sqlite3_bind_int64(s->named, 1, b->device);
        sqlite3_bind_int64(s->named, 2, b->alloc_id);
        sqlite3_bind_text(s->named, 3, gmt_category_name(b->category), -1, SQLITE_STATIC);
        if (step_done(s->named) != 0)
            return -1;
    }
    if (!s->pages)
        return 0;
    return sorted_pairs_add(s->pages, b->alloc_id,
                            (int64_t)sorted_pairs_count(s->pages) << CATEGORY_BITS |
                                (int64_t)b->category,
                            s->pages_error, sizeof s->pages_error);
}

/* The devices' peaks (what the sweep compares against) and, after it, category_peaks. */
static int read_peaks(sqlite3 *db, store *s) {
    for (int d = 0; d < GMT_MAX_DEVICES; d++)
        s->peak_id[d] = INT64_MIN;
    sqlite3_stmt *st = db_statement(db, "SELECT device, peak_allocated_event_id FROM devices");
    int failed = 0;
    while (st && db_next_row(st, &failed)) {
        int64_t d = sqlite3_column_int64(st, 0);
        if (d >= 0 && d < GMT_MAX_DEVICES)
            s->peak_id[d] = db_column_i64(st, 1, INT64_MIN);
    }
    sqlite3_finalize(st);
    return st && !failed ? 0 : -1;
}

static int write_peaks(sqlite3 *db, const store *s) {
    sqlite3_stmt *st = db_statement(db, "INSERT OR REPLACE INTO category_peaks (device, "
                                        "category, bytes) VALUES (?1, ?2, ?3)");
    int rc = st ? 0 : -1;
    for (int d = 0; rc == 0 && d < GMT_MAX_DEVICES; d++)
        for (int k = 0; rc == 0 && k < BLOCK_CATEGORY_COUNT; k++) {
            if (!s->at_peak[d][k])
                continue;
            sqlite3_bind_int64(st, 1, d);
            sqlite3_bind_text(st, 2, gmt_category_name((gmt_category)k), -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 3, s->at_peak[d][k]);
            rc = step_done(st);
        }
    sqlite3_finalize(st);
    return rc;
}

/* category_store_file's work; with `pages`, block_categories' pairs go there. */
static int sweep_and_store(sqlite3 *db, sorted_pairs *pages, char *err, size_t errlen) {
    err[0] = '\0';
    if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
        return -1;
    }
    store s = {.at_peak = calloc(GMT_MAX_DEVICES, sizeof *s.at_peak), .pages = pages};
    categorizer *c = categorizer_new(db, NULL, err, errlen);
    s.named = db_statement(db, "INSERT OR REPLACE INTO tensor_peaks (device, alloc_id, category) "
                               "VALUES (?1, ?2, ?3)");
    int rc = c && s.at_peak && s.named && read_peaks(db, &s) == 0 ? 0 : -1;
    if (rc != 0 && !err[0])
        snprintf(err, errlen, "%s", s.at_peak ? sqlite3_errmsg(db) : "out of memory");
    if (rc == 0 && category_levels_open(db, &s.levels, err, errlen) < 0)
        rc = -1;
    if (rc == 0) { /* one pass over the events for every device */
        rc = categorizer_sweep_all(c, keep, &s, err, errlen);
        if (rc != 0 && (rc > 0 || !err[0]))
            snprintf(err, errlen, "writing the categories: %s",
                     s.pages_error[0] ? s.pages_error : sqlite3_errmsg(db));
        rc = rc != 0 ? -1 : 0;
    }
    if (rc == 0 && write_peaks(db, &s) != 0) {
        snprintf(err, errlen, "writing category_peaks: %s", sqlite3_errmsg(db));
        rc = -1;
    }
    if (rc == 0 && s.levels) { /* a second sweep (block_categories added) writes them anew */
        rc = category_levels_write(s.levels, db, err, errlen);
    }
    category_levels_free(s.levels);
    sqlite3_finalize(s.named);
    free(s.at_peak);
    categorizer_free(c);
    if (rc == 0 &&
        (sqlite3_exec(db, "INSERT OR REPLACE INTO meta VALUES ('category_peaks', 1)", NULL, NULL,
                      NULL) != SQLITE_OK ||
         (pages && sqlite3_exec(db, "INSERT OR REPLACE INTO meta VALUES ('categories_blocks', 1)",
                                NULL, NULL, NULL) != SQLITE_OK))) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
        rc = -1;
    }
    if (rc == 0)
        gmt_kill_point("categories"); /* written, not committed */
    if (sqlite3_exec(db, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK &&
        rc == 0) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
        rc = -1;
    }
    return rc;
}

/* ---- block_categories as pages ---------------------------------------------------- */

typedef struct block_pages {
    btree_table *table;
    int64_t alloc_id; /* the row held back: an alloc_id's last visit wins */
    gmt_category category;
    int held;
} block_pages;

static int put_held_row(block_pages *bp, char *err, size_t errlen) {
    int64_t cols[2] = {bp->alloc_id, 0};
    const char *texts[2] = {NULL, gmt_category_name(bp->category)};
    if (btree_table_add_text(bp->table, bp->alloc_id, cols, texts, 2, 0) != 0) {
        snprintf(err, errlen, "writing block_categories");
        return -1;
    }
    return 0;
}

/* A sorted_pairs_sink: pairs in alloc_id order, then visit order, become rows. */
static int put_block_rows(void *ctx, const int64_t (*pairs)[2], size_t n, char *err,
                          size_t errlen) {
    block_pages *bp = ctx;
    for (size_t i = 0; i < n; i++) {
        if (bp->held && pairs[i][0] != bp->alloc_id && put_held_row(bp, err, errlen) != 0)
            return -1;
        bp->alloc_id = pairs[i][0];
        bp->category = (gmt_category)(pairs[i][1] & ((1 << CATEGORY_BITS) - 1));
        bp->held = 1;
    }
    return 0;
}

/* The sorted pairs as block_categories' pages, into the closed file at path whose (empty)
 * table has its root at `root`. */
static int write_block_pages(const char *path, uint32_t root, sorted_pairs *pairs, char *err,
                             size_t errlen) {
    btree_file *f = btree_file_open(path, err, errlen);
    if (!f)
        return -1;
    block_pages bp = {.table = btree_table_begin(f, root)};
    int rc = bp.table ? sorted_pairs_drain(pairs, 4096, put_block_rows, &bp, err, errlen) : -1;
    if (rc == 0 && bp.held)
        rc = put_held_row(&bp, err, errlen);
    rc |= bp.table ? btree_table_end(bp.table) : -1;
    if (rc != 0 && btree_file_error(f)[0])
        snprintf(err, errlen, "%s", btree_file_error(f));
    if (rc != 0) {
        btree_file_abort(f);
        return -1;
    }
    return btree_file_close(f, err, errlen);
}

int category_peaks_read(sqlite3 *db, int64_t device, int64_t bytes[BLOCK_CATEGORY_COUNT]) {
    memset(bytes, 0, sizeof(int64_t) * BLOCK_CATEGORY_COUNT);
    if (db_query_int(db, "SELECT value FROM meta WHERE key = 'category_peaks'", 0) != 1)
        return 0; /* a database built without them */
    sqlite3_stmt *st =
        db_statement(db, "SELECT category, bytes FROM category_peaks WHERE device = ?1");
    if (!st)
        return 0;
    sqlite3_bind_int64(st, 1, device);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        int k = name ? gmt_category_from_name(name, strlen(name)) : -1;
        if (k >= 0)
            bytes[k] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return 1;
}

int category_blocks_stored(sqlite3 *db) {
    return db_query_int(db, "SELECT value FROM meta WHERE key = 'categories_blocks'", 0) == 1;
}

int category_store_file(const char *path, void *blocks, char *err, size_t errlen) {
    int pages_mode = blocks && *(const category_blocks *)blocks == CATEGORY_BLOCKS_PAGES;
    sqlite3 *db = NULL;
    event_store_register(); /* the event rows may be the store's */
    if (sqlite3_open_v2(path, &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open database %s: %s", path, db ? sqlite3_errmsg(db) : "?");
        sqlite3_close(db);
        return -1;
    }
    /* A file no one else has open, which a failure throws away: no journal to leave behind. */
    sqlite3_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF", NULL, NULL, NULL);
    db_profile_if_asked(db);
    char why[400] = "";
    double t0 = gmt_seconds();
    sorted_pairs *pages = NULL;
    int64_t root = -1;
    int rc = 0;
    if (pages_mode) { /* the rows go in after SQLite has closed the file */
        root = db_query_int(db,
                            "SELECT rootpage FROM sqlite_schema WHERE name ="
                            " 'block_categories' AND NOT EXISTS (SELECT 1 FROM"
                            " block_categories)",
                            -1);
        if (root <= 0 || !(pages = sorted_pairs_new(path, 0))) {
            snprintf(why, sizeof why, "%s",
                     root <= 0 ? "block_categories is not an empty table" : "out of memory");
            rc = -1;
        }
    }
    if (rc == 0)
        rc = sweep_and_store(db, pages, why, sizeof why);
    if (sqlite3_close(db) != SQLITE_OK && rc == 0) {
        snprintf(why, sizeof why, "cannot close the database");
        rc = -1;
    }
    if (rc == 0 && pages)
        rc = write_block_pages(path, (uint32_t)root, pages, why, sizeof why);
    sorted_pairs_free(pages);
    if (rc != 0)
        snprintf(err, errlen, "%s: categorizing the blocks: %s", path, why);
    if (getenv(GMT_ENV_TIMING)) /* for bench/: the categories' share of a build */
        fprintf(stderr, "categories: %.3f s%s\n", gmt_seconds() - t0,
                pages_mode ? " (every block's)" : "");
    return rc;
}

int category_blocks_add(const char *path, void *ctx, char *err, size_t errlen) {
    (void)ctx;
    sqlite3 *db = NULL;
    int stored = -1;
    if (sqlite3_open_v2(path, &db,
                        SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX,
                        NULL) == SQLITE_OK)
        stored = category_blocks_stored(db);
    else
        snprintf(err, errlen, "cannot open database %s: %s", path, db ? sqlite3_errmsg(db) : "?");
    sqlite3_close(db);
    if (stored != 0)
        return stored < 0 ? -1 : 1;
    static const category_blocks with_pages = CATEGORY_BLOCKS_PAGES;
    return category_store_file(path, (void *)&with_pages, err, errlen);
}

sqlite3_stmt *category_stored_statement(sqlite3 *db) {
    return db_statement(db, "SELECT category FROM block_categories WHERE alloc_id = ?");
}

void category_stored_done(sqlite3_stmt *st) { sqlite3_finalize(st); }

int category_stored_of(sqlite3_stmt *st, int64_t alloc_id) {
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, alloc_id);
    int step = sqlite3_step(st), k = -1;
    if (step == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        k = name ? gmt_category_from_name(name, strlen(name)) : -1;
    } else if (step != SQLITE_DONE) {
        return -2;
    }
    return k >= 0 && k < BLOCK_CATEGORY_COUNT ? k : -1;
}
