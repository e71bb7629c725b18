/* btree_write.c — SQLite b-tree pages written in key order (see btree_write.h).
 *
 * The file format, as far as it is used here (https://www.sqlite.org/fileformat2.html):
 *  - a page is a header (8 bytes on a leaf, 12 on an interior page: type, first freeblock,
 *    cell count, start of the cell content, fragmented bytes, [right-most child]), then the
 *    cell pointer array in key order, a gap, and the cells packed at the page's end;
 *  - a table leaf cell is varint(payload length), varint(rowid), the record; a table interior
 *    cell is a 4-byte child page and varint(the largest rowid under it); the right-most child
 *    is in the header;
 *  - an index is a B-tree, not a B+tree: every key is stored exactly once, in a leaf or as the
 *    divider of an interior cell (4-byte left child, varint(length), the key's record);
 *  - a record is SQLite's record format (sqlite_record.h);
 *  - no page but a root may be empty: getAndInitPage reports any other as corrupt.
 *
 * Leaves are written as they fill; the levels above them are a small list of (child, key)
 * kept in memory and packed greedily at the end, never leaving a last page with a single
 * child (it would have no cell). The top page goes into the root page SQLite allocated. */
#include "btree_write.h"

#include "gmt_io.h"
#include "sqlite_record.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PENDING_BYTE_DEFAULT 0x40000000u
#define HEADER_BYTES 100
#define MIN_CELL 4 /* SQLite counts a cell as at least 4 bytes (cellSizePtr): shorter is padded */

enum page_type { INDEX_INTERIOR = 2, TABLE_INTERIOR = 5, INDEX_LEAF = 10, TABLE_LEAF = 13 };

#define MAX_TABLE_COLUMNS SQLREC_MAX_COLUMNS
#define MAX_INDEX_COLUMNS 8

_Static_assert(BTREE_NULL == SQLREC_NULL, "one NULL");

struct btree_file {
    int fd;
    char *path;
    uint32_t page_size, usable; /* usable: without the bytes reserved at each page's end */
    uint32_t page_count;        /* the highest page number in the file */
    uint32_t pending_page;      /* never used: it holds SQLite's lock byte */
    uint32_t max_index_payload; /* an index key's record beyond this spills: refused */
    int format4;                /* 0 and 1 take no bytes */
    uint8_t header[HEADER_BYTES];
    char error[512];
};

/* ---- bytes ---------------------------------------------------------------- */

static void put16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- the file --------------------------------------------------------------- */

static int file_fail(btree_file *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int file_fail(btree_file *f, const char *fmt, ...) {
    if (f->error[0])
        return -1; /* the first error is the one to report */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->error, sizeof f->error, fmt, ap);
    va_end(ap);
    return -1;
}

static int write_at(btree_file *f, const void *buf, size_t len, uint64_t offset) {
    if (gmt_pwrite_all(f->fd, buf, len, offset) != 0)
        return file_fail(f, "writing %s: %s", f->path, strerror(errno));
    return 0;
}

static int write_page(btree_file *f, uint32_t pgno, const uint8_t *page) {
    return write_at(f, page, f->page_size, (uint64_t)(pgno - 1) * f->page_size);
}

static uint32_t new_page(btree_file *f) {
    if (f->page_count >= 0xFFFFFFF0u) {
        file_fail(f, "%s: more pages than SQLite allows", f->path);
        return 0;
    }
    uint32_t p = ++f->page_count;
    if (p == f->pending_page)
        p = ++f->page_count;
    return p;
}

btree_file *btree_file_open(const char *path, char *err, size_t errlen) {
    btree_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->fd = open(path, O_RDWR | O_CLOEXEC);
    const uint8_t *h = f->header;
    const char *why = NULL;
    if (f->fd < 0)
        why = strerror(errno);
    else if (pread(f->fd, f->header, HEADER_BYTES, 0) != HEADER_BYTES ||
             memcmp(h, "SQLite format 3", 16) != 0)
        why = "not an SQLite database";
    else if (h[18] != 1 || h[19] != 1)
        why = "in WAL mode";
    else if (get32(h + 52) != 0)
        why = "an auto-vacuum database";
    else if (get32(h + 24) != get32(h + 92))
        why = "its header's page count is stale";
    else if (get32(h + 56) > 1) /* 0: no schema yet, 1: UTF-8 */
        why = "not UTF-8";
    if (!why) {
        uint32_t size = (uint32_t)h[16] << 8 | h[17];
        f->page_size = size == 1 ? 65536 : size;
        f->usable = f->page_size - h[20];
        f->page_count = get32(h + 28);
        f->format4 = get32(h + 44) >= 4;
        f->max_index_payload = (f->usable - 12) * 64 / 255 - 23;
        if (f->page_size < 512 || (f->page_size & (f->page_size - 1)) || f->usable < 480)
            why = "an unexpected page size";
    }
    if (why) {
        snprintf(err, errlen, "cannot write pages into %s: %s", path, why);
        btree_file_abort(f);
        return NULL;
    }
    btree_file_set_pending_byte(f, PENDING_BYTE_DEFAULT);
    return f;
}

void btree_file_set_pending_byte(btree_file *f, uint64_t offset) {
    f->pending_page = (uint32_t)(offset / f->page_size + 1);
}

const char *btree_file_error(const btree_file *f) { return f->error; }

int btree_file_close(btree_file *f, char *err, size_t errlen) {
    /* The page count is valid only while the change counter equals "version-valid-for". */
    uint8_t *h = f->header;
    uint32_t counter = get32(h + 24) + 1;
    put32(h + 24, counter);
    put32(h + 28, f->page_count);
    put32(h + 92, counter);
    put32(h + 96, (uint32_t)sqlite3_libversion_number());
    int rc = f->error[0] ? -1 : write_at(f, h, HEADER_BYTES, 0);
    if (close(f->fd) != 0 && rc == 0)
        rc = file_fail(f, "closing %s: %s", f->path, strerror(errno));
    f->fd = -1;
    if (rc != 0)
        snprintf(err, errlen, "%s", f->error);
    btree_file_abort(f);
    return rc;
}

void btree_file_abort(btree_file *f) {
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    free(f->path);
    free(f);
}

/* ---- a page being filled ---------------------------------------------------- */

typedef struct page {
    uint8_t *buf;
    uint32_t usable;
    uint32_t header; /* 8 or 12 */
    uint32_t cells;
    uint32_t content; /* offset of the cell content, which grows down from `usable` */
} page;

static int page_init(page *p, const btree_file *f) {
    p->buf = calloc(1, f->page_size);
    p->usable = f->usable;
    return p->buf ? 0 : -1;
}

static void page_start(page *p, enum page_type type) {
    p->buf[0] = (uint8_t)type;
    p->header = type == TABLE_LEAF || type == INDEX_LEAF ? 8 : 12;
    p->cells = 0;
    p->content = p->usable;
}

static uint32_t page_room(const page *p) { return p->content - p->header - 2 * p->cells; }

/* Room for a cell of len bytes and its pointer. */
static int page_fits(const page *p, size_t len) {
    return (len < MIN_CELL ? MIN_CELL : len) + 2 <= page_room(p);
}

static void page_put(page *p, const uint8_t *cell, size_t len) {
    size_t room = len < MIN_CELL ? MIN_CELL : len;
    p->content -= (uint32_t)room;
    memcpy(p->buf + p->content, cell, len);
    memset(p->buf + p->content + len, 0, room - len);
    put16(p->buf + p->header + 2 * p->cells, p->content);
    p->cells++;
}

/* The header's counts (and right-most child); the gap is zeroed so no stale bytes remain. */
static void page_seal(page *p, uint32_t right_child) {
    uint8_t *b = p->buf;
    put16(b + 1, 0); /* no freeblocks */
    put16(b + 3, p->cells);
    put16(b + 5, p->content == 65536 ? 0 : p->content);
    b[7] = 0; /* no fragmented bytes */
    if (p->header == 12)
        put32(b + 8, right_child);
    uint32_t gap = p->header + 2 * p->cells;
    memset(b + gap, 0, p->content - gap);
}

/* ---- a level of interior pages ------------------------------------------------ */

/* The pages above one level: child page i, and for a table the largest rowid under it, for an
 * index the divider key stored after it (sep[i], bytes of seps). */
typedef struct level {
    uint32_t *child;
    int64_t *key;
    size_t *sep_at, *sep_len;
    size_t n, cap;
} level;

static int level_push(level *l, uint32_t child, int64_t key, size_t sep_at, size_t sep_len) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        uint32_t *c = realloc(l->child, cap * sizeof *c);
        if (c)
            l->child = c;
        int64_t *k = realloc(l->key, cap * sizeof *k);
        if (k)
            l->key = k;
        size_t *a = realloc(l->sep_at, cap * sizeof *a);
        if (a)
            l->sep_at = a;
        size_t *b = realloc(l->sep_len, cap * sizeof *b);
        if (b)
            l->sep_len = b;
        if (!c || !k || !a || !b)
            return -1;
        l->cap = cap;
    }
    l->child[l->n] = child;
    l->key[l->n] = key;
    l->sep_at[l->n] = sep_at;
    l->sep_len[l->n] = sep_len;
    l->n++;
    return 0;
}

static void level_free(level *l) {
    free(l->child);
    free(l->key);
    free(l->sep_at);
    free(l->sep_len);
    memset(l, 0, sizeof *l);
}

/* The interior cell for child i of l: a table's (child, rowid), an index's (child, divider). */
static size_t interior_cell(uint8_t *cell, const level *l, size_t i, const uint8_t *seps) {
    put32(cell, l->child[i]);
    if (!seps)
        return 4 + sqlrec_put_varint(cell + 4, (uint64_t)l->key[i]);
    size_t n = 4 + sqlrec_put_varint(cell + 4, l->sep_len[i]);
    memcpy(cell + n, seps + l->sep_at[i], l->sep_len[i]);
    return n + l->sep_len[i];
}

/* Packs the children of l (at least 2) into interior pages, and l becomes the level above
 * them, until one page is left: that one is written to root. A page holds children [a, b]:
 * cells for a .. b-1, b as its right-most child; for a table its key is b's, for an index the
 * divider after b goes up. */
static int build_interior(btree_file *f, page *pg, level *l, const uint8_t *seps, uint32_t root) {
    uint8_t cell[4 + SQLREC_MAX_VARINT + SQLREC_BOUND(MAX_INDEX_COLUMNS)];
    enum page_type type = seps ? INDEX_INTERIOR : TABLE_INTERIOR;
    while (l->n > 1) {
        level up = {0};
        size_t pages = 0;
        for (int pass = 0; pass < 2; pass++) { /* count the pages, then write them */
            for (size_t a = 0; a < l->n;) {
                page_start(pg, type);
                size_t b = a;
                while (b + 1 < l->n) {
                    size_t len = interior_cell(cell, l, b, seps);
                    if (!page_fits(pg, len))
                        break;
                    page_put(pg, cell, len);
                    b++;
                }
                if (l->n - (b + 1) == 1) { /* the last page would be one child and no cell */
                    b--;
                    pg->cells--;
                    pg->content += (uint32_t)interior_cell(cell, l, b, seps);
                }
                if (pass == 0) {
                    pages++;
                } else {
                    page_seal(pg, l->child[b]);
                    uint32_t pgno = pages == 1 ? root : new_page(f);
                    if (!pgno || write_page(f, pgno, pg->buf) != 0 ||
                        level_push(&up, pgno, l->key[b], seps ? l->sep_at[b] : 0,
                                   seps ? l->sep_len[b] : 0) != 0) {
                        level_free(&up);
                        return file_fail(f, "out of memory writing %s", f->path);
                    }
                }
                a = b + 1;
            }
        }
        level_free(l);
        *l = up;
    }
    return 0;
}

/* ---- tables ------------------------------------------------------------------- */

struct btree_table {
    btree_file *f;
    uint32_t root;
    page leaf;
    level above;
    uint64_t not_null;
    int64_t last_rowid;
    int have_rows;
};

btree_table *btree_table_begin(btree_file *f, uint32_t root_page) {
    btree_table *t = calloc(1, sizeof *t);
    if (!t || page_init(&t->leaf, f) != 0) {
        free(t);
        file_fail(f, "out of memory");
        return NULL;
    }
    t->f = f;
    t->root = root_page;
    page_start(&t->leaf, TABLE_LEAF);
    return t;
}

void btree_table_not_null(btree_table *t, uint64_t mask) { t->not_null = mask; }

#define TEXT_RECORD_MAX 4096 /* a row with text: more is refused (import -o's are names) */

static int table_add(btree_table *t, int64_t rowid, const int64_t *cols, const char *const *texts,
                     int n, int ipk) {
    btree_file *f = t->f;
    if (n < 1 || n > MAX_TABLE_COLUMNS)
        return file_fail(f, "%s: a row of %d columns", f->path, n);
    if (t->have_rows && rowid <= t->last_rowid)
        return file_fail(f, "%s: rowid %lld after %lld: rows out of order", f->path,
                         (long long)rowid, (long long)t->last_rowid);
    for (int i = 0; i < n; i++)
        if ((t->not_null >> i & 1) && i != ipk && !(texts && texts[i]) && cols[i] == BTREE_NULL)
            return file_fail(f, "%s: NULL in NOT NULL column %d of rowid %lld", f->path, i,
                             (long long)rowid);
    uint8_t cell[2 * SQLREC_MAX_VARINT + TEXT_RECORD_MAX];
    uint8_t record[TEXT_RECORD_MAX];
    _Static_assert(SQLREC_BOUND(MAX_TABLE_COLUMNS) <= TEXT_RECORD_MAX, "an integer row fits");
    size_t len = texts ? sqlrec_text_record(record, sizeof record, cols, texts, n, ipk, f->format4)
                       : sqlrec_int_record(record, cols, n, ipk, f->format4);
    if (!len || len > f->usable - 35) /* more would spill into overflow pages */
        return file_fail(f, "%s: row %lld is too large for a page", f->path, (long long)rowid);
    size_t at = sqlrec_put_varint(cell, len);
    at += sqlrec_put_varint(cell + at, (uint64_t)rowid);
    memcpy(cell + at, record, len);
    at += len;
    if (!page_fits(&t->leaf, at)) { /* the leaf is full: it is written, a new one starts */
        page_seal(&t->leaf, 0);
        uint32_t pgno = new_page(f);
        if (!pgno || write_page(f, pgno, t->leaf.buf) != 0)
            return -1;
        if (level_push(&t->above, pgno, t->last_rowid, 0, 0) != 0)
            return file_fail(f, "out of memory");
        page_start(&t->leaf, TABLE_LEAF);
    }
    page_put(&t->leaf, cell, at);
    t->last_rowid = rowid;
    t->have_rows = 1;
    return 0;
}

int btree_table_add(btree_table *t, int64_t rowid, const int64_t *cols, int n, int ipk) {
    return table_add(t, rowid, cols, NULL, n, ipk);
}

int btree_table_add_text(btree_table *t, int64_t rowid, const int64_t *cols,
                         const char *const *texts, int n, int ipk) {
    return table_add(t, rowid, cols, texts, n, ipk);
}

int btree_table_end(btree_table *t) {
    btree_file *f = t->f;
    int rc = f->error[0] ? -1 : 0;
    if (rc == 0 && t->have_rows) {
        page_seal(&t->leaf, 0);
        if (!t->above.n) { /* one leaf: it is the root */
            rc = write_page(f, t->root, t->leaf.buf);
        } else {
            uint32_t pgno = new_page(f);
            rc = !pgno || write_page(f, pgno, t->leaf.buf) != 0 ? -1 : 0;
            if (rc == 0 && level_push(&t->above, pgno, t->last_rowid, 0, 0) != 0)
                rc = file_fail(f, "out of memory");
            if (rc == 0)
                rc = build_interior(f, &t->leaf, &t->above, NULL, t->root);
        }
    }
    btree_table_free(t);
    return rc;
}

void btree_table_free(btree_table *t) {
    if (!t)
        return;
    free(t->leaf.buf);
    level_free(&t->above);
    free(t);
}

/* ---- indexes ------------------------------------------------------------------ */

/* A full leaf is written only once the next one has a key: if the index ends right after a
 * divider went up, that divider comes back down into it (its room is kept: a leaf takes a key
 * only while a key of the largest size would still fit after it). */
struct btree_index {
    btree_file *f;
    uint32_t root;
    page leaf, full; /* the leaf being filled; the last full one, not yet written */
    int have_full;
    level above;
    uint8_t *seps; /* the dividers' records, one after another */
    size_t seps_len, seps_cap;
    int64_t last[MAX_INDEX_COLUMNS];
    int columns, have_keys;
};

btree_index *btree_index_begin(btree_file *f, uint32_t root_page) {
    btree_index *x = calloc(1, sizeof *x);
    if (!x || page_init(&x->leaf, f) != 0 || page_init(&x->full, f) != 0) {
        if (x)
            free(x->leaf.buf);
        free(x);
        file_fail(f, "out of memory");
        return NULL;
    }
    x->f = f;
    x->root = root_page;
    page_start(&x->leaf, INDEX_LEAF);
    return x;
}

static int key_cmp(const int64_t *a, const int64_t *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* Writes the full leaf, the last child of the level above, and gives it its page number (only
 * now: if it ends up the only leaf it goes to the root instead). */
static int write_full(btree_index *x) {
    uint32_t pgno = new_page(x->f);
    if (!pgno || write_page(x->f, pgno, x->full.buf) != 0)
        return -1;
    x->above.child[x->above.n - 1] = pgno;
    x->have_full = 0;
    return 0;
}

/* An index cell: varint(length), the key's record. 0 when it would not fit in cap. */
static size_t index_cell(uint8_t *cell, size_t cap, const uint8_t *record, size_t len) {
    size_t at = sqlrec_put_varint(cell, len);
    if (at + len > cap)
        return 0;
    memcpy(cell + at, record, len);
    return at + len;
}

int btree_index_add(btree_index *x, const int64_t *key, int n) {
    btree_file *f = x->f;
    if (n < 1 || n > MAX_INDEX_COLUMNS || (x->have_keys && n != x->columns))
        return file_fail(f, "%s: an index key of %d columns", f->path, n);
    for (int i = 0; i < n; i++)
        if (key[i] == BTREE_NULL)
            return file_fail(f, "%s: NULL in an index key", f->path);
    if (x->have_keys && key_cmp(key, x->last, n) <= 0)
        return file_fail(f, "%s: index keys out of order", f->path);
    uint8_t record[SQLREC_BOUND(MAX_INDEX_COLUMNS)], cell[SQLREC_MAX_VARINT + sizeof record];
    size_t len = sqlrec_int_record(record, key, n, -1, f->format4);
    size_t cell_len = index_cell(cell, sizeof cell, record, len);
    size_t reserve = 1 + SQLREC_BOUND(n); /* the largest cell of n columns (< 128 bytes) */
    if (len > f->max_index_payload || !cell_len)
        return file_fail(f, "%s: an index key too large for a page", f->path);
    if (x->leaf.cells == 0 && x->have_full && write_full(x) != 0)
        return -1; /* the first key after a divider: the full leaf before it is final */
    if (!page_fits(&x->leaf, cell_len + 2 + reserve)) { /* full: this key goes up */
        page_seal(&x->leaf, 0);
        if (x->seps_len + len > x->seps_cap) {
            size_t cap = x->seps_cap ? 2 * x->seps_cap : 65536;
            while (cap < x->seps_len + len)
                cap *= 2;
            uint8_t *grown = realloc(x->seps, cap);
            if (!grown)
                return file_fail(f, "out of memory");
            x->seps = grown;
            x->seps_cap = cap;
        }
        memcpy(x->seps + x->seps_len, record, len);
        if (level_push(&x->above, 0, 0, x->seps_len, len) != 0) /* its page: when written */
            return file_fail(f, "out of memory");
        x->seps_len += len;
        page swap = x->full;
        x->full = x->leaf;
        x->leaf = swap;
        x->have_full = 1;
        page_start(&x->leaf, INDEX_LEAF);
    } else {
        page_put(&x->leaf, cell, cell_len);
    }
    memcpy(x->last, key, (size_t)n * sizeof *key);
    x->columns = n;
    x->have_keys = 1;
    return 0;
}

int btree_index_end(btree_index *x) {
    btree_file *f = x->f;
    int rc = f->error[0] ? -1 : 0;
    uint8_t cell[SQLREC_MAX_VARINT + SQLREC_BOUND(MAX_INDEX_COLUMNS)];
    level *above = &x->above;
    if (rc == 0 && x->have_full && x->leaf.cells == 0) {
        /* the last key went up as a divider with nothing after it: it comes back down into
         * the full leaf (which kept room for it), now the last child */
        size_t i = above->n - 1;
        page_put(&x->full, cell,
                 index_cell(cell, sizeof cell, x->seps + above->sep_at[i], above->sep_len[i]));
        page_seal(&x->full, 0);
        if (above->n == 1) /* the only leaf: the root */
            rc = write_page(f, x->root, x->full.buf);
        else if ((rc = write_full(x)) == 0)
            rc = build_interior(f, &x->leaf, above, x->seps, x->root);
    } else if (rc == 0 && x->have_keys) {
        if (x->have_full)
            rc = write_full(x);
        page_seal(&x->leaf, 0);
        if (rc == 0 && !above->n) {
            rc = write_page(f, x->root, x->leaf.buf);
        } else if (rc == 0) {
            uint32_t pgno = new_page(f);
            rc = !pgno || write_page(f, pgno, x->leaf.buf) != 0 ? -1 : 0;
            if (rc == 0 && level_push(above, pgno, 0, 0, 0) != 0)
                rc = file_fail(f, "out of memory");
            if (rc == 0)
                rc = build_interior(f, &x->leaf, above, x->seps, x->root);
        }
    }
    btree_index_free(x);
    return rc;
}

void btree_index_free(btree_index *x) {
    if (!x)
        return;
    free(x->leaf.buf);
    free(x->full.buf);
    free(x->seps);
    level_free(&x->above);
    free(x);
}
