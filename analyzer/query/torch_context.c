/* torch_context.c — see torch_context.h. */
#include "torch_context.h"

#include "category_stream.h"
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

int torch_categories_read(sqlite3 *db, torch_categories **out, char *err, size_t errlen) {
    category_stream *s;
    *out = NULL;
    if (category_stream_open(db, &s, err, errlen) != 0)
        return -1;
    *out = (torch_categories *)s;
    return 0;
}

int torch_categories_begin(torch_categories *c, char *err, size_t errlen) {
    /* a device's entries start at event 1: the seed's blocks are live then */
    return category_stream_begin((category_stream *)c, 1, err, errlen);
}

const char *torch_category_of(torch_categories *c, const torch_event *e, char *err, size_t errlen) {
    category_stream *s = (category_stream *)c;
    gmt_category cat = BLOCK_CATEGORY_UNKNOWN;
    if (e->block_id == TORCH_NO_BLOCK) /* a segment's entry, an oom */
        return gmt_category_name(cat);
    if (!strcmp(e->action, "alloc")) {
        if (category_stream_alloc(s, e->block_id, (int64_t)e->size, &cat, err, errlen) != 0)
            return NULL;
    } else if (!strcmp(e->action, "free_completed")) {
        category_stream_end(s, e->block_id, &cat, NULL);
    } else {
        category_stream_live(s, e->block_id, &cat, NULL);
    }
    return gmt_category_name(cat);
}

void torch_categories_free(torch_categories *c) { category_stream_close((category_stream *)c); }

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
