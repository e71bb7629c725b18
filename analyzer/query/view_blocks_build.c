/* view_blocks_build.c — writes view_blocks.h's sidecar (the layout: view_blocks_file.h) from a
 * database: one pass over the event store (event_scan.h: the allocations view's device blocks,
 * each joined to its first free by alloc_event_id), then per device stable radix sorts in
 * memory (gmt_radix.h) and the packed runs, streamed to a temporary file renamed into place.
 * Its memory is ~170 B per block while it runs (the blocks collected, the sorts' pairs, the
 * shapes' table), the file's ~20 B. */
#include "gmt_grow.h"
#include "view_blocks.h"
#include "view_blocks_file.h"

#include "addr_map.h"
#include "block_sweep.h"
#include "db_file.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_radix.h"
#include "trace_format.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct blk {
    int64_t alloc_id, addr, size, requested, lo, hi, free_event_id, stream, stack_id, segment_id;
    int device; /* lo, hi: while collecting, ts_ns of the alloc and of its free */
} blk;

typedef struct blks {
    blk *b;
    size_t n, cap;
} blks;

/* The file being written, through stdio's buffer: `len` its length so far (the offsets the
 * layout records), an entry encoded in `scratch` first. */
typedef struct buf {
    FILE *f;
    uint64_t len;
    int failed; /* a write failed or memory ran out */
    uint8_t scratch[128];
} buf;

/* Room for an entry of at most `more` (<= 128) bytes: written by run_commit. */
static uint8_t *room(buf *b, size_t more) {
    assert(more <= sizeof b->scratch);
    (void)more;
    return b->scratch;
}

static void append(buf *b, const void *v, size_t n) {
    if (!b->failed && n && fwrite(v, 1, n, b->f) != n)
        b->failed = 1;
    b->len += n;
}

static void align8(buf *b) {
    static const uint8_t zeros[8];
    append(b, zeros, (8 - b->len % 8) % 8);
}

/* A run being written: its group headers gathered, then appended after its bytes. */
typedef struct runw {
    buf *b;
    vb_group *g;
    size_t ng, cap, group, n;
    int64_t bytes;
} runw;

/* Room for one entry of time `key` and `size` bytes; 1 when it starts a group. */
static int run_entry(runw *w, int64_t key, int64_t size, uint8_t **p) {
    int first = w->n % w->group == 0;
    if (first) {
        if (gmt_grow_uninit((void **)&w->g, &w->cap, w->ng, sizeof *w->g, 64) != 0) {
            w->b->failed = 1;
            w->cap = w->ng = 0;
            free(w->g);
            w->g = NULL;
        }
        if (w->g)
            w->g[w->ng++] = (vb_group){key, (int64_t)w->n, w->bytes, (uint64_t)w->b->len};
    }
    w->n++;
    w->bytes += size;
    *p = room(w->b, 80);
    return first;
}

static void run_commit(runw *w, const uint8_t *end) {
    append(w->b, w->b->scratch, (size_t)(end - w->b->scratch));
}

static vb_run run_end(runw *w) {
    vb_run r = {0, w->ng, w->n, w->b->len};
    align8(w->b);
    r.groups_off = w->b->len;
    if (w->g)
        append(w->b, w->g, w->ng * sizeof *w->g);
    free(w->g);
    return r;
}

/* The lifetime levels of an axis `span` long: the finest width 2^shift with ~2^21 of it over
 * the run, each level 8x the one below, the last wider than the run. */
static void lifetime_levels(int64_t span, int *shift, int *levels) {
    int bits = 0;
    while (bits < 62 && ((int64_t)1 << bits) <= span)
        bits++;
    *shift = bits > 21 ? bits - 21 : 0;
    *levels = 1;
    while (*shift + 3 * (*levels - 1) < bits)
        (*levels)++;
    assert(*levels <= VB_MAX_LEVELS);
}

static int by_alloc_id(const void *x, const void *y) {
    int64_t a = ((const blk *)x)->alloc_id, b = ((const blk *)y)->alloc_id;
    return (a > b) - (a < b);
}

static blk *find_block(blks *bs, int64_t alloc_id) {
    size_t lo = 0, hi = bs->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (bs->b[mid].alloc_id < alloc_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < bs->n && bs->b[lo].alloc_id == alloc_id ? &bs->b[lo] : NULL;
}

static int push_block(blks *bs, blk v) {
    if (gmt_grow_uninit((void **)&bs->b, &bs->cap, bs->n, sizeof *bs->b, 4096) != 0)
        return -1;
    bs->b[bs->n++] = v;
    return 0;
}

enum {
    C_ID,
    C_TS,
    C_DEV,
    C_OP,
    C_LEVEL,
    C_KIND,
    C_ADDR,
    C_SIZE,
    C_REQ,
    C_STREAM,
    C_STACK,
    C_SEG,
    C_ALLOC,
    NC
};

/* The allocations view's device blocks of `db` (schema.sql), in alloc_id order, each with
 * its first free; lo/hi their lifetime on the axis. 0 or -1. */
static int collect(sqlite3 *db, int event_axis, blks *bs, char *err, size_t errlen) {
    static const int want[NC] = {
        EVENT_COL_event_id,       EVENT_COL_ts_ns,  EVENT_COL_device,   EVENT_COL_op,
        EVENT_COL_level,          EVENT_COL_kind,   EVENT_COL_addr,     EVENT_COL_size,
        EVENT_COL_requested_size, EVENT_COL_stream, EVENT_COL_stack_id, EVENT_COL_segment_id,
        EVENT_COL_alloc_event_id};
    addr_map whole = {0}; /* the whole-block segments' ids (block_sweep.h) */
    if (block_sweep_whole_segments(db, &whole) != 0) {
        snprintf(err, errlen, "cannot read the segments: %s", sqlite3_errmsg(db));
        addr_map_free(&whole);
        return -1;
    }
    event_scan *s =
        event_scan_open(db, event_scan_mask(want, NC), INT64_MIN, INT64_MAX, err, errlen);
    if (!s) {
        addr_map_free(&whole);
        return -1;
    }
    int64_t(*late)[3] = NULL; /* frees met before their alloc: (alloc_event_id, id, ts) */
    size_t nlate = 0, late_cap = 0;
    int rc = 0;
    const int64_t *cols[EVENT_STORE_NCOLS], *v[NC];
    long n;
    while (rc == 0 && (n = event_scan_next(s, cols)) > 0) {
        event_scan_pick(cols, want, NC, v);
        for (long i = 0; i < n && rc == 0; i++) {
            int64_t op = v[C_OP][i], level = v[C_LEVEL][i], id = v[C_ID][i];
            if (v[C_KIND][i] == TRACE_KIND_DEVICE &&
                ((level == TRACE_LEVEL_BLOCK && op == TRACE_OP_ALLOC) ||
                 (level == TRACE_LEVEL_SEGMENT && (op == TRACE_OP_ALLOC || op == TRACE_OP_MAP) &&
                  addr_map_get(&whole, 0, (uint64_t)id)))) {
                blk b = {id,
                         event_value_or(v[C_ADDR][i], -1),
                         event_value_or(v[C_SIZE][i], -1),
                         event_value_or(v[C_REQ][i], -1),
                         event_value_or(v[C_TS][i], -1),
                         VIEW_BLOCK_LIVE,
                         -1,
                         event_value_or(v[C_STREAM][i], -1),
                         event_value_or(v[C_STACK][i], -1),
                         event_value_or(v[C_SEG][i], -1),
                         (int)event_value_or(v[C_DEV][i], -1)};
                rc = push_block(bs, b);
            } else if ((op == TRACE_OP_FREE || op == TRACE_OP_UNMAP) &&
                       v[C_ALLOC][i] != EVENT_STORE_NULL) {
                blk *a = find_block(bs, v[C_ALLOC][i]);
                if (a && a->free_event_id < 0) {
                    a->free_event_id = id;
                    a->hi = event_value_or(v[C_TS][i], -1);
                } else if (!a) {
                    if (gmt_grow_uninit((void **)&late, &late_cap, nlate, sizeof *late, 256) != 0) {
                        rc = -1;
                        break;
                    }
                    late[nlate][0] = v[C_ALLOC][i];
                    late[nlate][1] = id;
                    late[nlate++][2] = event_value_or(v[C_TS][i], -1);
                }
            }
        }
    }
    if (rc != 0)
        snprintf(err, errlen, "view index: out of memory");
    else if (n < 0) {
        snprintf(err, errlen, "view index: %s", event_scan_error(s));
        rc = -1;
    }
    event_scan_close(s);
    addr_map_free(&whole);
    int sorted = 1; /* the scan's order is alloc_id's: sorted only if not */
    for (size_t i = 1; i < bs->n && sorted; i++)
        sorted = bs->b[i - 1].alloc_id < bs->b[i].alloc_id;
    if (!sorted)
        qsort(bs->b, bs->n, sizeof *bs->b, by_alloc_id);
    for (size_t i = 0; rc == 0 && i < nlate; i++) {
        blk *a = find_block(bs, late[i][0]);
        if (a && a->free_event_id < 0)
            a->free_event_id = late[i][1], a->hi = late[i][2];
    }
    free(late);
    for (size_t i = 0; i < bs->n; i++) {
        blk *b = &bs->b[i];
        b->lo = event_axis ? b->alloc_id : b->lo;
        if (b->free_event_id >= 0 && event_axis)
            b->hi = b->free_event_id;
        if (b->hi < b->lo)
            b->hi = b->lo; /* threads' records: the free written first */
    }
    return rc;
}

static int64_t gcd(int64_t a, int64_t b) {
    a = a < 0 ? -a : a, b = b < 0 ? -b : b;
    while (b) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

static int tier_of(int64_t rank) {
    int t = 0;
    for (int64_t b = VB_TIER0; rank >= b; b *= 2)
        t++;
    return t;
}

typedef uint64_t pair[2];

/* p[0..n) (key, index), in the order of key[index] (signed, ascending), stably: sorts by several
 * keys run from the last key to the first. spare: room for n. */
static void sort_by(pair *p, pair *spare, int64_t n, const int64_t *key) {
    for (int64_t i = 0; i < n; i++)
        p[i][0] = (uint64_t)key[p[i][1]];
    gmt_radix_sort(p, spare, (size_t)n, 1, 1);
}

static void in_order(pair *p, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        p[i][1] = (uint64_t)i;
}

static uint64_t shape_hash(const blk *x, int64_t sidx) {
    const int64_t v[] = {x->addr, sidx, x->requested, x->stream, x->stack_id, x->segment_id};
    uint64_t h = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 6; i++)
        h = (h ^ (uint64_t)v[i]) * 0xff51afd7ed558ccdu;
    return h ^ h >> 29;
}

static int same_shape(const blk *a, const blk *b) {
    return a->addr == b->addr && a->size == b->size && a->requested == b->requested &&
           a->stream == b->stream && a->stack_id == b->stack_id && a->segment_id == b->segment_id;
}

/* The details run (by ordinal: alloc_id, free_event_id, shape) and the shapes run: the
 * distinct (addr, size, requested, stream, stack_id, segment_id) of the device's blocks, the
 * most frequent first (a training loop allocates the same tensors at the same addresses step
 * after step: a few thousand shapes for millions of blocks). p, spare, key: room for n. */
static int write_details(buf *b, const blk *const *d, int64_t n, const int64_t *sidx, pair *p,
                         pair *spare, int64_t *key, vb_device *dev) {
    size_t cap = 16;
    while (cap < 2 * (size_t)n)
        cap *= 2;
    assert(n < INT32_MAX); /* a device's blocks and shapes: 32-bit numbers */
    size_t m = (size_t)(n ? n : 1);
    int32_t *table = malloc(cap * sizeof *table), *shape = malloc(m * sizeof *shape);
    int32_t *first = malloc(m * sizeof *first), *rank = malloc(m * sizeof *rank);
    int rc = table && shape && first && rank ? 0 : -1;
    int64_t ns = 0; /* shapes, numbered as first met; key[s]: -(its blocks) */
    for (size_t i = 0; rc == 0 && i < cap; i++)
        table[i] = -1;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        size_t h = (size_t)shape_hash(d[i], sidx[i]) & (cap - 1);
        while (table[h] >= 0 && !same_shape(d[first[table[h]]], d[i]))
            h = (h + 1) & (cap - 1);
        if (table[h] < 0) {
            first[ns] = (int32_t)i, key[ns] = 0;
            table[h] = (int32_t)ns++;
        }
        shape[i] = table[h];
        key[shape[i]]--;
    }
    if (rc == 0) {
        in_order(p, ns);
        sort_by(p, spare, ns, key); /* the most frequent first; ties: the first met */
    }
    runw w = {b, NULL, 0, 0, VB_SGROUP, 0, 0};
    int64_t prev_addr = 0;
    for (int64_t s = 0; rc == 0 && s < ns; s++) {
        int64_t i = first[p[s][1]];
        const blk *x = d[i];
        rank[p[s][1]] = (int32_t)s;
        uint8_t *o;
        if (run_entry(&w, 0, 0, &o))
            prev_addr = 0;
        o = varint_put(o, zigzag(x->addr - prev_addr));
        o = varint_put(o, (uint64_t)sidx[i]);
        o = varint_put(o, x->requested == -1 ? 0 : 1 + zigzag(x->size - x->requested));
        o = varint_put(o, zigzag(x->stream));
        o = varint_put(o, zigzag(x->stack_id));
        o = varint_put(o, zigzag(x->segment_id));
        run_commit(&w, o);
        prev_addr = x->addr;
    }
    dev->shapes = run_end(&w);
    w = (runw){b, NULL, 0, 0, VB_DGROUP, 0, 0};
    int64_t prev_id = 0;
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        const blk *x = d[i];
        uint8_t *o;
        if (run_entry(&w, 0, 0, &o))
            prev_id = 0;
        o = varint_put(o, zigzag(x->alloc_id - prev_id));
        o = varint_put(o, x->free_event_id == -1 ? 0 : 1 + zigzag(x->free_event_id - x->alloc_id));
        o = varint_put(o, (uint64_t)rank[shape[i]]);
        run_commit(&w, o);
        prev_id = x->alloc_id;
    }
    dev->details = run_end(&w);
    free(table), free(shape), free(first), free(rank);
    return rc;
}

/* A ranked run, the blocks p[0..n) sorted by (run, alloc time, ordinal), those of run `at`
 * from *i on. */
static vb_run write_ranked(buf *b, const blk *const *d, const pair *p, int64_t n, int64_t *i,
                           int64_t at, int live, int64_t q, const int64_t *sidx) {
    runw w = {b, NULL, 0, 0, VB_GROUP, 0, 0};
    int64_t prev_t = 0, prev_o = 0;
    for (; *i < n && (int64_t)p[*i][0] == at; (*i)++) {
        int64_t ord = (int64_t)p[*i][1];
        const blk *x = d[ord];
        uint8_t *o;
        if (run_entry(&w, x->lo, x->size, &o))
            prev_t = x->lo, prev_o = 0;
        o = varint_put(o, (uint64_t)((x->lo - prev_t) / q));
        if (!live)
            o = varint_put(o, (uint64_t)((x->hi - x->lo) / q));
        o = varint_put(o, zigzag(ord - prev_o));
        o = varint_put(o, (uint64_t)sidx[ord]);
        run_commit(&w, o);
        prev_t = x->lo, prev_o = ord;
    }
    return run_end(&w);
}

/* One device's runs, its blocks d[0..n) in alloc_id order (the ordinal). */
static int write_device(buf *b, const blk *const *d, int64_t n, int shift, int levels,
                        vb_device *dev) {
    size_t m = (size_t)(n ? n : 1);
    pair *p = malloc(m * sizeof *p), *spare = malloc(m * sizeof *spare);
    int64_t *key = malloc(m * 8), *sidx = malloc(m * 8), *sizes = malloc(m * 8);
    vb_run *runs = NULL;
    int rc = -1;
    if (!p || !spare || !key || !sidx || !sizes)
        goto done;
    /* the sizes, largest first, and each block's index among them */
    for (int64_t i = 0; i < n; i++)
        key[i] = -d[i]->size;
    in_order(p, n);
    sort_by(p, spare, n, key);
    if (event_scan_stop_asked()) /* between the sorts: seconds each at 100 M */
        goto done;
    int64_t ns = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t size = d[p[i][1]]->size;
        if (!ns || sizes[ns - 1] != size)
            sizes[ns++] = size;
        sidx[p[i][1]] = ns - 1;
    }
    dev->nsizes = ns;
    int64_t q = 0; /* the times' quantum: every one a multiple of it (a snapshot's us) */
    for (int64_t i = 0; i < n && q != 1; i++) {
        q = gcd(q, d[i]->lo);
        if (d[i]->hi != VIEW_BLOCK_LIVE)
            q = gcd(q, d[i]->hi);
    }
    dev->quantum = q = q > 0 ? q : 1;
    align8(b);
    dev->sizes_off = b->len;
    append(b, sizes, (size_t)ns * sizeof *sizes);
    /* the rank: size, then the longest lifetime, the earliest alloc, the ordinal (sorted by
     * each key from the last, stably); `sizes` becomes each block's tier */
    int64_t *tier = sizes;
    in_order(p, n);
    for (int k = 2; k >= 0; k--) {
        for (int64_t i = 0; i < n; i++)
            key[i] = k == 2   ? d[i]->lo
                     : k == 1 ? (d[i]->hi == VIEW_BLOCK_LIVE ? -INT64_MAX : d[i]->lo - d[i]->hi)
                              : sidx[i];
        sort_by(p, spare, n, key);
    }
    if (event_scan_stop_asked())
        goto done;
    for (int64_t i = 0; i < n; i++)
        tier[p[i][1]] = tier_of(i);
    dev->ntiers = n ? tier_of(n - 1) + 1 : 0;
    /* the ranked runs: (tier, level), each by alloc time */
    in_order(p, n);
    for (int64_t i = 0; i < n; i++)
        key[i] = d[i]->lo;
    sort_by(p, spare, n, key);
    if (event_scan_stop_asked())
        goto done;
    for (int64_t i = 0; i < n; i++) {
        int64_t lo = d[i]->lo, hi = d[i]->hi;
        int l = levels;
        if (hi != VIEW_BLOCK_LIVE)
            for (l = 0; l + 1 < levels && ((int64_t)1 << (shift + 3 * l)) <= hi - lo;)
                l++;
        key[i] = tier[i] * (levels + 1) + l;
    }
    sort_by(p, spare, n, key);
    if (event_scan_stop_asked())
        goto done;
    size_t nruns = (size_t)dev->ntiers * (size_t)(levels + 1);
    if (!(runs = calloc(nruns ? nruns : 1, sizeof *runs)))
        goto done;
    for (int64_t i = 0, at = 0; at < (int64_t)nruns; at++)
        runs[at] = write_ranked(b, d, p, n, &i, at, at % (levels + 1) == levels, q, sidx);
    align8(b);
    dev->runs_off = b->len;
    append(b, runs, nruns * sizeof *runs);
    /* the running totals: by alloc time, and the freed by free time */
    for (int pass = 0; pass < 2; pass++) {
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++)
            if (pass == 0 || d[i]->free_event_id != -1) {
                p[k++][1] = (uint64_t)i;
                key[i] = pass ? d[i]->hi : d[i]->lo;
            }
        sort_by(p, spare, k, key);
        if (event_scan_stop_asked())
            goto done;
        runw w = {b, NULL, 0, 0, VB_GROUP, 0, 0};
        int64_t prev_t = 0;
        for (int64_t i = 0; i < k; i++) {
            int64_t t = key[p[i][1]];
            uint8_t *o;
            if (run_entry(&w, t, d[p[i][1]]->size, &o))
                prev_t = t;
            o = varint_put(o, (uint64_t)((t - prev_t) / q));
            o = varint_put(o, (uint64_t)sidx[p[i][1]]);
            run_commit(&w, o);
            prev_t = t;
        }
        *(pass ? &dev->frees : &dev->allocs) = run_end(&w);
    }
    dev->nblocks = n;
    if (event_scan_stop_asked())
        goto done;
    rc = write_details(b, d, n, sidx, p, spare, key, dev);
done:
    free(p), free(spare), free(key), free(sidx), free(sizes), free(runs);
    return rc != 0 || b->failed ? -1 : 0;
}

static int by_device(const void *x, const void *y) {
    const blk *a = *(const blk *const *)x, *b = *(const blk *const *)y;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return (a->alloc_id > b->alloc_id) - (a->alloc_id < b->alloc_id);
}

/* The whole file in b. 0 or -1. */
static int encode(sqlite3 *db, const char *identity, buf *b, char *err, size_t errlen) {
    int event_axis = db_query_int(db, "SELECT value FROM meta WHERE key = 'timestamps'", 1) == 0;
    blks bs = {NULL, 0, 0};
    if (collect(db, event_axis, &bs, err, errlen) != 0) {
        free(bs.b);
        return -1;
    }
    const blk **order = malloc((bs.n ? bs.n : 1) * sizeof *order);
    int64_t lo = INT64_MAX, hi = 0, ndev = 0;
    for (size_t i = 0; order && i < bs.n; i++) {
        order[i] = &bs.b[i];
        lo = bs.b[i].lo < lo ? bs.b[i].lo : lo;
        int64_t end = bs.b[i].hi == VIEW_BLOCK_LIVE ? bs.b[i].lo : bs.b[i].hi;
        hi = end > hi ? end : hi;
    }
    int one_device = 1;
    for (size_t i = 1; order && i < bs.n && one_device; i++)
        one_device = bs.b[i].device == bs.b[0].device;
    if (order && !one_device)
        qsort(order, bs.n, sizeof *order, by_device);
    for (size_t i = 0; order && i < bs.n; i++)
        ndev += i == 0 || order[i]->device != order[i - 1]->device;
    int shift, levels;
    lifetime_levels(bs.n && hi > lo ? hi - lo + 1 : 1, &shift, &levels);
    vb_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, VB_MAGIC, sizeof h.magic);
    snprintf(h.identity, sizeof h.identity, "%s", identity);
    h.shift = shift, h.levels = levels, h.ndevices = ndev;
    vb_device *devs = calloc((size_t)(ndev ? ndev : 1), sizeof *devs);
    int rc = order && devs ? 0 : -1;
    if (rc == 0) {
        append(b, &h, sizeof h);
        append(b, devs, (size_t)ndev * sizeof *devs); /* filled in below */
    }
    for (size_t i = 0, k = 0; rc == 0 && i < bs.n; k++) {
        size_t j = i;
        while (j < bs.n && order[j]->device == order[i]->device)
            j++;
        devs[k].device = order[i]->device;
        rc = write_device(b, order + i, (int64_t)(j - i), shift, levels, &devs[k]);
        i = j;
    }
    h.file_size = b->len; /* the header and the devices' directory, now known */
    if (rc == 0 && !b->failed &&
        (fseek(b->f, 0, SEEK_SET) != 0 || fwrite(&h, sizeof h, 1, b->f) != 1 ||
         (ndev && fwrite(devs, sizeof *devs, (size_t)ndev, b->f) != (size_t)ndev)))
        b->failed = 1;
    if (rc != 0 || b->failed)
        snprintf(err, errlen, "view index: %s",
                 rc == 0                   ? "cannot write it"
                 : event_scan_stop_asked() ? "stopped"
                                           : "out of memory");
    free(devs);
    free(order);
    free(bs.b);
    return rc != 0 || b->failed ? -1 : 0;
}

typedef struct build_ctx {
    sqlite3 *db;
    const char *identity;
} build_ctx;

static int write_sidecar(FILE *f, void *ctx, char *err, size_t errlen) {
    const build_ctx *c = ctx;
    buf b = {f, 0, 0, {0}};
    return encode(c->db, c->identity, &b, err, errlen);
}

int vb_build(sqlite3 *db, const char *path, const char *identity, char *err, size_t errlen) {
    build_ctx c = {db, identity};
    return db_file_write(path, "view index", write_sidecar, &c, err, errlen);
}
