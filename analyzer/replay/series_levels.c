/* series_levels.c — each series' live bytes at every level bucket's highest moment (see
 * series_levels.h): per device three sets of series (by site, stream and size class), each a
 * dense array with lazily saved values, and the list of those that hold bytes; a bucket that
 * ends writes the largest SERIES_VECTOR_TOP of each set and the rest. */
#include "series_levels.h"

#include "addr_map.h"
#include "gmt_assert.h"
#include "gmt_grow.h"
#include "gmt_vocab.h"

#include <stdlib.h>
#include <string.h>

/* Keys below this are their own index (stack ids, size classes, small stream numbers). */
#define DIRECT_KEYS ((int64_t)1 << 20)

enum { SET_SITE, SET_STREAM, SET_SIZE, SETS };
static const gmt_stack_by set_by[SETS] = {STACK_BY_SITE, STACK_BY_STREAM, STACK_BY_SIZE};

typedef struct series {
    int64_t key;
    int64_t cur;     /* live bytes now */
    int64_t at_max;  /* at the open bucket's highest moment, when max_ver is current */
    int64_t prev;    /* after the device's previous row, when prev_ver is current */
    int64_t written; /* its bytes in the set's previous chain vector (0: not named there) */
    uint32_t max_ver, prev_ver;
    uint32_t mark;  /* == the set's gen: named in the vector being written */
    int32_t active; /* its place in the set's active list; -1: not there */
} series;

typedef struct pick {
    int64_t bytes, key;
    uint32_t series; /* its index in the set */
} pick;

/* A vector: its named series (ordered as written) and the rest. */
typedef struct vector {
    pick named[SERIES_VECTOR_TOP];
    size_t n;
    int64_t rest;
} vector;

typedef struct series_set {
    uint32_t *direct; /* key -> index + 1, keys 0 .. DIRECT_KEYS - 1 */
    size_t direct_cap;
    addr_map others; /* every other key -> index + 1 */
    series *v;
    size_t n, cap;
    uint32_t *active; /* the series that hold bytes, or did since the last bucket ended */
    size_t nactive, active_cap;
    uint32_t chain_named[SERIES_VECTOR_TOP]; /* the previous chain vector's named series */
    size_t chain_n;
    uint32_t gen;
    vector best; /* the open coarse bucket's vector at its highest moment so far */
    vector last; /* after the last row of its latest closed fine bucket */
} series_set;

typedef struct device_levels {
    series_set sets[SETS];
    int open;                              /* a fine bucket is open */
    int64_t index, max_a, max_id, last_id; /* the open fine bucket, its highest moment, last row */
    uint32_t version;                      /* bumped at each new highest moment */
    uint32_t rowver;                       /* bumped after each row */
    int coarse_open;                       /* a coarse bucket holds closed fine ones */
    int64_t coarse_index, best_a, best_id, coarse_last_id;
} device_levels;

struct series_levels {
    int shift; /* the fine level's; the coarse one's is shift + 3 */
    device_levels *dev[GMT_MAX_DEVICES];
};

series_levels *series_levels_new(int shift) {
    series_levels *s = calloc(1, sizeof *s);
    if (s)
        s->shift = shift;
    return s;
}

void series_levels_free(series_levels *s) {
    if (!s)
        return;
    for (int d = 0; d < GMT_MAX_DEVICES; d++) {
        device_levels *dl = s->dev[d];
        for (int k = 0; dl && k < SETS; k++) {
            series_set *set = &dl->sets[k];
            free(set->direct), free(set->v), free(set->active);
            addr_map_free(&set->others);
        }
        free(dl);
    }
    free(s);
}

/* The index of `key`'s series in `set`, made (with 0 bytes, its saved values current) when new;
 * -1 out of memory. */
static int64_t series_of(series_set *set, const device_levels *d, int64_t key) {
    uint32_t *at;
    if (key >= 0 && key < DIRECT_KEYS) {
        if ((size_t)key >= set->direct_cap &&
            gmt_grow((void **)&set->direct, &set->direct_cap, (size_t)key, sizeof *set->direct))
            return -1;
        at = &set->direct[key];
    } else {
        at = addr_map_get(&set->others, 0, (uint64_t)key);
    }
    if (at && *at)
        return *at - 1;
    if (gmt_grow_uninit((void **)&set->v, &set->cap, set->n, sizeof *set->v, 64) != 0)
        return -1;
    if (!at && addr_map_put(&set->others, 0, (uint64_t)key, (uint32_t)set->n + 1) != 0)
        return -1;
    if (at)
        *at = (uint32_t)set->n + 1;
    set->v[set->n] = (series){key, 0, 0, 0, 0, d->version, d->rowver, 0, -1};
    return (int64_t)set->n++;
}

static int move(series_set *set, const device_levels *d, int64_t key, int64_t bytes) {
    int64_t i = series_of(set, d, key);
    if (i < 0)
        return -1;
    series *x = &set->v[i];
    if (x->max_ver != d->version)
        x->at_max = x->cur, x->max_ver = d->version;
    if (x->prev_ver != d->rowver)
        x->prev = x->cur, x->prev_ver = d->rowver;
    x->cur += bytes;
    if (x->active < 0) {
        if (gmt_grow_uninit((void **)&set->active, &set->active_cap, set->nactive,
                            sizeof *set->active, 64) != 0)
            return -1;
        x->active = (int32_t)set->nactive;
        set->active[set->nactive++] = (uint32_t)i;
    }
    return 0;
}

/* The device's state, made at its first use; NULL out of memory (the replay's ordinals are
 * below GMT_MAX_DEVICES: its own arrays are that long). */
static device_levels *device_of(series_levels *s, uint32_t device) {
    if (GMT_NEVER(device >= GMT_MAX_DEVICES))
        return NULL;
    if (!s->dev[device])
        s->dev[device] = calloc(1, sizeof *s->dev[device]);
    return s->dev[device];
}

int series_levels_change(series_levels *s, uint32_t device, int64_t stack, int64_t stream,
                         int64_t size, int sign) {
    device_levels *d = device_of(s, device);
    if (!d)
        return device < GMT_MAX_DEVICES ? -1 : 0;
    int64_t bytes = sign * size;
    if (move(&d->sets[SET_SITE], d, stack, bytes) != 0 ||
        move(&d->sets[SET_STREAM], d, stream, bytes) != 0 ||
        move(&d->sets[SET_SIZE], d, (int64_t)gmt_size_class_of(size), bytes) != 0)
        return -1;
    return 0;
}

/* `a` comes before `b` in a vector: more bytes, or as many and a lower key. */
static int before(const pick *a, const pick *b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->key < b->key;
}

/* The heap keeps the vector's best SERIES_VECTOR_TOP with the last of them at its root. */
static void sift_down(pick *h, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && before(&h[w], &h[l]))
            w = l;
        if (r < n && before(&h[w], &h[r]))
            w = r;
        if (w == i)
            return;
        pick t = h[i];
        h[i] = h[w], h[w] = t;
        i = w;
    }
}

static int by_order(const void *a, const void *b) { return before(a, b) ? -1 : before(b, a); }

/* One set's vector now: at the fine bucket's highest moment (at_end 0) or after its last row
 * (1). */
static void pick_vector(const series_set *set, const device_levels *d, int at_end, vector *out) {
    pick *h = out->named;
    size_t n = 0;
    int64_t rest = 0;
    for (size_t a = 0; a < set->nactive; a++) {
        uint32_t i = set->active[a];
        const series *x = &set->v[i];
        int64_t v = at_end ? (x->prev_ver == d->rowver ? x->prev : x->cur)
                           : (x->max_ver == d->version ? x->at_max : x->cur);
        if (!v)
            continue;
        pick p = {v, x->key, i};
        if (n < SERIES_VECTOR_TOP) {
            h[n++] = p;
            if (n == SERIES_VECTOR_TOP) /* a heap from here on */
                for (size_t k = n / 2; k-- > 0;)
                    sift_down(h, n, k);
        } else if (before(&p, &h[0])) {
            rest += h[0].bytes;
            h[0] = p;
            sift_down(h, n, 0);
        } else {
            rest += v;
        }
    }
    qsort(h, n, sizeof *h, by_order);
    out->n = n;
    out->rest = rest;
}

/* A whole vector into series_levels: ranks 0.. and the rest. */
static int write_full(db_writer *db, uint32_t device, int by, int64_t event_id, const vector *v) {
    for (size_t r = 0; r < v->n; r++)
        if (db_writer_series_level(db, device, by, event_id, (int64_t)r, v->named[r].key,
                                   v->named[r].bytes))
            return -1;
    return db_writer_series_level(db, device, by, event_id, (int64_t)v->n, DB_NULL, v->rest);
}

/* The next vector of the set's chain into series_deltas: the rest, then what differs from the
 * previous one (a series named with other bytes or newly, then one no longer named: 0). */
static int write_delta(db_writer *db, uint32_t device, int by, series_set *set, int64_t event_id,
                       const vector *v) {
    int64_t entry = 0;
    if (db_writer_series_delta(db, device, by, event_id, entry++, DB_NULL, v->rest))
        return -1;
    uint32_t gen = ++set->gen;
    for (size_t r = 0; r < v->n; r++) {
        series *x = &set->v[v->named[r].series];
        x->mark = gen;
        if (x->written != v->named[r].bytes &&
            db_writer_series_delta(db, device, by, event_id, entry++, x->key, v->named[r].bytes))
            return -1;
        x->written = v->named[r].bytes;
    }
    for (size_t r = 0; r < set->chain_n; r++) {
        series *x = &set->v[set->chain_named[r]];
        if (x->mark == gen)
            continue;
        if (db_writer_series_delta(db, device, by, event_id, entry++, x->key, 0))
            return -1;
        x->written = 0;
    }
    for (size_t r = 0; r < v->n; r++)
        set->chain_named[r] = v->named[r].series;
    set->chain_n = v->n;
    return 0;
}

/* The open fine bucket ends: its vectors into the chain, at its highest moment and (when
 * `with_end`: the next fine bucket is empty, or there is none) after its last row; the coarse
 * bucket keeps its best and its last. */
static int close_fine(db_writer *db, uint32_t device, device_levels *d, int with_end) {
    int best = !d->coarse_open || d->max_a > d->best_a; /* the first moment at the max stays */
    vector v;
    for (int k = 0; k < SETS; k++) {
        series_set *set = &d->sets[k];
        pick_vector(set, d, 0, &v);
        if (write_delta(db, device, set_by[k], set, d->max_id, &v) != 0)
            return -1;
        if (best)
            set->best = v;
        if (with_end && d->last_id != d->max_id) {
            pick_vector(set, d, 1, &v);
            if (write_delta(db, device, set_by[k], set, d->last_id, &v) != 0)
                return -1;
        }
        if (with_end) /* a coarse bucket that ends with it may need it */
            set->last = v;
    }
    if (best)
        d->best_a = d->max_a, d->best_id = d->max_id;
    d->coarse_last_id = d->last_id;
    d->coarse_open = 1;
    d->open = 0;
    return 0;
}

/* The coarse bucket ends: its vectors into series_levels, the best and (when `with_end`) the
 * last. A coarse bucket that ends before an empty one ends with a fine bucket that does. */
static int close_coarse(db_writer *db, uint32_t device, device_levels *d, int with_end) {
    for (int k = 0; k < SETS; k++) {
        const series_set *set = &d->sets[k];
        if (write_full(db, device, set_by[k], d->best_id, &set->best) != 0 ||
            (with_end && d->coarse_last_id != d->best_id &&
             write_full(db, device, set_by[k], d->coarse_last_id, &set->last) != 0))
            return -1;
    }
    d->coarse_open = 0;
    return 0;
}

/* The series that no longer hold bytes leave the active lists. */
static void prune(device_levels *d) {
    for (int k = 0; k < SETS; k++) {
        series_set *set = &d->sets[k];
        for (size_t a = 0; a < set->nactive;) {
            series *x = &set->v[set->active[a]];
            if (x->cur) {
                a++;
                continue;
            }
            x->active = -1;
            set->active[a] = set->active[--set->nactive];
            if (a < set->nactive)
                set->v[set->active[a]].active = (int32_t)a;
        }
    }
}

int series_levels_row(series_levels *s, db_writer *db, uint32_t device, int64_t event_id,
                      int64_t place, int64_t allocated) {
    device_levels *d = device_of(s, device);
    if (!d)
        return device < GMT_MAX_DEVICES ? -1 : 0;
    int64_t index = place >> s->shift;
    if (d->open && GMT_NEVER(index < d->index)) /* places only grow (a running max) */
        index = d->index;
    if (d->open && index != d->index) {
        int64_t coarse = index >> 3;
        if (close_fine(db, device, d, index > d->index + 1) != 0 ||
            (coarse != d->coarse_index &&
             close_coarse(db, device, d, coarse > d->coarse_index + 1) != 0))
            return -1;
        prune(d);
    }
    if (!d->open) {
        d->open = 1;
        d->index = index;
        d->coarse_index = index >> 3;
        d->max_a = allocated, d->max_id = event_id;
        d->version++;
    } else if (allocated > d->max_a) { /* the first row at the max stays */
        d->max_a = allocated, d->max_id = event_id;
        d->version++;
    }
    d->last_id = event_id;
    d->rowver++;
    return 0;
}

int series_levels_flush(series_levels *s, db_writer *db, uint32_t device) {
    device_levels *d = device < GMT_MAX_DEVICES ? s->dev[device] : NULL;
    if (!d || !d->open)
        return 0;
    return close_fine(db, device, d, 1) != 0 || close_coarse(db, device, d, 1) != 0 ? -1 : 0;
}

void series_levels_meta(const series_levels *s, db_writer *db) {
    db_writer_meta_int(db, "series_level_ns", (int64_t)1 << (s->shift + 3));
    db_writer_meta_int(db, "series_delta_ns", (int64_t)1 << s->shift);
    db_writer_meta_int(db, "series_level_top", SERIES_VECTOR_TOP);
}
