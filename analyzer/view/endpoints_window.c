/* endpoints_window.c — the viewer's window summary and search (endpoints.h: /api/window,
 * /api/search). The window is the facts the command line has for two WHENs — diff.h's diff of
 * its ends (printed by fact_json.h as `diff --json` prints it), step_table.h's rows (as `steps
 * --json`: the range step_table_overlap says, read by step_table_part), report's OOM verdicts —
 * and view_window.h's sites and categories; the search is
 * view_search.h's. The diff's stacks come without their frames (a real stack's frames are
 * kilobytes). No SQL here (tests/test_layers.py). Caps: 10 diff stacks, 10 sites, 200 steps,
 * REPORT_MAX_OOMS OOMs, 50 search sites with 8 matched frames each, 512 histogram buckets, 100
 * blocks and 20 segments for an address: every answer stays far below the server's 256 KiB. */
#include "endpoints.h"

#include "db_query.h"
#include "diff.h"
#include "fact_json.h"
#include "json_out.h"
#include "stack_names.h"
#include "step_table.h"
#include "view_marks.h"
#include "view_search.h"
#include "view_window.h"
#include "when.h"

#include "gmt_assert.h"
#include "gmt_grow.h"
#include "gmt_vocab.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW_DIFF_STACKS 10
#define WINDOW_MAX_STEPS 200
#define SEARCH_MATCHED_FRAMES 8

/* ?device=D (a device with events: else 404), or the one with the highest peak (endpoints.c's
 * rule). */
static int device_of(sqlite3 *db, const view_request *rq, int *device, char *err, size_t errlen) {
    const char *text = view_request_arg(rq, "device");
    if (!text) {
        *device = when_default_device(db);
        return 0;
    }
    char *end;
    errno = 0;
    long d = strtol(text, &end, 10);
    if (end == text || *end || errno || d < 0 || d >= GMT_MAX_DEVICES) {
        snprintf(err, errlen, "bad device '%.64s': a number from 0 to %d", text,
                 GMT_MAX_DEVICES - 1);
        return 400;
    }
    if (!when_device_answers(db, (int)d)) {
        snprintf(err, errlen, "no device %d", (int)d);
        return 404;
    }
    *device = (int)d;
    return 0;
}

/* A number argument: decimal, or hex with 0x. 0 and *v, or 400. */
static int u64_arg(const char *name, const char *text, uint64_t *v, char *err, size_t errlen) {
    char *end;
    errno = 0;
    int hex = text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    unsigned long long n = strtoull(hex ? text + 2 : text, &end, hex ? 16 : 10);
    if (!*text || end == (hex ? text + 2 : text) || *end || errno || text[0] == '-') {
        snprintf(err, errlen, "bad %s '%.64s': a number (0x... for hex)", name, text);
        return 400;
    }
    *v = n;
    return 0;
}

/* ---- the step tables, shared by the worker threads ---------------------------------------- */

/* The database never changes while the server runs, and a step table (a pass over every step's
 * events: 0.34 s at 10 M events) does not depend on the window: each (database file, device)'s
 * is made once, by the first thread that asks (the whole /api/steps; a window of implicit
 * steps), outside the lock (the threads that ask for the same table meanwhile wait for it; a
 * part of /api/steps and a window's steps do not: they read their rows themselves, or use the
 * table when it is kept), and kept for every thread until view_step_table_drop. Its rows are
 * plain data (a row's phase word is a static string), nothing of the connection that made
 * them. */
typedef struct shared_steps {
    char *path; /* db_file_name's, or "connection ADDRESS" for one without a file */
    int device;
    int ready; /* 0: being made */
    step_row *rows;
    size_t nrows;
    step_history history;
} shared_steps;

static pthread_mutex_t steps_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t steps_made = PTHREAD_COND_INITIALIZER;
static shared_steps **tables; /* pointers: a table stays where it is while others are added */
static size_t ntables, tables_cap;

/* What a table is kept under: the database's file, so every connection to it shares one; a
 * database without a file (in memory, temporary) its connection's own. */
static const char *table_key(sqlite3 *db, char key[64]) {
    const char *path = db_file_name(db);
    if (*path)
        return path;
    snprintf(key, 64, "connection %p", (void *)db);
    return key;
}

/* The entry of (db's file, device), ready or being made; under steps_lock. */
static shared_steps *entry_of(sqlite3 *db, int device, size_t *at) {
    char key[64];
    const char *path = table_key(db, key);
    for (size_t i = 0; i < ntables; i++)
        if (tables[i]->device == device && strcmp(tables[i]->path, path) == 0) {
            if (at)
                *at = i;
            return tables[i];
        }
    return NULL;
}

static void entry_free(shared_steps *t) {
    if (t) {
        free(t->rows);
        free(t->path);
    }
    free(t);
}

/* The table of `device` on db's file: kept, made by another thread (waited for), or made now.
 * 0, or 500 with the message. */
static int shared_table(sqlite3 *db, int device, const shared_steps **out, char *err,
                        size_t errlen) {
    pthread_mutex_lock(&steps_lock);
    shared_steps *t;
    while ((t = entry_of(db, device, NULL)) && !t->ready)
        pthread_cond_wait(&steps_made, &steps_lock);
    if (t) {
        pthread_mutex_unlock(&steps_lock);
        *out = t;
        return 0;
    }
    /* this thread makes it: an entry that says so, then the pass without the lock */
    t = gmt_grow((void **)&tables, &tables_cap, ntables, sizeof *tables) == 0 ? calloc(1, sizeof *t)
                                                                              : NULL;
    char key[64];
    if (!t || !(t->path = strdup(table_key(db, key)))) {
        pthread_mutex_unlock(&steps_lock);
        entry_free(t);
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    t->device = device;
    tables[ntables++] = t;
    pthread_mutex_unlock(&steps_lock);
    int rc = step_table(db, device, &t->rows, &t->nrows, &t->history, err, errlen);
    pthread_mutex_lock(&steps_lock);
    if (rc == 0) {
        t->ready = 1;
    } else { /* out of the list: the next thread that asks tries again */
        size_t at = 0;
        if (GMT_ALWAYS(entry_of(db, device, &at) == t))
            tables[at] = tables[--ntables];
        entry_free(t);
        t = NULL;
    }
    pthread_cond_broadcast(&steps_made);
    pthread_mutex_unlock(&steps_lock);
    *out = t;
    return rc ? 500 : 0;
}

int view_step_table(sqlite3 *db, int device, const step_row **rows, size_t *n,
                    const step_history **history, char *err, size_t errlen) {
    const shared_steps *t;
    int rc = shared_table(db, device, &t, err, errlen);
    if (rc)
        return rc;
    *rows = t->rows;
    *n = t->nrows;
    *history = &t->history;
    return 0;
}

int view_step_table_held(sqlite3 *db, int device, const step_row **rows, size_t *n,
                         const step_history **history) {
    pthread_mutex_lock(&steps_lock);
    const shared_steps *t = entry_of(db, device, NULL);
    int ready = t && t->ready;
    pthread_mutex_unlock(&steps_lock);
    if (!ready)
        return 0;
    *rows = t->rows;
    *n = t->nrows;
    *history = &t->history;
    return 1;
}

/* The step orders (step_table.h's step_order: what the parts of a table share), kept as the
 * tables are (under steps_lock, until view_step_table_drop), by value: a walk of the steps'
 * index made by whichever thread asks first (two at once both make it: the same answer), the
 * first reserved jump added by the first part that needs it. */
typedef struct shared_order {
    char *path;
    int device;
    step_order order;
} shared_order;

static shared_order *orders;
static size_t norders, orders_cap;

/* The kept order of (db's file, device), or NULL; under steps_lock. */
static shared_order *order_of(sqlite3 *db, int device) {
    char key[64];
    const char *path = table_key(db, key);
    for (size_t i = 0; i < norders; i++)
        if (orders[i].device == device && strcmp(orders[i].path, path) == 0)
            return &orders[i];
    return NULL;
}

int view_step_order(sqlite3 *db, int device, step_order *o, char *err, size_t errlen) {
    pthread_mutex_lock(&steps_lock);
    const shared_order *kept = order_of(db, device);
    if (kept)
        *o = kept->order;
    pthread_mutex_unlock(&steps_lock);
    if (kept)
        return 0;
    if (step_table_order(db, device, o, err, errlen) != 0)
        return 500;
    char key[64];
    char *path = strdup(table_key(db, key));
    pthread_mutex_lock(&steps_lock);
    if (path && !order_of(db, device) &&
        gmt_grow((void **)&orders, &orders_cap, norders, sizeof *orders) == 0) {
        orders[norders++] = (shared_order){.path = path, .device = device, .order = *o};
        path = NULL;
    }
    pthread_mutex_unlock(&steps_lock);
    free(path); /* not kept (out of memory, or another thread's is): asked again next time */
    return 0;
}

void view_step_order_keep(sqlite3 *db, int device, const step_order *o) {
    pthread_mutex_lock(&steps_lock);
    shared_order *kept = order_of(db, device);
    if (kept && o->jump_known && !kept->order.jump_known) {
        kept->order.jump_known = 1;
        kept->order.first_jump = o->first_jump;
    }
    pthread_mutex_unlock(&steps_lock);
}

/* The ranges' indexes (view_marks.h), one per database file, kept as the tables are (under
 * steps_lock, until view_step_table_drop): made by whichever thread asks first (two at once both
 * make it, the second's dropped), read by every thread after, never changed. */
typedef struct shared_ranges {
    char *path;
    view_ranges_index index;
} shared_ranges;

static shared_ranges *kept_ranges;
static size_t nkept_ranges, kept_ranges_cap;

static const view_ranges_index *ranges_of(sqlite3 *db) {
    char key[64];
    const char *path = table_key(db, key);
    for (size_t i = 0; i < nkept_ranges; i++)
        if (strcmp(kept_ranges[i].path, path) == 0)
            return &kept_ranges[i].index;
    return NULL;
}

int view_ranges(sqlite3 *db, int event_axis, const view_ranges_index **out, char *err,
                size_t errlen) {
    pthread_mutex_lock(&steps_lock);
    *out = ranges_of(db);
    pthread_mutex_unlock(&steps_lock);
    if (*out)
        return 0;
    view_ranges_index made;
    if (view_ranges_index_build(db, event_axis, &made, err, errlen) != 0)
        return 500;
    char key[64];
    char *path = strdup(table_key(db, key));
    pthread_mutex_lock(&steps_lock);
    if (!(*out = ranges_of(db)) && path &&
        gmt_grow((void **)&kept_ranges, &kept_ranges_cap, nkept_ranges, sizeof *kept_ranges) == 0) {
        kept_ranges[nkept_ranges] = (shared_ranges){.path = path, .index = made};
        *out = &kept_ranges[nkept_ranges++].index;
        path = NULL;
        made = (view_ranges_index){0};
    }
    pthread_mutex_unlock(&steps_lock);
    free(path);
    view_ranges_index_free(&made); /* another thread's is kept, or none could be */
    if (!*out) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    return 0;
}

void view_step_table_drop(void) {
    pthread_mutex_lock(&steps_lock);
    for (size_t i = 0; i < nkept_ranges; i++) {
        free(kept_ranges[i].path);
        view_ranges_index_free(&kept_ranges[i].index);
    }
    free(kept_ranges);
    kept_ranges = NULL;
    nkept_ranges = kept_ranges_cap = 0;
    for (size_t i = 0; i < ntables; i++)
        entry_free(tables[i]);
    free(tables);
    tables = NULL;
    ntables = tables_cap = 0;
    for (size_t i = 0; i < norders; i++)
        free(orders[i].path);
    free(orders);
    orders = NULL;
    norders = orders_cap = 0;
    pthread_mutex_unlock(&steps_lock);
}

/* ---- /api/window ---------------------------------------------------------------------- */

/* The WHEN of one end: ?from=WHEN, else ?t0=N on the axis (past its end: the end), else dflt. */
static int window_end(const view_request *rq, const char *when_name, const char *axis_name,
                      const view_axis *axis, const char *dflt, char *buf, size_t len, char *err,
                      size_t errlen) {
    const char *when = view_request_arg(rq, when_name), *at = view_request_arg(rq, axis_name);
    if (when && at) {
        snprintf(err, errlen, "%s and %s say the same end: give one", when_name, axis_name);
        return 400;
    }
    if (when) {
        snprintf(buf, len, "%s", when);
        return 0;
    }
    if (!at) {
        snprintf(buf, len, "%s", dflt);
        return 0;
    }
    uint64_t v;
    if (u64_arg(axis_name, at, &v, err, errlen))
        return 400;
    if (v >= (uint64_t)axis->end)
        snprintf(buf, len, "end");
    else
        snprintf(buf, len, axis->timed ? "time:%" PRIu64 "ns" : "event:%" PRIu64, v);
    return 0;
}

static void print_sites(FILE *out, sqlite3 *db, const view_window *w) {
    stack_names *names = stack_names_new(db);
    const named_stack *stacks[VIEW_WINDOW_TOP_SITES];
    char label_buf[VIEW_WINDOW_TOP_SITES][256];
    char *labels[VIEW_WINDOW_TOP_SITES];
    for (size_t i = 0; i < w->nsites; i++) {
        stacks[i] =
            names && w->sites[i].stack_id ? stack_names_get(names, w->sites[i].stack_id) : NULL;
        labels[i] = label_buf[i];
    }
    stack_labels_distinct(stacks, w->nsites, labels, sizeof label_buf[0]);
    fprintf(out,
            ",\n \"sites\": {\"rule\": \"bytes allocated in the window per allocation stack\", "
            "\"sites_total\": %zu, \"blocks\": %" PRId64 ", \"bytes\": %" PRId64 ", \"listed\": [",
            w->sites_total, w->blocks, w->bytes);
    for (size_t i = 0; i < w->nsites; i++) {
        fprintf(out, "%s\n  {\"stack_id\": %" PRId64 ", \"site\": ", i ? "," : "",
                w->sites[i].stack_id);
        json_string(out, labels[i]);
        fprintf(out, ", \"blocks\": %" PRId64 ", \"bytes\": %" PRId64 "}", w->sites[i].blocks,
                w->sites[i].bytes);
    }
    fputs("]}", out);
    stack_names_free(names);
}

static void category_object(FILE *out, const int64_t *bytes) {
    for (int c = 0; c < BLOCK_CATEGORY_COUNT; c++)
        fprintf(out, "%s\"%s\": %" PRId64, c ? ", " : "{", gmt_category_name((gmt_category)c),
                bytes[c]);
    fputc('}', out);
}

static void window_rest(FILE *out, const view_window *w) {
    fprintf(out, ",\n \"peak_allocated_bytes\": %" PRId64 ", \"peak_allocated_event_id\": %" PRId64,
            w->peak_allocated.allocated,
            w->peak_allocated.event_id > 0 ? w->peak_allocated.event_id : 0);
    fputs(",\n \"categories\": ", out);
    if (w->have_categories) {
        fputs("{\"at_peak\": ", out);
        category_object(out, w->categories_at_peak);
        fputs(", \"at_end\": ", out);
        category_object(out, w->categories_at_end);
        fputs("}", out);
    } else {
        fputs("null, \"categories_error\": ", out);
        json_string(out, w->categories_error);
    }
    fprintf(out, ",\n \"ooms\": {\"count\": %" PRId64 ", \"listed\": %zu, \"oom_events\": [",
            w->oom_count, w->nooms);
    for (size_t i = 0; i < w->nooms; i++) {
        fputs(i ? ", " : "", out);
        report_oom_json_write(out, &w->ooms[i]);
    }
    fputs("]}", out);
}

/* The steps that overlap (from, to]: a step holds (begin, end]; from the first that does to the
 * last in the table's order, at most WINDOW_MAX_STEPS of them listed. The rows of a kept table,
 * else step_table_overlap's range and step_table_part's rows of it (those steps' events, not
 * the run's), with the device's kept step order; implicit steps: the whole table, kept. */
static int window_steps(FILE *out, sqlite3 *db, int device, int64_t from, int64_t to, char *err,
                        size_t errlen) {
    const step_row *rows;
    const step_history *history;
    size_t n, first = 0, count = 0;
    int held = view_step_table_held(db, device, &rows, &n, &history);
    if (!held) {
        step_order order;
        int rc = view_step_order(db, device, &order, err, errlen);
        if (rc)
            return rc;
        if ((rc = step_table_overlap(db, device, from, to, &order, &first, &count, err, errlen)) <
            0)
            return 500;
        size_t listed = count > WINDOW_MAX_STEPS ? WINDOW_MAX_STEPS : count, got, total;
        step_row *some;
        step_history h;
        if (rc == 0 && (rc = step_table_part(db, device, first, listed, &order, &some, &got, &total,
                                             &h, err, errlen)) < 0)
            return 500;
        view_step_order_keep(db, device, &order);
        if (rc == 0) {
            if (GMT_NEVER(got != listed || first + count > total)) { /* the two read apart */
                free(some);
                snprintf(err, errlen, "the window's steps: rows %zu + %zu of %zu", first, count,
                         total);
                return 500;
            }
            fprintf(out,
                    ",\n \"steps_in_window\": %zu, \"steps_listed\": %zu,\n \"steps\": ", count,
                    listed);
            step_table_json_write_rows(out, device, some, got, total, count ? first : 0, &h, 1);
            free(some);
            return 0;
        } /* implicit steps */
        int vrc = view_step_table(db, device, &rows, &n, &history, err, errlen);
        if (vrc)
            return vrc;
    }
    first = count = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].begin_event_id < to && rows[i].end_event_id > from) {
            if (!count)
                first = i;
            count = i - first + 1;
        }
    }
    int more = count > WINDOW_MAX_STEPS;
    json_slice part = {.first = first, .count = more ? WINDOW_MAX_STEPS : count};
    fprintf(out, ",\n \"steps_in_window\": %zu, \"steps_listed\": %zu,\n \"steps\": ", count,
            part.count);
    step_table_json_write(out, device, rows, n, history, &part);
    return 0;
}

int view_api_window(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen) {
    int device, rc = device_of(db, rq, &device, err, errlen);
    if (rc)
        return rc;
    view_axis axis;
    view_axis_read(db, &axis);
    char from[96], to[96];
    if ((rc = window_end(rq, "from", "t0", &axis, "start", from, sizeof from, err, errlen)) ||
        (rc = window_end(rq, "to", "t1", &axis, "end", to, sizeof to, err, errlen)))
        return rc;
    diff_points d;
    rc = diff_points_read(db, view_request_input(rq), device, from, to, WINDOW_DIFF_STACKS, 0, &d,
                          err, errlen);
    if (rc != DIFF_OK)
        return rc == DIFF_ERR_WHEN ? 400 : 500;
    if (d.from.event_id > d.to.event_id) {
        snprintf(err, errlen, "the window's from (%s) is after its to (%s)", from, to);
        diff_points_free(&d);
        return 400;
    }
    view_window *w = malloc(sizeof *w);
    if (!w || view_window_read(db, d.device, d.from.event_id, d.to.event_id, w, err, errlen)) {
        if (!w)
            snprintf(err, errlen, "out of memory");
        free(w);
        diff_points_free(&d);
        return 500;
    }
    fprintf(out,
            "{\"device\": %d, \"axis\": \"%s\", \"from_event_id\": %" PRId64
            ", \"to_event_id\": %" PRId64,
            d.device, axis.timed ? "time_ns" : "event_id", d.from.event_id, d.to.event_id);
    fputs(", \"from\": ", out);
    json_string(out, from);
    fputs(", \"to\": ", out);
    json_string(out, to);
    fputs(",\n \"diff\": ", out);
    diff_points_json_write(out, &d, 1); /* frames: /api/search or /api/block */
    print_sites(out, db, w);
    window_rest(out, w);
    rc = window_steps(out, db, d.device, d.from.event_id, d.to.event_id, err, errlen);
    fputs("}\n", out);
    free(w);
    diff_points_free(&d);
    return rc ? rc : 200;
}

/* ---- /api/search ---------------------------------------------------------------------- */

/* The frames of a stack that hold the text, PyTorch's frame keys, at most a few. */
static void matched_frames(FILE *out, const named_stack *s, const char *text) {
    fputs(", \"matched_frames\": [", out);
    size_t shown = 0;
    for (size_t i = 0; s && i < s->frame_count && shown < SEARCH_MATCHED_FRAMES; i++) {
        const named_frame *f = &s->frames[i];
        if (!view_search_frame_matches(f->name, f->file, text))
            continue;
        fputs(shown++ ? ", {\"name\": " : "{\"name\": ", out);
        json_string(out, f->name);
        fputs(", \"filename\": ", out);
        json_string(out, f->file);
        fprintf(out, ", \"line\": %" PRId64 ", \"depth\": %zu}", f->line, i);
    }
    fputc(']', out);
}

static void i64_list(FILE *out, const int64_t *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s%" PRId64, i ? "," : "[", v[i]);
    fputs(n ? "]" : "[]", out);
}

static int search_text(FILE *out, sqlite3 *db, int device, const char *q, char *err,
                       size_t errlen) {
    view_search_frames *s = malloc(sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    if (view_search_frames_read(db, device, q, s, err, errlen) != 0) {
        free(s);
        return *q && strlen(q) <= VIEW_SEARCH_MAX_TEXT ? 500 : 400;
    }
    stack_names *names = stack_names_new(db);
    const named_stack **stacks = calloc(s->nsites + 1, sizeof *stacks);
    char *buf = calloc(s->nsites + 1, 256);
    char **labels = calloc(s->nsites + 1, sizeof *labels);
    if (!names || !stacks || !buf || !labels) {
        stack_names_free(names);
        free(stacks), free(buf), free(labels);
        view_search_frames_free(s);
        free(s);
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    for (size_t i = 0; i < s->nsites; i++) {
        stacks[i] = s->sites[i].stack_id ? stack_names_get(names, s->sites[i].stack_id) : NULL;
        labels[i] = buf + 256 * i;
    }
    stack_labels_distinct(stacks, s->nsites, labels, 256);
    fprintf(out, "{\"device\": %d, \"q\": ", device);
    json_string(out, q);
    fprintf(out,
            ", \"frames_matched\": %" PRId64 ", \"stacks_matched\": %zu, \"sites_total\": %zu, "
            "\"sites_listed\": %zu, \"blocks\": %" PRId64 ", \"bytes\": %" PRId64
            ",\n \"sites\": [",
            s->frames_total, s->stacks_total, s->sites_total, s->nsites, s->blocks, s->bytes);
    for (size_t i = 0; i < s->nsites; i++) {
        const view_site *v = &s->sites[i];
        fprintf(out, "%s\n  {\"stack_id\": %" PRId64 ", \"site\": ", i ? "," : "", v->stack_id);
        json_string(out, labels[i]);
        fprintf(out,
                ", \"blocks\": %" PRId64 ", \"bytes\": %" PRId64 ", \"peak_live_bytes\": %" PRId64,
                v->blocks, v->bytes, v->peak_live_bytes);
        matched_frames(out, stacks[i], q);
        fputc('}', out);
    }
    fprintf(out,
            "],\n \"histogram\": {\"axis\": \"%s\", \"axis_end\": %" PRId64
            ", \"bucket_width\": %" PRId64 ", \"buckets\": %d,\n  \"blocks\": ",
            s->axis.timed ? "time_ns" : "event_id", s->axis.end, s->bucket_width,
            VIEW_SEARCH_BUCKETS);
    i64_list(out, s->hist_blocks, VIEW_SEARCH_BUCKETS);
    fputs(",\n  \"bytes\": ", out);
    i64_list(out, s->hist_bytes, VIEW_SEARCH_BUCKETS);
    fputs("}}\n", out);
    stack_names_free(names);
    free(stacks), free(buf), free(labels);
    view_search_frames_free(s);
    free(s);
    return 200;
}

static int search_addr(FILE *out, sqlite3 *db, int device, uint64_t addr, char *err,
                       size_t errlen) {
    view_search_addr a;
    if (view_search_addr_read(db, device, addr, &a, err, errlen) != 0)
        return 500;
    stack_names *names = stack_names_new(db);
    if (!names) {
        view_search_addr_free(&a);
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    fprintf(out,
            "{\"device\": %d, \"address\": %" PRIu64 ", \"blocks_total\": %zu, \"blocks_listed\": "
            "%zu,\n \"blocks\": [",
            device, addr, a.blocks_total, a.nblocks);
    for (size_t i = 0; i < a.nblocks; i++) {
        const block_detail *b = &a.blocks[i];
        fprintf(out,
                "%s\n  {\"alloc_id\": %" PRId64 ", \"address\": %" PRIu64 ", \"size\": %" PRId64
                ", \"alloc_ts_ns\": %" PRId64,
                i ? "," : "", b->alloc_id, b->addr, b->size, b->alloc_ts_ns);
        if (b->free_event_id)
            fprintf(out, ", \"free_event_id\": %" PRId64 ", \"free_ts_ns\": %" PRId64,
                    b->free_event_id, b->free_ts_ns);
        else
            fputs(", \"free_event_id\": null, \"free_ts_ns\": null", out);
        fprintf(out, ", \"stack_id\": %" PRId64 ", \"site\": ", b->alloc_stack_id);
        const named_stack *s = b->alloc_stack_id ? stack_names_get(names, b->alloc_stack_id) : NULL;
        json_string(out, s ? s->site : "no stack");
        fputc('}', out);
    }
    fprintf(out, "],\n \"segments_total\": %zu, \"segments\": [", a.segments_total);
    for (size_t i = 0; i < a.nsegments; i++) {
        const view_segment_hit *h = &a.segments[i];
        fprintf(out,
                "%s{\"segment_id\": %" PRId64 ", \"address\": %" PRIu64 ", \"size\": %" PRId64
                ", \"alloc_ts_ns\": %" PRId64,
                i ? ", " : "", h->segment_id, (uint64_t)h->addr, h->size, h->alloc_ts_ns);
        if (h->free_event_id)
            fprintf(out, ", \"free_event_id\": %" PRId64 ", \"free_ts_ns\": %" PRId64 "}",
                    h->free_event_id, h->free_ts_ns);
        else
            fputs(", \"free_event_id\": null, \"free_ts_ns\": null}", out);
    }
    fputs("]}\n", out);
    stack_names_free(names);
    view_search_addr_free(&a);
    return 200;
}

int view_api_search(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen) {
    int device, rc = device_of(db, rq, &device, err, errlen);
    if (rc)
        return rc;
    const char *q = view_request_arg(rq, "q"), *addr = view_request_arg(rq, "addr");
    if (!q == !addr) {
        snprintf(err, errlen, "search: give q=TEXT (a function or file) or addr=0x... (one)");
        return 400;
    }
    if (q && (!*q || strlen(q) > VIEW_SEARCH_MAX_TEXT)) {
        snprintf(err, errlen, "search: q is 1 to %d bytes", VIEW_SEARCH_MAX_TEXT);
        return 400;
    }
    if (q)
        return search_text(out, db, device, q, err, errlen);
    uint64_t a;
    if (u64_arg("addr", addr, &a, err, errlen))
        return 400;
    return search_addr(out, db, device, a, err, errlen);
}
