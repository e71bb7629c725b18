/* diff.c — the facts of `memanalyze diff` (see diff.h): the blocks live at one point of an
 * input and not at the other, per stack; the segments added and removed; and two runs' live
 * blocks at one WHEN, matched by their stacks' keys. Here because they are arithmetic over
 * layouts and names from the database, which the printer in cli/ must not do. */
#include "diff.h"

#include "gmt_assert.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t sdiff(uint64_t a, uint64_t b) { return (int64_t)a - (int64_t)b; }

static uint64_t mag(int64_t v) { return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; }

static size_t first_n(size_t n, size_t top) { return top > 0 && top < n ? top : n; }

/* ---- what every diff does ----------------------------------------------------------------- */

/* --device, or the default; DIFF_ERR when the device has no events. */
static int pick_device(sqlite3 *db, long wanted, const char *input, int *device, char *err,
                       size_t errlen) {
    *device = wanted >= 0 ? (int)wanted : when_default_device(db);
    if (!when_device_answers(db, *device)) {
        snprintf(err, errlen, "%s: device %d has no events", input, *device);
        return DIFF_ERR;
    }
    return DIFF_OK;
}

/* Resolves WHEN and reads the timeline row; DIFF_ERR_WHEN, the message after "INPUT: " when
 * input is not NULL. */
static int resolve_point(sqlite3 *db, int device, const char *when, const char *input,
                         diff_point *p, char *err, size_t errlen) {
    char msg[512];
    p->when = when;
    if (when_resolve(db, when, device, &p->event_id, msg, sizeof msg) != 0) {
        if (input)
            snprintf(err, errlen, "%s: %s", input, msg);
        else
            snprintf(err, errlen, "%s", msg);
        return DIFF_ERR_WHEN;
    }
    when_describe(db, p->event_id, p->described, sizeof p->described);
    layout_timeline_at(db, device, p->event_id, &p->totals);
    return DIFF_OK;
}

static diff_change change_of(const diff_point *a, const diff_point *b) {
    return (diff_change){b->totals.allocated_bytes - a->totals.allocated_bytes,
                         b->totals.requested_bytes - a->totals.requested_bytes,
                         b->totals.reserved_bytes - a->totals.reserved_bytes,
                         b->totals.segments - a->totals.segments,
                         (int64_t)b->live_blocks - (int64_t)a->live_blocks};
}

static int out_of_memory(char *err, size_t errlen) {
    snprintf(err, errlen, "out of memory");
    return DIFF_ERR;
}

typedef struct live_item {
    int64_t alloc_id, stack_id;
    uint64_t size;
} live_item;

static int by_alloc_id(const void *a, const void *b) {
    int64_t x = ((const live_item *)a)->alloc_id, y = ((const live_item *)b)->alloc_id;
    return x < y ? -1 : x > y;
}

/* The live blocks of a layout, by alloc id. NULL when out of memory. */
static live_item *live_items(const layout *l, size_t *count) {
    live_item *items = malloc((l->live_blocks + 1) * sizeof *items);
    size_t n = 0;
    if (!items)
        return NULL;
    for (size_t i = 0; i < l->block_count && n < l->live_blocks; i++)
        if (l->blocks[i].state != LAYOUT_INACTIVE)
            items[n++] =
                (live_item){l->blocks[i].alloc_event_id, l->blocks[i].stack_id, l->blocks[i].size};
    for (size_t i = 0; i < l->outside_count && n < l->live_blocks; i++)
        items[n++] =
            (live_item){l->outside[i].alloc_event_id, l->outside[i].stack_id, l->outside[i].size};
    qsort(items, n, sizeof *items, by_alloc_id);
    *count = n;
    return items;
}

/* ---- diff of two points of one input ------------------------------------------------------ */

static int by_stack_then_alloc(const void *a, const void *b) {
    const live_item *x = a, *y = b;
    if (x->stack_id != y->stack_id)
        return x->stack_id < y->stack_id ? -1 : 1;
    return x->alloc_id < y->alloc_id ? -1 : x->alloc_id > y->alloc_id;
}

/* Largest net change first (either sign), then most added, then stack id. */
static int by_net(const void *a, const void *b) {
    const diff_stack *x = a, *y = b;
    uint64_t mx = mag(x->net_bytes), my = mag(y->net_bytes);
    if (mx != my)
        return mx > my ? -1 : 1;
    if (x->net_bytes != y->net_bytes)
        return x->net_bytes > y->net_bytes ? -1 : 1;
    if (mag(x->net_count) != mag(y->net_count))
        return mag(x->net_count) > mag(y->net_count) ? -1 : 1;
    if (x->added_bytes != y->added_bytes)
        return x->added_bytes > y->added_bytes ? -1 : 1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* The segments rows live at one point only, by segment_id (both lists are by it). */
static void segment_changes(const layout *a, const layout *b, diff_points *d) {
    size_t i = 0, k = 0;
    while (i < a->lifetime_count || k < b->lifetime_count) {
        int64_t x = i < a->lifetime_count ? a->lifetimes[i].segment_id : INT64_MAX;
        int64_t y = k < b->lifetime_count ? b->lifetimes[k].segment_id : INT64_MAX;
        if (x == y) {
            i++, k++;
        } else if (x < y) {
            d->segments_removed++;
            d->segments_removed_bytes += a->lifetimes[i++].size;
        } else {
            d->segments_added++;
            d->segments_added_bytes += b->lifetimes[k++].size;
        }
    }
}

/* The blocks live at one point only, per stack: *out sorted by_net. 0, or -1 when out of
 * memory. */
static int stack_changes(const layout *from, const layout *to, diff_stack **out, size_t *count) {
    size_t na = 0, nb = 0;
    live_item *a = live_items(from, &na), *b = live_items(to, &nb);
    live_item *only = malloc((na + nb + 1) * sizeof *only);
    diff_stack *changes = NULL;
    size_t n = 0, nc = 0;
    if (!a || !b || !only)
        goto fail;
    size_t i = 0, k = 0;
    while (i < na || k < nb) { /* the alloc id of a block at one point only says which */
        if (i < na && k < nb && a[i].alloc_id == b[k].alloc_id) {
            i++, k++;
        } else if (k >= nb || (i < na && a[i].alloc_id < b[k].alloc_id)) {
            only[n] = a[i++];
            only[n++].alloc_id = 0; /* 0 marks removed */
        } else {
            only[n] = b[k++];
            only[n++].alloc_id = 1; /* 1 marks added */
        }
    }
    qsort(only, n, sizeof *only, by_stack_then_alloc);
    changes = malloc((n + 1) * sizeof *changes);
    if (!changes)
        goto fail;
    for (size_t j = 0; j < n; j++) {
        if (nc == 0 || changes[nc - 1].stack_id != only[j].stack_id)
            changes[nc++] = (diff_stack){.stack_id = only[j].stack_id};
        diff_stack *c = &changes[nc - 1];
        if (only[j].alloc_id) {
            c->added_bytes += only[j].size;
            c->added_count++;
        } else {
            c->removed_bytes += only[j].size;
            c->removed_count++;
        }
    }
    for (size_t j = 0; j < nc; j++) {
        changes[j].net_bytes = sdiff(changes[j].added_bytes, changes[j].removed_bytes);
        changes[j].net_count = (int64_t)changes[j].added_count - (int64_t)changes[j].removed_count;
    }
    qsort(changes, nc, sizeof *changes, by_net);
    free(a);
    free(b);
    free(only);
    *out = changes;
    *count = nc;
    return 0;
fail:
    free(a);
    free(b);
    free(only);
    free(changes);
    return -1;
}

/* The changes into d: the listed ones (in place), then the first `top` of them named. */
static int list_changes(sqlite3 *db, diff_stack *changes, size_t n, size_t top, diff_points *d) {
    size_t listed = 0;
    d->rows = changes;
    for (size_t i = 0; i < n; i++) {
        if (changes[i].net_bytes == 0 && changes[i].net_count == 0) {
            d->stacks_replaced_only++;
            d->replaced_bytes += changes[i].added_bytes;
            if (!d->all)
                continue;
        }
        changes[listed++] = changes[i];
    }
    d->stacks_touched = n;
    d->stacks_changed = n - d->stacks_replaced_only;
    d->stacks_listed = listed;
    d->nrows = first_n(listed, top);
    if (!(d->names = stack_names_new(db)))
        return -1;
    const named_stack **stacks = malloc((d->nrows ? d->nrows : 1) * sizeof *stacks);
    char **labels = malloc((d->nrows ? d->nrows : 1) * sizeof *labels);
    int rc = stacks && labels ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < d->nrows; i++) {
        d->rows[i].stack = stacks[i] = stack_names_get(d->names, d->rows[i].stack_id);
        labels[i] = d->rows[i].label;
    }
    if (rc == 0)
        rc = stack_labels_distinct(stacks, d->nrows, labels, sizeof d->rows->label);
    free(stacks);
    free(labels);
    return rc;
}

int diff_points_read(sqlite3 *db, const char *input, long device, const char *from_when,
                     const char *to_when, size_t top, int all, diff_points *d, char *err,
                     size_t errlen) {
    memset(d, 0, sizeof *d);
    d->all = all;
    int status;
    if ((status = pick_device(db, device, input, &d->device, err, errlen)) != DIFF_OK ||
        (status = resolve_point(db, d->device, from_when, NULL, &d->from, err, errlen)) !=
            DIFF_OK ||
        (status = resolve_point(db, d->device, to_when, NULL, &d->to, err, errlen)) != DIFF_OK)
        return status;
    int64_t ids[2] = {d->from.event_id, d->to.event_id};
    layout *ls[2] = {NULL, NULL};
    if (layout_build_many(db, d->device, ids, 2, ls, err, errlen) != 0)
        return DIFF_ERR;
    d->from.live_blocks = ls[0]->live_blocks;
    d->to.live_blocks = ls[1]->live_blocks;
    d->change = change_of(&d->from, &d->to);
    segment_changes(ls[0], ls[1], d);
    diff_stack *changes = NULL;
    size_t nchanges = 0;
    if (stack_changes(ls[0], ls[1], &changes, &nchanges) != 0 ||
        list_changes(db, changes, nchanges, top, d) != 0) { /* d holds changes then */
        diff_points_free(d);
        status = out_of_memory(err, errlen);
    }
    layout_free(ls[0]);
    layout_free(ls[1]);
    return status;
}

void diff_points_free(diff_points *d) {
    free(d->rows);
    stack_names_free(d->names);
    d->rows = NULL;
    d->names = NULL;
    d->nrows = 0;
}

/* ---- diff of two inputs ------------------------------------------------------------------- */

typedef struct diff_site {
    const char *key;
    const named_stack *stack; /* the first stack with this key */
    uint64_t bytes, count;
} diff_site;

static int by_key(const void *a, const void *b) {
    return strcmp(((const diff_site *)a)->key, ((const diff_site *)b)->key);
}

/* The live bytes of run r at its layout, per stack key, by key. 0, or -1 when out of memory. */
static int run_sites(diff_run *r, const layout *l) {
    size_t n = 0;
    live_item *items = live_items(l, &n);
    diff_site *per = malloc((n + 1) * sizeof *per);
    if (!items || !per) {
        free(items);
        free(per);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const named_stack *s = stack_names_get(r->names, items[i].stack_id);
        if (!s) {
            free(items);
            free(per);
            return -1;
        }
        per[i] = (diff_site){s->key, s, items[i].size, 1};
    }
    free(items);
    qsort(per, n, sizeof *per, by_key);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !strcmp(per[m - 1].key, per[i].key)) {
            per[m - 1].bytes += per[i].bytes;
            per[m - 1].count += per[i].count;
        } else {
            per[m++] = per[i];
        }
    }
    r->sites = per;
    r->nsites = m;
    return 0;
}

static uint64_t pair_max(const diff_pair *p) {
    return p->a_bytes > p->b_bytes ? p->a_bytes : p->b_bytes;
}

/* Largest difference first, then the largest, then by key. */
static int by_pair_diff(const void *x, const void *y) {
    const diff_pair *a = x, *b = y;
    uint64_t ma = mag(a->diff_bytes), mb = mag(b->diff_bytes);
    if (ma != mb)
        return ma > mb ? -1 : 1;
    if (a->diff_bytes != b->diff_bytes)
        return a->diff_bytes > b->diff_bytes ? -1 : 1;
    if (pair_max(a) != pair_max(b))
        return pair_max(a) > pair_max(b) ? -1 : 1;
    return strcmp(a->stack->key, b->stack->key);
}

static diff_pair pair_of(const diff_site *a, const diff_site *b) {
    diff_pair p = {.stack = a ? a->stack : b->stack};
    if (a)
        p.a_bytes = a->bytes, p.a_count = a->count;
    if (b)
        p.b_bytes = b->bytes, p.b_count = b->count;
    p.diff_bytes = sdiff(p.b_bytes, p.a_bytes);
    p.diff_count = (int64_t)p.b_count - (int64_t)p.a_count;
    if (!a || !b)
        p.bytes = a ? a->bytes : b->bytes, p.count = a ? a->count : b->count;
    return p;
}

/* The labels of the rows the three groups show, told apart together. 0, or -1. */
static int label_pairs(diff_runs *d) {
    diff_pairs *groups[3] = {&d->both, &d->only_a, &d->only_b};
    size_t n = d->both.count + d->only_a.count + d->only_b.count, k = 0;
    const named_stack **stacks = malloc((n ? n : 1) * sizeof *stacks);
    char **labels = malloc((n ? n : 1) * sizeof *labels);
    int rc = stacks && labels ? 0 : -1;
    for (int g = 0; rc == 0 && g < 3; g++)
        for (size_t i = 0; i < groups[g]->count; i++, k++) {
            stacks[k] = groups[g]->rows[i].stack;
            labels[k] = groups[g]->rows[i].label;
        }
    if (rc == 0)
        rc = stack_labels_distinct(stacks, n, labels, sizeof d->both.rows->label);
    free(stacks);
    free(labels);
    return rc;
}

/* The first `len` of rows, sorted, as a group of `top`. */
static diff_pairs group_of(int matched, diff_pair *rows, size_t len, size_t top) {
    qsort(rows, len, sizeof *rows, by_pair_diff);
    return (diff_pairs){matched, rows, first_n(len, top), len};
}

/* Where the next keys of a and b stand in the merge by key: 0 the same key, -1 A's first (or
 * B's are done), 1 B's first, 2 both done. */
static int key_order(const diff_run *a, size_t i, const diff_run *b, size_t k) {
    if (i >= a->nsites)
        return k >= b->nsites ? 2 : 1;
    if (k >= b->nsites)
        return -1;
    int c = strcmp(a->sites[i].key, b->sites[k].key);
    return c < 0 ? -1 : c > 0;
}

/* The group of a key_order: 0 matched, 1 only in A, 2 only in B. */
static int group_of_order(int c) { return c == 0 ? 0 : c < 0 ? 1 : 2; }

int diff_runs_add(diff_runs *d, const char *input, sqlite3 *db, long device, char *err,
                  size_t errlen) {
    if (GMT_NEVER(d->nruns >= 2)) {
        snprintf(err, errlen, "%s: a third run", input);
        return DIFF_ERR;
    }
    diff_run *r = &d->run[d->nruns++];
    r->input = input;
    r->db = db;
    return pick_device(db, device, input, &r->device, err, errlen);
}

/* Run r at `at`: its point and its sites. */
static int read_run(diff_run *r, const char *at, char *err, size_t errlen) {
    char msg[512];
    layout *l = NULL;
    int status = resolve_point(r->db, r->device, at, r->input, &r->at, err, errlen);
    if (status != DIFF_OK)
        return status;
    if (layout_build(r->db, r->device, r->at.event_id, &l, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "%s: %s", r->input, msg);
        return DIFF_ERR;
    }
    r->at.live_blocks = l->live_blocks;
    if (!(r->names = stack_names_new(r->db)) || run_sites(r, l) != 0)
        status = out_of_memory(err, errlen);
    layout_free(l);
    return status;
}

int diff_runs_read(diff_runs *d, const char *at, size_t top, char *err, size_t errlen) {
    d->at = at;
    if (GMT_NEVER(d->nruns != 2)) {
        snprintf(err, errlen, "two runs are compared, not %zu", d->nruns);
        return DIFF_ERR;
    }
    for (int i = 0; i < 2; i++) {
        int status = read_run(&d->run[i], at, err, errlen);
        if (status != DIFF_OK)
            return status;
    }
    d->change = change_of(&d->run[0].at, &d->run[1].at);
    const diff_run *a = &d->run[0], *b = &d->run[1];
    diff_pair *rows = malloc((a->nsites + b->nsites + 1) * sizeof *rows);
    if (!rows)
        return out_of_memory(err, errlen);
    /* merged by key, into three groups (matched, only in A, only in B): counted first, so
     * each pair goes straight to its place */
    size_t len[3] = {0, 0, 0}, next[3], i = 0, k = 0;
    int c;
    while ((c = key_order(a, i, b, k)) != 2) {
        len[group_of_order(c)]++;
        i += c <= 0;
        k += c >= 0;
    }
    next[0] = 0, next[1] = len[0], next[2] = len[0] + len[1];
    for (i = 0, k = 0; (c = key_order(a, i, b, k)) != 2; i += c <= 0, k += c >= 0)
        rows[next[group_of_order(c)]++] =
            pair_of(c <= 0 ? &a->sites[i] : NULL, c >= 0 ? &b->sites[k] : NULL);
    if (GMT_NEVER(next[0] != len[0] || next[1] != len[0] + len[1] ||
                  next[2] != i + k - len[0])) { /* the two passes met the same keys */
        free(rows);
        snprintf(err, errlen, "the sites of the two runs did not merge");
        return DIFF_ERR;
    }
    d->sites = next[2];
    d->both = group_of(1, rows, len[0], top);
    d->only_a = group_of(0, rows + len[0], len[1], top);
    d->only_b = group_of(0, rows + len[0] + len[1], len[2], top);
    return label_pairs(d) == 0 ? DIFF_OK : out_of_memory(err, errlen);
}

void diff_runs_free(diff_runs *d) {
    free(d->both.rows); /* the three groups share it */
    d->both = d->only_a = d->only_b = (diff_pairs){0, NULL, 0, 0};
    for (size_t i = 0; i < d->nruns; i++) {
        diff_run *r = &d->run[i];
        free(r->sites);
        stack_names_free(r->names); /* its statement before the database */
        sqlite3_close(r->db);
        r->sites = NULL;
        r->names = NULL;
        r->db = NULL;
    }
    d->nruns = 0;
}
