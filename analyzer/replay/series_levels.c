/* series_levels.c — each series' live bytes at every level bucket's highest moment (see
 * series_levels.h): per device three sets of series (by site, stream and size class), each a
 * dense array with lazily saved values, and the list of those that hold bytes; a bucket that
 * ends writes the largest SERIES_LEVELS_TOP of each set and the rest. */
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
    int64_t cur;    /* live bytes now */
    int64_t at_max; /* at the open bucket's highest moment, when max_ver is current */
    int64_t prev;   /* after the device's previous row, when prev_ver is current */
    uint32_t max_ver, prev_ver;
    int32_t active; /* its place in the set's active list; -1: not there */
} series;

typedef struct series_set {
    uint32_t *direct; /* key -> index + 1, keys 0 .. DIRECT_KEYS - 1 */
    size_t direct_cap;
    addr_map others; /* every other key -> index + 1 */
    series *v;
    size_t n, cap;
    uint32_t *active; /* the series that hold bytes, or did since the last bucket ended */
    size_t nactive, active_cap;
} series_set;

typedef struct device_levels {
    series_set sets[SETS];
    int open;                              /* a bucket is open */
    int64_t index, max_a, max_id, last_id; /* the open bucket, its highest moment, its last row */
    uint32_t version;                      /* bumped at each new highest moment */
    uint32_t rowver;                       /* bumped after each row */
} device_levels;

typedef struct pick {
    int64_t bytes, key;
} pick;

struct series_levels {
    int shift;
    device_levels *dev[GMT_MAX_DEVICES];
    pick *heap; /* SERIES_LEVELS_TOP */
};

series_levels *series_levels_new(int shift) {
    series_levels *s = calloc(1, sizeof *s);
    if (s)
        s->heap = malloc(SERIES_LEVELS_TOP * sizeof *s->heap);
    if (s && !s->heap) {
        free(s);
        return NULL;
    }
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
    free(s->heap);
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
    set->v[set->n] = (series){key, 0, 0, 0, d->version, d->rowver, -1};
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

/* The heap keeps the vector's best SERIES_LEVELS_TOP with the last of them at its root. */
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

/* One set's vector at `event_id` written: at the bucket's highest moment (at_end 0) or after its
 * last row (1). */
static int write_vector(series_levels *s, db_writer *db, uint32_t device, const series_set *set,
                        int by, const device_levels *d, int at_end, int64_t event_id) {
    pick *h = s->heap;
    size_t n = 0;
    int64_t rest = 0;
    for (size_t a = 0; a < set->nactive; a++) {
        const series *x = &set->v[set->active[a]];
        int64_t v = at_end ? (x->prev_ver == d->rowver ? x->prev : x->cur)
                           : (x->max_ver == d->version ? x->at_max : x->cur);
        if (!v)
            continue;
        pick p = {v, x->key};
        if (n < SERIES_LEVELS_TOP) {
            h[n++] = p;
            if (n == SERIES_LEVELS_TOP) /* a heap from here on */
                for (size_t i = n / 2; i-- > 0;)
                    sift_down(h, n, i);
        } else if (before(&p, &h[0])) {
            rest += h[0].bytes;
            h[0] = p;
            sift_down(h, n, 0);
        } else {
            rest += v;
        }
    }
    qsort(h, n, sizeof *h, by_order);
    for (size_t r = 0; r < n; r++)
        if (db_writer_series_level(db, device, by, event_id, (int64_t)r, h[r].key, h[r].bytes))
            return -1;
    return db_writer_series_level(db, device, by, event_id, (int64_t)n, DB_NULL, rest);
}

/* The open bucket ends: its vectors, at its highest moment and (when `with_end`: the next
 * bucket is empty, or there is none) after its last row. */
static int close_bucket(series_levels *s, db_writer *db, uint32_t device, device_levels *d,
                        int with_end) {
    for (int k = 0; k < SETS; k++) {
        if (write_vector(s, db, device, &d->sets[k], set_by[k], d, 0, d->max_id) != 0 ||
            (with_end && d->last_id != d->max_id &&
             write_vector(s, db, device, &d->sets[k], set_by[k], d, 1, d->last_id) != 0))
            return -1;
    }
    d->open = 0;
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
        if (close_bucket(s, db, device, d, index > d->index + 1) != 0)
            return -1;
        prune(d);
    }
    if (!d->open) {
        d->open = 1;
        d->index = index;
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
    return d && d->open ? close_bucket(s, db, device, d, 1) : 0;
}

void series_levels_meta(const series_levels *s, db_writer *db) {
    db_writer_meta_int(db, "series_level_ns", (int64_t)1 << s->shift);
    db_writer_meta_int(db, "series_level_top", SERIES_LEVELS_TOP);
}
