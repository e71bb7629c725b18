/* cli.h — what every memanalyze command does the same way: print an error as one line, get a
 * read-only SQLite handle on the database of any input (building it on first use, see input.h),
 * and the command table's setup (git's RUN_SETUP is the model): a command declares its options
 * once, as a cli_option table that both parses argv and writes `--help`, and its row says the
 * setup it needs (open the input's database, pick the device, read the window --from/--to);
 * the dispatcher does all of it and calls the command's run function with a filled cli_ctx. */
#ifndef GMT_CLI_H
#define GMT_CLI_H

#include "db_open.h"
#include "db_query.h"
#include "input.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Prints "memanalyze: <message>" on stderr and returns 2 (the exit status
 * for a user error), so commands can `return cli_error(...)`. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses a non-negative integer option (--device, --top, --width ...) no
 * larger than max. Returns 0, or prints "bad --NAME 'text'" and returns 2. */
int cli_parse_count(const char *name, const char *text, long max, long *out);

/* Opens the database of `input` read-only into *db (built first when needed, with its
 * category sums, category_store_file, unless opt->finish says otherwise). Returns 0, or prints
 * the error and returns 2. */
int cli_open_db(const char *input, const input_options *opt, sqlite3 **db);

/* The path of the database of `input` (built first when needed, as for cli_open_db), for a
 * command that opens it more than once (view: a connection per thread). 0, or prints the error
 * and returns 2. */
int cli_database_path(const char *input, const input_options *opt, char *path, size_t len);

/* cli_open_db, and the device a command looks at: `wanted`, which must have events there
 * (else "INPUT: no device N"), or the one with the highest peak when wanted < 0. Returns 0, or
 * prints the error and returns 2 with *db closed. */
int cli_open_device(const char *input, const input_options *opt, long wanted, sqlite3 **db,
                    int *device);

/* ---- the command table's setup ---------------------------------------------------------- */

/* What the dispatcher does before run, in this order. */
enum {
    CLI_NEEDS_DB = 1 << 0,       /* open the one positional input's database: ctx->db */
    CLI_NEEDS_DEVICE = 1 << 1,   /* --device must have events ("INPUT: no device N"); default:
                                    the device with the highest peak (implies NEEDS_DB) */
    CLI_DEFAULT_DEVICE = 1 << 2, /* the highest-peak device when --device is not given, any
                                    --device taken as it is (implies NEEDS_DB) */
    CLI_NEEDS_WINDOW = 1 << 3,   /* --from/--to resolved on ctx->device: ctx->from/to_event */
    CLI_TAKES_JSON = 1 << 4,     /* the table has --json (ctx->json); for the reader */
    CLI_MANY_INPUTS = 1 << 5,    /* one or more positional arguments (ctx->inputs), not one */
    CLI_TWO_ARGS = 1 << 6,       /* INPUT and one more positional argument (ctx->inputs[1]) */
};

typedef enum cli_kind {
    CLI_FLAG,   /* no value: the int at `where` becomes 1 */
    CLI_TEXT,   /* a value kept as given: a const char * at `where` */
    CLI_COUNT,  /* a number from 0 to `max`: a long at `where` (else "bad --NAME ...") */
    CLI_CHOICE, /* one of the '|'-separated words in `words`: its index, a long at `where` */
    CLI_SET,    /* no value: the long at `where` becomes `max` (the last such option wins) */
    CLI_CALL,   /* a value handed to `call` (an option that repeats or parses its own way) */
} cli_kind;

struct cli_ctx;

/* One option of a command: parsed by cli_parse, written by cli_help. */
typedef struct cli_option {
    const char *name; /* the long name without "--"; NULL ends a table */
    char letter;      /* the short option letter, 0 for none */
    cli_kind kind;
    size_t where;      /* offsetof(cli_ctx, ...) */
    long max;          /* CLI_COUNT: the largest value */
    const char *words; /* CLI_CHOICE: "layer|module|none"; the error says "layer, module or none" */
    const char *help; /* its lines of --help (each ending "\n"), or NULL (another's line says it) */
    int (*call)(struct cli_ctx *ctx,
                const char *arg); /* CLI_CALL: 0, or 2 with the error printed */
} cli_option;

/* What a command's run function receives: the parsed options and the setup's results. */
typedef struct cli_ctx {
    const struct cli_command *cmd;
    const char *input; /* the positional argument (the first, with CLI_MANY_INPUTS) */
    char **inputs;     /* CLI_MANY_INPUTS: all of them */
    int ninputs;
    sqlite3 *db; /* CLI_NEEDS_DB: open read-only; the dispatcher closes it */
    long device; /* --device (-1: not given); after the setup: the device */
    const char *from, *to;
    int64_t from_event, to_event; /* CLI_NEEDS_WINDOW */
    int json;
    long top; /* --top (-1: not given) */
    input_options io;
    const char *text[4]; /* a command's own options */
    long number[4];
    int flag[4];
} cli_ctx;

/* A row of the command table. */
typedef struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(cli_ctx *ctx);   /* called once the setup is done */
    unsigned setup;             /* CLI_NEEDS_... */
    int (*check)(cli_ctx *ctx); /* NULL, or run after parsing, before the setup: 0 or
                                   an exit status (error printed) */
    const cli_option *options;  /* --help is added to every table */
    const char *shorts;         /* the short options getopt takes ("d:jh") */
    const char *usage;          /* --help's lines above the options */
} cli_command;

/* The options several commands share, with their --help lines. */
#define CLI_OPT_DEVICE                                                                             \
    {                                                                                              \
        "device", 'd', CLI_COUNT, offsetof(cli_ctx, device), 1023, NULL,                           \
            "  --device N    the device (default: the one with the highest peak)\n", NULL          \
    }
#define CLI_OPT_JSON                                                                               \
    {                                                                                              \
        "json", 'j', CLI_FLAG, offsetof(cli_ctx, json), 0, NULL,                                   \
            "  --json        machine-readable output\n", NULL                                      \
    }
#define CLI_OPT_FROM(help)                                                                         \
    { "from", 'f', CLI_TEXT, offsetof(cli_ctx, from), 0, NULL, help, NULL }
#define CLI_OPT_TO(help)                                                                           \
    { "to", 't', CLI_TEXT, offsetof(cli_ctx, to), 0, NULL, help, NULL }
#define CLI_OPT_TOP(help)                                                                          \
    { "top", 'n', CLI_COUNT, offsetof(cli_ctx, top), 1000000, NULL, help, NULL }
#define CLI_OPT_STEP_RULE                                                                          \
    {                                                                                              \
        "step-rule", 's', CLI_TEXT, offsetof(cli_ctx, io.step_word), 0, NULL,                      \
            "  --step-rule W marker names with W and a number are steps (default step)\n", NULL    \
    }
#define CLI_OPT_END                                                                                \
    { NULL, 0, CLI_FLAG, 0, 0, NULL, NULL, NULL }

/* Writes the command's --help: its usage text, then each option's help lines. */
void cli_help(const cli_command *cmd, FILE *out);

/* Parses argv (argv[0] the command's name) into ctx by the command's table: --help prints the
 * help and returns 0 with *done set; a bad option or value, or not exactly one positional
 * argument, prints the error or the help on stderr and returns 2. */
int cli_parse(const cli_command *cmd, int argc, char **argv, cli_ctx *ctx, int *done);

/* The command's --help on stderr, exit status 2: for a usage error run finds. */
int cli_usage_error(const cli_ctx *ctx);

/* Parses, does the row's setup, calls run and closes the database: the exit status. */
int cli_run_command(const cli_command *cmd, int argc, char **argv);

#endif
