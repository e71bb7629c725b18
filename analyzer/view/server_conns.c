/* server_conns.c — `memanalyze view`'s database connections (server_private.h): each worker
 * thread's read-only connection, blocks index and layout index per input (thread-specific
 * data, opened on the thread's first request for the input, closed by the key's destructor when
 * MHD_stop_daemon ends the thread), and the builder thread that makes each input's blocks index
 * and layout index while the server answers everything else. Only with libmicrohttpd. */
#ifdef GMT_HAVE_MHD

#include "server_private.h"

#include "db_open.h"
#include "event_scan.h"
#include "event_store.h"

#include <stdio.h>
#include <stdlib.h>

/* The worker thread's connections, made on its first request. */
static thread_conns *thread_conns_of(const view_server *s, char *err, size_t errlen) {
    thread_conns *t = pthread_getspecific(s->conns_key);
    if (t)
        return t;
    t = calloc(1, sizeof *t);
    if (t) {
        t->n = s->nsrc;
        t->db = calloc(s->nsrc, sizeof *t->db);
        t->blocks = calloc(s->nsrc, sizeof *t->blocks);
        t->layouts = calloc(s->nsrc, sizeof *t->layouts);
    }
    if (!t || !t->db || !t->blocks || !t->layouts || pthread_setspecific(s->conns_key, t) != 0) {
        if (t) {
            free(t->db);
            free(t->blocks);
            free(t->layouts);
        }
        free(t);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return t;
}

void view_server_close_thread_conns(void *arg) {
    thread_conns *t = arg;
    for (size_t i = 0; i < t->n; i++) {
        view_blocks_index_close(t->blocks[i]);
        if (t->db[i])
            layout_index_use(t->db[i], NULL);
        layout_index_close(t->layouts[i]);
        db_close(t->db[i]);
    }
    free(t->db);
    free(t->blocks);
    free(t->layouts);
    free(t);
}

/* Once input i's layout index is there, the worker's connection to it uses it (layout_index.h):
 * its layouts, windows' categories and stacks start from the checkpoints. Without it (not
 * built yet, or it failed) they are the same answers, from the first row. While the builder
 * has not said, a file already made (a cached one: the builder is still on the blocks index)
 * is used at once, so that a first request does not race the builder into a pass. */
static void use_layouts(const view_server *s, thread_conns *t, size_t i) {
    if (t->layouts[i] || !s->src[i].layouts_path)
        return;
    int state = __atomic_load_n(&s->src[i].layouts_state, __ATOMIC_ACQUIRE);
    if (state == BLOCKS_FAILED)
        return;
    char err[256];
    layout_index *ix =
        state == BLOCKS_READY
            ? layout_index_open(t->db[i], s->src[i].layouts_path, NULL, err, sizeof err)
            : layout_index_open_made(t->db[i], s->src[i].layouts_path);
    if (ix && layout_index_use(t->db[i], ix) != 0) {
        layout_index_close(ix);
        ix = NULL;
    }
    t->layouts[i] = ix;
}

/* The worker thread's connection to input i, opened on its first request for it. */
sqlite3 *view_server_thread_db(const view_server *s, size_t i, char *err, size_t errlen) {
    thread_conns *t = thread_conns_of(s, err, errlen);
    if (!t)
        return NULL;
    if (!t->db[i] && db_open_readonly(s->src[i].db_path, &t->db[i], err, errlen) != 0)
        t->db[i] = NULL;
    if (t->db[i])
        use_layouts(s, t, i);
    return t->db[i];
}

struct view_blocks_index *view_server_blocks(const view_server *s, size_t input, int *status,
                                             char *err, size_t errlen) {
    const source *src = &s->src[input];
    *status = 500;
    thread_conns *t = thread_conns_of(s, err, errlen);
    if (!t)
        return NULL;
    if (t->blocks[input])
        return t->blocks[input];
    if (!src->blocks_path) {
        snprintf(err, errlen, "this server has no blocks index");
        return NULL;
    }
    int state = __atomic_load_n(&src->blocks_state, __ATOMIC_ACQUIRE);
    if (state == BLOCKS_BUILDING) {
        *status = 503;
        snprintf(err, errlen, "the blocks index is being built: ask again in a moment");
        return NULL;
    }
    if (state == BLOCKS_FAILED) {
        snprintf(err, errlen, "%s", src->blocks_err);
        return NULL;
    }
    sqlite3 *db = view_server_thread_db(s, input, err, errlen);
    if (!db)
        return NULL;
    t->blocks[input] = view_blocks_index_open(db, src->blocks_path, NULL, err, errlen);
    return t->blocks[input];
}

static int stopped(const view_server *s) { return __atomic_load_n(&s->stopping, __ATOMIC_RELAXED); }

/* The builder thread: each input's blocks index opened once, input 0 first (built when missing
 * or stale: seconds on a large trace), then each one's layout index, then each device's whole
 * step table (endpoints.h: view_step_table, kept for every thread), so that the server answers
 * everything else meanwhile. A window summary lists its steps from the kept table (~1 ms) once
 * it is there, and reads its own steps' rows until then (step_table_part: 70-200 ms a window at
 * 100 M events, 315 k steps, where the table takes ~3.5 s once). A stop (view_server_stop)
 * ends the build under way at its scan's next batch: its temporary file is removed (db_file.h),
 * and it counts in s->given_up with those not begun. */
void *view_server_build_blocks(void *arg) {
    view_server *s = arg;
    event_store_chunks_uncounted();     /* GMT_CHUNK_COUNT counts what the requests read */
    event_scan_stop_when(&s->stopping); /* a Ctrl-C ends a build at its next batch */
    for (size_t i = 0; i < s->nsrc && !stopped(s); i++) {
        source *src = &s->src[i];
        if (!src->blocks_path)
            continue;
        sqlite3 *db;
        int state = BLOCKS_FAILED;
        if (db_open_readonly(src->db_path, &db, src->blocks_err, sizeof src->blocks_err) == 0) {
            view_blocks_index *ix = view_blocks_index_open(db, src->blocks_path, NULL,
                                                           src->blocks_err, sizeof src->blocks_err);
            if (ix)
                state = BLOCKS_READY;
            else if (stopped(s))
                s->given_up++;
            view_blocks_index_close(ix);
            db_close(db);
        }
        __atomic_store_n(&src->blocks_state, state, __ATOMIC_RELEASE);
    }
    for (size_t i = 0; i < s->nsrc && !stopped(s); i++) {
        source *src = &s->src[i];
        if (!src->layouts_path)
            continue;
        sqlite3 *db;
        char err[512];
        int state = BLOCKS_FAILED;
        layout_index *ix = NULL;
        if (db_open_readonly(src->db_path, &db, err, sizeof err) == 0) {
            ix = layout_index_open(db, src->layouts_path, NULL, err, sizeof err);
            db_close(db);
        }
        if (ix)
            state = BLOCKS_READY;
        else if (stopped(s))
            s->given_up++;
        else
            fprintf(stderr,
                    "memanalyze view: warning: %s: no layout index (segment maps from the first "
                    "event): %s\n",
                    src->input, err);
        layout_index_close(ix);
        __atomic_store_n(&src->layouts_state, state, __ATOMIC_RELEASE);
    }
    for (size_t i = 0; i < s->nsrc && !stopped(s); i++) {
        sqlite3 *db;
        char err[512];
        if (db_open_readonly(s->src[i].db_path, &db, err, sizeof err) != 0)
            continue; /* the requests say why */
        int devices[GMT_MAX_DEVICES];
        int n = view_devices(db, devices, GMT_MAX_DEVICES);
        for (int d = 0; d < n && !stopped(s); d++) {
            const step_row *rows;
            const step_history *history;
            size_t nrows;
            (void)view_step_table(db, devices[d], &rows, &nrows, &history, err, sizeof err);
        }
        db_close(db);
    }
    for (size_t i = 0; i < s->nsrc; i++) /* those the stop came before */
        s->given_up += (s->src[i].blocks_path && s->src[i].blocks_state == BLOCKS_BUILDING) +
                       (s->src[i].layouts_path && s->src[i].layouts_state == BLOCKS_BUILDING);
    return NULL;
}

#endif
