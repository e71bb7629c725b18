/* cmd_import.c — `memanalyze import INPUT -o OUT.db`: the replay's database
 * at a path of the user's choosing, for sqlite3 or any SQLite client. */
#include "category_store.h"
#include "cli.h"
#include "commands.h"
#include "input.h"

#include <getopt.h>
#include <stdio.h>

static void import_usage(FILE *out) {
    fprintf(out, "usage: memanalyze import INPUT -o OUT.db [--step-rule WORD]\n"
                 "Replays a trace or a PyTorch snapshot into an SQLite database\n"
                 "(tables and views documented in schema/schema.sql).\n"
                 "  -o, --output OUT.db   where to write it (replaced if it exists)\n"
                 "  --step-rule WORD      marker names with WORD and a number are steps\n"
                 "                        (default: step)\n");
}

int cmd_import(int argc, char **argv) {
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"step-rule", required_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = NULL;
    input_options io = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 's':
            io.step_word = optarg;
            break;
        case 'h':
            import_usage(stdout);
            return 0;
        default:
            import_usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1 || !out) {
        import_usage(stderr);
        return 2;
    }
    const char *in = argv[optind];
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
