/* test_vocab.c — schema/gmt_vocab.h is the one definition of the vocabulary;
 * this test fails when anything that repeats it for people falls out of step.
 *
 *   - each list is dense, in code order, with unique names;
 *   - schema.sql's lookup rows (ops, levels, memory_kinds, sources,
 *     warning_kinds) hold exactly the list's codes, names and meanings, and
 *     every CASE arm of its views maps a code to the list's name;
 *   - the rating bands of schema.sql's example query are the list's bands;
 *   - every `{list:word}` token in schema.sql and in the analyzer's sources
 *     names a word of the list (db_sql_expand would refuse it at run time);
 *   - db_sql_expand writes codes, quoted warning names, and refuses unknown
 *     words.
 *
 * argv[1]: the source tree. */
#include "check.h"
#include "db_query.h"
#include "trace_format.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct word {
    int code;
    const char *name, *meaning;
} word;

#define WORD(id, code, name, meaning) {code, name, meaning},
#define WARNING_WORD(id, name, meaning) {-1, name, meaning},
static const word ops[] = {TRACE_OP_LIST(WORD) DB_OP_LIST(WORD)};
static const word levels[] = {TRACE_LEVEL_LIST(WORD)};
static const word kinds[] = {TRACE_KIND_LIST(WORD)};
static const word sources[] = {TRACE_SOURCE_LIST(WORD)};
static const word markers[] = {TRACE_MARK_LIST(WORD)};
static const word counters[] = {TRACE_COUNTER_LIST(WORD)};
static const word warnings[] = {DB_WARNING_LIST(WARNING_WORD)};
#define CATEGORY_WORD(id, name, colour, meaning) {-1, name, meaning},
static const word categories[] = {BLOCK_CATEGORY_LIST(CATEGORY_WORD)};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = 0;
    fclose(f);
    return s;
}

/* Reads a SQL string literal at *p ('it''s'), into out; advances *p. */
static int sql_string(const char **p, char *out, size_t len) {
    const char *s = *p;
    size_t n = 0;
    if (*s++ != '\'')
        return -1;
    for (;;) {
        if (!*s)
            return -1;
        if (*s == '\'' && s[1] == '\'') {
            s += 2;
            if (n + 1 < len)
                out[n++] = '\'';
        } else if (*s == '\'') {
            s++;
            break;
        } else {
            if (n + 1 < len)
                out[n++] = *s;
            s++;
        }
    }
    out[n] = 0;
    *p = s;
    return 0;
}

static const char *skip_space(const char *s) {
    while (*s == ' ' || *s == '\n' || *s == ',')
        s++;
    return s;
}

/* The rows of `INSERT INTO <table> (...) VALUES (...), (...);` against the list.
 * `coded`: rows are (code, 'name', 'description'); else ('name', 'description'). */
static void check_rows(const char *schema, const char *table, const word *list, size_t n,
                       int coded) {
    char head[128];
    snprintf(head, sizeof head, "INSERT INTO %s (", table);
    const char *p = strstr(schema, head);
    CHECK(p != NULL);
    if (!p)
        return;
    p = strstr(p, "VALUES");
    p += 6;
    size_t row = 0;
    for (;;) {
        p = skip_space(p);
        if (*p != '(')
            break;
        p++;
        long code = row;
        if (coded) {
            char *end;
            code = strtol(p, &end, 10);
            p = skip_space(end);
        }
        char name[128], meaning[1024];
        int ok = sql_string(&p, name, sizeof name) == 0;
        p = skip_space(p);
        ok = ok && sql_string(&p, meaning, sizeof meaning) == 0;
        CHECK(ok && *p == ')');
        if (!ok || *p != ')')
            return;
        p++;
        if (row >= n) {
            fprintf(stderr, "%s: row %zu ('%s') is not in gmt_vocab.h\n", table, row, name);
            CHECK(row < n);
            return;
        }
        if ((coded && code != list[row].code) || strcmp(name, list[row].name) ||
            strcmp(meaning, list[row].meaning)) {
            fprintf(
                stderr,
                "%s row %zu differs from gmt_vocab.h:\n  sql: %ld '%s' '%s'\n  C:   %d '%s' '%s'\n",
                table, row, code, name, meaning, list[row].code, list[row].name, list[row].meaning);
            CHECK(0);
        }
        row++;
    }
    CHECK_EQ_U64(row, n);
}

/* Every `CASE <alias>.<column> WHEN c THEN 'name' ... END` maps codes to the list's names. */
static void check_case_arms(const char *schema, const char *column, const word *list, size_t n) {
    char pat[64];
    snprintf(pat, sizeof pat, ".%s WHEN ", column);
    size_t found = 0;
    for (const char *p = strstr(schema, pat); p; p = strstr(p + 1, pat)) {
        const char *end = strstr(p, " END");
        found++;
        size_t arms = 0;
        for (const char *w = strstr(p, "WHEN "); w && w < end; w = strstr(w + 1, "WHEN ")) {
            long code = strtol(w + 5, NULL, 10);
            const char *t = strstr(w, "THEN ");
            char name[128];
            const char *q = t + 5;
            CHECK(t && sql_string(&q, name, sizeof name) == 0);
            CHECK(code >= 0 && (size_t)code < n);
            if (code >= 0 && (size_t)code < n && strcmp(name, list[code].name)) {
                fprintf(stderr, "view CASE %s: %ld is '%s', gmt_vocab.h says '%s'\n", column, code,
                        name, list[code].name);
                CHECK(0);
            }
            arms++;
        }
        CHECK_EQ_U64(arms, n); /* every word has its arm */
    }
    CHECK(found > 0);
}

static void check_dense(const word *list, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        if (list[i].code != -1 && (size_t)list[i].code != i) {
            fprintf(stderr, "%s: entry %zu has code %d (codes are dense, in order)\n", what, i,
                    list[i].code);
            CHECK(0);
        }
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(list[i].name, list[j].name) != 0);
        CHECK(list[i].meaning && *list[i].meaning);
    }
}

/* SQL that compares a coded column with a bare number: `op = 7`, `op IN (1, 4)`,
 * `CASE op WHEN 0`, `level = 1`, `kind = 0`. In a C file's string literals the
 * number must be a {list:word}. */
static void check_literal(const char *path, const char *lit, size_t len) {
    static const char *const columns[] = {"op", "level", "kind", "source"};
    static const char *const compares[] = {" = ", " IN (", " WHEN ", " <> ", " != "};
    char buf[4096];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), lit);
    for (size_t c = 0; c < COUNT(columns); c++)
        for (size_t o = 0; o < COUNT(compares); o++) {
            char pat[32];
            snprintf(pat, sizeof pat, "%s%s", columns[c], compares[o]);
            for (const char *p = strstr(buf, pat); p; p = strstr(p + 1, pat)) {
                const char *v = p + strlen(pat);
                int word_start = p == buf || !((p[-1] >= 'a' && p[-1] <= 'z') || p[-1] == '_');
                if (word_start && *v >= '0' && *v <= '9') {
                    fprintf(stderr, "%s: a bare code in SQL: \"%.24s\" (write {%s:word})\n", path,
                            p, columns[c]);
                    CHECK(0);
                }
            }
        }
}

static void check_no_bare_codes(const char *path, const char *text) {
    for (const char *p = strchr(text, '"'); p; p = strchr(p + 1, '"')) {
        if (p > text && p[-1] == '\'')
            continue; /* the character '"' */
        const char *q = p + 1;
        while (*q && *q != '"')
            q += *q == '\\' && q[1] ? 2 : 1;
        check_literal(path, p + 1, (size_t)(q - p - 1));
        if (!*q)
            break;
        p = q;
    }
}

/* Every {list:word} token in a file names a word. */
static size_t check_tokens(const char *path) {
    char *text = read_file(path);
    size_t seen = 0;
    size_t n = text ? strlen(path) : 0;
    if (text && n > 2 && !strcmp(path + n - 2, ".c"))
        check_no_bare_codes(path, text);
    for (const char *p = text ? strchr(text, '{') : NULL; p; p = strchr(p + 1, '{')) {
        const char *colon = p + 1, *close;
        while ((*colon >= 'a' && *colon <= 'z'))
            colon++;
        if (*colon != ':' || colon == p + 1)
            continue;
        close = colon + 1;
        while ((*close >= 'a' && *close <= 'z') || *close == '_')
            close++;
        if (*close != '}' || close == colon + 1)
            continue;
        seen++;
        if (gmt_vocab_code(p + 1, (size_t)(colon - p - 1), colon + 1, (size_t)(close - colon - 1)) <
            0) {
            fprintf(stderr, "%s: unknown vocabulary word %.*s\n", path, (int)(close - p + 1), p);
            CHECK(0);
        }
    }
    free(text);
    return seen;
}

static size_t check_tokens_in(const char *dir) {
    DIR *d = opendir(dir);
    size_t seen = 0;
    CHECK(d != NULL);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len > 2 && !strcmp(e->d_name + len - 2, ".c")) {
            char path[8192];
            snprintf(path, sizeof path, "%.4000s/%.4000s", dir, e->d_name);
            seen += check_tokens(path);
        }
    }
    if (d)
        closedir(d);
    return seen;
}

static void check_bands(const char *schema) {
    /* example 5: CASE WHEN MAX(fragmentation) < 0.15 THEN 'good' ... ELSE 'severe' END */
    static const struct {
        double from;
        const char *name;
    } bands[] = {
#define BAND(id, from, name) {from, name},
        FRAG_BAND_LIST(BAND)
#undef BAND
    };
    const char *p = strstr(schema, "CASE WHEN MAX(fragmentation) < ");
    CHECK(p != NULL);
    for (size_t i = 0; p && i + 1 < COUNT(bands); i++) {
        const char *lt = strstr(p, "< ");
        double bound = strtod(lt + 2, NULL);
        char name[64];
        const char *q = strstr(lt, "THEN ") + 5;
        CHECK(sql_string(&q, name, sizeof name) == 0);
        CHECK(bound == bands[i + 1].from);
        CHECK_STR_EQ(name, bands[i].name);
        p = q;
    }
    char last[64];
    const char *q = p ? strstr(p, "ELSE ") + 5 : NULL;
    CHECK(q && sql_string(&q, last, sizeof last) == 0 &&
          !strcmp(last, bands[COUNT(bands) - 1].name));
    for (size_t i = 1; i < COUNT(bands); i++)
        CHECK(bands[i].from > bands[i - 1].from);
}

static void check_expand(void) {
    char *s =
        db_sql_expand("SELECT 1 WHERE op IN ({op:alloc}, {op:seed}) AND level = {level:block} "
                      "AND code = {warning:free_unknown} AND x = '{not a token}'");
    CHECK(s != NULL);
    if (s) {
        char want[256];
        snprintf(want, sizeof want,
                 "SELECT 1 WHERE op IN (%d, %d) AND level = %d AND code = 'free_unknown' AND x = "
                 "'{not a token}'",
                 TRACE_OP_ALLOC, DB_OP_SEED, TRACE_LEVEL_BLOCK);
        CHECK_STR_EQ(s, want);
    }
    free(s);
    CHECK(db_sql_expand("WHERE op = {op:allocate}") == NULL);
    CHECK(db_sql_expand("WHERE op = {opp:alloc}") == NULL);
    CHECK_EQ_U64(gmt_vocab_code("marker", 6, "push", 4), TRACE_MARK_RANGE_PUSH);
    CHECK_EQ_U64(gmt_vocab_code("counter", 7, "pool_used", 9), TRACE_COUNTER_POOL_USED);
    CHECK_STR_EQ(trace_op_name(DB_OP_SEED), "seed");
    CHECK_STR_EQ(trace_op_name(200), "unknown");
    CHECK_STR_EQ(db_warning_name(DB_WARNING_TRUNCATED), "truncated");
}

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : ".";
    check_dense(ops, COUNT(ops), "ops");
    check_dense(levels, COUNT(levels), "levels");
    check_dense(kinds, COUNT(kinds), "memory kinds");
    check_dense(sources, COUNT(sources), "sources");
    check_dense(markers, COUNT(markers), "marker kinds");
    check_dense(counters, COUNT(counters), "counter kinds");
    check_dense(warnings, COUNT(warnings), "warning kinds");
    check_expand();

    char path[4096];
    snprintf(path, sizeof path, "%s/schema/schema.sql", src);
    char *schema = read_file(path);
    CHECK(schema != NULL);
    if (!schema)
        return check_finish("test_vocab");
    check_rows(schema, "ops", ops, COUNT(ops), 1);
    check_rows(schema, "levels", levels, COUNT(levels), 1);
    check_rows(schema, "memory_kinds", kinds, COUNT(kinds), 1);
    check_rows(schema, "sources", sources, COUNT(sources), 1);
    check_rows(schema, "warning_kinds", warnings, COUNT(warnings), 0);
    check_rows(schema, "categories", categories, COUNT(categories), 0);
    check_case_arms(schema, "op", ops, COUNT(ops));
    check_case_arms(schema, "level", levels, COUNT(levels));
    check_case_arms(schema, "kind", kinds, COUNT(kinds));
    check_case_arms(schema, "source", sources, COUNT(sources));
    check_bands(schema);
    /* marker and counter names: the columns that hold them say which they are */
    for (size_t i = 0; i < COUNT(markers); i++) {
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s'", markers[i].name);
        CHECK(i == TRACE_MARK_SEED_END || strstr(schema, quoted) != NULL);
    }
    for (size_t i = 0; i < COUNT(counters); i++) {
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s'", counters[i].name);
        CHECK(strstr(schema, quoted) != NULL);
    }
    free(schema);

    size_t tokens = check_tokens(path);
    CHECK(tokens > 0);
    static const char *const dirs[] = {"analyzer/base", "analyzer/replay", "analyzer/input",
                                       "analyzer/query", "analyzer/cli"};
    size_t in_sources = 0;
    for (size_t i = 0; i < COUNT(dirs); i++) {
        snprintf(path, sizeof path, "%s/%s", src, dirs[i]);
        in_sources += check_tokens_in(path);
    }
    CHECK(in_sources > 10);
    return check_finish("test_vocab");
}
