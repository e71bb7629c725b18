/* cmd_view.c — `memanalyze view INPUT [--port N] [--bind ADDR] [--open]`: the input's database
 * served to a browser on this machine (view/server.h): prints the page's URL with its token,
 * serves until Ctrl-C or SIGTERM, then stops the server and exits 0, leaving nothing behind
 * (the database is the input's usual cache, opened read-only; the blocks' categories are added
 * to it first, once, as `sql` adds them). The files it leaves are the blocks index for
 * /api/allocations (view_blocks.h) and the layout index for segment maps, windows and stacks
 * (layout_index.h), made once, in the cache folder (input_sidecar_path: beside the cached
 * database, or named after a database the user gave, never beside the user's).
 * One input for now: several are refused with a line saying so. */
#include "category_store.h"
#include "cli.h"
#include "commands.h"
#include "server.h"
#include "text_out.h"

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
    "usage: memanalyze view INPUT [--port N] [--bind ADDR] [--open]\n"
    "A local interactive viewer: serves the input to a browser on this machine\n"
    "(http://127.0.0.1:PORT/?token=TOKEN, printed on stdout), read-only, until Ctrl-C.\n"
    "Every request needs the token; nothing is fetched from the network.\n"
    "  INPUT         a trace, a PyTorch snapshot pickle or a memanalyze database (one)\n";

/* --port in text[0] (then number[0]), --bind in text[1], --open in flag[0]. */
const cli_option view_options[] = {
    {"port", 'p', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  --port N      the port (default 8470; 0 picks a free one)\n", NULL},
    {"bind", 'b', CLI_TEXT, offsetof(cli_ctx, text[1]), 0, NULL,
     "  --bind ADDR   listen on ADDR instead of 127.0.0.1 (a warning: other machines\n"
     "                can then reach it, guarded by the token alone)\n",
     NULL},
    {"open", 'o', CLI_FLAG, offsetof(cli_ctx, flag[0]), 0, NULL,
     "  --open        open the page in a browser (xdg-open)\n", NULL},
    CLI_OPT_STEP_RULE,
    CLI_OPT_END};

int view_check(cli_ctx *ctx) {
    if (!view_server_available())
        return cli_error("view: memanalyze was built without libmicrohttpd (install "
                         "libmicrohttpd-dev and build again)");
    if (ctx->ninputs > 1)
        return cli_error("view: one INPUT for now (%d given; several inputs come later)",
                         ctx->ninputs);
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

int run_view(cli_ctx *ctx) {
    char path[PATH_MAX + 64], err[PATH_MAX + 256];
    int rc = cli_database_path(ctx->input, &ctx->io, path, sizeof path);
    if (rc)
        return rc;
    sqlite3 *db; /* refused now, not at the first request, when it is not ours */
    if (db_open_readonly(path, &db, err, sizeof err) != 0)
        return cli_error("%s", err);
    input_kind kind;
    int add = !category_blocks_stored(db) &&
              input_detect(ctx->input, &kind, err, sizeof err) == 0 && kind != INPUT_DATABASE;
    db_close(db);
    /* every block's category, for /api/block: added to the cache once, as `sql` adds them
     * (input.h: on a copy renamed over it), before any thread opens it; never to a database
     * the user gave (there a block's category stays null) */
    if (add) {
        if (input_change_cache(ctx->input, &ctx->io, category_blocks_add, NULL, err, sizeof err))
            fprintf(stderr, "memanalyze view: warning: no block categories: %s\n", err);
        else if ((rc = cli_database_path(ctx->input, &ctx->io, path, sizeof path)) != 0)
            return rc;
    }
    /* the server's threads start with these blocked, so they come to sigwait below */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    char blocks[PATH_MAX + 128], layouts[PATH_MAX + 128];
    if (input_sidecar_path(ctx->input, path, ".blocks", blocks, sizeof blocks, err, sizeof err) ||
        input_sidecar_path(ctx->input, path, ".layouts", layouts, sizeof layouts, err, sizeof err))
        return cli_error("%s", err);
    view_config cfg = {.db_path = path,
                       .blocks_path = blocks,
                       .layouts_path = layouts,
                       .input = ctx->input,
                       .bind = ctx->text[1],
                       .port = (unsigned)ctx->number[0]};
    view_server *s;
    if (view_server_start(&cfg, &s, err, sizeof err) != 0)
        return cli_error("%s", err);
    if (ctx->text[1] && view_address_is_loopback(ctx->text[1]) != 1)
        fprintf(stderr,
                "memanalyze view: warning: listening on %s, which other machines can reach: the "
                "token is all that guards it, over plain HTTP\n",
                ctx->text[1]);
    char url[256];
    view_server_url(s, url, sizeof url);
    text_out_end(); /* the real stdout, so that the flush reaches whoever waits for the URL */
    printf("memanalyze view: %s\n", url);
    fflush(stdout);
    pid_t browser = ctx->flag[0] ? open_browser(url) : -1;
    int sig = 0;
    while (sigwait(&stop, &sig) != 0)
        ;
    view_server_stop(s);
    if (browser > 0)
        waitpid(browser, NULL, WNOHANG);
    fprintf(stderr, "memanalyze view: stopped (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    return 0;
}
