/* cmd_sql.c — `memanalyze sql INPUT "SELECT ..."`: a query on the input's
 * database, printed as an aligned table (bytes in binary units where the
 * column holds bytes), CSV or JSON. */
#include "category_store.h"
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "units.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_MAX_ROWS 10000

enum format { FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON };

const char sql_usage[] = "usage: memanalyze sql INPUT \"SELECT ...\" [--csv | --json] [--raw]\n"
                         "Runs one SQL query on the input's database (see schema/schema.sql).\n";

/* the format in number[0] (enum format; the last of --csv and --json wins), --raw in flag[0] */
const cli_option sql_options[] = {
    {"csv", 'c', CLI_SET, offsetof(cli_ctx, number[0]), FORMAT_CSV, NULL,
     "  --csv    comma-separated values with a header line\n", NULL},
    {"json", 'j', CLI_SET, offsetof(cli_ctx, number[0]), FORMAT_JSON, NULL,
     "  --json   an array of objects\n", NULL},
    {"raw", 'r', CLI_FLAG, offsetof(cli_ctx, flag[0]), 0, NULL,
     "  --raw    table output without byte units\n", NULL},
    {"step-rule", 's', CLI_TEXT, offsetof(cli_ctx, io.step_word), 0, NULL, NULL, NULL},
    CLI_OPT_END};

/* A column holds bytes when its name says so: *_bytes, size, *_size, bytes. */
static int is_bytes_column(const char *name) {
    size_t n = strlen(name);
    return strstr(name, "bytes") != NULL || !strcmp(name, "size") ||
           (n > 5 && !strcmp(name + n - 5, "_size"));
}

static void csv_field(FILE *out, const char *s) {
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static char *cell_text(sqlite3_stmt *st, int i, int human) {
    char buf[64];
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL:
        return strdup("NULL");
    case SQLITE_INTEGER:
        if (human && sqlite3_column_int64(st, i) >= 0)
            return strdup(units_bytes((uint64_t)sqlite3_column_int64(st, i), buf, sizeof buf));
        snprintf(buf, sizeof buf, "%lld", (long long)sqlite3_column_int64(st, i));
        return strdup(buf);
    case SQLITE_FLOAT:
        snprintf(buf, sizeof buf, "%.6g", sqlite3_column_double(st, i));
        return strdup(buf);
    default:
        return strdup((const char *)sqlite3_column_text(st, i));
    }
}

static int print_table(sqlite3_stmt *st, int raw) {
    int ncol = sqlite3_column_count(st);
    size_t rows = 0, cap = 64, more = 0;
    char **cells = malloc(cap * (size_t)ncol * sizeof *cells);
    size_t *width = calloc((size_t)ncol, sizeof *width);
    int *human = calloc((size_t)ncol, sizeof *human);
    for (int i = 0; i < ncol; i++) {
        width[i] = strlen(sqlite3_column_name(st, i));
        human[i] = !raw && is_bytes_column(sqlite3_column_name(st, i));
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (rows == TABLE_MAX_ROWS) {
            more++;
            continue;
        }
        if (rows == cap)
            cells = realloc(cells, (cap *= 2) * (size_t)ncol * sizeof *cells);
        for (int i = 0; i < ncol; i++) {
            char *t = cell_text(st, i, human[i]);
            cells[rows * (size_t)ncol + (size_t)i] = t;
            if (strlen(t) > width[i])
                width[i] = strlen(t);
        }
        rows++;
    }
    for (int i = 0; i < ncol; i++)
        printf("%s%-*s", i ? "  " : "", (int)width[i], sqlite3_column_name(st, i));
    putchar('\n');
    for (int i = 0; i < ncol; i++) {
        printf("%s", i ? "  " : "");
        for (size_t k = 0; k < width[i]; k++)
            putchar('-');
    }
    putchar('\n');
    for (size_t r = 0; r < rows; r++) {
        for (int i = 0; i < ncol; i++) {
            char *t = cells[r * (size_t)ncol + (size_t)i];
            int right = sqlite3_column_decltype(st, i) == NULL || human[i] || t[0] == '-' ||
                        (t[0] >= '0' && t[0] <= '9');
            printf(right ? "%s%*s" : "%s%-*s", i ? "  " : "", (int)width[i], t);
            free(t);
        }
        putchar('\n');
    }
    printf("(%zu row%s)\n", rows + more, rows + more == 1 ? "" : "s");
    if (more)
        printf("(showing the first %d; use --csv or --json for all)\n", TABLE_MAX_ROWS);
    free(cells);
    free(width);
    free(human);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int print_stream(sqlite3_stmt *st, enum format f) {
    int ncol = sqlite3_column_count(st);
    if (f == FORMAT_CSV) {
        for (int i = 0; i < ncol; i++) {
            if (i)
                putchar(',');
            csv_field(stdout, sqlite3_column_name(st, i));
        }
        putchar('\n');
    } else {
        putchar('[');
    }
    int rc, first = 1;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (f == FORMAT_JSON)
            printf(first ? "\n  {" : ",\n  {");
        first = 0;
        for (int i = 0; i < ncol; i++) {
            int type = sqlite3_column_type(st, i);
            if (f == FORMAT_CSV) {
                if (i)
                    putchar(',');
                csv_field(stdout,
                          type == SQLITE_NULL ? NULL : (const char *)sqlite3_column_text(st, i));
                continue;
            }
            printf(i ? ", " : "");
            json_string(stdout, sqlite3_column_name(st, i));
            putchar(':');
            if (type == SQLITE_NULL)
                fputs("null", stdout);
            else if (type == SQLITE_INTEGER)
                printf("%lld", (long long)sqlite3_column_int64(st, i));
            else if (type == SQLITE_FLOAT)
                json_number(stdout, sqlite3_column_double(st, i));
            else
                json_string(stdout, (const char *)sqlite3_column_text(st, i));
        }
        if (f == FORMAT_CSV)
            putchar('\n');
        else
            putchar('}');
    }
    if (f == FORMAT_JSON)
        printf(first ? "]\n" : "\n]\n");
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Whether a query reads block_categories (through allocations.category or itself): the
 * authorizer sees every table a statement reads, views expanded. */
static int reads_block_categories(void *flag, int action, const char *table, const char *column,
                                  const char *db, const char *trigger) {
    (void)column, (void)db, (void)trigger;
    if (action == SQLITE_READ && table && !strcmp(table, "block_categories"))
        *(int *)flag = 1;
    return SQLITE_OK;
}

static int needs_block_categories(sqlite3 *db, const char *sql) {
    int flag = 0;
    sqlite3_stmt *st = NULL;
    sqlite3_set_authorizer(db, reads_block_categories, &flag);
    sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    sqlite3_finalize(st);
    sqlite3_set_authorizer(db, NULL, NULL);
    return flag;
}

int run_sql(cli_ctx *ctx) {
    enum format f = (enum format)ctx->number[0];
    int raw = ctx->flag[0], status = 0;
    const char *input = ctx->input, *query = ctx->inputs[1];
    input_options io = ctx->io;
    sqlite3 *db = ctx->db;
    input_kind kind;
    char err[PATH_MAX + 512];
    if (needs_block_categories(db, query) && !category_blocks_stored(db) &&
        input_detect(input, &kind, err, sizeof err) == 0 && kind != INPUT_DATABASE) {
        /* every block's category on first use: written into the cached database, never into
         * a database the user gave (there allocations.category stays NULL); when it cannot be
         * written, the query still runs, with a warning */
        char path[PATH_MAX + 64];
        static const category_blocks with_blocks = CATEGORY_BLOCKS_ROWS; /* others may read it */
        sqlite3_close(db);
        ctx->db = NULL;
        if (input_database(input, &io, path, sizeof path, err, sizeof err) != 0 ||
            category_store_file(path, (void *)&with_blocks, err, sizeof err) != 0)
            fprintf(stderr, "memanalyze: warning: allocations.category stays empty: %s\n", err);
        if ((status = cli_open_db(input, &io, &db)) != 0)
            return status;
        ctx->db = db;
    }
    sqlite3_stmt *st;
    const char *tail;
    if (sqlite3_prepare_v2(db, query, -1, &st, &tail) != SQLITE_OK) {
        status = cli_error("SQL error: %s", sqlite3_errmsg(db));
    } else {
        int rc = f == FORMAT_TABLE ? print_table(st, raw) : print_stream(st, f);
        if (rc != 0)
            status = cli_error("SQL error: %s", sqlite3_errmsg(db));
        sqlite3_finalize(st);
    }
    return status;
}
