/* cmd_import.c — `memanalyze import INPUT -o OUT.db`: the replay's database
 * at a path of the user's choosing, for sqlite3 or any SQLite client. */
#include "category_store.h"
#include "cli.h"
#include "commands.h"
#include "input.h"

#include <stdio.h>

const char import_usage[] = "usage: memanalyze import INPUT -o OUT.db [--step-rule WORD]\n"
                            "Replays a trace or a PyTorch snapshot into an SQLite database\n"
                            "(tables and views documented in schema/schema.sql).\n";

/* -o in text[0] */
const cli_option import_options[] = {
    {"output", 'o', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  -o, --output OUT.db   where to write it (replaced if it exists)\n", NULL},
    {"step-rule", 's', CLI_TEXT, offsetof(cli_ctx, io.step_word), 0, NULL,
     "  --step-rule WORD      marker names with WORD and a number are steps\n"
     "                        (default: step)\n",
     NULL},
    CLI_OPT_END};

int run_import(cli_ctx *ctx) {
    const char *out = ctx->text[0];
    if (!out)
        return cli_usage_error(ctx);
    input_options io = ctx->io;
    const char *in = ctx->input;
    input_kind kind;
    char err[1024];
    if (input_detect(in, &kind, err, sizeof err) != 0)
        return cli_error("%s", err);
    if (kind == INPUT_DATABASE)
        return cli_error("%s is already a memanalyze database", in);
    /* a database for SQL clients: every block's category, as pages (the file is the import's
     * own until it is renamed into place) */
    static const category_blocks with_blocks = CATEGORY_BLOCKS_PAGES;
    io.finish = category_store_file;
    io.plain_events = 1; /* for any SQLite client: event_rows a plain table */
    io.finish_ctx = (void *)&with_blocks;
    if (input_build_database(in, kind, out, &io, err, sizeof err) != 0)
        return cli_error("%s", err);
    printf("wrote %s\n", out);
    return 0;
}
