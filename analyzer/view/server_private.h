/* server_private.h — what server.c, server_http.c and server_conns.c share (view/ only, and
 * only with libmicrohttpd, GMT_HAVE_MHD): the server's state (struct view_server, its inputs,
 * its memos, a worker's connections) and the functions one file calls in another. */
#ifndef GMT_VIEW_SERVER_PRIVATE_H
#define GMT_VIEW_SERVER_PRIVATE_H
#ifdef GMT_HAVE_MHD

#include "endpoints.h"
#include "layout_index.h"
#include "request.h"
#include "server.h"
#include "view_blocks.h"

#include "gmt_vocab.h"

#include <microhttpd.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>

enum { MAX_HOSTS = 4, HOST_LEN = 80 };

/* An answer computed at the start (view_server_start): the endpoint, the arguments it was
 * asked with (view_server_memo_key), the body. */
typedef struct memo {
    view_endpoint api;
    char key[96];
    char *body;
    size_t len;
} memo;

enum { MAX_MEMOS = 1 + 2 * (1 + GMT_MAX_DEVICES) };

enum { BLOCKS_BUILDING, BLOCKS_READY, BLOCKS_FAILED };

/* One input: copies of its paths and name, and its blocks index's state. */
typedef struct source {
    char *db_path, *input, *blocks_path; /* blocks_path may be NULL */
    int blocks_state;                    /* BLOCKS_*, read and written atomically */
    char blocks_err[512];                /* why it failed (written before BLOCKS_FAILED is) */
    char *layouts_path;                  /* NULL: no layout index */
    int layouts_state;                   /* BLOCKS_*: the layout index, read atomically */
} source;

/* A worker's connections and blocks indexes, one of each per input (NULL: not opened yet). */
typedef struct thread_conns {
    size_t n;
    sqlite3 **db;
    view_blocks_index **blocks;
    layout_index **layouts; /* used by db[i] (layout_index_use) once opened */
} thread_conns;

struct view_server {
    struct MHD_Daemon *daemon;
    source *src;
    size_t nsrc;
    memo memos[MAX_MEMOS]; /* input 0's */
    size_t nmemos;
    char bind[64];
    unsigned port;
    char token[VIEW_TOKEN_HEX + 1];
    char cookie_name[32];            /* gmt_token_PORT: two viewers on one host keep their own */
    char hosts[MAX_HOSTS][HOST_LEN]; /* the Host headers accepted */
    size_t nhosts;
    pthread_key_t conns_key; /* the worker's thread_conns */
    pthread_t builder;       /* builds the blocks indexes, the inputs in order */
    int have_builder;
    int stopping; /* set by view_server_stop: the builder's scans end (event_scan_stop_when) */
    int given_up; /* the index files the builder gave up when stopped (read after the join) */
    pthread_mutex_t inputs_lock; /* /api/inputs, computed at its first request */
    char *inputs_body;
    size_t inputs_len;
};

/* server.c: the arguments a memo is kept under, as one string; 0, or -1 when one is too long
 * to be a memo's (then no memo answers). */
int view_server_memo_key(const view_request *rq, char *key, size_t len);

/* server_conns.c: the worker thread's connection to input i (opened on its first request for
 * it), the key's destructor of a worker's connections, and the builder thread's body. */
sqlite3 *view_server_thread_db(const view_server *s, size_t i, char *err, size_t errlen);
void view_server_close_thread_conns(void *arg);
void *view_server_build_blocks(void *arg);

/* server_http.c: MHD's access handler (the checks, the routing, the answers). */
enum MHD_Result view_server_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                       const char *method, const char *version,
                                       const char *upload_data, size_t *upload_data_size,
                                       void **con_cls);

#endif
#endif
