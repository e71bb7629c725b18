/* db_writer.c — bulk loading of the replay into SQLite.
 *
 * Shaped by the row budget of DESIGN.md: SQLite takes ~1.5 M narrow rows/s
 * when it is one transaction, statements are prepared once, the journal is
 * off and no index exists during the load. So: the schema's first part
 * (tables, views) runs at open, rows go through one prepared statement per
 * table, and the schema's index part runs once at the end. The database is
 * written under a temporary name and renamed into place by finish, so a
 * crash or an abort never leaves a half-built database where a later run
 * would take it for a finished one (base/db_file.h: the temporaries, which the next build
 * removes after a kill, and what the rename may replace: a regular file or nothing).
 *
 * Every row is written on a thread of its own: the replay fills a batch
 * (event rows, and the few other rows as pending_row records), hands it
 * over and goes on with the next while this thread writes them. Only that
 * thread touches the connection until
 * finish joins it, so no lock is needed (an earlier version shared the
 * connection under a mutex and spent a fifth of its time in context
 * switches). A bounded queue of batches keeps memory flat.
 *
 * Event rows never go through an INSERT. Each batch of them is one chunk of the event store
 * (analyzer/base/event_store.h), which the thread compresses into one blob row. In store mode
 * (DB_EVENTS_STORE, the cache) that is all: schema.sql's event_rows becomes the store's virtual
 * table. In table mode (DB_EVENTS_TABLE, `import -o`) the rows also become pages of a plain
 * event_rows written straight into the database file (event_table.h), while every other row goes
 * into a staging database beside it, copied in at the end. */
#include "db_writer.h"

#include "db_file.h"
#include "db_query.h"
#include "event_store.h"
#include "event_table.h"
#include "gmt_kill_point.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH_ROWS 4096
#define QUEUE_BATCHES 4
#define INDEX_MARK "\n-- @@ indexes" /* at the start of a line */
#define EVENT_TABLE_START "CREATE TABLE event_rows ("
#define EVENT_TABLE_END "\n);"

/* A batch of event rows is a chunk of the event store, its rows the store's rows. */
_Static_assert(BATCH_ROWS == EVENT_STORE_CHUNK_ROWS, "one batch, one chunk");
_Static_assert(sizeof(db_event_row) == EVENT_STORE_NCOLS * sizeof(int64_t), "no padding");
#define SAME_PLACE(name)                                                                           \
    _Static_assert(offsetof(db_event_row, name) == EVENT_COL_##name * sizeof(int64_t),             \
                   "db_event_row's " #name " is the store's column " #name);
EVENT_STORE_COLUMN_LIST(SAME_PLACE)
#undef SAME_PLACE

enum statement {
    ST_SEGMENT,
    ST_MARKER,
    ST_STEP,
    ST_DEVICE,
    ST_BUCKET,
    ST_LEVEL,
    ST_COUNTER,
    ST_FRAME,
    ST_STACK,
    ST_MODULE,
    ST_WARNING,
    ST_META,
    ST_SITE,
    ST_SITE_STEP,
    ST_LARGEST,
    ST_SERIES_LEVEL,
    ST_SERIES_DELTA,
    ST_SITE_BUCKET,
    ST_SITE_LEVEL,
    ST_HEAT_ROW,
    ST_LIVE_END,
    ST_FREE_SPLIT,
    ST_STEP_END,
    ST_TENSOR_NAME,
    ST_UNRECORDED,
    ST_COUNT
};

static const char *const statement_sql[ST_COUNT] = {
    /* Columns are named, so the schema may add or reorder columns freely. (event_rows' columns
     * are event_store.h's list, checked against the schema: store_schema, event_table.c.) */
    [ST_SEGMENT] = "INSERT INTO segments (segment_id, device, kind, addr, size, requested_size,"
                   " stream, pool, mapped, whole_block, tid, alloc_ts_ns, free_ts_ns,"
                   " free_event_id, stack_id, driver_stack_id, free_stack_id)"
                   " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_MARKER] = "INSERT INTO markers (marker_id, ts_ns, tid, kind, name, domain,"
                  " begin_marker_id) VALUES (?,?,?,?,?,?,?)",
    /* A step comes in pieces (threads or devices marking the same step, one piece
     * closing at a time): they merge here into [the earliest begin (by time, then event),
     * with its name, the latest end (on a tie of times, the later event: the state once
     * every piece has ended), open (end NULL, end_event_id the trace's end) when one is.
     * SET reads the row as it was. Plain CASE (no iif): SQLite before 3.32 has none. */
    [ST_STEP] = "INSERT INTO steps (step, name, begin_ts_ns, end_ts_ns, begin_event_id,"
                " end_event_id) VALUES (?,?,?,?,?,?) ON CONFLICT (step) DO UPDATE SET"
                " name = CASE WHEN excluded.begin_ts_ns < begin_ts_ns OR (excluded.begin_ts_ns ="
                " begin_ts_ns AND excluded.begin_event_id < begin_event_id) THEN excluded.name"
                " ELSE name END,"
                " begin_event_id = CASE WHEN excluded.begin_ts_ns < begin_ts_ns OR"
                " (excluded.begin_ts_ns = begin_ts_ns AND excluded.begin_event_id <"
                " begin_event_id) THEN excluded.begin_event_id ELSE begin_event_id END,"
                " begin_ts_ns = min(begin_ts_ns, excluded.begin_ts_ns),"
                " end_event_id = CASE WHEN end_ts_ns IS NULL THEN end_event_id"
                " WHEN excluded.end_ts_ns IS NULL OR excluded.end_ts_ns > end_ts_ns"
                " THEN excluded.end_event_id WHEN excluded.end_ts_ns = end_ts_ns"
                " THEN max(end_event_id, excluded.end_event_id) ELSE end_event_id END,"
                " end_ts_ns = CASE WHEN end_ts_ns IS NULL OR excluded.end_ts_ns IS NULL THEN NULL"
                " ELSE max(end_ts_ns, excluded.end_ts_ns) END",
    [ST_DEVICE] = "INSERT OR REPLACE INTO devices (device, name, total_bytes,"
                  " peak_allocated_bytes, peak_allocated_event_id, peak_reserved_bytes,"
                  " peak_reserved_event_id, peak_requested_bytes, peak_requested_event_id,"
                  " peak_segments, allocs, frees, cache_allocs, cache_misses, ooms, alloc_failed)"
                  " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_SITE] = "INSERT OR REPLACE INTO site_stats (device, stack_id, peak_bytes, peak_blocks,"
                " end_bytes, end_blocks, never_freed_count, never_freed_bytes)"
                " VALUES (?,?,?,?,?,?,?,?)",
    [ST_SITE_STEP] = "INSERT OR REPLACE INTO site_steps (device, stack_id, end_event_id,"
                     " delta_bytes, live_bytes) VALUES (?,?,?,?,?)",
    /* a chunk's row, or a correction added to one written before (site_levels.h) */
    [ST_SITE_LEVEL] = "INSERT INTO site_levels (device, width, chunk, stack_id, blocks, bytes)"
                      " VALUES (?,?,?,?,?,?) ON CONFLICT (device, width, chunk, stack_id) DO"
                      " UPDATE SET blocks = blocks + excluded.blocks,"
                      " bytes = bytes + excluded.bytes",
    [ST_SERIES_LEVEL] = "INSERT INTO series_levels (device, series_by, event_id, rank, key, bytes)"
                        " VALUES (?,?,?,?,?,?)",
    [ST_SERIES_DELTA] = "INSERT INTO series_deltas (device, series_by, event_id, entry, key, bytes)"
                        " VALUES (?,?,?,?,?,?)",
    [ST_SITE_BUCKET] = "INSERT OR REPLACE INTO site_buckets (device, bucket_ns, bucket, stack_id,"
                       " live_bytes, peak_live_bytes) VALUES (?,?,?,?,?,?)",
    [ST_HEAT_ROW] = "INSERT OR REPLACE INTO heatmap_rows (device, bucket_ns, bucket, fractions)"
                    " VALUES (?,?,?,?)",
    [ST_LIVE_END] = "INSERT OR REPLACE INTO live_at_end (alloc_id, device, addr, size,"
                    " requested_size, stream, stack_id, segment_id, pending)"
                    " VALUES (?,?,?,?,?,?,?,?,?)",
    [ST_STEP_END] = "INSERT OR REPLACE INTO step_ends (device, end_event_id, event_id, ts_ns,"
                    " allocated_bytes, requested_bytes, reserved_bytes, largest_free_bytes)"
                    " VALUES (?,?,?,?,?,?,?,?)",
    /* The first name given to a block stays (a block named twice keeps its first). */
    [ST_TENSOR_NAME] = "INSERT OR IGNORE INTO tensor_names (alloc_id, name, category, tensors,"
                       " ts_ns) VALUES (?,?,?,?,?)",
    [ST_FREE_SPLIT] = "INSERT OR REPLACE INTO free_splits (device, event_id, reserved_bytes,"
                      " allocated_bytes, releasable_bytes, trapped_bytes) VALUES (?,?,?,?,?,?)",
    [ST_LARGEST] = "INSERT OR REPLACE INTO largest_allocations (device, alloc_id, size, stack_id)"
                   " VALUES (?,?,?,?)",
    [ST_BUCKET] = "INSERT OR REPLACE INTO timeline_buckets (device, bucket_ns, bucket,"
                  " first_event_id, last_event_id, events, min_allocated_bytes,"
                  " max_allocated_bytes, min_reserved_bytes, max_reserved_bytes,"
                  " max_requested_bytes, min_largest_free_bytes, end_allocated_bytes,"
                  " end_reserved_bytes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_LEVEL] = "INSERT OR REPLACE INTO timeline_levels (device, bucket_ns, bucket,"
                 " first_event_id, last_event_id, events, min_allocated_bytes,"
                 " max_allocated_bytes, max_allocated_event_id, ooms, min_reserved_bytes,"
                 " max_reserved_bytes, end_allocated_bytes, end_reserved_bytes)"
                 " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_COUNTER] = "INSERT INTO counters (ts_ns, event_id, device, kind, pool, value)"
                   " VALUES (?,?,?,?,?,?)",
    [ST_FRAME] = "INSERT OR REPLACE INTO frames (frame_id, name, file, line, module, ip, inlined,"
                 " inlined_into) VALUES (?,?,?,?,?,?,?,?)",
    [ST_STACK] = "INSERT OR REPLACE INTO stacks (stack_id, parent_id, frame_id) VALUES (?,?,?)",
    [ST_MODULE] = "INSERT OR REPLACE INTO modules (module_id, path, build_id, load_base)"
                  " VALUES (?,?,?,?)",
    [ST_WARNING] = "INSERT INTO warnings (event_id, code, message) VALUES (?,?,?)",
    [ST_META] = "INSERT OR REPLACE INTO meta VALUES (?,?)",
    [ST_UNRECORDED] = "INSERT OR REPLACE INTO unrecorded_calls (call_id, name, calls, bytes)"
                      " VALUES (?,?,?,?)",
};

#define MAX_PARAMS 17 /* the widest statement but events (segments) */
#define OTHERS_PER_BATCH 512

/* A row of any table but event_rows, as bound values until the thread runs
 * it. Texts are copies the thread frees. */
typedef struct pending_row {
    uint8_t which, n;
    uint8_t lost; /* a copy of a value could not be made: the row fails, it is not stored short */
    uint8_t is_text[MAX_PARAMS + 1];
    int64_t v[MAX_PARAMS + 1];
    char *s[MAX_PARAMS + 1];
} pending_row;

typedef struct event_batch {
    size_t len;
    db_event_row rows[BATCH_ROWS];
    pending_row *others;
    size_t others_len, others_cap;
} event_batch;

struct db_writer {
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    event_store_writer *store; /* the event store's chunks (beside the rows in table mode) */
    event_table *table;        /* table mode: event_rows' pages; db is then the staging database */
    db_writer_events events;
    char *path, *tmp_path, *staging_path;
    int tmp_fd, staging_fd; /* each holds its file's lock (db_file.h); -1: none */
    /* run on the finished file under its temporary name, before it is renamed into place */
    int (*before_rename)(const char *path, void *ctx, char *err, size_t errlen);
    void *before_rename_ctx;
    char error[512];

    pthread_t thread;
    int thread_started;
    pthread_mutex_t queue_lock;
    pthread_cond_t queue_changed;
    event_batch *full[QUEUE_BATCHES]; /* FIFO of batches to insert */
    size_t full_head, full_len;
    event_batch *spare[QUEUE_BATCHES + 1];
    size_t spare_len;
    event_batch *filling;
    int stopping, thread_failed;
    int rows_lost; /* a row could not be queued (out of memory): finish fails, callers that
                      went on regardless lose nothing silently */
    int discard;   /* db_writer_open_discard: every row taken and dropped */
};

static int fail(db_writer *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->error, sizeof w->error, fmt, ap);
    va_end(ap);
    return -1;
}

static int fail_sqlite(db_writer *w, const char *what) {
    return fail(w, "database %s: %s: %s", w->path, what, sqlite3_errmsg(w->db));
}

static void stop_thread(db_writer *w) {
    if (!w->thread_started)
        return;
    pthread_mutex_lock(&w->queue_lock);
    w->stopping = 1;
    pthread_cond_broadcast(&w->queue_changed);
    pthread_mutex_unlock(&w->queue_lock);
    pthread_join(w->thread, NULL);
    w->thread_started = 0;
}

static void finalize_statements(db_writer *w) {
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(w->st[i]);
        w->st[i] = NULL;
    }
}

static void close_db(db_writer *w) {
    stop_thread(w);
    finalize_statements(w);
    event_store_writer_free(w->store);
    w->store = NULL;
    event_table_abort(w->table);
    w->table = NULL;
    sqlite3_close(w->db);
    w->db = NULL;
}

static void free_batch(event_batch *b) {
    if (!b)
        return;
    for (size_t i = 0; i < b->others_len; i++)
        for (int k = 0; k <= b->others[i].n; k++)
            free(b->others[i].s[k]);
    free(b->others);
    free(b);
}

static void free_writer(db_writer *w) {
    free_batch(w->filling);
    for (size_t i = 0; i < w->spare_len; i++)
        free_batch(w->spare[i]);
    for (size_t i = 0; i < w->full_len; i++)
        free_batch(w->full[(w->full_head + i) % QUEUE_BATCHES]);
    pthread_mutex_destroy(&w->queue_lock);
    pthread_cond_destroy(&w->queue_changed);
    if (w->tmp_fd >= 0)
        close(w->tmp_fd);
    if (w->staging_fd >= 0)
        close(w->staging_fd);
    free(w->path);
    free(w->tmp_path);
    free(w->staging_path);
    free(w);
}

/* A temporary file gone: its name, then the descriptor that held its lock. */
static void drop_temp(const char *path, int *fd) {
    if (*fd < 0)
        return;
    unlink(path);
    close(*fd);
    *fd = -1;
}

static void *event_thread(void *arg);

/* The batches; then the event thread starts. */
static int start_event_thread(db_writer *w) {
    w->filling = calloc(1, sizeof *w->filling);
    if (!w->filling)
        return -1;
    for (; w->spare_len < QUEUE_BATCHES + 1; w->spare_len++)
        if (!(w->spare[w->spare_len] = calloc(1, sizeof(event_batch))))
            return -1;
    if (pthread_create(&w->thread, NULL, event_thread, w) != 0)
        return -1;
    w->thread_started = 1;
    return 0;
}

/* schema.sql for a database whose events go to the store: its CREATE TABLE event_rows becomes
 * the store's tables and virtual table, and the indexes on event_rows go (the store has its
 * own). The columns schema.sql declares must be the store's, in order. NULL on a mismatch or
 * out of memory. */
static char *store_schema(const char *schema) {
    const char *start = strstr(schema, EVENT_TABLE_START);
    const char *end = start ? strstr(start, EVENT_TABLE_END) : NULL;
    if (!end)
        return NULL;
    const char *p = start + strlen(EVENT_TABLE_START);
    for (int c = 0; c < EVENT_STORE_NCOLS; c++) { /* "\n  name  TYPE ... -- comment" */
        const char *name = event_store_column_names[c];
        p = strchr(p, '\n');
        while (p && *p && (*p == '\n' || *p == ' '))
            p++;
        if (!p || p > end || strncmp(p, name, strlen(name)) != 0 || p[strlen(name)] != ' ')
            return NULL;
    }
    if (strchr(p, '\n') != end) /* the last column's line ends the table: no 22nd column */
        return NULL;
    size_t head = (size_t)(start - schema),
           tail_at = (size_t)(end - schema) + strlen(EVENT_TABLE_END);
    size_t n = strlen(schema) + strlen(event_store_schema_sql) + 1;
    char *out = malloc(n);
    if (!out)
        return NULL;
    memcpy(out, schema, head);
    strcpy(out + head, event_store_schema_sql);
    strcat(out, schema + tail_at);
    return out;
}

/* The indexes on event_rows in schema.sql's index part, one line each: neither mode lets SQLite
 * build them (the store has its own; a plain table's is written as pages). They are blanked in
 * sql; with `taken`, a copy of them is returned there (malloc'd). 0, or -1 out of memory. */
static int take_event_row_indexes(char *sql, char **taken) {
    char *out = taken ? calloc(1, strlen(sql) + 1) : NULL;
    if (taken && !(*taken = out))
        return -1;
    for (char *idx = strstr(sql, "CREATE INDEX "); idx; idx = strstr(idx + 1, "CREATE INDEX ")) {
        char *eol = strchr(idx, '\n');
        char *on = strstr(idx, " ON event_rows ");
        size_t len = eol ? (size_t)(eol - idx) : strlen(idx);
        if (!on || (eol && on > eol))
            continue;
        if (out) {
            strncat(out, idx, len);
            strcat(out, "\n");
        }
        memset(idx, ' ', len);
    }
    return 0;
}

/* Opens a database the writer fills: a fresh empty file only this process writes. */
static int open_fresh(const char *path, sqlite3 **db, char *err, size_t errlen) {
    if (sqlite3_open_v2(path, db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX,
                        NULL) == SQLITE_OK)
        return 0;
    snprintf(err, errlen, "cannot create database %s: %s", path,
             *db ? sqlite3_errmsg(*db) : "out of memory");
    sqlite3_close(*db);
    *db = NULL;
    return -1;
}

db_writer *db_writer_open_discard(void) {
    db_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    pthread_mutex_init(&w->queue_lock, NULL);
    pthread_cond_init(&w->queue_changed, NULL);
    w->tmp_fd = w->staging_fd = -1;
    w->discard = 1;
    return w;
}

db_writer *db_writer_open(const char *path, db_writer_events events, char *err, size_t errlen) {
    return db_writer_open_mode(path, events, 0666, err, errlen);
}

db_writer *db_writer_open_mode(const char *path, db_writer_events events, int mode, char *err,
                               size_t errlen) {
    if (db_file_replaceable(path, err, errlen) != 0)
        return NULL;
    if (event_store_register() != SQLITE_OK) {
        snprintf(err, errlen, "cannot register the event store with SQLite");
        return NULL;
    }
    db_writer *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&w->queue_lock, NULL);
    pthread_cond_init(&w->queue_changed, NULL);
    w->tmp_fd = w->staging_fd = -1;
    w->path = strdup(path);
    size_t n = strlen(path) + 48;
    w->tmp_path = malloc(n);
    w->staging_path = malloc(n);
    if (!w->path || !w->tmp_path || !w->staging_path) {
        snprintf(err, errlen, "out of memory");
        free_writer(w);
        return NULL;
    }
    /* The file under its temporary name, and table mode's staging database: new files of this
     * process's, locked while it has them (what a kill leaves, the next build removes). */
    if ((w->tmp_fd = db_file_temp(path, "", mode, w->tmp_path, n, err, errlen)) < 0 ||
        (events == DB_EVENTS_TABLE &&
         (w->staging_fd = db_file_temp(path, ".staging", 0600, w->staging_path, n, err, errlen)) <
             0)) {
        drop_temp(w->tmp_path, &w->tmp_fd);
        free_writer(w);
        return NULL;
    }
    w->events = events;
    /* A fresh file that only this process writes: no journal, no syncs
     * until the end, big pages and cache for the bulk load. 64 KiB pages:
     * 10-15 % faster imports than 4 KiB here (dev-2c, 2026-11-22, 3 M
     * events, alternating runs). */
    const char *setup =
        "PRAGMA page_size=65536; PRAGMA journal_mode=OFF;"
        "PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
        "PRAGMA cache_size=-4096; PRAGMA temp_store=MEMORY;" /* 4 MiB: measured fastest */;
    char *schema = db_sql_expand(schema_sql_text); /* {op:alloc} -> 0 (gmt_vocab.h) */
    if (schema && events == DB_EVENTS_STORE) {
        char *stored = store_schema(schema);
        free(schema);
        schema = stored;
    }
    char *mark = schema ? strstr(schema, INDEX_MARK) : NULL;
    char *event_indexes = NULL;
    if (!schema || !mark ||
        (events == DB_EVENTS_TABLE && take_event_row_indexes(mark, &event_indexes) != 0)) {
        snprintf(err, errlen, "%s",
                 schema && !mark
                     ? "schema.sql has no index part"
                     : "out of memory (or a bad {word} in schema.sql, or its event_rows "
                       "is not the event store's)");
        free(schema);
        free_writer(w);
        return NULL;
    }
    *mark = 0;                       /* tables and views only; the indexes come after the load */
    if (events == DB_EVENTS_TABLE) { /* a plain event_rows: the store's chunks beside it */
        char *with_chunks = malloc(strlen(schema) + strlen(event_store_tables_sql) + 1);
        if (with_chunks)
            strcat(strcpy(with_chunks, schema), event_store_tables_sql);
        free(schema);
        schema = with_chunks;
    }
    /* Table mode: the file with event_rows empty, for its pages; the rest goes to staging. */
    const char *db_path = events == DB_EVENTS_TABLE ? w->staging_path : w->tmp_path;
    if (events == DB_EVENTS_TABLE) {
        w->table = schema
                       ? event_table_create(w->tmp_path, setup, schema, event_indexes, err, errlen)
                       : NULL;
        if (!schema)
            snprintf(err, errlen, "out of memory");
    }
    free(event_indexes);
    if ((events == DB_EVENTS_TABLE && !w->table) || open_fresh(db_path, &w->db, err, errlen) != 0) {
        free(schema);
        close_db(w);
        drop_temp(w->tmp_path, &w->tmp_fd);
        drop_temp(w->staging_path, &w->staging_fd);
        free_writer(w);
        return NULL;
    }
    db_profile_if_asked(w->db);
    int ok = sqlite3_exec(w->db, setup, NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_exec(w->db, schema, NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_exec(w->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
    free(schema);
    for (int i = 0; ok && i < ST_COUNT; i++)
        ok = sqlite3_prepare_v3(w->db, statement_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &w->st[i],
                                NULL) == SQLITE_OK;
    char why[256] = "";
    if (ok &&
        !(w->store = event_store_writer_new(w->db, events == DB_EVENTS_STORE, why, sizeof why)))
        ok = 0;
    if (ok && w->table)
        event_store_writer_send_pairs(w->store, event_table_pairs, w->table);
    ok = ok && start_event_thread(w) == 0;
    if (!ok) {
        snprintf(err, errlen, "creating database %s: %s", db_path,
                 why[0] ? why : sqlite3_errmsg(w->db));
        close_db(w);
        drop_temp(w->tmp_path, &w->tmp_fd);
        drop_temp(w->staging_path, &w->staging_fd);
        free_writer(w);
        return NULL;
    }
    return w;
}

static int hand_over(db_writer *w);

/* The other rows: the caller fills a pending_row (begin, row_int/row_text),
 * row_done queues it with the batch. */
static pending_row *begin(db_writer *w, enum statement which) {
    if (w->discard)
        return NULL;
    event_batch *b = w->filling;
    if (b->others_len == b->others_cap) {
        size_t cap = b->others_cap ? b->others_cap * 2 : 64;
        pending_row *grown = realloc(b->others, cap * sizeof *grown);
        if (!grown)
            return NULL;
        b->others = grown;
        b->others_cap = cap;
    }
    pending_row *r = &b->others[b->others_len];
    memset(r, 0, sizeof *r);
    r->which = (uint8_t)which;
    return r;
}

static void row_int(pending_row *r, int i, int64_t v) {
    if (!r)
        return;
    r->v[i] = v;
    if (i > r->n)
        r->n = (uint8_t)i;
}

static void row_text(pending_row *r, int i, const char *s) {
    if (!r)
        return;
    r->is_text[i] = 1;
    r->s[i] = s ? strdup(s) : NULL;
    r->lost |= s && !r->s[i];
    if (i > r->n)
        r->n = (uint8_t)i;
}

static int row_done(db_writer *w, pending_row *r) {
    if (w->discard)
        return 0;
    if (r && r->lost) { /* not queued: its copies go now */
        for (int p = 0; p <= r->n; p++)
            free(r->s[p]);
        r = NULL;
    }
    if (!r) {
        w->rows_lost = 1;
        return fail(w, "out of memory");
    }
    event_batch *b = w->filling;
    b->others_len++;
    if (b->others_len >= OTHERS_PER_BATCH)
        return hand_over(w);
    return w->thread_failed ? -1 : 0;
}

static int run_pending(db_writer *w, const pending_row *r) {
    sqlite3_stmt *st = w->st[r->which];
    for (int i = 1; i <= r->n; i++) {
        if (r->is_text[i] == 2 && r->s[i]) /* a blob: its length is in v */
            sqlite3_bind_blob(st, i, r->s[i], (int)r->v[i], SQLITE_STATIC);
        else if (r->is_text[i] && r->s[i])
            sqlite3_bind_text(st, i, r->s[i], -1, SQLITE_STATIC);
        else if (r->is_text[i] || r->v[i] == DB_NULL)
            sqlite3_bind_null(st, i);
        else
            sqlite3_bind_int64(st, i, r->v[i]);
    }
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE)
        return fail(w, "database %s: insert: %s", w->path, sqlite3_errmsg(w->db));
    return 0;
}

/* Inserts a batch: its event rows (a chunk of the store, and in table mode pages), then its
 * other rows. */
static int insert_batch(db_writer *w, event_batch *b) {
    if (b->len) {
        char why[256];
        const int64_t(*rows)[EVENT_STORE_NCOLS] = (const int64_t(*)[EVENT_STORE_NCOLS])b->rows;
        if (event_store_write_chunk(w->store, rows, b->len, why, sizeof why) != 0 ||
            (w->table && event_table_rows(w->table, rows, b->len, why, sizeof why) != 0))
            return fail(w, "database %s: %s", w->path, why);
    }
    int failed = 0;
    for (size_t k = 0; k < b->others_len; k++) {
        if (!failed && run_pending(w, &b->others[k]) != 0)
            failed = 1;
        for (int p = 0; p <= b->others[k].n; p++)
            free(b->others[k].s[p]);
    }
    b->others_len = 0;
    return failed ? -1 : 0;
}

static void *event_thread(void *arg) {
    db_writer *w = arg;
    pthread_setname_np(pthread_self(), "gmt-sqlite"); /* for perf and top */
    for (;;) {
        pthread_mutex_lock(&w->queue_lock);
        while (!w->full_len && !w->stopping)
            pthread_cond_wait(&w->queue_changed, &w->queue_lock);
        if (!w->full_len) {
            pthread_mutex_unlock(&w->queue_lock);
            return NULL;
        }
        event_batch *b = w->full[w->full_head];
        w->full_head = (w->full_head + 1) % QUEUE_BATCHES;
        w->full_len--;
        pthread_mutex_unlock(&w->queue_lock);

        int failed = insert_batch(w, b) != 0;
        pthread_mutex_lock(&w->queue_lock);
        if (failed)
            w->thread_failed = 1;
        b->len = 0;
        b->others_len = 0;
        w->spare[w->spare_len++] = b;
        pthread_cond_broadcast(&w->queue_changed);
        pthread_mutex_unlock(&w->queue_lock);
    }
}

/* Queues the filling batch and takes an empty one (waiting while the
 * event thread is behind: the queue is bounded). */
static int hand_over(db_writer *w) {
    pthread_mutex_lock(&w->queue_lock);
    while (w->full_len == QUEUE_BATCHES || !w->spare_len)
        pthread_cond_wait(&w->queue_changed, &w->queue_lock);
    w->full[(w->full_head + w->full_len) % QUEUE_BATCHES] = w->filling;
    w->full_len++;
    w->filling = w->spare[--w->spare_len];
    int failed = w->thread_failed;
    pthread_cond_broadcast(&w->queue_changed);
    pthread_mutex_unlock(&w->queue_lock);
    return failed ? -1 : 0;
}

int db_writer_event(db_writer *w, const db_event_row *r) {
    if (w->discard)
        return 0;
    w->filling->rows[w->filling->len++] = *r;
    if (w->filling->len == BATCH_ROWS)
        return hand_over(w);
    return 0;
}

int db_writer_segment(db_writer *w, const db_segment_row *r) {
    pending_row *st = begin(w, ST_SEGMENT);
    row_int(st, 1, r->segment_id);
    row_int(st, 2, r->device);
    row_text(st, 3, r->kind);
    const int64_t v[] = {r->addr,
                         r->size,
                         r->requested_size,
                         r->stream,
                         r->pool,
                         r->mapped,
                         r->whole_block,
                         r->tid,
                         r->alloc_ts_ns,
                         r->free_ts_ns,
                         r->free_event_id,
                         r->stack_id,
                         r->driver_stack_id,
                         r->free_stack_id};
    for (int i = 0; i < (int)(sizeof v / sizeof v[0]); i++)
        row_int(st, i + 4, v[i]);
    return row_done(w, st);
}

int db_writer_marker(db_writer *w, const db_marker_row *r) {
    pending_row *st = begin(w, ST_MARKER);
    row_int(st, 1, r->marker_id);
    row_int(st, 2, r->ts_ns);
    row_int(st, 3, r->tid);
    row_text(st, 4, r->kind);
    row_text(st, 5, r->name);
    row_text(st, 6, r->domain);
    row_int(st, 7, r->begin_marker_id);
    return row_done(w, st);
}

int db_writer_tensor_name(db_writer *w, int64_t alloc_id, const char *name, const char *category,
                          int64_t tensors, int64_t ts_ns) {
    pending_row *st = begin(w, ST_TENSOR_NAME);
    row_int(st, 1, alloc_id);
    row_text(st, 2, name);
    row_text(st, 3, category);
    row_int(st, 4, tensors);
    row_int(st, 5, ts_ns);
    return row_done(w, st);
}

int db_writer_step(db_writer *w, const db_step_row *r) {
    pending_row *st = begin(w, ST_STEP);
    row_int(st, 1, r->step);
    row_text(st, 2, r->name);
    row_int(st, 3, r->begin_ts_ns);
    row_int(st, 4, r->end_ts_ns);
    row_int(st, 5, r->begin_event_id);
    row_int(st, 6, r->end_event_id);
    return row_done(w, st);
}

int db_writer_device(db_writer *w, const db_device_row *r) {
    pending_row *st = begin(w, ST_DEVICE);
    row_int(st, 1, r->device);
    row_text(st, 2, r->name);
    const int64_t v[] = {r->total_bytes,
                         r->peak_allocated_bytes,
                         r->peak_allocated_event_id,
                         r->peak_reserved_bytes,
                         r->peak_reserved_event_id,
                         r->peak_requested_bytes,
                         r->peak_requested_event_id,
                         r->peak_segments,
                         r->allocs,
                         r->frees,
                         r->cache_allocs,
                         r->cache_misses,
                         r->ooms,
                         r->alloc_failed};
    for (int i = 0; i < (int)(sizeof v / sizeof v[0]); i++)
        row_int(st, i + 3, v[i]);
    return row_done(w, st);
}

static int insert_ints(db_writer *w, enum statement which, const int64_t *v, int n) {
    pending_row *st = begin(w, which);
    for (int i = 0; i < n; i++)
        row_int(st, i + 1, v[i]);
    return row_done(w, st);
}

int db_writer_site(db_writer *w, int64_t device, int64_t stack_id, int64_t peak_bytes,
                   int64_t peak_blocks, int64_t end_bytes, int64_t end_blocks,
                   int64_t never_freed_count, int64_t never_freed_bytes) {
    const int64_t v[] = {device,    stack_id,   peak_bytes,        peak_blocks,
                         end_bytes, end_blocks, never_freed_count, never_freed_bytes};
    return insert_ints(w, ST_SITE, v, 8);
}

int db_writer_site_step(db_writer *w, int64_t device, int64_t stack_id, int64_t end_event_id,
                        int64_t delta_bytes, int64_t live_bytes) {
    const int64_t v[] = {device, stack_id, end_event_id, delta_bytes, live_bytes};
    return insert_ints(w, ST_SITE_STEP, v, 5);
}

int db_writer_site_bucket(db_writer *w, int64_t device, int64_t bucket_ns, int64_t bucket,
                          int64_t stack_id, int64_t live_bytes, int64_t peak_live_bytes) {
    const int64_t v[] = {device, bucket_ns, bucket, stack_id, live_bytes, peak_live_bytes};
    return insert_ints(w, ST_SITE_BUCKET, v, 6);
}

int db_writer_site_level(db_writer *w, int64_t device, int64_t width, int64_t chunk,
                         int64_t stack_id, int64_t blocks, int64_t bytes) {
    const int64_t v[] = {device, width, chunk, stack_id, blocks, bytes};
    return insert_ints(w, ST_SITE_LEVEL, v, 6);
}

int db_writer_series_level(db_writer *w, int64_t device, int64_t by, int64_t event_id, int64_t rank,
                           int64_t key, int64_t bytes) {
    const int64_t v[] = {device, by, event_id, rank, key, bytes};
    return insert_ints(w, ST_SERIES_LEVEL, v, 6);
}

int db_writer_series_delta(db_writer *w, int64_t device, int64_t by, int64_t event_id,
                           int64_t entry, int64_t key, int64_t bytes) {
    const int64_t v[] = {device, by, event_id, entry, key, bytes};
    return insert_ints(w, ST_SERIES_DELTA, v, 6);
}

int db_writer_heat_row(db_writer *w, int64_t device, int64_t bucket_ns, int64_t bucket,
                       const float *fractions, size_t n) {
    pending_row *st = begin(w, ST_HEAT_ROW);
    row_int(st, 1, device);
    row_int(st, 2, bucket_ns);
    row_int(st, 3, bucket);
    if (st) { /* x86 and arm64 are little-endian: the floats' bytes are the blob */
        st->is_text[4] = 2;
        st->v[4] = (int64_t)(n * sizeof *fractions);
        st->s[4] = malloc(n * sizeof *fractions);
        if (st->s[4])
            memcpy(st->s[4], fractions, n * sizeof *fractions);
        st->lost |= n && !st->s[4];
        st->n = 4;
    }
    return row_done(w, st);
}

int db_writer_step_end(db_writer *w, int64_t device, int64_t end_event_id, int64_t event_id,
                       int64_t ts_ns, int64_t allocated, int64_t requested, int64_t reserved,
                       int64_t largest_free) {
    const int64_t v[] = {device,    end_event_id, event_id, ts_ns,
                         allocated, requested,    reserved, largest_free};
    return insert_ints(w, ST_STEP_END, v, 8);
}

int db_writer_free_split(db_writer *w, int64_t device, int64_t event_id, int64_t reserved,
                         int64_t allocated, int64_t releasable) {
    const int64_t v[] = {device,    event_id,   reserved,
                         allocated, releasable, reserved - allocated - releasable};
    return insert_ints(w, ST_FREE_SPLIT, v, 6);
}

int db_writer_live_at_end(db_writer *w, int64_t alloc_id, int64_t device, int64_t addr,
                          int64_t size, int64_t requested, int64_t stream, int64_t stack_id,
                          int64_t segment_id, int64_t pending) {
    const int64_t v[] = {alloc_id, device,   addr,       size,   requested,
                         stream,   stack_id, segment_id, pending};
    return insert_ints(w, ST_LIVE_END, v, 9);
}

int db_writer_largest(db_writer *w, int64_t device, int64_t alloc_id, int64_t size,
                      int64_t stack_id) {
    const int64_t v[] = {device, alloc_id, size, stack_id};
    return insert_ints(w, ST_LARGEST, v, 4);
}

int db_writer_bucket(db_writer *w, const db_bucket_row *r) {
    pending_row *st = begin(w, ST_BUCKET);
    const int64_t v[] = {r->device,        r->bucket_ns,    r->bucket,        r->first_event_id,
                         r->last_event_id, r->events,       r->min_allocated, r->max_allocated,
                         r->min_reserved,  r->max_reserved, r->max_requested, r->min_largest_free,
                         r->end_allocated, r->end_reserved};
    for (int i = 0; i < (int)(sizeof v / sizeof v[0]); i++)
        row_int(st, i + 1, v[i]);
    return row_done(w, st);
}

int db_writer_level(db_writer *w, const db_level_row *r) {
    const int64_t v[] = {r->device,         r->bucket_ns,     r->bucket,
                         r->first_event_id, r->last_event_id, r->events,
                         r->min_allocated,  r->max_allocated, r->max_allocated_event_id,
                         r->ooms,           r->min_reserved,  r->max_reserved,
                         r->end_allocated,  r->end_reserved};
    return insert_ints(w, ST_LEVEL, v, 14);
}

int db_writer_counter(db_writer *w, int64_t ts_ns, int64_t event_id, int64_t device,
                      const char *kind, int64_t pool, int64_t value) {
    pending_row *st = begin(w, ST_COUNTER);
    row_int(st, 1, ts_ns);
    row_int(st, 2, event_id);
    row_int(st, 3, device);
    row_text(st, 4, kind);
    row_int(st, 5, pool);
    row_int(st, 6, value);
    return row_done(w, st);
}

int db_writer_frame(db_writer *w, int64_t frame_id, const char *name, const char *file,
                    int64_t line, const char *module, int64_t ip, int64_t inlined_into) {
    pending_row *st = begin(w, ST_FRAME);
    row_int(st, 1, frame_id);
    row_text(st, 2, name);
    row_text(st, 3, file);
    row_int(st, 4, line);
    row_text(st, 5, module);
    row_int(st, 6, ip);
    row_int(st, 7, inlined_into != DB_NULL);
    row_int(st, 8, inlined_into);
    return row_done(w, st);
}

int db_writer_stack(db_writer *w, int64_t stack_id, int64_t parent_id, int64_t frame_id) {
    pending_row *st = begin(w, ST_STACK);
    row_int(st, 1, stack_id);
    row_int(st, 2, parent_id);
    row_int(st, 3, frame_id);
    return row_done(w, st);
}

int db_writer_module(db_writer *w, int64_t module_id, const char *path, const char *build_id,
                     int64_t load_base) {
    pending_row *st = begin(w, ST_MODULE);
    row_int(st, 1, module_id);
    row_text(st, 2, path);
    row_text(st, 3, build_id);
    row_int(st, 4, load_base);
    return row_done(w, st);
}

int db_writer_warning(db_writer *w, int64_t event_id, const char *code, const char *message) {
    pending_row *st = begin(w, ST_WARNING);
    row_int(st, 1, event_id);
    row_text(st, 2, code);
    row_text(st, 3, message);
    return row_done(w, st);
}

int db_writer_unrecorded_call(db_writer *w, int64_t call_id, const char *name, int64_t calls,
                              int64_t bytes) {
    pending_row *st = begin(w, ST_UNRECORDED);
    row_int(st, 1, call_id);
    row_text(st, 2, name);
    row_int(st, 3, calls);
    row_int(st, 4, bytes);
    return row_done(w, st);
}

int db_writer_meta_int(db_writer *w, const char *key, int64_t value) {
    pending_row *st = begin(w, ST_META);
    row_text(st, 1, key);
    row_int(st, 2, value);
    return row_done(w, st);
}

int db_writer_meta_text(db_writer *w, const char *key, const char *value) {
    pending_row *st = begin(w, ST_META);
    row_text(st, 1, key);
    row_text(st, 2, value);
    return row_done(w, st);
}

int db_writer_finish(db_writer *w, char *err, size_t errlen) {
    char *indexes = db_sql_expand(strstr(schema_sql_text, INDEX_MARK));
    int rc = indexes && take_event_row_indexes(indexes, NULL) == 0
                 ? 0
                 : fail_sqlite(w, "expanding the index part of schema.sql");
    if ((w->filling->len || w->filling->others_len) && hand_over(w) != 0)
        rc = -1;
    stop_thread(w);
    if (w->thread_failed || w->rows_lost)
        rc = -1;
    char why[512];
    event_store_writer *store = w->store;
    w->store = NULL;
    if (rc != 0)
        event_store_writer_free(store); /* the event thread's error is in w->error */
    else if (store && event_store_writer_finish(store, why, sizeof why) != 0)
        rc = fail(w, "database %s: %s", w->path, why);
    else if (sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = fail_sqlite(w, "commit");
    finalize_statements(w);
    if (rc == 0 && w->table) { /* the staging database is complete: into the file with it */
        if (sqlite3_close(w->db) != SQLITE_OK)
            rc = fail(w, "database %s: closing the staging database failed", w->path);
        w->db = NULL;
        if (rc == 0 && event_table_finish(w->table, w->staging_path, &w->db, why, sizeof why))
            rc = fail(w, "database %s: %s", w->path, why);
        w->table = NULL;
        drop_temp(w->staging_path, &w->staging_fd);
    }
    /* The index build sorts every row; what the sort does not hold in
     * its cache-sized buffer spills into temporary storage, which in memory
     * (temp_store=MEMORY, right for the load) grew the process by ~24 bytes
     * per event (2.37 GB at 100 M events, when event_rows had SQLite's index).
     * In a temporary file it stays flat and builds no slower (bench/README.md). */
    if (rc == 0 && sqlite3_exec(w->db, "PRAGMA temp_store=FILE", NULL, NULL, NULL) != SQLITE_OK)
        rc = fail_sqlite(w, "temporary storage for the indexes");
    else if (rc == 0 && sqlite3_exec(w->db, indexes, NULL, NULL, NULL) != SQLITE_OK)
        rc = fail_sqlite(w, "building indexes");
    else if (rc == 0 && sqlite3_exec(w->db, "PRAGMA optimize;", NULL, NULL, NULL) != SQLITE_OK)
        rc = fail_sqlite(w, "optimize");
    free(indexes);
    if (sqlite3_close(w->db) != SQLITE_OK && rc == 0)
        rc = fail(w, "database %s: close failed", w->path);
    w->db = NULL;
    if (rc == 0 && w->before_rename) {
        if ((rc = w->before_rename(w->tmp_path, w->before_rename_ctx, why, sizeof why)) != 0)
            fail(w, "%s", why);
    }
    if (rc == 0)
        gmt_kill_point("rename"); /* complete under its temporary name */
    if (rc == 0 && db_file_publish(w->tmp_path, w->path, why, sizeof why) != 0)
        rc = fail(w, "%s", why);
    if (rc != 0) {
        snprintf(err, errlen, "%s", w->error);
        event_table_abort(w->table);
        w->table = NULL;
        drop_temp(w->tmp_path, &w->tmp_fd);
        drop_temp(w->staging_path, &w->staging_fd);
    }
    free_writer(w);
    return rc;
}

void db_writer_before_rename(db_writer *w,
                             int (*hook)(const char *path, void *ctx, char *err, size_t errlen),
                             void *ctx) {
    w->before_rename = hook;
    w->before_rename_ctx = ctx;
}

void db_writer_abort(db_writer *w) {
    if (!w)
        return;
    if (w->discard) {
        free_writer(w);
        return;
    }
    close_db(w);
    drop_temp(w->tmp_path, &w->tmp_fd);
    drop_temp(w->staging_path, &w->staging_fd);
    free_writer(w);
}

const char *db_writer_error(const db_writer *w) { return w->error; }
