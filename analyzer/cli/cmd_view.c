/* cmd_view.c — `memanalyze view INPUT... [--port N] [--bind ADDR] [--open]`: the inputs'
 * databases served to a browser on this machine (view/server.h): prints the page's URL with its
 * token, serves until Ctrl-C or SIGTERM, then stops the server and exits 0, leaving nothing behind
 * (the database is the input's usual cache, opened read-only; the blocks' categories are added
 * to it first, once, as `sql` adds them). The files it leaves are the blocks index for
 * /api/allocations (view_blocks.h) and the layout index for segment maps, windows and stacks
 * (layout_index.h), made once, in the cache folder (input_sidecar_path: beside the cached
 * database, or named after a database the user gave, never beside the user's).
 * Several inputs (ranks of a job, or runs) are served side by side, each found or built in turn
 * as every command finds one (cli_database_path), each with its categories and its own blocks
 * index; the page switches between them (input=I).
 * `--html FILE` instead writes one input's share file (view/share_file.h: the page and its first
 * and coarse answers in one file, no server) and prints one line: the file and its size. */
#include "category_store.h"
#include "cli.h"
#include "commands.h"
#include "event_store.h"
#include "gmt_env.h"
#include "server.h"
#include "share_file.h"
#include "text_out.h"
#include "units.h"

#include "gmt_env.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char view_usage[] =
    "usage: memanalyze view INPUT... [--port N] [--bind ADDR] [--open]\n"
    "       memanalyze view INPUT --html FILE\n"
    "A local interactive viewer: serves the inputs to a browser on this machine\n"
    "(http://127.0.0.1:PORT/?token=TOKEN, printed on stdout), read-only, until Ctrl-C.\n"
    "Every request needs the token; nothing is fetched from the network.\n"
    "With --html, writes one self-contained page to share instead (no server).\n"
    "  INPUT...      traces, PyTorch snapshot pickles or memanalyze databases; several\n"
    "                (ranks of a job, or runs) side by side, a click switches between them\n";

/* --port in text[0] (then number[0]), --bind in text[1], --open in flag[0], --html in text[2]. */
const cli_option view_options[] = {
    {"port", 'p', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  --port N      the port (default 8470; 0 picks a free one)\n", NULL},
    {"bind", 'b', CLI_TEXT, offsetof(cli_ctx, text[1]), 0, NULL,
     "  --bind ADDR   listen on ADDR instead of 127.0.0.1 (a warning: other machines\n"
     "                can then reach it, guarded by the token alone)\n",
     NULL},
    {"open", 'o', CLI_FLAG, offsetof(cli_ctx, flag[0]), 0, NULL,
     "  --open        open the page in a browser (xdg-open)\n", NULL},
    {"html", 0, CLI_TEXT, offsetof(cli_ctx, text[2]), 0, NULL,
     "  --html FILE   write the viewer as one file to share, opened from disk with no\n"
     "                server or network: the whole run, its largest blocks and coarse\n"
     "                zoom levels embedded (at most 8 MiB); written beside FILE, renamed\n"
     "                into place\n",
     NULL},
    CLI_OPT_STEP_RULE,
    CLI_OPT_END};

int view_check(cli_ctx *ctx) {
    if (ctx->text[2] && (ctx->text[0] || ctx->text[1] || ctx->flag[0]))
        return cli_error("view: --html FILE writes a file and starts no server: it takes no "
                         "--port, --bind or --open");
    if (ctx->text[2] && !*ctx->text[2])
        return cli_error("view: --html needs a FILE");
    if (ctx->text[2] && ctx->ninputs > 1)
        return cli_error("view: --html FILE writes one input's share file (%d inputs given)",
                         ctx->ninputs);
    if (!ctx->text[2] && !view_server_available())
        return cli_error("view: memanalyze was built without libmicrohttpd (install "
                         "libmicrohttpd-dev and build again)");
    if (ctx->ninputs > VIEW_MAX_INPUTS)
        return cli_error("view: at most %d inputs (%d given)", VIEW_MAX_INPUTS, ctx->ninputs);
    ctx->number[0] = VIEW_DEFAULT_PORT;
    if (ctx->text[0] && cli_parse_count("port", ctx->text[0], 65535, &ctx->number[0]) != 0)
        return 2;
    if (ctx->text[1] && view_address_is_loopback(ctx->text[1]) < 0)
        return cli_error("bad --bind '%s': a numeric IPv4 or IPv6 address", ctx->text[1]);
    return 0;
}

/* xdg-open URL, not waited for (reaped at the end); says so when there is none. */
static pid_t open_browser(const char *url) {
    const char *path = getenv("PATH");
    char exe[PATH_MAX];
    int found = 0;
    for (const char *p = path ? path : ""; *p && !found;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n && n + sizeof "/xdg-open" < sizeof exe) {
            snprintf(exe, sizeof exe, "%.*s/xdg-open", (int)n, p);
            found = access(exe, X_OK) == 0;
        }
        p += n + (colon != NULL);
    }
    pid_t pid = -1;
    char *argv[] = {exe, (char *)url, NULL};
    if (!found || posix_spawn(&pid, exe, NULL, NULL, argv, environ) != 0) {
        fprintf(stderr, "memanalyze view: cannot open a browser (no xdg-open); open the URL "
                        "above\n");
        return -1;
    }
    return pid;
}

/* --html FILE: the share file, one line said (exit 0); a write error exits 1, others 2. */
static int write_share(cli_ctx *ctx, const char *db_path, const char *blocks) {
    view_share_config cfg = {
        .db_path = db_path, .blocks_path = blocks, .input = ctx->input, .out = ctx->text[2]};
    const char *max = getenv(GMT_ENV_VIEW_SHARE_MAX_BYTES); /* the tests' smaller bound */
    unsigned long long m = max && *max ? strtoull(max, NULL, 10) : 0;
    cfg.max_bytes = m && m < VIEW_SHARE_MAX_BYTES ? (size_t)m : VIEW_SHARE_MAX_BYTES;
    view_share_stats st;
    int write_error;
    char err[PATH_MAX + 256], size[32];
    if (view_share_write(&cfg, &st, &write_error, err, sizeof err) != 0) {
        cli_error("%s", err);
        return write_error ? 1 : 2;
    }
    printf("memanalyze view: wrote %s (%s, %zu bytes: %d device%s, the whole run", ctx->text[2],
           units_bytes(st.bytes, size, sizeof size), st.bytes, st.devices,
           st.devices == 1 ? "" : "s");
    if (st.depth)
        printf(" and %d zoom depth%s down to 1/%lld of it", st.depth, st.depth == 1 ? "" : "s",
               1LL << st.depth);
    printf("; %zu answers%s)\n", st.answers,
           st.left_out ? ", some left out to stay in bounds" : "");
    return 0;
}

/* The server over the inputs until SIGINT or SIGTERM: 0, or 2 with the error printed. */
static int serve(cli_ctx *ctx, const view_source *sources, size_t n, char *err, size_t errlen) {
    /* the server's threads start with these blocked, so they come to sigwait below */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    view_config cfg = {
        .inputs = sources, .ninputs = n, .bind = ctx->text[1], .port = (unsigned)ctx->number[0]};
    view_server *s;
    if (view_server_start(&cfg, &s, err, errlen) != 0)
        return cli_error("%s", err);
    if (ctx->text[1] && view_address_is_loopback(ctx->text[1]) != 1)
        fprintf(stderr,
                "memanalyze view: warning: listening on %s, which other machines can reach: the "
                "token is all that guards it, over plain HTTP\n",
                ctx->text[1]);
    char url[256];
    view_server_url(s, url, sizeof url);
    text_out_end(); /* the real stdout, so that the flush reaches whoever waits for the URL */
    int count_chunks = getenv(GMT_ENV_CHUNK_COUNT) != NULL;
    if (count_chunks) /* said before the URL: whoever reads it has the start's count */
        fprintf(stderr, "memanalyze view: %llu event chunks decoded before the URL\n",
                (unsigned long long)event_store_chunks_unpacked());
    printf("memanalyze view: %s\n", url);
    fflush(stdout);
    pid_t browser = ctx->flag[0] ? open_browser(url) : -1;
    int sig = 0;
    while (sigwait(&stop, &sig) != 0)
        ;
    int given_up = view_server_stop(s);
    if (count_chunks)
        fprintf(stderr, "memanalyze view: %llu event chunks decoded in all\n",
                (unsigned long long)event_store_chunks_unpacked());
    if (browser > 0)
        waitpid(browser, NULL, WNOHANG);
    if (given_up) /* what the next start will spend again */
        fprintf(stderr,
                "memanalyze view: stopped (%s) before %d of its indexes were made; the next view "
                "makes them\n",
                sig == SIGINT ? "SIGINT" : "SIGTERM", given_up);
    else
        fprintf(stderr, "memanalyze view: stopped (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    return 0;
}

/* One input's database (found or built, checked, its categories added once) and its blocks
 * index's path, into path and blocks. 0, or 2 with the error printed. */
static int prepare_input(const char *input, const input_options *io, char *path, size_t len,
                         char *blocks, char *layouts, size_t blen) {
    char err[PATH_MAX + 256];
    int rc = cli_database_path(input, io, path, len);
    if (rc)
        return rc;
    sqlite3 *db; /* refused now, not at the first request, when it is not ours */
    if (db_open_readonly(path, &db, err, sizeof err) != 0)
        return cli_error("%s", err);
    input_kind kind;
    int add = !category_blocks_stored(db) && input_detect(input, &kind, err, sizeof err) == 0 &&
              kind != INPUT_DATABASE;
    db_close(db);
    /* every block's category, for /api/block: added to the cache once, as `sql` adds them
     * (input.h: on a copy renamed over it), before any thread opens it; never to a database
     * the user gave (there a block's category stays null) */
    if (add) {
        if (input_change_cache(input, io, category_blocks_add, NULL, err, sizeof err))
            fprintf(stderr, "memanalyze view: warning: %s: no block categories: %s\n", input, err);
        else if ((rc = cli_database_path(input, io, path, len)) != 0)
            return rc;
    }
    if (input_sidecar_path(input, path, ".blocks", blocks, blen, err, sizeof err) ||
        input_sidecar_path(input, path, ".layouts", layouts, blen, err, sizeof err))
        return cli_error("%s", err);
    return 0;
}

int run_view(cli_ctx *ctx) {
    enum { PATH_LEN = PATH_MAX + 64, BLOCKS_LEN = PATH_MAX + 128 };
    char err[PATH_MAX + 256];
    size_t n = (size_t)ctx->ninputs;
    char *paths = malloc(n * PATH_LEN), *blocks = malloc(n * BLOCKS_LEN),
         *layouts = malloc(n * BLOCKS_LEN);
    view_source *sources = calloc(n, sizeof *sources);
    int rc = paths && blocks && layouts && sources ? 0 : cli_error("out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = prepare_input(ctx->inputs[i], &ctx->io, paths + i * PATH_LEN, PATH_LEN,
                           blocks + i * BLOCKS_LEN, layouts + i * BLOCKS_LEN, BLOCKS_LEN);
        sources[i] = (view_source){.db_path = paths + i * PATH_LEN,
                                   .blocks_path = blocks + i * BLOCKS_LEN,
                                   .layouts_path = layouts + i * BLOCKS_LEN,
                                   .input = ctx->inputs[i]};
    }
    if (rc == 0 && ctx->text[2])
        rc = write_share(ctx, paths, blocks);
    else if (rc == 0)
        rc = serve(ctx, sources, n, err, sizeof err);
    free(paths);
    free(blocks);
    free(layouts);
    free(sources);
    return rc;
}
