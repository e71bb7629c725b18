/* event_store_vtab.c — `event_rows` of a store-mode database: the SQLite virtual table module
 * `gmt_event_rows` over event_chunks and event_ends (see event_store.h).
 *
 * It answers what the plain table's primary key and its one index answered:
 *   - event_id ranges and equality (a binary search over the chunks' first/last ids, then
 *     within the chunk's decoded event_id column);
 *   - alloc_event_id equality, through the sorted pairs of event_ends;
 *   - anything else as a scan in event_id order (what the plain table's scan gave).
 * Rows always come in ascending event_id, so ORDER BY event_id costs nothing. Every
 * constraint is left for SQLite to check again (omit = 0): a plan here only has to return a
 * superset, so a REAL or TEXT bound widens the scan instead of needing SQLite's comparison
 * rules reproduced.
 *
 * A scanning cursor decodes its chunk's columns as xColumn first asks for them. Point lookups
 * (the other side of a join on alloc_event_id or event_id) go through a small cache of decoded
 * chunks shared by the table's cursors: a free is usually near its alloc, so most lookups hit
 * a chunk decoded for the one before. */
#include "event_store.h"

#include "event_store_chunk.h"
#include "gmt_assert.h"
#include "gmt_search.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define LOOKUP_CACHE 8
#define ALL_COLUMNS ((1u << EVENT_STORE_NCOLS) - 1)

/* idxNum: the columns a statement uses in its low bits, the plan above them, then how many
 * lower and upper bounds on event_id a scan was given (its arguments, lower ones first). A
 * statement often has several (`event_id > 0 AND event_id BETWEEN ?1 AND ?2`): a scan starts
 * at the highest lower bound and stops at the lowest upper one, whichever SQLite lists first
 * (taking only the first scanned from event 1 in when.c's time lookup: 0.6 s at 100 M). */
#define PLAN_SHIFT 24
#define PLAN_MASK 0x3
enum plan { PLAN_SCAN, PLAN_ID_EQ, PLAN_ALLOC_EQ };
#define MAX_BOUNDS 3 /* of each side; more are left to SQLite's own check */
#define PLAN_LO_SHIFT 26
#define PLAN_HI_SHIFT 28
#define PLAN_DESC (1 << 30) /* a scan in descending event_id (ORDER BY event_id DESC) */
_Static_assert(EVENT_STORE_NCOLS <= PLAN_SHIFT, "the column mask must fit below the plan");
_Static_assert(PLAN_ALLOC_EQ <= PLAN_MASK && MAX_BOUNDS <= 3, "the plan's fields must fit");

typedef struct chunk_ref {
    int64_t first, last;
} chunk_ref;

typedef struct decoded_chunk {
    int64_t chunk; /* -1: none */
    uint8_t *raw;
    size_t raw_cap;
    chunk_columns cols;
    uint32_t decoded; /* columns decoded into values */
    int64_t *values[EVENT_STORE_NCOLS];
    uint64_t used_at;
} decoded_chunk;

typedef struct store_vtab {
    sqlite3_vtab base;
    sqlite3 *db;
    char *schema; /* the database it lives in: "main", or an attached one's name */
    int loaded;
    chunk_ref *chunks;
    size_t nchunks;
    int64_t *part_first; /* first alloc_event_id of each part of event_ends */
    size_t nparts;
    sqlite3_stmt *read_chunk, *read_part;
    ZSTD_DCtx *dctx;
    decoded_chunk lookup[LOOKUP_CACHE];
    uint64_t tick;
    store_end_pair *part_pairs;
    int64_t part_loaded; /* -1: none */
    long part_len;
} store_vtab;

typedef struct store_cursor {
    sqlite3_vtab_cursor base;
    int lookups;   /* 1: the rows are event ids in ids[]; 0: a scan */
    uint32_t used; /* columns the statement reads */
    decoded_chunk scan;
    ptrdiff_t chunk, row; /* a scan's place; -1 before the first */
    int64_t lo, hi;       /* its bounds, inclusive */
    int desc, eof;
    int64_t *ids;
    size_t nids, at, cap;
    int64_t values[EVENT_STORE_NCOLS]; /* the lookup's current row */
} store_cursor;

static void chunk_release(decoded_chunk *d) {
    free(d->raw);
    for (int c = 0; c < EVENT_STORE_NCOLS; c++)
        free(d->values[c]);
    memset(d, 0, sizeof *d);
    d->chunk = -1;
}

static int set_error(store_vtab *t, const char *msg) {
    sqlite3_free(t->base.zErrMsg);
    t->base.zErrMsg = sqlite3_mprintf("event_rows: %s", msg);
    return SQLITE_ERROR;
}

/* A statement on one of the store's tables, in the schema the virtual table lives in (main, or
 * an attached database's: names unqualified would find main's). `sql` has a %w for it. */
static int prepare_in_schema(store_vtab *t, const char *sql, sqlite3_stmt **st) {
    char *text = sqlite3_mprintf(sql, t->schema);
    if (!text)
        return SQLITE_NOMEM;
    int rc = sqlite3_prepare_v2(t->db, text, -1, st, NULL);
    sqlite3_free(text);
    return rc;
}

/* Forgets a failed load, so a later query starts again from nothing; the error to return. */
static int unload(store_vtab *t, int rc, const char *why) {
    free(t->chunks);
    free(t->part_first);
    t->chunks = NULL;
    t->part_first = NULL;
    t->nchunks = t->nparts = 0;
    sqlite3_finalize(t->read_chunk);
    sqlite3_finalize(t->read_part);
    t->read_chunk = t->read_part = NULL;
    if (rc == SQLITE_NOMEM)
        return rc;
    char msg[320];
    snprintf(msg, sizeof msg, "%s (%s)", why, sqlite3_errmsg(t->db));
    return set_error(t, msg);
}

/* The rows of one of the store's tables (sql: "SELECT count(*) FROM \"%w\".table"); -1 when it
 * cannot be read (*rc says why). */
static int64_t count_rows(store_vtab *t, const char *sql, int *rc) {
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    *rc = prepare_in_schema(t, sql, &st);
    if (*rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* Reads the chunks' and parts' bounds once per connection, at the first query (the writer's
 * own connection makes the table before there is anything to read). */
static int load_bounds(store_vtab *t) {
    if (t->loaded)
        return SQLITE_OK;
    sqlite3_stmt *st = NULL;
    int rc;
    int64_t n = count_rows(t, "SELECT count(*) FROM \"%w\".event_chunks", &rc);
    if (n < 0)
        return unload(t, rc, "no event store: a damaged database");
    if (!(t->chunks = calloc((size_t)n + 1, sizeof *t->chunks)))
        return unload(t, SQLITE_NOMEM, "");
    rc = prepare_in_schema(
        t, "SELECT chunk, first_event_id, last_event_id FROM \"%w\".event_chunks ORDER BY chunk",
        &st);
    int numbered = 1, step = rc;
    while (rc == SQLITE_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_int64(st, 0) != (int64_t)t->nchunks || t->nchunks == (size_t)n) {
            numbered = 0;
            break;
        }
        t->chunks[t->nchunks++] =
            (chunk_ref){sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2)};
    }
    sqlite3_finalize(st);
    if (!numbered) {
        unload(t, SQLITE_ERROR, "");
        return set_error(t, "the chunks are not numbered 0, 1, ...: a damaged database");
    }
    if (step != SQLITE_DONE)
        return unload(t, step, "reading the event store");
    n = count_rows(t, "SELECT count(*) FROM \"%w\".event_ends", &rc);
    if (n < 0)
        return unload(t, rc, "no index of the event store: a damaged database");
    if (!(t->part_first = calloc((size_t)n + 1, sizeof *t->part_first)))
        return unload(t, SQLITE_NOMEM, "");
    rc = prepare_in_schema(t, "SELECT first_alloc_event_id FROM \"%w\".event_ends ORDER BY part",
                           &st);
    while (rc == SQLITE_OK && t->nparts < (size_t)n && sqlite3_step(st) == SQLITE_ROW)
        t->part_first[t->nparts++] = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = prepare_in_schema(t, "SELECT data, raw_bytes FROM \"%w\".event_chunks WHERE chunk = ?",
                               &t->read_chunk);
    if (rc == SQLITE_OK)
        rc = prepare_in_schema(t, "SELECT data FROM \"%w\".event_ends WHERE part = ?",
                               &t->read_part);
    if (rc != SQLITE_OK)
        return unload(t, rc, "reading the index of the event store");
    t->loaded = 1;
    return SQLITE_OK;
}

/* Decompresses chunk k into d (no column decoded yet). */
static int chunk_load(store_vtab *t, decoded_chunk *d, size_t k) {
    if (d->chunk == (int64_t)k)
        return SQLITE_OK;
    sqlite3_stmt *st = t->read_chunk;
    sqlite3_bind_int64(st, 1, (int64_t)k);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? set_error(t, "a chunk is missing: a damaged database") : rc;
    }
    d->chunk = -1;
    int unpacked =
        chunk_unpack(t->dctx, sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
                     (size_t)sqlite3_column_int64(st, 1), &d->raw, &d->raw_cap, &d->cols);
    sqlite3_reset(st);
    if (unpacked == -1)
        return SQLITE_NOMEM;
    if (unpacked != 0)
        return set_error(t, "a chunk does not decode: a damaged database");
    d->chunk = (int64_t)k;
    d->decoded = 0;
    return SQLITE_OK;
}

static int chunk_column(store_vtab *t, decoded_chunk *d, int col) {
    if (d->decoded & (1u << col))
        return SQLITE_OK;
    if (!d->values[col] && !(d->values[col] = malloc(EVENT_STORE_CHUNK_ROWS * sizeof(int64_t))))
        return SQLITE_NOMEM;
    if (chunk_decode_column(&d->cols, col, d->values[col]) != 0)
        return set_error(t, "a column does not decode: a damaged database");
    d->decoded |= 1u << col;
    return SQLITE_OK;
}

/* The chunk that may hold event id: the first whose last id is >= id (nchunks: none). */
static size_t chunk_from(const store_vtab *t, int64_t id) {
    return gmt_search_i64(t->chunks, t->nchunks, sizeof *t->chunks, offsetof(chunk_ref, last), id,
                          0);
}

/* The first row of d with an event id >= id, or with `after` set > id (rows: none). */
static size_t row_from(const decoded_chunk *d, int64_t id, int after) {
    return gmt_search_i64(d->values[EVENT_COL_event_id], d->cols.rows, sizeof(int64_t), 0, id,
                          after);
}

/* The cache's slot holding chunk k, else its least recently used one (k -1: an empty slot when
 * there is one). */
static decoded_chunk *cache_slot(store_vtab *t, int64_t k) {
    decoded_chunk *oldest = &t->lookup[0];
    for (int i = 0; i < LOOKUP_CACHE; i++) {
        if (t->lookup[i].chunk == k)
            return &t->lookup[i];
        if (t->lookup[i].used_at < oldest->used_at)
            oldest = &t->lookup[i];
    }
    return oldest;
}

/* Swaps the cursor's own chunk with a cache slot, buffers and all (no copy); the slot becomes
 * the most recently used. */
static void trade(store_vtab *t, store_cursor *c, decoded_chunk *slot) {
    decoded_chunk mine = c->scan;
    c->scan = *slot;
    *slot = mine;
    slot->used_at = ++t->tick;
}

/* Copies the row of event id into values (the columns in `used`); 0 when there is none. */
static int lookup_row(store_vtab *t, int64_t id, uint32_t used, int64_t *values, int *found) {
    *found = 0;
    size_t k = chunk_from(t, id);
    if (k == t->nchunks || t->chunks[k].first > id)
        return SQLITE_OK;
    decoded_chunk *d = cache_slot(t, (int64_t)k);
    int rc = chunk_load(t, d, k); /* nothing to do when the slot holds it */
    if (rc != SQLITE_OK)
        return rc;
    d->used_at = ++t->tick;
    rc = chunk_column(t, d, EVENT_COL_event_id);
    if (rc != SQLITE_OK)
        return rc;
    size_t r = row_from(d, id, 0);
    if (r == d->cols.rows || d->values[EVENT_COL_event_id][r] != id)
        return SQLITE_OK;
    for (int c = 0; c < EVENT_STORE_NCOLS; c++)
        if (used & (1u << c)) {
            if ((rc = chunk_column(t, d, c)) != SQLITE_OK)
                return rc;
            values[c] = d->values[c][r];
        }
    *found = 1;
    return SQLITE_OK;
}

static int connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                   char **err) {
    (void)aux, (void)err;
    if (argc < 2)
        return SQLITE_ERROR;
    char decl[1024];
    size_t n = (size_t)snprintf(decl, sizeof decl, "CREATE TABLE x(");
    for (int c = 0; c < EVENT_STORE_NCOLS; c++)
        n += (size_t)snprintf(decl + n, sizeof decl - n, "%s%s INTEGER", c ? ", " : "",
                              event_store_column_names[c]);
    snprintf(decl + n, sizeof decl - n, ")");
    int rc = sqlite3_declare_vtab(db, decl);
    if (rc != SQLITE_OK)
        return rc;
    store_vtab *t = sqlite3_malloc(sizeof *t);
    if (!t)
        return SQLITE_NOMEM;
    memset(t, 0, sizeof *t);
    t->db = db;
    t->schema = sqlite3_mprintf("%s", argv[1]);
    t->part_loaded = -1;
    for (int i = 0; i < LOOKUP_CACHE; i++)
        t->lookup[i].chunk = -1;
    t->dctx = ZSTD_createDCtx();
    t->part_pairs = malloc(STORE_END_PART_PAIRS * sizeof *t->part_pairs);
    if (!t->dctx || !t->part_pairs || !t->schema) {
        ZSTD_freeDCtx(t->dctx);
        free(t->part_pairs);
        sqlite3_free(t->schema);
        sqlite3_free(t);
        return SQLITE_NOMEM;
    }
    sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
    *out = &t->base;
    return SQLITE_OK;
}

static int disconnect(sqlite3_vtab *vt) {
    store_vtab *t = (store_vtab *)vt;
    sqlite3_finalize(t->read_chunk);
    sqlite3_finalize(t->read_part);
    for (int i = 0; i < LOOKUP_CACHE; i++)
        chunk_release(&t->lookup[i]);
    ZSTD_freeDCtx(t->dctx);
    free(t->chunks);
    free(t->part_first);
    free(t->part_pairs);
    sqlite3_free(t->schema);
    sqlite3_free(t);
    return SQLITE_OK;
}

/* CREATE VIRTUAL TABLE; a function of its own (not connect itself), so the module is no
 * eponymous table `gmt_event_rows` in every connection. */
static int create(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                  char **err) {
    return connect(db, aux, argc, argv, out, err);
}

static int best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
    (void)vt;
    int id_eq = -1, alloc_eq = -1, lo[MAX_BOUNDS], hi[MAX_BOUNDS], nlo = 0, nhi = 0;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        if (!c->usable)
            continue;
        int on_id = c->iColumn == EVENT_COL_event_id || c->iColumn == -1;
        if (on_id && c->op == SQLITE_INDEX_CONSTRAINT_EQ)
            id_eq = i;
        else if (on_id &&
                 (c->op == SQLITE_INDEX_CONSTRAINT_GT || c->op == SQLITE_INDEX_CONSTRAINT_GE) &&
                 nlo < MAX_BOUNDS)
            lo[nlo++] = i;
        else if (on_id &&
                 (c->op == SQLITE_INDEX_CONSTRAINT_LT || c->op == SQLITE_INDEX_CONSTRAINT_LE) &&
                 nhi < MAX_BOUNDS)
            hi[nhi++] = i;
        else if (c->iColumn == EVENT_COL_alloc_event_id && c->op == SQLITE_INDEX_CONSTRAINT_EQ)
            alloc_eq = i;
    }
    uint32_t used = info->colUsed >> 63 ? ALL_COLUMNS : (uint32_t)(info->colUsed & ALL_COLUMNS);
    int plan = PLAN_SCAN, flags = 0;
    double cost = 1e7, rows = 1e7;
    if (id_eq >= 0) {
        plan = PLAN_ID_EQ;
        info->aConstraintUsage[id_eq].argvIndex = 1;
        info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
        cost = 10, rows = 1;
    } else if (alloc_eq >= 0) {
        plan = PLAN_ALLOC_EQ;
        info->aConstraintUsage[alloc_eq].argvIndex = 1;
        cost = 20, rows = 2;
    } else {
        int arg = 1;
        for (int i = 0; i < nlo; i++)
            info->aConstraintUsage[lo[i]].argvIndex = arg++;
        for (int i = 0; i < nhi; i++)
            info->aConstraintUsage[hi[i]].argvIndex = arg++;
        flags = nlo << PLAN_LO_SHIFT | nhi << PLAN_HI_SHIFT;
        if (nlo)
            cost /= 4, rows /= 4;
        if (nhi)
            cost /= 4, rows /= 4;
    }
    info->idxNum = (int)used | plan << PLAN_SHIFT | flags;
    info->estimatedCost = cost;
    info->estimatedRows = (sqlite3_int64)rows;
    if (info->nOrderBy == 1 &&
        (info->aOrderBy[0].iColumn == EVENT_COL_event_id || info->aOrderBy[0].iColumn == -1)) {
        if (!info->aOrderBy[0].desc)
            info->orderByConsumed = 1; /* every plan returns ascending event ids */
        else if (plan == PLAN_SCAN) {  /* `... ORDER BY event_id DESC LIMIT 1`: walk back */
            info->orderByConsumed = 1;
            info->idxNum |= PLAN_DESC;
        }
    }
    return SQLITE_OK;
}

static int open_cursor(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
    store_cursor *c = calloc(1, sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    c->scan.chunk = -1;
    c->eof = 1;
    *out = &c->base;
    (void)vt;
    return SQLITE_OK;
}

static int close_cursor(sqlite3_vtab_cursor *cur) {
    store_cursor *c = (store_cursor *)cur;
    if (c->scan.chunk >= 0) { /* leave it decoded for the next cursor */
        store_vtab *t = (store_vtab *)cur->pVtab;
        trade(t, c, cache_slot(t, -1));
    }
    chunk_release(&c->scan);
    free(c->ids);
    free(c);
    return SQLITE_OK;
}

/* An integer bound from a constraint's value: lower bounds round down, upper ones up (a
 * superset); 0 when the value gives no integer bound (SQLite checks those rows itself). */
static int bound_of(sqlite3_value *v, int upper, int64_t *out) {
    int type = sqlite3_value_numeric_type(v);
    if (type == SQLITE_INTEGER) {
        *out = sqlite3_value_int64(v);
        return 1;
    }
    if (type != SQLITE_FLOAT)
        return 0;
    double d = upper ? ceil(sqlite3_value_double(v)) : floor(sqlite3_value_double(v));
    if (!(d > -9.2e18 && d < 9.2e18))
        return 0;
    *out = (int64_t)d;
    return 1;
}

static int push_id(store_cursor *c, int64_t id) {
    if (c->nids == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        int64_t *grown = realloc(c->ids, cap * sizeof *grown);
        if (!grown)
            return SQLITE_NOMEM;
        c->ids = grown;
        c->cap = cap;
    }
    c->ids[c->nids++] = id;
    return SQLITE_OK;
}

/* The event ids whose alloc_event_id is `alloc`, in ascending order. */
static int find_ends(store_vtab *t, store_cursor *c, int64_t alloc) {
    /* The last part whose first pair is < alloc may end with it; later ones start with it. */
    size_t lo = gmt_search_i64(t->part_first, t->nparts, sizeof *t->part_first, 0, alloc, 0);
    for (size_t p = lo ? lo - 1 : 0; p < t->nparts && t->part_first[p] <= alloc; p++) {
        if (t->part_loaded != (int64_t)p) {
            sqlite3_bind_int64(t->read_part, 1, (int64_t)p);
            int rc = sqlite3_step(t->read_part);
            long n = rc == SQLITE_ROW
                         ? ends_decode(sqlite3_column_blob(t->read_part, 0),
                                       (size_t)sqlite3_column_bytes(t->read_part, 0), t->part_pairs)
                         : -1;
            sqlite3_reset(t->read_part);
            t->part_loaded = -1;
            if (n < 0)
                return set_error(t, "the alloc_event_id index does not decode: a damaged database");
            t->part_loaded = (int64_t)p;
            t->part_len = n;
        }
        long i = (long)gmt_search_i64(t->part_pairs, (size_t)t->part_len, sizeof *t->part_pairs,
                                      offsetof(store_end_pair, alloc_event_id), alloc, 0);
        for (; i < t->part_len && t->part_pairs[i].alloc_event_id == alloc; i++)
            if (push_id(c, t->part_pairs[i].event_id))
                return SQLITE_NOMEM;
    }
    return SQLITE_OK;
}

/* Moves a lookup cursor to its next id that is a row. */
static int lookup_next(store_cursor *c) {
    store_vtab *t = (store_vtab *)c->base.pVtab;
    for (; c->at < c->nids; c->at++) {
        int found, rc = lookup_row(t, c->ids[c->at], c->used, c->values, &found);
        if (rc != SQLITE_OK)
            return rc;
        if (found)
            return SQLITE_OK;
    }
    c->eof = 1;
    return SQLITE_OK;
}

/* Puts chunk k in the cursor's own slot. The table's cache and the cursor trade slots (no copy):
 * a chunk another cursor or lookup decoded is taken over, and the one the cursor leaves stays
 * decoded for the next. A correlated subquery (`... WHERE event_id <= outer.x ORDER BY event_id
 * DESC LIMIT 1`, once per outer row) opens a fresh cursor each time; without this each one
 * decompressed its chunk again (1 s of a 10 M-event report). */
static int scan_chunk(store_vtab *t, store_cursor *c, size_t k) {
    if (c->scan.chunk == (int64_t)k)
        return SQLITE_OK;
    trade(t, c, cache_slot(t, (int64_t)k));
    return chunk_load(t, &c->scan, k); /* nothing to do when it was the cache's */
}

/* Settles a scan on a row: on to the next chunk (the one before, descending) when this one is
 * done; the end past the bounds. */
static int scan_settle(store_cursor *c) {
    store_vtab *t = (store_vtab *)c->base.pVtab;
    for (;;) {
        if (c->chunk < 0 || c->chunk >= (ptrdiff_t)t->nchunks) {
            c->eof = 1;
            return SQLITE_OK;
        }
        int rc = scan_chunk(t, c, (size_t)c->chunk);
        if (rc == SQLITE_OK)
            rc = chunk_column(t, &c->scan, EVENT_COL_event_id);
        if (rc != SQLITE_OK)
            return rc;
        if (c->row == PTRDIFF_MAX) /* entering a chunk descending: its last row */
            c->row = (ptrdiff_t)c->scan.cols.rows - 1;
        if (c->row >= 0 && c->row < (ptrdiff_t)c->scan.cols.rows)
            break;
        c->chunk += c->desc ? -1 : 1;
        c->row = c->desc ? PTRDIFF_MAX : 0;
    }
    int64_t id = c->scan.values[EVENT_COL_event_id][c->row];
    if (id > c->hi || id < c->lo)
        c->eof = 1;
    return SQLITE_OK;
}

static int filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, int argc,
                  sqlite3_value **argv) {
    (void)idx_str;
    store_cursor *c = (store_cursor *)cur;
    store_vtab *t = (store_vtab *)cur->pVtab;
    int rc = load_bounds(t);
    if (rc != SQLITE_OK)
        return rc;
    c->used = (uint32_t)idx_num & ALL_COLUMNS;
    c->eof = 0;
    c->nids = c->at = 0;
    int plan = (idx_num >> PLAN_SHIFT) & PLAN_MASK;
    int64_t key;
    if ((plan == PLAN_ID_EQ || plan == PLAN_ALLOC_EQ) && bound_of(argv[0], 0, &key) &&
        (sqlite3_value_numeric_type(argv[0]) == SQLITE_INTEGER ||
         (double)key == sqlite3_value_double(argv[0]))) {
        c->lookups = 1;
        rc = plan == PLAN_ID_EQ ? push_id(c, key) : find_ends(t, c, key);
        return rc != SQLITE_OK ? rc : lookup_next(c);
    }
    if (plan != PLAN_SCAN && sqlite3_value_numeric_type(argv[0]) != SQLITE_TEXT &&
        sqlite3_value_numeric_type(argv[0]) != SQLITE_BLOB) {
        c->eof = 1; /* NULL or a number no integer equals: no row */
        return SQLITE_OK;
    }
    /* A scan: the whole table, or the ids between its bounds. */
    c->lookups = 0;
    c->desc = (idx_num & PLAN_DESC) != 0;
    c->lo = INT64_MIN;
    c->hi = INT64_MAX;
    int nlo = (idx_num >> PLAN_LO_SHIFT) & 0x3, nhi = (idx_num >> PLAN_HI_SHIFT) & 0x3;
    if (GMT_NEVER(plan == PLAN_SCAN ? nlo + nhi != argc : nlo + nhi != 0))
        return SQLITE_INTERNAL; /* best_index wrote a plan filter cannot read */
    for (int i = 0; i < nlo + nhi; i++) {
        int64_t b; /* a bound that is no number (NULL, text) narrows nothing: SQLite checks it */
        if (!bound_of(argv[i], i >= nlo, &b))
            continue;
        if (i < nlo && b > c->lo)
            c->lo = b;
        else if (i >= nlo && b < c->hi)
            c->hi = b;
    }
    size_t k = chunk_from(t, c->desc ? c->hi : c->lo);
    if (c->desc && k == t->nchunks)
        k = t->nchunks - 1; /* every id is below hi: from the last row (none: k is -1) */
    c->chunk = (ptrdiff_t)k;
    c->row = 0;
    if (k < t->nchunks) {
        if ((rc = scan_chunk(t, c, k)) != SQLITE_OK ||
            (rc = chunk_column(t, &c->scan, EVENT_COL_event_id)) != SQLITE_OK)
            return rc;
        c->row = c->desc ? (ptrdiff_t)row_from(&c->scan, c->hi, 1) - 1
                         : (ptrdiff_t)row_from(&c->scan, c->lo, 0);
        if (c->desc && c->row < 0) { /* the chunk starts above hi: the one before */
            c->chunk--;
            c->row = PTRDIFF_MAX;
        }
    }
    return scan_settle(c);
}

static int next(sqlite3_vtab_cursor *cur) {
    store_cursor *c = (store_cursor *)cur;
    if (c->lookups) {
        c->at++;
        return lookup_next(c);
    }
    c->row += c->desc ? -1 : 1;
    return scan_settle(c);
}

static int eof(sqlite3_vtab_cursor *cur) { return ((store_cursor *)cur)->eof; }

static int column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
    store_cursor *c = (store_cursor *)cur;
    int64_t v;
    if (c->lookups) {
        if (!(c->used & (1u << col))) { /* not announced by xBestIndex: fetch it now */
            int found, rc = lookup_row((store_vtab *)cur->pVtab, c->ids[c->at], 1u << col,
                                       c->values, &found);
            if (rc != SQLITE_OK)
                return rc;
            c->used |= 1u << col;
        }
        v = c->values[col];
    } else {
        int rc = chunk_column((store_vtab *)cur->pVtab, &c->scan, col);
        if (rc != SQLITE_OK)
            return rc;
        v = c->scan.values[col][c->row];
    }
    if (v == EVENT_STORE_NULL)
        sqlite3_result_null(ctx);
    else
        sqlite3_result_int64(ctx, v);
    return SQLITE_OK;
}

static int rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *out) {
    store_cursor *c = (store_cursor *)cur;
    if (c->lookups)
        *out = c->ids[c->at];
    else
        *out = c->scan.values[EVENT_COL_event_id][c->row];
    return SQLITE_OK;
}

static const sqlite3_module event_rows_module = {
    .iVersion = 1,
    .xCreate = create,
    .xConnect = connect,
    .xBestIndex = best_index,
    .xDisconnect = disconnect,
    .xDestroy = disconnect,
    .xOpen = open_cursor,
    .xClose = close_cursor,
    .xFilter = filter,
    .xNext = next,
    .xEof = eof,
    .xColumn = column,
    .xRowid = rowid,
};

static int register_on(sqlite3 *db, char **err, const sqlite3_api_routines *api) {
    (void)err, (void)api;
    return sqlite3_create_module(db, "gmt_event_rows", &event_rows_module, NULL);
}

int event_store_register(void) { return sqlite3_auto_extension((void (*)(void))register_on); }
