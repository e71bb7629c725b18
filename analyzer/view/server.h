/* server.h — `memanalyze view`'s HTTP server: one input's database answered to a browser on this
 * machine, read-only, to whoever holds the token it prints.
 *
 * What it promises (issue 31): it listens on 127.0.0.1 unless told otherwise; every request needs
 * the random token (128 bits) and a Host header naming this server (no DNS rebinding); it serves
 * only its own page (compiled in) and GET/HEAD answers of query/'s facts, each at most
 * VIEW_MAX_RESPONSE bytes; it opens the database read-only, one connection per worker thread,
 * and never writes it; the files it writes are the blocks index (view_blocks.h) and the layout
 * index (layout_index.h), in the cache.
 * The answers that do not change and take long to compute (the summary, the whole steps table
 * of each device) are computed once at the start and served as bytes. */
#ifndef GMT_VIEW_SERVER_H
#define GMT_VIEW_SERVER_H

#include <stddef.h>

#define VIEW_DEFAULT_PORT 8470
#define VIEW_MAX_RESPONSE (256 * 1024) /* bytes of one response's body */
#define VIEW_TOKEN_HEX 32              /* the token: 128 random bits in hex */
#define VIEW_PAGE_STEPS "200"          /* the steps the page's table asks for: first=0&count=200 */

typedef struct view_config {
    const char *db_path;     /* the input's database, opened read-only by each worker thread */
    const char *blocks_path; /* the blocks index (view_blocks.h), built when missing by a thread
                                of its own as the server starts (/api/allocations answers 503
                                meanwhile); NULL: /api/allocations answers 500 */
    const char *layouts_path; /* the layout index (layout_index.h), built after the blocks
                                 index by the same thread; the workers' layouts (segment maps,
                                 window ends) start from its checkpoints once it is ready; NULL
                                 (or no blocks_path): from the first row */
    const char *input;       /* as the user named it (the summary says it) */
    const char *bind;        /* a numeric IPv4 or IPv6 address; NULL: 127.0.0.1 */
    unsigned port;           /* 0: any free port */
    unsigned threads;        /* worker threads; 0: 4 */
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

/* Stops accepting, ends the connections, joins the threads (each closes its database), frees. */
void view_server_stop(view_server *s);

#endif
