/* cli.c — shared plumbing of the memanalyze commands (see cli.h): errors, count options, opening
 * an input's database, and the command table's setup: one parser and one --help writer over a
 * command's cli_option table, then the database, the device and the window its row asks for,
 * then its run function. */
#include "cli.h"

#include "category_store.h"
#include "db_open.h"
#include "text_out.h"
#include "when.h"

#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_error(const char *fmt, ...) {
    char line[4096]; /* an error is one line; a longer one is cut */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    int pending = 0; /* it names inputs, frames, hosts: quoted as text output is (text_out.h) */
    fputs("memanalyze: ", stderr);
    text_quoted_write(stderr, line, len, &pending);
    text_quoted_end(stderr, &pending);
    fputc('\n', stderr);
    return 2;
}

int cli_database_path(const char *input, const input_options *given, char *path, size_t len) {
    char err[PATH_MAX + 256];
    input_options opt = given ? *given : (input_options){0};
    if (!opt.finish) /* a database built here keeps its categories at the peaks */
        opt.finish = category_store_file;
    if (input_database(input, &opt, path, len, err, sizeof err) != 0)
        return cli_error("%s", err);
    return 0;
}

int cli_open_db(const char *input, const input_options *given, sqlite3 **db) {
    char path[PATH_MAX + 64], err[PATH_MAX + 256];
    int rc = cli_database_path(input, given, path, sizeof path);
    if (rc != 0)
        return rc;
    if (db_open_readonly(path, db, err, sizeof err) != 0)
        return cli_error("%s", err);
    return 0;
}

int cli_open_device(const char *input, const input_options *opt, long wanted, sqlite3 **db,
                    int *device) {
    int rc = cli_open_db(input, opt, db);
    if (rc != 0)
        return rc;
    if (wanted < 0) {
        *device = when_default_device(*db);
    } else if (!when_device_answers(*db, (int)wanted)) {
        db_close(*db);
        *db = NULL;
        return cli_error("%s: no device %ld", input, wanted);
    } else {
        *device = (int)wanted;
    }
    return 0;
}

int cli_parse_count(const char *name, const char *text, long max, long *out) {
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v < 0 || v > max)
        return cli_error("bad --%s '%s': a number from 0 to %ld", name, text, max);
    *out = v;
    return 0;
}

/* ---- the command table's setup ---------------------------------------------------------- */

enum { MAX_OPTIONS = 32, FIRST_VAL = 256 };

void cli_help(const cli_command *cmd, FILE *out) {
    fputs(cmd->usage, out);
    for (const cli_option *o = cmd->options; o->name; o++)
        if (o->help)
            fputs(o->help, out);
}

/* "layer|module|none" as "layer, module or none". */
static void choice_words(const char *words, char *out, size_t outlen) {
    size_t n = 0, len = strlen(words);
    for (size_t i = 0; i < len; i++)
        n += words[i] == '|';
    size_t at = 0, seen = 0;
    out[0] = 0;
    for (size_t i = 0; i < len && at + 8 < outlen; i++) {
        if (words[i] != '|') {
            out[at++] = words[i];
            continue;
        }
        seen++;
        const char *sep = seen == n ? " or " : ", ";
        size_t k = strlen(sep);
        if (at + k + 1 >= outlen)
            break;
        memcpy(out + at, sep, k);
        at += k;
    }
    out[at] = 0;
}

/* The index of `arg` among the '|'-separated words, or -1. */
static long choice_index(const char *words, const char *arg) {
    size_t len = strlen(arg);
    long index = 0;
    for (const char *w = words;; index++) {
        const char *bar = strchr(w, '|');
        size_t wlen = bar ? (size_t)(bar - w) : strlen(w);
        if (wlen == len && !strncmp(w, arg, len))
            return index;
        if (!bar)
            return -1;
        w = bar + 1;
    }
}

/* Stores option o's value in ctx: 0, or 2 with the error printed. */
static int take(const cli_option *o, const char *arg, cli_ctx *ctx) {
    char *where = (char *)ctx + o->where;
    long number;
    char words[256];
    switch (o->kind) {
    case CLI_FLAG:
        *(int *)(void *)where = 1;
        return 0;
    case CLI_TEXT:
        *(const char **)(void *)where = arg;
        return 0;
    case CLI_COUNT:
        if (cli_parse_count(o->name, arg, o->max, &number) != 0)
            return 2;
        *(long *)(void *)where = number;
        return 0;
    case CLI_CALL:
        return o->call(ctx, arg);
    case CLI_SET:
        *(long *)(void *)where = o->max;
        return 0;
    case CLI_CHOICE:
        if ((number = choice_index(o->words, arg)) < 0) {
            choice_words(o->words, words, sizeof words);
            return cli_error("--%s takes %s (got '%s')", o->name, words, arg);
        }
        *(long *)(void *)where = number;
        return 0;
    }
    return 2;
}

int cli_parse(const cli_command *cmd, int argc, char **argv, cli_ctx *ctx, int *done) {
    struct option longs[MAX_OPTIONS + 2];
    size_t n = 0;
    *done = 0;
    for (const cli_option *o = cmd->options; o->name && n < MAX_OPTIONS; o++, n++)
        longs[n] = (struct option){
            o->name, o->kind == CLI_FLAG || o->kind == CLI_SET ? no_argument : required_argument,
            NULL, FIRST_VAL + (int)n};
    longs[n] = (struct option){"help", no_argument, NULL, 'h'};
    longs[n + 1] = (struct option){NULL, 0, NULL, 0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, cmd->shorts, longs, NULL)) != -1) {
        const cli_option *o = NULL;
        if (c >= FIRST_VAL && c < FIRST_VAL + (int)n)
            o = &cmd->options[c - FIRST_VAL];
        for (size_t i = 0; !o && c != 'h' && c != '?' && i < n; i++)
            if (cmd->options[i].letter == c)
                o = &cmd->options[i];
        if (o) {
            if (take(o, optarg, ctx) != 0)
                return 2;
            continue;
        }
        if (c == 'h') {
            cli_help(cmd, stdout);
            *done = 1;
            return 0;
        }
        cli_help(cmd, stderr);
        return 2;
    }
    int wanted = cmd->setup & CLI_TWO_ARGS ? 2 : 1;
    if ((cmd->setup & CLI_MANY_INPUTS) ? optind >= argc : optind != argc - wanted) {
        cli_help(cmd, stderr);
        return 2;
    }
    ctx->input = argv[optind];
    ctx->inputs = argv + optind;
    ctx->ninputs = argc - optind;
    return 0;
}

/* The row's setup on a parsed ctx: 0, or 2 with the error printed and nothing left open. */
static int setup(const cli_command *cmd, cli_ctx *ctx) {
    unsigned need = cmd->setup;
    if (need & CLI_NEEDS_DEVICE) {
        int device;
        int rc = cli_open_device(ctx->input, &ctx->io, ctx->device, &ctx->db, &device);
        if (rc != 0)
            return rc;
        ctx->device = device;
    } else if (need & (CLI_NEEDS_DB | CLI_DEFAULT_DEVICE)) {
        int rc = cli_open_db(ctx->input, &ctx->io, &ctx->db);
        if (rc != 0)
            return rc;
        if ((need & CLI_DEFAULT_DEVICE) && ctx->device < 0)
            ctx->device = when_default_device(ctx->db);
    }
    if (need & CLI_NEEDS_WINDOW) {
        char err[256];
        if (when_window(ctx->db, ctx->from, ctx->to, (int)ctx->device, &ctx->from_event,
                        &ctx->to_event, err, sizeof err) != 0) {
            db_close(ctx->db);
            ctx->db = NULL;
            return cli_error("%s", err);
        }
    }
    return 0;
}

int cli_usage_error(const cli_ctx *ctx) {
    cli_help(ctx->cmd, stderr);
    return 2;
}

int cli_run_command(const cli_command *cmd, int argc, char **argv) {
    cli_ctx ctx = {.cmd = cmd, .device = -1, .top = -1};
    int done, rc = cli_parse(cmd, argc, argv, &ctx, &done);
    if (rc != 0 || done)
        return rc;
    if ((cmd->check && (rc = cmd->check(&ctx)) != 0) || (rc = setup(cmd, &ctx)) != 0)
        return rc;
    if (!ctx.json) /* text: control characters quoted (text_out.h) */
        text_out_begin();
    rc = cmd->run(&ctx);
    text_out_end(); /* a write error shows on the real stdout, checked at exit */
    db_close(ctx.db);
    return rc;
}
