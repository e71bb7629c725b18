/* server.c — `memanalyze view`'s HTTP server (server.h): its start (the inputs, the memos
 * computed before it listens, the token, the listening socket, the accepted Host names, the
 * daemon and the builder thread), its stop, its accessors, and the stubs without
 * libmicrohttpd. The requests' side is server_http.c (routing, checks, answers), the
 * connections' side server_conns.c (each worker's connections, the builder thread).
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
 * Each worker keeps its connections (server_conns.c) in thread-specific data (pthread_key_create):
 * one per input, each opened on the thread's first request for it with db_open_readonly, all closed
 * by the key's destructor when MHD_stop_daemon ends the thread (so do its blocks indexes). Without
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

int view_server_stop(view_server *s) {
    (void)s;
    return 0;
}

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

#include "server_private.h"

#include "db_open.h"

#include <assert.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

/* The arguments a memo is kept under, as one string; 0, or -1 when one is too long to be a
 * memo's (then no memo answers). */
int view_server_memo_key(const view_request *rq, char *key, size_t len) {
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
    view_step_table_drop(); /* what the memos and the workers kept: no thread reads it now */
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
    if (view_server_memo_key(&rq, m->key, sizeof m->key) != 0)
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
    if (view_server_memo_key(&rq, key, sizeof key) != 0)
        return 0;
    for (size_t i = 0; i < s->nmemos; i++) {
        const memo *from = &s->memos[i];
        if (from->api != api || strcmp(from->key, key))
            continue;
        assert(s->nmemos < MAX_MEMOS);
        memo *m = &s->memos[s->nmemos];
        view_request to = {.conn = NULL, .s = s, .args = as, .input = s->src[0].input};
        if (view_server_memo_key(&to, m->key, sizeof m->key) != 0)
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
    /* what the memos kept (the ranges' index of the whole run's marks) is keyed by the file,
     * not this connection: the workers read it, and server_stop drops it */
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
    if (pthread_key_create(&s->conns_key, view_server_close_thread_conns) != 0) {
        snprintf(err, errlen, "view: cannot make the threads' keys");
        close(fd);
        server_free(s);
        return -1;
    }
    unsigned threads = cfg->threads ? cfg->threads : 4;
    s->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL, view_server_on_request, s,
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
    if (pthread_create(&s->builder, NULL, view_server_build_blocks, s) == 0) {
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

int view_server_stop(view_server *s) {
    if (!s)
        return 0;
    /* A build under way ends at its scan's next batch (milliseconds) and removes its temporary
     * file; what it had built before is kept. */
    __atomic_store_n(&s->stopping, 1, __ATOMIC_RELAXED);
    MHD_stop_daemon(s->daemon); /* joins the workers: each closes its database on exit */
    if (s->have_builder)
        pthread_join(s->builder, NULL);
    pthread_key_delete(s->conns_key);
    int given_up = s->given_up;
    server_free(s);
    return given_up;
}

#endif