/* torch_context.c — see torch_context.h. */
#include "torch_context.h"

#include "categories.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_grow.h"
#include "gmt_vocab.h"
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- annotations ---------------------------------------------------------------------------- */

/* Each range's START and END, and each step that is no range's; `o` orders one moment: the END
 * of a range begun before it (0), then STARTs (1), then the END of a range begun at it (2). */
static const char annotations_sql[] =
    "WITH spans(b, e, name, k) AS ("
    " SELECT begin_ts_ns, end_ts_ns, name, marker_id FROM ranges WHERE name IS NOT NULL"
    " UNION ALL"
    " SELECT s.begin_ts_ns, s.end_ts_ns, coalesce(s.name, 'step ' || s.step), -s.step - 1"
    " FROM steps AS s WHERE NOT EXISTS (SELECT 1 FROM ranges AS r WHERE r.name = s.name AND"
    " r.begin_ts_ns = s.begin_ts_ns)),"
    " ends(ts, stage, name, o, k) AS ("
    " SELECT b, 0, name, 1, k FROM spans"
    " UNION ALL"
    " SELECT e, 1, name, CASE WHEN b < e THEN 0 ELSE 2 END, k FROM spans WHERE e IS NOT NULL)"
    " SELECT ts, stage, name FROM ends ORDER BY ts, o, k";

static int64_t floor_us(int64_t ns) { return ns >= 0 ? ns / 1000 : -((-ns + 999) / 1000); }

/* The microsecond each annotation is written at (torch_context.h): one pass over the device
 * events' times (ascending with event_id), the annotations in time order beside it. An
 * annotation moves one microsecond later when an event of its microsecond came at or before it
 * (`before`) and none after it (`after`). */
static int place(sqlite3 *db, torch_annotations *a, char *err, size_t errlen) {
    static const int want[] = {EVENT_COL_ts_ns, EVENT_COL_kind};
    uint8_t *flags = calloc(a->n, 1); /* 1: before, 2: after */
    int64_t last = db_query_int(db, "SELECT max(event_id) FROM event_rows", 0);
    event_scan *s = flags && last >= 1
                        ? event_scan_open(db, event_scan_mask(want, 2), 1, last, err, errlen)
                        : NULL;
    if (!flags || (last >= 1 && !s)) {
        if (!flags)
            snprintf(err, errlen, "out of memory");
        free(flags);
        return -1;
    }
    const int64_t *cols[EVENT_STORE_NCOLS], *v[2];
    size_t next = 0; /* the first annotation at or after the events so far */
    long n;
    int rc = 0;
    while (s && (n = event_scan_next(s, cols)) != 0) {
        if (n < 0) {
            snprintf(err, errlen, "%s", event_scan_error(s));
            rc = -1;
            break;
        }
        event_scan_pick(cols, want, 2, v);
        for (long i = 0; i < n; i++) {
            if (event_value_or(v[1][i], -1) != TRACE_KIND_DEVICE)
                continue;
            int64_t t = v[0][i], us = floor_us(t);
            for (; next < a->n && a->items[next].ts_ns < t; next++) /* this event follows them */
                if (floor_us(a->items[next].ts_ns) == us)
                    flags[next] |= 2;
            for (size_t k = next; k < a->n && floor_us(a->items[k].ts_ns) == us; k++)
                flags[k] |= 1; /* at or before them, in their microsecond */
        }
    }
    if (s)
        event_scan_close(s);
    for (size_t k = 0; rc == 0 && k < a->n; k++)
        if (flags[k] == 1)
            a->items[k].time_us++;
    free(flags);
    return rc;
}

const char *torch_annotation_stage(const torch_annotation *a) { return a->end ? "END" : "START"; }

void torch_annotations_free(torch_annotations *a) {
    for (size_t i = 0; i < a->n; i++)
        free(a->items[i].name);
    free(a->items);
    memset(a, 0, sizeof *a);
}

int torch_annotations_read(sqlite3 *db, torch_annotations *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!db_has_table(db, "steps") || !db_has_table(db, "ranges"))
        return 0;
    sqlite3_stmt *st = db_statement(db, annotations_sql);
    if (!st) {
        snprintf(err, errlen, "cannot read the ranges and steps: %s", sqlite3_errmsg(db));
        return -1;
    }
    size_t cap = 0;
    int failed = 0, oom = 0;
    while (!oom && db_next_row(st, &failed)) {
        const char *name = (const char *)sqlite3_column_text(st, 2);
        char *copy = name ? strdup(name) : NULL;
        if (!copy || gmt_grow((void **)&out->items, &cap, out->n, sizeof *out->items) != 0) {
            free(copy);
            oom = 1;
            break;
        }
        torch_annotation *a = &out->items[out->n++];
        a->ts_ns = sqlite3_column_int64(st, 0);
        a->time_us = floor_us(a->ts_ns);
        a->end = sqlite3_column_int(st, 1);
        a->name = copy;
    }
    sqlite3_finalize(st);
    if (oom || failed) {
        snprintf(err, errlen, "%s", oom ? "out of memory" : sqlite3_errmsg(db));
        torch_annotations_free(out);
        return -1;
    }
    if (out->n && place(db, out, err, errlen) != 0) {
        torch_annotations_free(out);
        return -1;
    }
    return 0;
}

/* ---- categories ----------------------------------------------------------------------------- */

/* Each entry: alloc_id * 16 + category (a category fits 4 bits), sorted: by alloc id. */
struct torch_categories {
    int64_t *keys;
    size_t n, cap;
    int known; /* a block whose category is not unknown */
};

_Static_assert(BLOCK_CATEGORY_COUNT <= 16, "a category fits in 4 bits");

static int keep_block(void *ctx, const classified_block *b) {
    torch_categories *c = ctx;
    if (gmt_grow((void **)&c->keys, &c->cap, c->n, sizeof *c->keys) != 0)
        return 1;
    c->keys[c->n++] = b->alloc_id * 16 + (int64_t)b->category; /* ids are far below 2^59 */
    c->known |= b->category != BLOCK_CATEGORY_UNKNOWN;
    return 0;
}

static int cmp_key(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int torch_categories_read(sqlite3 *db, torch_categories **out, char *err, size_t errlen) {
    *out = NULL;
    torch_categories *c = calloc(1, sizeof *c);
    categorizer *cz = c ? categorizer_new(db, NULL, err, errlen) : NULL;
    if (!cz) {
        if (!c)
            snprintf(err, errlen, "out of memory");
        free(c);
        return -1;
    }
    err[0] = '\0';
    int rc = categorizer_sweep_all(cz, keep_block, c, err, errlen);
    categorizer_free(cz);
    if (rc != 0) {
        if (rc > 0 || !err[0])
            snprintf(err, errlen, "out of memory");
        torch_categories_free(c);
        return -1;
    }
    if (!c->known) { /* nothing the analyzer knows: no categories at all */
        torch_categories_free(c);
        return 0;
    }
    qsort(c->keys, c->n, sizeof *c->keys, cmp_key);
    *out = c;
    return 0;
}

const char *torch_category_of(const torch_categories *c, int64_t block_id) {
    size_t lo = 0, hi = c->n;
    int64_t first = block_id * 16; /* the smallest key of this id */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->keys[mid] < first)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < c->n && c->keys[lo] - first < 16)
        return gmt_category_name((gmt_category)(c->keys[lo] - first));
    return gmt_category_name(BLOCK_CATEGORY_UNKNOWN);
}

void torch_categories_free(torch_categories *c) {
    if (!c)
        return;
    free(c->keys);
    free(c);
}

/* ---- modules -------------------------------------------------------------------------------- */

struct torch_modules {
    struct module_base {
        char *path;
        uint64_t base;
    } * items;
    size_t n;
};

torch_modules *torch_modules_read(sqlite3 *db) {
    torch_modules *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    sqlite3_stmt *st = db_has_table(db, "modules")
                           ? db_statement(db, "SELECT path, load_base FROM modules WHERE "
                                              "load_base IS NOT NULL ORDER BY module_id")
                           : NULL;
    size_t cap = 0;
    int failed = 0;
    while (st && db_next_row(st, &failed)) {
        const char *path = (const char *)sqlite3_column_text(st, 0);
        char *copy = path ? strdup(path) : NULL;
        if (!copy || gmt_grow((void **)&m->items, &cap, m->n, sizeof *m->items) != 0) {
            free(copy);
            sqlite3_finalize(st);
            torch_modules_free(m);
            return NULL;
        }
        m->items[m->n].path = copy;
        m->items[m->n++].base = (uint64_t)sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st); /* a failed read: fewer offsets, none wrong */
    return m;
}

int torch_module_offset(const torch_modules *m, const char *path, uint64_t ip, uint64_t *offset) {
    for (size_t i = 0; path && i < m->n; i++) /* a few dozen modules; frames are memoized */
        if (!strcmp(m->items[i].path, path) && ip >= m->items[i].base) {
            *offset = ip - m->items[i].base;
            return 1;
        }
    return 0;
}

void torch_modules_free(torch_modules *m) {
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        free(m->items[i].path);
    free(m->items);
    free(m);
}
