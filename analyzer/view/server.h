/* server.h — `memanalyze view`'s HTTP server: one input's database, or several side by side,
 * answered to a browser on this machine, read-only, to whoever holds the token it prints.
 *
 * What it promises (issue 31): it listens on 127.0.0.1 unless told otherwise; every request needs
 * the random token (128 bits) and a Host header naming this server (no DNS rebinding); it serves
 * only its own page (compiled in) and GET/HEAD answers of query/'s facts, each at most
 * VIEW_MAX_RESPONSE bytes; it opens each database read-only, one connection per worker thread
 * and input (opened on the thread's first request for that input), and never writes one; the
 * files it writes per input are its blocks index (view_blocks.h) and its layout index
 * (layout_index.h), in the cache.
 * Every endpoint takes input=I (0-based, default 0; out of range: 400).
 * The answers that do not change and take long to compute (the summary, the whole steps table
 * of each device) are computed once at the start, for input 0 only, and served as bytes, so
 * the time to the URL does not grow with the inputs; the others' are computed at each request.
 * /api/inputs (the facts of all, view_inputs.h) is computed at its first request and kept. */
#ifndef GMT_VIEW_SERVER_H
#define GMT_VIEW_SERVER_H

#include <stddef.h>

#define VIEW_DEFAULT_PORT 8470
#define VIEW_MAX_RESPONSE (256 * 1024) /* bytes of one response's body */
#define VIEW_TOKEN_HEX 32              /* the token: 128 random bits in hex */
#define VIEW_PAGE_STEPS "200"          /* the steps the page's table asks for: first=0&count=200 */

#define VIEW_MAX_INPUTS 256 /* inputs one server serves */

/* One input. */
typedef struct view_source {
    const char *db_path;      /* its database, opened read-only by each worker thread */
    const char *blocks_path;  /* its blocks index (view_blocks.h), built when missing by a thread
                                 of the server's own as it starts, the inputs in order
                                 (/api/allocations answers 503 meanwhile); NULL: 500 */
    const char *layouts_path; /* its layout index (layout_index.h), built by the same thread
                                 once every blocks index is; then the workers' layouts (segment
                                 maps, windows' ends, stacks) start from its checkpoints. NULL
                                 (or no blocks_path): from the first row, the same answers */
    const char *input;        /* as the user named it (the summary says it) */
} view_source;

typedef struct view_config {
    const view_source *inputs; /* at least one, at most VIEW_MAX_INPUTS */
    size_t ninputs;
    const char *bind; /* a numeric IPv4 or IPv6 address; NULL: 127.0.0.1 */
    unsigned port;    /* 0: any free port */
    unsigned threads; /* worker threads; 0: 4 */
} view_config;

typedef struct view_server view_server;

/* 1 when the server was built with its HTTP library (libmicrohttpd), else 0: view_server_start
 * then fails saying so. */
int view_server_available(void);

/* 1 when addr (numeric) is a loopback address (127.0.0.0/8, ::1); -1 when it is not an address. */
int view_address_is_loopback(const char *addr);

/* Listens and starts serving in threads of its own. 0, or -1 with a one-line message in err
 * ("cannot listen on 127.0.0.1:8470: Address already in use (--port 0 picks a free one)"). */
int view_server_start(const view_config *cfg, view_server **out, char *err, size_t errlen);

/* The page's address with its token: http://127.0.0.1:PORT/?token=TOKEN. */
void view_server_url(const view_server *s, char *buf, size_t len);
unsigned view_server_port(const view_server *s);

/* Stops accepting, ends the connections, joins the threads (each closes its database), frees.
 * An index the builder was still making is given up at once (nothing of it is left; the next
 * start makes it again): returns how many were, 0 when every one was done. */
int view_server_stop(view_server *s);

#endif
