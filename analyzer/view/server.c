/* server.c — `memanalyze view`'s HTTP server (server.h): listening, the token, the Host check,
 * the routing table (a path → a compiled-in asset or an endpoint of endpoints.h), the response
 * cap, the security headers, and each worker thread's read-only database connection.
 *
 * The HTTP library is libmicrohttpd (Debian's libmicrohttpd-dev), chosen over civetweb for: a
 * plain C API made to be embedded, in Debian main and every distribution for years (civetweb
 * is in Debian too, but its C API is a wrapper over an options-string server with its own file
 * serving, CGI, Lua and SSI that we would have to keep switched off), a thread pool mode
 * (MHD_USE_INTERNAL_POLLING_THREAD with MHD_OPTION_THREAD_POOL_SIZE: a few threads, each with
 * its own poll loop, so each can keep one SQLite connection for its whole life), it serves
 * nothing by itself (no file serving to lock down: every byte sent is one we chose), and it takes
 * a listening socket we made (MHD_OPTION_LISTEN_SOCKET), so a port in use is our one-line error.
 *
 * Each worker keeps its connections in thread-specific data (pthread_key_create): one per
 * input, each opened on the thread's first request for it with db_open_readonly, all closed by
 * the key's destructor when MHD_stop_daemon ends the thread (so do its blocks indexes). Without
 * libmicrohttpd (GMT_HAVE_MHD undefined) the server cannot start and says why; the rest of
 * memanalyze builds the same. */
#include "server.h"

#include "endpoints.h"
#include "layout_index.h"
#include "request.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int view_address_is_loopback(const char *addr) {
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, addr, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, addr, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return -1;
}

#ifndef GMT_HAVE_MHD

int view_server_available(void) { return 0; }

int view_server_start(const view_config *cfg, view_server **out, char *err, size_t errlen) {
    (void)cfg;
    *out = NULL;
    snprintf(err, errlen,
             "view: memanalyze was built without libmicrohttpd (install "
             "libmicrohttpd-dev and build again)");
    return -1;
}

void view_server_url(const view_server *s, char *buf, size_t len) {
    (void)s;
    if (len)
        buf[0] = 0;
}

unsigned view_server_port(const view_server *s) {
    (void)s;
    return 0;
}

void view_server_stop(view_server *s) { (void)s; }

/* Never called: without the library there is no network request and no server. */
const char *view_server_conn_arg(void *conn, const char *name) {
    (void)conn, (void)name;
    return NULL;
}

struct view_blocks_index *view_server_blocks(const struct view_server *s, size_t input, int *status,
                                             char *err, size_t errlen) {
    (void)s, (void)input;
    *status = 500;
    snprintf(err, errlen, "no server");
    return NULL;
}

size_t view_server_input_count(const view_server *s) {
    (void)s;
    return 0;
}

const char *view_server_input_name(const view_server *s, size_t i) {
    (void)s, (void)i;
    return NULL;
}

const char *view_server_input_db_path(const view_server *s, size_t i) {
    (void)s, (void)i;
    return NULL;
}

#else

#include "db_open.h"
#include "json_out.h"
#include "view_blocks.h"

#include "gmt_vocab.h"

#include <assert.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

/* The page's files (view/assets/, embedded by cmake/embed_text.cmake). */
extern const char view_asset_index_html[], view_asset_viewer_js[], view_asset_search_js[],
    view_asset_inputs_js[], view_asset_viewer_css[];

enum { MAX_HOSTS = 4, HOST_LEN = 80 };

/* An answer computed at the start (view_server_start): the endpoint, the arguments it was
 * asked with (memo_key), the body. */
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
    pthread_mutex_t inputs_lock; /* /api/inputs, computed at its first request */
    char *inputs_body;
    size_t inputs_len;
};

/* A request (request.h): from the network (conn, an MHD_Connection), or made at the start for a
 * memo (conn NULL: its arguments are `args`, name and value in turn, NULL-ended). */
const char *view_server_conn_arg(void *conn, const char *name) {
    return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
}

/* The arguments a memo is kept under, as one string; 0, or -1 when one is too long to be a
 * memo's (then no memo answers). */
static int memo_key(const view_request *rq, char *key, size_t len) {
    static const char *const names[] = {"device", "first", "count", "lo", "hi", "ooms"};
    size_t used = 0;
    key[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = view_request_arg(rq, names[i]);
        int n = snprintf(key + used, len - used, "%s=%s&", names[i], v ? v : "");
        if (n < 0 || (size_t)n >= len - used)
            return -1;
        used += (size_t)n;
    }
    return 0;
}

size_t view_server_input_count(const view_server *s) { return s->nsrc; }

const char *view_server_input_name(const view_server *s, size_t i) {
    assert(i < s->nsrc);
    return s->src[i].input;
}

const char *view_server_input_db_path(const view_server *s, size_t i) {
    assert(i < s->nsrc);
    return s->src[i].db_path;
}

int view_server_available(void) { return 1; }

/* ---- the routing table ---------------------------------------------------------------- */

typedef struct route {
    const char *path;
    const char *asset; /* a file of the page, or NULL for an endpoint */
    const char *type;  /* its Content-Type */
    view_endpoint api;
} route;

/* The page's icon (the browser asks for one; a 404 would be an error in its console): a bar of
 * memory, allocated and reserved in the timeline's colours. */
static const char favicon_svg[] =
    "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">"
    "<rect width=\"16\" height=\"16\" rx=\"3\" fill=\"#e07b1f\"/>"
    "<rect x=\"2\" y=\"6\" width=\"12\" height=\"8\" rx=\"1\" fill=\"#2f6fd6\"/></svg>\n";

static const route routes[] = {
    {"/", view_asset_index_html, "text/html; charset=utf-8", NULL},
    {"/index.html", view_asset_index_html, "text/html; charset=utf-8", NULL},
    {"/viewer.js", view_asset_viewer_js, "text/javascript; charset=utf-8", NULL},
    {"/search.js", view_asset_search_js, "text/javascript; charset=utf-8", NULL},
    {"/inputs.js", view_asset_inputs_js, "text/javascript; charset=utf-8", NULL},
    {"/viewer.css", view_asset_viewer_css, "text/css; charset=utf-8", NULL},
    {"/favicon.svg", favicon_svg, "image/svg+xml", NULL},
    {"/favicon.ico", favicon_svg, "image/svg+xml", NULL},
    {"/api/summary", NULL, "application/json", view_api_summary},
    {"/api/steps", NULL, "application/json", view_api_steps},
    {"/api/segments", NULL, "application/json", view_api_segments},
    {"/api/block", NULL, "application/json", view_api_block},
    {"/api/timeline", NULL, "application/json", view_api_timeline},
    {"/api/stacks", NULL, "application/json", view_api_stacks},
    {"/api/allocations", NULL, "application/json", view_api_allocations},
    {"/api/marks", NULL, "application/json", view_api_marks},
    {"/api/window", NULL, "application/json", view_api_window},
    {"/api/search", NULL, "application/json", view_api_search},
    {"/api/inputs", NULL, "application/json", view_api_inputs},
};

static const route *route_of(const char *url) {
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(url, routes[i].path))
            return &routes[i];
    return NULL;
}

/* ---- responses ------------------------------------------------------------------------ */

/* Queues body (ours to free when `owned`) with the headers every answer carries. */
static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *type,
                               char *body, size_t len, int owned, const char *cookie) {
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (owned)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; base-uri 'none'; form-action 'none'; "
                            "frame-ancestors 'none'");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer"); /* the URL has the token */
    MHD_add_response_header(r, "Cross-Origin-Resource-Policy", "same-origin");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    if (cookie)
        MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, cookie);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *text) {
    return respond(c, status, "text/plain; charset=utf-8", (char *)text, strlen(text), 0, NULL);
}

/* {"error": "..."} with `status`. */
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *msg) {
    char *body = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&body, &len);
    if (!out)
        return MHD_NO;
    fputs("{\"error\": ", out);
    json_string(out, msg);
    fputs("}\n", out);
    if (fclose(out) != 0) {
        free(body);
        return MHD_NO;
    }
    return respond(c, status, "application/json", body, len, 1, NULL);
}

/* ---- the checks ----------------------------------------------------------------------- */

/* Equal tokens, in a time that does not depend on where they differ. */
static int token_equal(const char *given, const char *token) {
    size_t n = strlen(given);
    unsigned char diff = n != VIEW_TOKEN_HEX;
    for (size_t i = 0; i < VIEW_TOKEN_HEX; i++)
        diff |= (unsigned char)(token[i] ^ (i < n ? given[i] : 0));
    return diff == 0;
}

/* The token the request carries: X-Token, Authorization: Bearer, ?token=, or the page's
 * cookie; NULL when none. */
static const char *request_token(struct MHD_Connection *c, const view_server *s) {
    const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Token");
    if (t)
        return t;
    const char *auth =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (auth && !strncasecmp(auth, "Bearer ", 7))
        return auth + 7;
    if ((t = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token")))
        return t;
    return MHD_lookup_connection_value(c, MHD_COOKIE_KIND, s->cookie_name);
}

/* The Host header names this server (a page of another name reaching us through DNS
 * rebinding does not). */
static int host_allowed(struct MHD_Connection *c, const view_server *s) {
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    for (size_t i = 0; host && i < s->nhosts; i++)
        if (!strcasecmp(host, s->hosts[i]))
            return 1;
    return 0;
}

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

static void close_thread_conns(void *arg) {
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

/* Once the builder has made input i's layout index, the worker's connection to it uses it
 * (layout_index.h): its layouts, windows' categories and stacks start from the checkpoints.
 * Without it (not built yet, or it failed) they are the same answers, from the first row. */
static void use_layouts(const view_server *s, thread_conns *t, size_t i) {
    if (t->layouts[i] || !s->src[i].layouts_path ||
        __atomic_load_n(&s->src[i].layouts_state, __ATOMIC_ACQUIRE) != BLOCKS_READY)
        return;
    char err[256];
    layout_index *ix = layout_index_open(t->db[i], s->src[i].layouts_path, NULL, err, sizeof err);
    if (ix && layout_index_use(t->db[i], ix) != 0) {
        layout_index_close(ix);
        ix = NULL;
    }
    t->layouts[i] = ix;
}

/* The worker thread's connection to input i, opened on its first request for it. */
static sqlite3 *thread_db(const view_server *s, size_t i, char *err, size_t errlen) {
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
    sqlite3 *db = thread_db(s, input, err, errlen);
    if (!db)
        return NULL;
    t->blocks[input] = view_blocks_index_open(db, src->blocks_path, NULL, err, errlen);
    return t->blocks[input];
}

/* The builder thread: each input's blocks index opened once, input 0 first (built when missing
 * or stale: seconds on a large trace), then each one's layout index, so that the server answers
 * everything else meanwhile. */
static void *build_blocks(void *arg) {
    view_server *s = arg;
    for (size_t i = 0; i < s->nsrc; i++) {
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
            view_blocks_index_close(ix);
            db_close(db);
        }
        __atomic_store_n(&src->blocks_state, state, __ATOMIC_RELEASE);
    }
    for (size_t i = 0; i < s->nsrc; i++) {
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
        else
            fprintf(stderr,
                    "memanalyze view: warning: %s: no layout index (segment maps from the first "
                    "event): %s\n",
                    src->input, err);
        layout_index_close(ix);
        __atomic_store_n(&src->layouts_state, state, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* The memo answering this request, or NULL: the summary (it takes no argument) always, the
 * steps and marks when asked with the arguments of a memo. */
static const memo *memo_of(struct MHD_Connection *c, const view_server *s, const route *rt,
                           size_t input) {
    view_request rq = {.conn = c, .s = s, .input = s->src[input].input, .input_index = input};
    char key[96];
    if (input != 0) /* the memos are input 0's */
        return NULL;
    if (rt->api != view_api_summary && memo_key(&rq, key, sizeof key) != 0)
        return NULL;
    for (size_t i = 0; i < s->nmemos; i++)
        if (s->memos[i].api == rt->api &&
            (rt->api == view_api_summary || !strcmp(s->memos[i].key, key)))
            return &s->memos[i];
    return NULL;
}

/* ?input=I: 0 (absent: 0), or -1 with the message when it names no input. */
static int input_arg(struct MHD_Connection *c, const view_server *s, size_t *input, char *err,
                     size_t errlen) {
    const char *text = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "input");
    *input = 0;
    if (!text)
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!isdigit((unsigned char)text[0]) || *end || errno || v >= s->nsrc) {
        snprintf(err, errlen, "bad input '%.64s': a number from 0 to %zu", text, s->nsrc - 1);
        return -1;
    }
    *input = (size_t)v;
    return 0;
}

/* /api/inputs: computed at the first request that asks (under the lock: once), then kept.
 * 200 with the body in *body (the server's), or an error status with the message. */
static int inputs_answer(view_server *s, struct MHD_Connection *c, const char **body, size_t *len,
                         char *err, size_t errlen) {
    int status = MHD_HTTP_OK;
    pthread_mutex_lock(&s->inputs_lock);
    if (!s->inputs_body) {
        FILE *out = open_memstream(&s->inputs_body, &s->inputs_len);
        view_request rq = {.conn = c, .s = s, .input = s->src[0].input};
        status = out ? view_api_inputs(NULL, &rq, out, err, errlen) : 500;
        if (!out || fclose(out) != 0) {
            status = 500;
            snprintf(err, errlen, "out of memory");
        }
        if (status != MHD_HTTP_OK || s->inputs_len > VIEW_MAX_RESPONSE) {
            if (status == MHD_HTTP_OK) {
                status = 500;
                snprintf(err, errlen, "the inputs' answer is over the %d bytes a response may have",
                         VIEW_MAX_RESPONSE);
            }
            free(s->inputs_body);
            s->inputs_body = NULL;
        }
    }
    *body = s->inputs_body;
    *len = s->inputs_len;
    pthread_mutex_unlock(&s->inputs_lock);
    return status;
}

static enum MHD_Result answer_api(struct MHD_Connection *c, view_server *s, const route *rt) {
    char err[512] = "";
    size_t input;
    if (input_arg(c, s, &input, err, sizeof err) != 0)
        return send_error(c, MHD_HTTP_BAD_REQUEST, err);
    if (rt->api == view_api_inputs) {
        const char *kept;
        size_t kept_len;
        int st = inputs_answer(s, c, &kept, &kept_len, err, sizeof err);
        return st == MHD_HTTP_OK
                   ? respond(c, MHD_HTTP_OK, rt->type, (char *)kept, kept_len, 0, NULL)
                   : send_error(c, (unsigned)st, err[0] ? err : "failed");
    }
    const memo *m = memo_of(c, s, rt, input);
    if (m)
        return respond(c, MHD_HTTP_OK, rt->type, m->body, m->len, 0, NULL);
    sqlite3 *db = thread_db(s, input, err, sizeof err);
    if (!db)
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, err);
    char *body = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&body, &len);
    if (!out)
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    view_request rq = {.conn = c, .s = s, .input = s->src[input].input, .input_index = input};
    int status = rt->api(db, &rq, out, err, sizeof err);
    if (fclose(out) != 0) {
        free(body);
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    }
    if (status != MHD_HTTP_OK) {
        free(body);
        assert(status >= 400);
        return send_error(c, (unsigned)status, err[0] ? err : "failed");
    }
    if (len > VIEW_MAX_RESPONSE) {
        free(body);
        snprintf(err, sizeof err,
                 "the answer is %zu bytes, over the %d a response may have: ask for a part "
                 "(first=K&count=N)",
                 len, VIEW_MAX_RESPONSE);
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, err);
    }
    return respond(c, MHD_HTTP_OK, rt->type, body, len, 1, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
    (void)version;
    (void)upload_data;
    view_server *s = cls;
    static char refused, accepted; /* what the first call decided (*con_cls points at one) */
    if (*con_cls == &refused || *upload_data_size) { /* a body: never read, dropped */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (!*con_cls) { /* the headers are in: refuse now, before any body */
        *con_cls = &refused;
        if (!host_allowed(c, s))
            return send_text(c, MHD_HTTP_MISDIRECTED_REQUEST,
                             "this server answers only to its own address (Host)\n");
        if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
            return send_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        const char *token = request_token(c, s);
        if (!token)
            return send_text(c, MHD_HTTP_UNAUTHORIZED,
                             "a token is needed: open the URL memanalyze view printed\n");
        if (!token_equal(token, s->token))
            return send_text(c, MHD_HTTP_FORBIDDEN, "wrong token\n");
        *con_cls = &accepted; /* answered at the next call, the request read whole: the
                                 connection then stays open for the next request */
        return MHD_YES;
    }
    const route *rt = route_of(url);
    if (!rt)
        return strncmp(url, "/api/", 5) ? send_text(c, MHD_HTTP_NOT_FOUND, "not found\n")
                                        : send_error(c, MHD_HTTP_NOT_FOUND, "no such endpoint");
    if (rt->api)
        return answer_api(c, s, rt);
    char cookie[128];
    snprintf(cookie, sizeof cookie, "%s=%s; HttpOnly; SameSite=Strict; Path=/", s->cookie_name,
             s->token);
    return respond(c, MHD_HTTP_OK, rt->type, (char *)rt->asset, strlen(rt->asset), 0,
                   rt->asset == view_asset_index_html ? cookie : NULL);
}

/* ---- start, stop ---------------------------------------------------------------------- */

/* A listening socket on addr:port (port 0: any), its port in *bound. The fd, or -1 with the
 * message in err. */
static int listen_on(const char *addr, unsigned port, unsigned *bound, char *err, size_t errlen) {
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    int v6 = 0;
    if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        sl = sizeof *a4;
    } else if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        sl = sizeof *a6;
        v6 = 1;
    } else {
        snprintf(err, errlen, "bad --bind '%s': a numeric IPv4 or IPv6 address", addr);
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        (v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) ||
        bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 64) != 0) {
        int e = errno;
        snprintf(err, errlen, "cannot listen on %s%s%s:%u: %s%s", v6 ? "[" : "", addr,
                 v6 ? "]" : "", port, strerror(e),
                 e == EADDRINUSE && port ? " (--port 0 picks a free one)" : "");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
        close(fd);
        return -1;
    }
    *bound = ntohs(v6 ? a6->sin6_port : a4->sin_port);
    return fd;
}

static int make_token(char *hex, char *err, size_t errlen) {
    unsigned char raw[VIEW_TOKEN_HEX / 2];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "view: no random bytes for the token: %s", strerror(errno));
            return -1;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

static void server_free(view_server *s) {
    for (size_t i = 0; i < s->nmemos; i++)
        free(s->memos[i].body);
    for (size_t i = 0; s->src && i < s->nsrc; i++) {
        free(s->src[i].db_path);
        free(s->src[i].input);
        free(s->src[i].blocks_path);
        free(s->src[i].layouts_path);
    }
    free(s->src);
    free(s->inputs_body);
    pthread_mutex_destroy(&s->inputs_lock);
    free(s);
}

/* One memo: api's answer to a request with `args` (view_request's). 0 (kept, or left to the
 * requests when it fails), or -1 with a message when out of memory. */
static int add_memo(view_server *s, sqlite3 *db, view_endpoint api, const char *const *args,
                    char *err, size_t errlen) {
    assert(s->nmemos < MAX_MEMOS);
    memo *m = &s->memos[s->nmemos];
    view_request rq = {.conn = NULL, .s = s, .args = args, .input = s->src[0].input};
    if (memo_key(&rq, m->key, sizeof m->key) != 0)
        return 0;
    m->api = api;
    FILE *out = open_memstream(&m->body, &m->len);
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int status = api(db, &rq, out, err, errlen);
    if (fclose(out) != 0 || status != MHD_HTTP_OK || m->len > VIEW_MAX_RESPONSE) {
        /* failed, too big or no memory: computed at each request instead, which says why */
        free(m->body);
        m->body = NULL;
        err[0] = '\0';
        return 0;
    }
    s->nmemos++;
    return 0;
}

/* The memo of api asked with `args`, kept again for `as` (the same answer asked otherwise); none
 * when there is none to copy. 0, or -1 with a message when out of memory. */
static int copy_memo(view_server *s, view_endpoint api, const char *const *args,
                     const char *const *as, char *err, size_t errlen) {
    char key[96];
    view_request rq = {.conn = NULL, .s = s, .args = args, .input = s->src[0].input};
    if (memo_key(&rq, key, sizeof key) != 0)
        return 0;
    for (size_t i = 0; i < s->nmemos; i++) {
        const memo *from = &s->memos[i];
        if (from->api != api || strcmp(from->key, key))
            continue;
        assert(s->nmemos < MAX_MEMOS);
        memo *m = &s->memos[s->nmemos];
        view_request to = {.conn = NULL, .s = s, .args = as, .input = s->src[0].input};
        if (memo_key(&to, m->key, sizeof m->key) != 0)
            return 0;
        if (!(m->body = malloc(from->len ? from->len : 1))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        memcpy(m->body, from->body, from->len);
        m->len = from->len;
        m->api = api;
        s->nmemos++;
        return 0;
    }
    return 0;
}

/* What the server computes before it listens: input 0's memos (the others' databases are only
 * checked to open). 0, or -1 with a one-line message. */
static int prepare(view_server *s, char *err, size_t errlen) {
    sqlite3 *db;
    for (size_t i = 1; i < s->nsrc; i++) {
        if (db_open_readonly(s->src[i].db_path, &db, err, errlen) != 0)
            return -1;
        db_close(db);
    }
    if (db_open_readonly(s->src[0].db_path, &db, err, errlen) != 0)
        return -1;
    int rc = 0;
    int devices[GMT_MAX_DEVICES];
    int n = view_devices(db, devices, GMT_MAX_DEVICES);
    if (rc == 0)
        rc = add_memo(s, db, view_api_summary, NULL, err, errlen);
    /* per device, then without one (the default device's, copied): the steps table's first
     * rows as the page asks for them (step_table_part: those steps' events read, not the run's;
     * the whole table, a pass over the events, is left to whoever asks for it), the marks of
     * the whole run */
    int dflt = view_default_device(db);
    for (int i = 0; rc == 0 && i <= n; i++) {
        char d[16];
        snprintf(d, sizeof d, "%d", i < n ? devices[i] : dflt);
        const char *const whole[] = {"device", d, NULL};
        const char *const head[] = {"device", d, "first", "0", "count", VIEW_PAGE_STEPS, NULL};
        if (i < n) {
            rc = add_memo(s, db, view_api_steps, head, err, errlen);
            if (rc == 0)
                rc = add_memo(s, db, view_api_marks, whole, err, errlen);
        } else { /* no device argument at all: the default device's answers */
            rc = copy_memo(s, view_api_steps, head, head + 2, err, errlen);
            if (rc == 0)
                rc = copy_memo(s, view_api_marks, whole, whole + 2, err, errlen);
        }
    }
    view_step_table_drop(); /* the workers keep their own, on their connections */
    db_close(db);
    return rc;
}

int view_server_start(const view_config *cfg, view_server **out, char *err, size_t errlen) {
    *out = NULL;
    view_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&s->inputs_lock, NULL);
    const char *bind_addr = cfg->bind ? cfg->bind : "127.0.0.1";
    snprintf(s->bind, sizeof s->bind, "%s", bind_addr);
    if (cfg->ninputs < 1 || cfg->ninputs > VIEW_MAX_INPUTS) {
        snprintf(err, errlen, "view: %zu inputs (from 1 to %d)", cfg->ninputs, VIEW_MAX_INPUTS);
        server_free(s);
        return -1;
    }
    int oom = !(s->src = calloc(cfg->ninputs, sizeof *s->src));
    for (size_t i = 0; !oom && i < cfg->ninputs; i++) {
        const view_source *in = &cfg->inputs[i];
        source *src = &s->src[s->nsrc++];
        src->db_path = strdup(in->db_path);
        src->input = strdup(in->input);
        src->blocks_path = in->blocks_path ? strdup(in->blocks_path) : NULL;
        src->layouts_path = in->blocks_path && in->layouts_path ? strdup(in->layouts_path) : NULL;
        oom = !src->db_path || !src->input || (in->blocks_path && !src->blocks_path) ||
              (in->blocks_path && in->layouts_path && !src->layouts_path);
    }
    if (oom) {
        snprintf(err, errlen, "out of memory");
        server_free(s);
        return -1;
    }
    if (prepare(s, err, errlen) != 0 || make_token(s->token, err, errlen) != 0) {
        server_free(s);
        return -1;
    }
    int fd = listen_on(bind_addr, cfg->port, &s->port, err, errlen);
    if (fd < 0) {
        server_free(s);
        return -1;
    }
    snprintf(s->cookie_name, sizeof s->cookie_name, "gmt_token_%u", s->port);
    const char *names[] = {"127.0.0.1", "localhost", "[::1]"};
    for (size_t i = 0; i < 3; i++)
        snprintf(s->hosts[s->nhosts++], HOST_LEN, "%s:%u", names[i], s->port);
    if (strcmp(bind_addr, "127.0.0.1") && strcmp(bind_addr, "::1"))
        snprintf(s->hosts[s->nhosts++], HOST_LEN, strchr(bind_addr, ':') ? "[%s]:%u" : "%s:%u",
                 bind_addr, s->port);
    if (pthread_key_create(&s->conns_key, close_thread_conns) != 0) {
        snprintf(err, errlen, "view: cannot make the threads' keys");
        close(fd);
        server_free(s);
        return -1;
    }
    unsigned threads = cfg->threads ? cfg->threads : 4;
    s->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL, on_request, s,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024), MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, errlen, "view: cannot start the HTTP server on %s:%u", bind_addr, s->port);
        close(fd);
        pthread_key_delete(s->conns_key);
        server_free(s);
        return -1;
    }
    if (pthread_create(&s->builder, NULL, build_blocks, s) == 0) {
        s->have_builder = 1;
    } else {
        for (size_t i = 0; i < s->nsrc; i++) {
            snprintf(s->src[i].blocks_err, sizeof s->src[i].blocks_err,
                     "view: cannot start the index's thread");
            __atomic_store_n(&s->src[i].blocks_state, BLOCKS_FAILED, __ATOMIC_RELEASE);
        }
    }
    *out = s;
    return 0;
}

void view_server_url(const view_server *s, char *buf, size_t len) {
    const char *host = s->bind; /* any address (0.0.0.0, ::) includes the loopback one */
    if (!strcmp(host, "0.0.0.0"))
        host = "127.0.0.1";
    else if (!strcmp(host, "::"))
        host = "::1";
    int v6 = strchr(host, ':') != NULL;
    snprintf(buf, len, "http://%s%s%s:%u/?token=%s", v6 ? "[" : "", host, v6 ? "]" : "", s->port,
             s->token);
}

unsigned view_server_port(const view_server *s) { return s->port; }

void view_server_stop(view_server *s) {
    if (!s)
        return;
    MHD_stop_daemon(s->daemon); /* joins the workers: each closes its database on exit */
    if (s->have_builder) /* a build under way finishes first (a kill leaves no partial file) */
        pthread_join(s->builder, NULL);
    pthread_key_delete(s->conns_key);
    server_free(s);
}

#endif
