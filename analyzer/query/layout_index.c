/* layout_index.c — the layouts' checkpoints (layout_index.h): one pass over the run writing
 * each device's live blocks every so often, the file mapped and searched by event id, and the
 * thread's table of which connection uses which index.
 *
 * The file: a header (magic, the identity of the database, its size, where the device table
 * is), the checkpoints' records, then per device its checkpoints (event id, offset, blocks,
 * bytes), then the device table. A checkpoint's records are its live blocks by alloc id, each
 * seven varints: zigzag(alloc id - the previous one) << 1 | pending (the ids of seed rows are
 * below 0), then zigzagged deltas of the
 * address, the stream and the stack from the previous record's, the size, size - requested and
 * alloc id - segment id zigzagged. */
#include "layout_index.h"

#include "db_file.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_assert.h"
#include "gmt_grow.h"
#include "varint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LI_MAGIC "GMTLIVE2"
#define LI_TAG "layout-index-1"
#define LI_IDENTITY_LEN 2048
#define LI_RECORD_VARINTS 7

typedef struct li_header {
    char magic[8];
    char identity[LI_IDENTITY_LEN];
    uint64_t file_size;
    int64_t ndevices;
    uint64_t devices_off; /* li_device[ndevices] */
} li_header;

typedef struct li_device {
    int64_t device;
    uint64_t ncheckpoints, checkpoints_off; /* li_checkpoint[ncheckpoints], by event_id */
} li_device;

typedef struct li_checkpoint {
    int64_t event_id; /* the state after every row <= it */
    uint64_t off, nblocks, len;
} li_checkpoint;

struct layout_index {
    const uint8_t *map;
    size_t size;
    const li_header *h;
    const li_device *devs;
};

/* ---- building ------------------------------------------------------------------------------ */

typedef struct dev_build {
    int64_t device;
    layout_pass p;
    int64_t last; /* the last checkpoint's event id (0: none yet) */
    li_checkpoint *cks;
    size_t n, cap;
} dev_build;

typedef struct build {
    sqlite3 *db;
    const char *identity;
    int64_t min_rows, ratio;
    FILE *f;
    uint64_t len; /* bytes written */
    dev_build *devs;
    size_t ndev, capdev;
    uint8_t *scratch;
    size_t scratch_cap;
} build;

static int put(build *b, const void *p, size_t n) {
    if (n && fwrite(p, 1, n, b->f) != n)
        return -1;
    b->len += n;
    return 0;
}

static int pad8(build *b) {
    static const uint8_t zeros[8];
    return put(b, zeros, (8 - b->len % 8) % 8);
}

static dev_build *device_build(build *b, int64_t device) {
    for (size_t i = 0; i < b->ndev; i++)
        if (b->devs[i].device == device)
            return &b->devs[i];
    if (gmt_grow((void **)&b->devs, &b->capdev, b->ndev, sizeof *b->devs) != 0)
        return NULL;
    dev_build *d = &b->devs[b->ndev++];
    memset(d, 0, sizeof *d);
    d->device = device;
    return d;
}

static int write_checkpoint(build *b, dev_build *d, int64_t at) {
    size_t n = 0;
    layout_live_block *live = layout_pass_live(&d->p, &n);
    size_t need = n * LI_RECORD_VARINTS * VARINT_MAX_BYTES;
    if (!live || gmt_grow((void **)&d->cks, &d->cap, d->n, sizeof *d->cks) != 0 ||
        (need > b->scratch_cap &&
         gmt_grow_uninit((void **)&b->scratch, &b->scratch_cap, need, 1, need) != 0)) {
        free(live);
        return -1;
    }
    uint8_t *q = b->scratch;
    int64_t alloc = 0;
    uint64_t addr = 0, stream = 0;
    int64_t stack = 0;
    for (size_t i = 0; i < n; i++) {
        const layout_live_block *x = &live[i];
        /* sorted (layout_pass_live), but the first may be below 0: a seed row's id */
        (void)GMT_ALWAYS(i == 0 || x->alloc_id >= alloc);
        q = varint_put(q, zigzag(x->alloc_id - alloc) << 1 | (x->pending != 0));
        q = varint_put(q, zigzag((int64_t)(x->addr - addr)));
        q = varint_put(q, x->size);
        q = varint_put(q, zigzag((int64_t)(x->size - x->requested)));
        q = varint_put(q, zigzag((int64_t)(x->stream - stream)));
        q = varint_put(q, zigzag(x->stack_id - stack));
        q = varint_put(q, zigzag(x->alloc_id - x->segment_id));
        alloc = x->alloc_id;
        addr = x->addr;
        stream = x->stream;
        stack = x->stack_id;
    }
    free(live);
    size_t len = (size_t)(q - b->scratch);
    d->cks[d->n++] = (li_checkpoint){at, b->len, n, len};
    d->last = at;
    return put(b, b->scratch, len);
}

/* The one pass: every device's state, a checkpoint whenever enough rows went by. */
static int pass_all(build *b, char *err, size_t errlen) {
    uint32_t mask = event_scan_mask(layout_pass_columns, LAYOUT_PASS_NCOLS);
    event_scan *scan = event_scan_open(b->db, mask, INT64_MIN, INT64_MAX, err, errlen);
    if (!scan)
        return -1;
    const int64_t *col[EVENT_STORE_NCOLS], *v[LAYOUT_PASS_NCOLS];
    long got;
    int rc = 0;
    dev_build *d = NULL;
    while (rc == 0 && (got = event_scan_next(scan, col)) > 0) {
        event_scan_pick(col, layout_pass_columns, LAYOUT_PASS_NCOLS, v);
        for (long r = 0; rc == 0 && r < got; r++) {
            int64_t device;
            if (!layout_pass_takes(v, r, &device))
                continue;
            if ((!d || d->device != device) && !(d = device_build(b, device))) {
                rc = -1;
                break;
            }
            int64_t before = v[LAYOUT_PASS_ID][r] - 1, rows = before - d->last;
            int64_t due = (int64_t)d->p.live * b->ratio;
            if (rows >= (due > b->min_rows ? due : b->min_rows) &&
                write_checkpoint(b, d, before) != 0)
                rc = -1;
            else if (layout_pass_apply(&d->p, v, r) != 0)
                rc = -1;
        }
    }
    if (rc == 0 && got < 0) {
        snprintf(err, errlen, "layout index: %s", event_scan_error(scan));
        rc = -1;
    } else if (rc != 0) {
        snprintf(err, errlen, "layout index: %s",
                 ferror(b->f) ? "cannot write it" : "out of memory");
    }
    event_scan_close(scan);
    return rc;
}

static int write_index(FILE *f, void *ctx, char *err, size_t errlen) {
    build *b = ctx;
    b->f = f;
    li_header h;
    memset(&h, 0, sizeof h);
    int rc = put(b, &h, sizeof h) == 0 ? pass_all(b, err, errlen) : -1;
    li_device *table = rc == 0 ? calloc(b->ndev ? b->ndev : 1, sizeof *table) : NULL;
    if (rc == 0 && !table)
        rc = -1;
    for (size_t i = 0; rc == 0 && i < b->ndev; i++) {
        const dev_build *d = &b->devs[i];
        if (pad8(b) != 0)
            rc = -1;
        table[i] = (li_device){d->device, d->n, b->len};
        if (rc == 0 && put(b, d->cks, d->n * sizeof *d->cks) != 0)
            rc = -1;
    }
    if (rc == 0 && pad8(b) == 0) {
        memcpy(h.magic, LI_MAGIC, 8);
        snprintf(h.identity, sizeof h.identity, "%s", b->identity);
        h.ndevices = (int64_t)b->ndev;
        h.devices_off = b->len;
        rc = put(b, table, b->ndev * sizeof *table);
        h.file_size = b->len;
        if (rc == 0 && (fseek(f, 0, SEEK_SET) != 0 || fwrite(&h, sizeof h, 1, f) != 1))
            rc = -1;
    } else if (rc == 0) {
        rc = -1;
    }
    free(table);
    if (rc != 0 && !err[0])
        snprintf(err, errlen, "layout index: cannot write it");
    return rc;
}

static int build_file(sqlite3 *db, const char *path, const char *identity, int64_t min_rows,
                      int64_t ratio, char *err, size_t errlen) {
    build b = {.db = db,
               .identity = identity,
               .min_rows = min_rows > 1 ? min_rows : 1,
               .ratio = ratio > 0 ? ratio : 0};
    if (errlen)
        err[0] = 0;
    int rc = db_file_write(path, "layout index", write_index, &b, err, errlen);
    for (size_t i = 0; i < b.ndev; i++) {
        layout_pass_free(&b.devs[i].p);
        free(b.devs[i].cks);
    }
    free(b.devs);
    free(b.scratch);
    return rc;
}

int layout_index_write(sqlite3 *db, const char *path, int64_t min_rows, int64_t ratio, char *err,
                       size_t errlen) {
    char ident[LI_IDENTITY_LEN];
    db_meta_identity(db, LI_TAG, ident, sizeof ident);
    return build_file(db, path, ident, min_rows, ratio, err, errlen);
}

/* ---- reading ------------------------------------------------------------------------------- */

/* The mapped file's structure within its bounds: 0, or -1 (not an index, or a damaged one). */
static int check_file(layout_index *ix) {
    if (ix->size < sizeof(li_header))
        return -1;
    const li_header *h = ix->h = (const li_header *)ix->map;
    if (memcmp(h->magic, LI_MAGIC, 8) != 0 || h->file_size != ix->size || h->ndevices < 0 ||
        h->devices_off % 8 != 0 || h->devices_off > ix->size ||
        (uint64_t)h->ndevices > (ix->size - h->devices_off) / sizeof(li_device))
        return -1;
    ix->devs = (const li_device *)(ix->map + h->devices_off);
    for (int64_t i = 0; i < h->ndevices; i++) {
        const li_device *d = &ix->devs[i];
        if (d->checkpoints_off % 8 != 0 || d->checkpoints_off > ix->size ||
            d->ncheckpoints > (ix->size - d->checkpoints_off) / sizeof(li_checkpoint))
            return -1;
        const li_checkpoint *c = (const li_checkpoint *)(ix->map + d->checkpoints_off);
        for (uint64_t k = 0; k < d->ncheckpoints; k++)
            if (c[k].off > ix->size || c[k].len > ix->size - c[k].off ||
                (k && c[k].event_id <= c[k - 1].event_id))
                return -1;
    }
    return 0;
}

/* Maps the file; 1 when it is missing, of another database or not an index. */
static int map_file(const char *path, const char *ident, layout_index *ix) {
    const void *m;
    if (db_file_map(path, &m, &ix->size) != 0)
        return 1;
    ix->map = m;
    if (check_file(ix) != 0 || strncmp(ix->h->identity, ident, LI_IDENTITY_LEN) != 0) {
        munmap((void *)ix->map, ix->size);
        ix->map = NULL;
        return 1;
    }
    return 0;
}

layout_index *layout_index_open(sqlite3 *db, const char *path, int *built, char *err,
                                size_t errlen) {
    char ident[LI_IDENTITY_LEN];
    db_meta_identity(db, LI_TAG, ident, sizeof ident);
    layout_index *ix = calloc(1, sizeof *ix);
    if (!ix) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (built)
        *built = 0;
    if (map_file(path, ident, ix) != 0) {
        if (build_file(db, path, ident, LAYOUT_INDEX_MIN_ROWS, LAYOUT_INDEX_RATIO, err, errlen) !=
            0) {
            free(ix);
            return NULL;
        }
        if (built)
            *built = 1;
        if (map_file(path, ident, ix) != 0) {
            snprintf(err, errlen, "layout index %s: unreadable once built", path);
            free(ix);
            return NULL;
        }
    }
    return ix;
}

layout_index *layout_index_open_made(sqlite3 *db, const char *path) {
    char ident[LI_IDENTITY_LEN];
    db_meta_identity(db, LI_TAG, ident, sizeof ident);
    layout_index *ix = calloc(1, sizeof *ix);
    if (ix && map_file(path, ident, ix) != 0) {
        free(ix);
        ix = NULL;
    }
    return ix;
}

void layout_index_close(layout_index *ix) {
    if (!ix)
        return;
    if (ix->map)
        munmap((void *)ix->map, ix->size);
    free(ix);
}

static const li_device *device_of(const layout_index *ix, int device) {
    for (int64_t i = 0; i < ix->h->ndevices; i++)
        if (ix->devs[i].device == device)
            return &ix->devs[i];
    return NULL;
}

void layout_index_stats(const layout_index *ix, int device, int64_t *checkpoints, int64_t *blocks) {
    const li_device *d = device_of(ix, device);
    *checkpoints = d ? (int64_t)d->ncheckpoints : 0;
    *blocks = 0;
    const li_checkpoint *c = d ? (const li_checkpoint *)(ix->map + d->checkpoints_off) : NULL;
    for (uint64_t k = 0; d && k < d->ncheckpoints; k++)
        *blocks += (int64_t)c[k].nblocks;
}

int layout_index_seed(const layout_index *ix, int device, int64_t after, int64_t at, layout_pass *p,
                      int64_t *ck_at, char *err, size_t errlen) {
    const li_device *d = device_of(ix, device);
    if (!d || d->ncheckpoints == 0)
        return 0;
    const li_checkpoint *c = (const li_checkpoint *)(ix->map + d->checkpoints_off);
    size_t lo = 0, hi = (size_t)d->ncheckpoints; /* the first with event_id > at */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].event_id <= at)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || c[lo - 1].event_id <= after)
        return 0;
    const li_checkpoint *ck = &c[lo - 1];
    layout_pass_free(p);
    const uint8_t *q = ix->map + ck->off, *end = q + ck->len;
    int64_t alloc = 0, stack = 0;
    uint64_t addr = 0, stream = 0;
    for (uint64_t i = 0; i < ck->nblocks; i++) {
        layout_live_block b = {0};
        uint64_t first = varint_get(&q, end);
        b.alloc_id = alloc + unzigzag(first >> 1);
        b.pending = (uint8_t)(first & 1);
        b.addr = addr + (uint64_t)unzigzag(varint_get(&q, end));
        b.size = varint_get(&q, end);
        b.requested = b.size - (uint64_t)unzigzag(varint_get(&q, end));
        b.stream = stream + (uint64_t)unzigzag(varint_get(&q, end));
        b.stack_id = stack + unzigzag(varint_get(&q, end));
        b.segment_id = b.alloc_id - unzigzag(varint_get(&q, end));
        if (q > end || (q == end && i + 1 < ck->nblocks)) {
            snprintf(err, errlen, "layout index: a damaged checkpoint (device %d, event %lld)",
                     device, (long long)ck->event_id);
            return -1;
        }
        if (layout_pass_alloc(p, &b) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        alloc = b.alloc_id;
        addr = b.addr;
        stream = b.stream;
        stack = b.stack_id;
    }
    *ck_at = ck->event_id;
    return 1;
}

/* ---- which connection uses which index --------------------------------------------------------
 */

static __thread struct {
    sqlite3 *db;
    const layout_index *ix;
} uses[LAYOUT_INDEX_MAX_USES];

int layout_index_use(sqlite3 *db, const layout_index *ix) {
    int free_slot = -1;
    for (int i = 0; i < LAYOUT_INDEX_MAX_USES; i++) {
        if (uses[i].db == db) {
            uses[i].ix = ix;
            if (!ix)
                uses[i].db = NULL;
            return 0;
        }
        if (!uses[i].db && free_slot < 0)
            free_slot = i;
    }
    if (!ix)
        return 0;
    if (free_slot < 0)
        return -1;
    uses[free_slot].db = db;
    uses[free_slot].ix = ix;
    return 0;
}

const layout_index *layout_index_for(sqlite3 *db) {
    for (int i = 0; i < LAYOUT_INDEX_MAX_USES; i++)
        if (uses[i].db == db && db)
            return uses[i].ix;
    return NULL;
}
