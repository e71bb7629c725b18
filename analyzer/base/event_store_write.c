/* event_store_write.c — chunks of events into event_chunks, and the alloc_event_id index into
 * event_ends (see event_store.h).
 *
 * The index is the one thing that cannot be written as the events come: it is ordered by the
 * alloc an event ends, and frees come in any order. Its pairs are gathered in sorted runs of
 * RUN_PAIRS (spilled to a temporary file, so memory stays flat however long the trace) and
 * merged at the end. */
#include "event_store.h"

#include "event_store_chunk.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define RUN_PAIRS (1u << 20) /* 16 MiB of pairs in memory at most */
#define ZSTD_LEVEL 1         /* bench/README.md: level 1 against negative levels */
#define MERGE_BUFFER 1024    /* pairs read from a run at a time: 16 KiB per run */

#define STORE_TABLES_SQL                                                                           \
    "CREATE TABLE event_chunks (chunk INTEGER PRIMARY KEY, first_event_id INTEGER NOT NULL,"       \
    " last_event_id INTEGER NOT NULL, rows INTEGER NOT NULL, raw_bytes INTEGER NOT NULL,"          \
    " data BLOB NOT NULL);\n"                                                                      \
    "CREATE TABLE event_ends (part INTEGER PRIMARY KEY, first_alloc_event_id INTEGER NOT NULL,"    \
    " pairs INTEGER NOT NULL, data BLOB NOT NULL);\n"

const char event_store_tables_sql[] = STORE_TABLES_SQL;
const char event_store_schema_sql[] =
    STORE_TABLES_SQL "CREATE VIRTUAL TABLE event_rows USING gmt_event_rows;\n";

struct event_store_writer {
    sqlite3 *db;
    sqlite3_stmt *put_chunk, *put_end;
    ZSTD_CCtx *cctx;
    uint8_t *raw, *packed;
    size_t packed_cap;
    int64_t chunks, parts, last_event_id;
    int have_rows;
    int alloc_index;            /* 0: no event_ends (a plain event_rows has its own index) */
    event_store_pair_sink sink; /* the pairs go there instead of event_ends */
    void *sink_ctx;
    store_end_pair *pairs; /* the run being gathered */
    size_t npairs, run_pairs;
    FILE *runs; /* sorted runs, one after another */
    size_t *run_len;
    size_t nruns, runs_cap;
};

static int fail(char *err, size_t errlen, const char *what, sqlite3 *db) {
    snprintf(err, errlen, "event store: %s%s%s", what, db ? ": " : "",
             db ? sqlite3_errmsg(db) : "");
    return -1;
}

void event_store_writer_free(event_store_writer *w) {
    if (!w)
        return;
    sqlite3_finalize(w->put_chunk);
    sqlite3_finalize(w->put_end);
    ZSTD_freeCCtx(w->cctx);
    free(w->raw);
    free(w->packed);
    free(w->pairs);
    free(w->run_len);
    if (w->runs)
        fclose(w->runs);
    free(w);
}

event_store_writer *event_store_writer_new(sqlite3 *db, int alloc_index, char *err, size_t errlen) {
    event_store_writer *w = calloc(1, sizeof *w);
    if (!w) {
        fail(err, errlen, "out of memory", NULL);
        return NULL;
    }
    w->db = db;
    size_t raw_cap = chunk_encoded_bound(EVENT_STORE_CHUNK_ROWS);
    if (ends_encoded_bound(STORE_END_PART_PAIRS) > raw_cap)
        raw_cap = ends_encoded_bound(STORE_END_PART_PAIRS);
    w->packed_cap = ZSTD_compressBound(raw_cap);
    w->raw = malloc(raw_cap);
    w->packed = malloc(w->packed_cap);
    w->run_pairs = RUN_PAIRS;
    w->alloc_index = alloc_index;
    w->pairs = alloc_index ? malloc(RUN_PAIRS * sizeof *w->pairs) : NULL;
    w->cctx = ZSTD_createCCtx();
    if (!w->raw || !w->packed || (alloc_index && !w->pairs) || !w->cctx) {
        fail(err, errlen, "out of memory", NULL);
        event_store_writer_free(w);
        return NULL;
    }
    if (sqlite3_prepare_v3(db, "INSERT INTO event_chunks VALUES (?,?,?,?,?,?)", -1,
                           SQLITE_PREPARE_PERSISTENT, &w->put_chunk, NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(db, "INSERT INTO event_ends VALUES (?,?,?,?)", -1,
                           SQLITE_PREPARE_PERSISTENT, &w->put_end, NULL) != SQLITE_OK) {
        fail(err, errlen, "preparing", db);
        event_store_writer_free(w);
        return NULL;
    }
    return w;
}

void event_store_writer_set_run_pairs(event_store_writer *w, size_t pairs) {
    if (pairs >= 1 && pairs <= RUN_PAIRS)
        w->run_pairs = pairs;
}

int event_store_writer_send_pairs(event_store_writer *w, event_store_pair_sink sink, void *ctx) {
    if (!w->pairs && !(w->pairs = malloc(RUN_PAIRS * sizeof *w->pairs)))
        return -1;
    w->alloc_index = 1;
    w->sink = sink;
    w->sink_ctx = ctx;
    return 0;
}

_Static_assert(sizeof(store_end_pair) == 2 * sizeof(int64_t) &&
                   offsetof(store_end_pair, event_id) == sizeof(int64_t),
               "a pair is the sink's int64_t[2]: (alloc_event_id, event_id)");

static int compare_pairs(const void *a, const void *b) {
    const store_end_pair *x = a, *y = b;
    if (x->alloc_event_id != y->alloc_event_id)
        return x->alloc_event_id < y->alloc_event_id ? -1 : 1;
    return (x->event_id > y->event_id) - (x->event_id < y->event_id);
}

/* The runs' file: beside the database (the cache directory, or import -o's destination, which
 * have room for the database itself), not in /tmp, which may be a small tmpfs (~16 B per free:
 * 0.8 GB at 100 M events). Unlinked at once: it vanishes with the process. */
static FILE *open_runs_file(sqlite3 *db) {
    const char *db_path = sqlite3_db_filename(db, "main");
    if (!db_path || !db_path[0])
        return tmpfile(); /* an in-memory database */
    size_t n = strlen(db_path) + 32;
    char *path = malloc(n);
    if (!path)
        return NULL;
    snprintf(path, n, "%s", db_path);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, n - (size_t)(slash ? slash + 1 - path : 0),
             ".gmt-index-XXXXXX");
    int fd = mkstemp(path);
    FILE *f = NULL;
    if (fd >= 0) {
        unlink(path);
        if (!(f = fdopen(fd, "w+b")))
            close(fd);
    }
    free(path);
    return f;
}

/* Sorts the run in memory and appends it to the runs file. */
static int spill_run(event_store_writer *w, char *err, size_t errlen) {
    if (!w->npairs)
        return 0;
    qsort(w->pairs, w->npairs, sizeof *w->pairs, compare_pairs);
    if (!w->runs && !(w->runs = open_runs_file(w->db)))
        return fail(err, errlen, "cannot create a temporary file for the index", NULL);
    if (w->nruns == w->runs_cap) {
        size_t cap = w->runs_cap ? 2 * w->runs_cap : 16;
        size_t *grown = realloc(w->run_len, cap * sizeof *grown);
        if (!grown)
            return fail(err, errlen, "out of memory", NULL);
        w->run_len = grown;
        w->runs_cap = cap;
    }
    if (fwrite(w->pairs, sizeof *w->pairs, w->npairs, w->runs) != w->npairs)
        return fail(err, errlen, "writing the index's temporary file (disk full?)", NULL);
    w->run_len[w->nruns++] = w->npairs;
    w->npairs = 0;
    return 0;
}

int event_store_write_chunk(event_store_writer *w, const int64_t (*rows)[EVENT_STORE_NCOLS],
                            size_t n, char *err, size_t errlen) {
    if (n == 0 || n > EVENT_STORE_CHUNK_ROWS)
        return fail(err, errlen, "bad chunk size", NULL);
    for (size_t i = 0; i < n; i++) {
        int64_t id = rows[i][EVENT_COL_event_id];
        if (w->have_rows && id <= w->last_event_id)
            return fail(err, errlen, "events out of order", NULL);
        w->last_event_id = id;
        w->have_rows = 1;
        int64_t alloc = rows[i][EVENT_COL_alloc_event_id];
        if (alloc == EVENT_STORE_NULL || !w->alloc_index)
            continue;
        if (w->npairs >= w->run_pairs && spill_run(w, err, errlen) != 0)
            return -1;
        w->pairs[w->npairs++] = (store_end_pair){alloc, id};
    }
    size_t raw_len = chunk_encode(rows, n, w->raw);
    size_t packed =
        ZSTD_compressCCtx(w->cctx, w->packed, w->packed_cap, w->raw, raw_len, ZSTD_LEVEL);
    if (ZSTD_isError(packed))
        return fail(err, errlen, ZSTD_getErrorName(packed), NULL);
    sqlite3_stmt *st = w->put_chunk;
    sqlite3_bind_int64(st, 1, w->chunks++);
    sqlite3_bind_int64(st, 2, rows[0][EVENT_COL_event_id]);
    sqlite3_bind_int64(st, 3, rows[n - 1][EVENT_COL_event_id]);
    sqlite3_bind_int64(st, 4, (int64_t)n);
    sqlite3_bind_int64(st, 5, (int64_t)raw_len);
    sqlite3_bind_blob(st, 6, w->packed, (int)packed, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : fail(err, errlen, "writing a chunk", w->db);
}

static int put_part(event_store_writer *w, const store_end_pair *pairs, size_t n, char *err,
                    size_t errlen) {
    if (w->sink)
        return w->sink(w->sink_ctx, (const int64_t(*)[2])pairs, n, err, errlen);
    size_t len = ends_encode(pairs, n, w->raw);
    sqlite3_stmt *st = w->put_end;
    sqlite3_bind_int64(st, 1, w->parts++);
    sqlite3_bind_int64(st, 2, pairs[0].alloc_event_id);
    sqlite3_bind_int64(st, 3, (int64_t)n);
    sqlite3_bind_blob(st, 4, w->raw, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : fail(err, errlen, "writing the index", w->db);
}

/* A run being merged: a window of it in memory. */
typedef struct run_reader {
    long offset; /* in pairs, of the window's start in the runs file */
    size_t left; /* pairs of the run not yet read into the window */
    store_end_pair buf[MERGE_BUFFER];
    size_t at, len;
} run_reader;

static int run_fill(FILE *f, run_reader *r) {
    size_t n = r->left < MERGE_BUFFER ? r->left : MERGE_BUFFER;
    r->at = 0;
    r->len = 0;
    if (!n)
        return 0;
    if (fseek(f, r->offset * (long)sizeof(store_end_pair), SEEK_SET) != 0 ||
        fread(r->buf, sizeof(store_end_pair), n, f) != n)
        return -1;
    r->offset += (long)n;
    r->left -= n;
    r->len = n;
    return 0;
}

/* Keeps heap[0] the run with the smallest next pair. */
static void sift_down(run_reader **heap, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && compare_pairs(&heap[l]->buf[heap[l]->at], &heap[m]->buf[heap[m]->at]) < 0)
            m = l;
        if (l + 1 < n &&
            compare_pairs(&heap[l + 1]->buf[heap[l + 1]->at], &heap[m]->buf[heap[m]->at]) < 0)
            m = l + 1;
        if (m == i)
            return;
        run_reader *t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

static int merge_runs(event_store_writer *w, char *err, size_t errlen) {
    run_reader *runs = calloc(w->nruns, sizeof *runs);
    run_reader **heap = calloc(w->nruns, sizeof *heap);
    store_end_pair *part = malloc(STORE_END_PART_PAIRS * sizeof *part);
    int rc = runs && heap && part ? 0 : fail(err, errlen, "out of memory", NULL);
    size_t n = 0, filled = 0;
    long offset = 0;
    for (size_t i = 0; rc == 0 && i < w->nruns; i++) {
        runs[i].offset = offset;
        runs[i].left = w->run_len[i];
        offset += (long)w->run_len[i];
        if (run_fill(w->runs, &runs[i]) != 0)
            rc = fail(err, errlen, "reading the index's temporary file", NULL);
        else if (runs[i].len)
            heap[n++] = &runs[i];
    }
    for (size_t i = n; i-- > 0;)
        sift_down(heap, n, i);
    while (rc == 0 && n) {
        run_reader *r = heap[0];
        part[filled++] = r->buf[r->at++];
        if (filled == STORE_END_PART_PAIRS) {
            rc = put_part(w, part, filled, err, errlen);
            filled = 0;
        }
        if (r->at == r->len && run_fill(w->runs, r) != 0)
            rc = fail(err, errlen, "reading the index's temporary file", NULL);
        if (r->len == 0)
            heap[0] = heap[--n];
        sift_down(heap, n, 0);
    }
    if (rc == 0 && filled)
        rc = put_part(w, part, filled, err, errlen);
    free(runs);
    free(heap);
    free(part);
    return rc;
}

int event_store_writer_finish(event_store_writer *w, char *err, size_t errlen) {
    int rc = 0;
    if (!w->alloc_index) {
        ;                   /* no index to write */
    } else if (!w->nruns) { /* the whole index fits one run: no file */
        qsort(w->pairs, w->npairs, sizeof *w->pairs, compare_pairs);
        for (size_t i = 0; rc == 0 && i < w->npairs; i += STORE_END_PART_PAIRS) {
            size_t n = w->npairs - i < STORE_END_PART_PAIRS ? w->npairs - i : STORE_END_PART_PAIRS;
            rc = put_part(w, w->pairs + i, n, err, errlen);
        }
    } else {
        rc = spill_run(w, err, errlen);
        if (rc == 0 && fflush(w->runs) != 0)
            rc = fail(err, errlen, "writing the index's temporary file (disk full?)", NULL);
        if (rc == 0)
            rc = merge_runs(w, err, errlen);
    }
    event_store_writer_free(w);
    return rc;
}
