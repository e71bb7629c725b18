/* cmd_sql.c — `memanalyze sql INPUT "SELECT ..."`: a query on the input's
 * database, printed as an aligned table (bytes in binary units where the
 * column holds bytes), CSV or JSON. */
#include "category_store.h"
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "sql_rows.h"
#include "text_out.h"
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

static char *cell_text(const sql_cell *c, int human) {
    char buf[64];
    switch (c->type) {
    case SQL_CELL_NULL:
        return strdup("NULL");
    case SQL_CELL_INTEGER:
        if (human && c->integer >= 0)
            return strdup(units_bytes((uint64_t)c->integer, buf, sizeof buf));
        snprintf(buf, sizeof buf, "%lld", (long long)c->integer);
        return strdup(buf);
    case SQL_CELL_REAL:
        snprintf(buf, sizeof buf, "%.6g", c->real);
        return strdup(buf);
    default:
        return strdup(c->text);
    }
}

/* The rows as an aligned table (the first TABLE_MAX_ROWS of them, all counted). 0, or -1 with
 * the error in err once the rows before it are printed. */
static int print_table(sql_rows *q, int raw, char *err, size_t errlen) {
    int ncol = (int)sql_rows_column_count(q);
    const sql_column *col = sql_rows_columns(q);
    size_t rows = 0, cap = 64, more = 0;
    char **cells = malloc(cap * (size_t)ncol * sizeof *cells);
    size_t *width = calloc((size_t)ncol, sizeof *width);
    int *human = calloc((size_t)ncol, sizeof *human);
    for (int i = 0; i < ncol; i++) {
        width[i] = strlen(col[i].name);
        human[i] = !raw && col[i].holds_bytes;
    }
    const sql_cell *row;
    int rc;
    while ((rc = rows == TABLE_MAX_ROWS ? sql_rows_skip(q, err, errlen)
                                        : sql_rows_next(q, &row, err, errlen)) == 1) {
        if (rows == TABLE_MAX_ROWS) {
            more++;
            continue;
        }
        if (rows == cap)
            cells = realloc(cells, (cap *= 2) * (size_t)ncol * sizeof *cells);
        for (int i = 0; i < ncol; i++) {
            char *t = cell_text(&row[i], human[i]);
            cells[rows * (size_t)ncol + (size_t)i] = t;
            if (strlen(t) > width[i])
                width[i] = strlen(t);
        }
        rows++;
    }
    for (int i = 0; i < ncol; i++)
        printf("%s%-*s", i ? "  " : "", (int)width[i], col[i].name);
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
            int right = !col[i].declared || human[i] || t[0] == '-' || (t[0] >= '0' && t[0] <= '9');
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
    return rc == 0 ? 0 : -1;
}

/* The rows as CSV or JSON, as they come. 0, or -1 with the error in err once the rows before
 * it are printed. */
static int print_stream(sql_rows *q, enum format f, char *err, size_t errlen) {
    int ncol = (int)sql_rows_column_count(q);
    const sql_column *col = sql_rows_columns(q);
    if (f == FORMAT_CSV) {
        for (int i = 0; i < ncol; i++) {
            if (i)
                putchar(',');
            csv_field(stdout, col[i].name);
        }
        putchar('\n');
    } else {
        putchar('[');
    }
    const sql_cell *row;
    int rc, first = 1;
    while ((rc = sql_rows_next(q, &row, err, errlen)) == 1) {
        if (f == FORMAT_JSON)
            printf(first ? "\n  {" : ",\n  {");
        first = 0;
        for (int i = 0; i < ncol; i++) {
            const sql_cell *c = &row[i];
            if (f == FORMAT_CSV) {
                if (i)
                    putchar(',');
                csv_field(stdout, c->text);
                continue;
            }
            printf(i ? ", " : "");
            json_string(stdout, col[i].name);
            putchar(':');
            if (c->type == SQL_CELL_NULL)
                fputs("null", stdout);
            else if (c->type == SQL_CELL_INTEGER)
                printf("%lld", (long long)c->integer);
            else if (c->type == SQL_CELL_REAL)
                json_number(stdout, c->real);
            else
                json_string(stdout, c->text);
        }
        if (f == FORMAT_CSV)
            putchar('\n');
        else
            putchar('}');
    }
    if (f == FORMAT_JSON)
        printf(first ? "]\n" : "\n]\n");
    return rc == 0 ? 0 : -1;
}

int run_sql(cli_ctx *ctx) {
    enum format f = (enum format)ctx->number[0];
    int raw = ctx->flag[0], status = 0;
    if (f != FORMAT_TABLE) /* CSV is data, JSON escapes its own: both go out as they are */
        text_out_end();
    const char *input = ctx->input, *query = ctx->inputs[1];
    input_options io = ctx->io;
    sqlite3 *db = ctx->db;
    input_kind kind;
    char err[PATH_MAX + 512];
    if (sql_reads_block_categories(db, query) && !category_blocks_stored(db) &&
        input_detect(input, &kind, err, sizeof err) == 0 && kind != INPUT_DATABASE) {
        /* every block's category on first use: added to the cached database (on a copy renamed
         * over it: input.h), never to a database the user gave (there allocations.category
         * stays NULL); when it cannot be added, the query fails rather than answer NULL */
        db_close(db);
        ctx->db = NULL;
        if (input_change_cache(input, &io, category_blocks_add, NULL, err, sizeof err) != 0)
            return cli_error("allocations.category: %s", err);
        if ((status = cli_open_db(input, &io, &db)) != 0)
            return status;
        ctx->db = db;
    }
    sql_rows *q;
    if (sql_rows_open(db, query, f == FORMAT_CSV, &q, err, sizeof err) != 0)
        return cli_error("SQL error: %s", err);
    int rc = f == FORMAT_TABLE ? print_table(q, raw, err, sizeof err)
                               : print_stream(q, f, err, sizeof err);
    sql_rows_close(q);
    return rc == 0 ? status : cli_error("SQL error: %s", err);
}
