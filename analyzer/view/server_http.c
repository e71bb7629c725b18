/* server_http.c — `memanalyze view`'s HTTP side (server_private.h): the routing table (a path
 * → a compiled-in asset or an endpoint of endpoints.h), the responses and the security headers
 * every one carries, the checks (the Host header, the method, the token), and each endpoint's
 * answer: a memo, /api/inputs's kept answer, or computed on the worker's connection, under the
 * response cap. Only with libmicrohttpd. */
#ifdef GMT_HAVE_MHD

#include "server_private.h"

#include "json_out.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The page's files (view/assets/, embedded by cmake/embed_text.cmake). */
extern const char view_asset_index_html[], view_asset_state_js[], view_asset_timeline_js[],
    view_asset_blocks_js[], view_asset_viewer_js[], view_asset_search_js[], view_asset_inputs_js[],
    view_asset_viewer_css[];

/* A request (request.h): from the network (conn, an MHD_Connection), or made at the start for a
 * memo (conn NULL: its arguments are `args`, name and value in turn, NULL-ended). */
const char *view_server_conn_arg(void *conn, const char *name) {
    return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
}

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
    {"/state.js", view_asset_state_js, "text/javascript; charset=utf-8", NULL},
    {"/timeline.js", view_asset_timeline_js, "text/javascript; charset=utf-8", NULL},
    {"/blocks.js", view_asset_blocks_js, "text/javascript; charset=utf-8", NULL},
    {"/viewer.js", view_asset_viewer_js, "text/javascript; charset=utf-8", NULL},
    {"/search.js", view_asset_search_js, "text/javascript; charset=utf-8", NULL},
    {"/inputs.js", view_asset_inputs_js, "text/javascript; charset=utf-8", NULL},
    {"/viewer.css", view_asset_viewer_css, "text/css; charset=utf-8", NULL},
    {"/favicon.svg", favicon_svg, "image/svg+xml", NULL},
    {"/favicon.ico", favicon_svg, "image/svg+xml", NULL},
    {"/api/summary", NULL, "application/json", view_api_summary},
    {"/api/steps", NULL, "application/json", view_api_steps},
    {"/api/segments", NULL, "application/json", view_api_segments},
    {"/api/segment_series", NULL, "application/json", view_api_segment_series},
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
/* The memo answering this request, or NULL: the summary (it takes no argument) always, the
 * steps and marks when asked with the arguments of a memo. */
static const memo *memo_of(struct MHD_Connection *c, const view_server *s, const route *rt,
                           size_t input) {
    view_request rq = {.conn = c, .s = s, .input = s->src[input].input, .input_index = input};
    char key[96];
    if (input != 0) /* the memos are input 0's */
        return NULL;
    if (rt->api != view_api_summary && view_server_memo_key(&rq, key, sizeof key) != 0)
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
    sqlite3 *db = view_server_thread_db(s, input, err, sizeof err);
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

enum MHD_Result view_server_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                       const char *method, const char *version,
                                       const char *upload_data, size_t *upload_data_size,
                                       void **con_cls) {
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

#endif
