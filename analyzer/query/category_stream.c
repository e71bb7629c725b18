/* category_stream.c — see category_stream.h. */
#include "category_stream.h"

#include "addr_map.h"
#include "categories.h"
#include "category_store.h"
#include "db_query.h"
#include "gmt_assert.h"
#include "gmt_grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A live block: its size and category; a free slot chains to the next free one. */
typedef struct live_slot {
    int64_t size;
    uint32_t next_free; /* index + 1; 0: none */
    uint8_t cat;
} live_slot;

struct category_stream {
    sqlite3 *db;
    /* the source, one of: block_categories in alloc_id order (rows), or the sweep's map (keys:
     * alloc_id * 16 + category, sorted) */
    sqlite3_stmt *rows;
    int64_t *keys;
    size_t nkeys, key_cap, next_key;
    int swept_known; /* the sweep met a block whose category is not unknown */
    /* the cursor: the row it stands on (have), the source's end (done), the last id asked */
    int have, done;
    int64_t row_id, last_asked;
    gmt_category row_cat;
    /* the live blocks: alloc_id -> slot */
    addr_map live;
    live_slot *slots;
    size_t nslots, slot_cap;
    uint32_t free_head; /* index + 1; 0: none */
};

_Static_assert(BLOCK_CATEGORY_COUNT <= 16, "a category fits in 4 bits");

static gmt_category category_named(const char *name, size_t len) {
    int k = name ? gmt_category_from_name(name, len) : -1;
    return k >= 0 ? (gmt_category)k : BLOCK_CATEGORY_UNKNOWN;
}

/* The cursor onto the next row of the source: 1, 0 at its end, -1 (err). */
static int next_row(category_stream *s, char *err, size_t errlen) {
    if (!s->rows) {
        if (s->next_key == s->nkeys)
            return 0;
        int64_t k = s->keys[s->next_key++];
        /* floor division: a seeded block's id is <= 0 */
        s->row_id = k >= 0 ? k / 16 : -((-k + 15) / 16);
        s->row_cat = (gmt_category)(k - s->row_id * 16);
        return 1;
    }
    int rc = sqlite3_step(s->rows);
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW) {
        snprintf(err, errlen, "reading block_categories: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    s->row_id = sqlite3_column_int64(s->rows, 0);
    const char *name = (const char *)sqlite3_column_text(s->rows, 1);
    s->row_cat = category_named(name, (size_t)sqlite3_column_bytes(s->rows, 1));
    return 1;
}

/* Puts block id live; 0, or -1 when out of memory. A block allocated twice (a damaged input):
 * the last alloc wins, the first one's slot is not reused (one probe of the map a block, not
 * two). */
static int put_live(category_stream *s, int64_t id, int64_t size, gmt_category cat) {
    size_t k;
    if (s->free_head) {
        k = s->free_head - 1;
        s->free_head = s->slots[k].next_free;
    } else {
        if (s->nslots >= UINT32_MAX ||
            gmt_grow((void **)&s->slots, &s->slot_cap, s->nslots, sizeof *s->slots) != 0)
            return -1;
        k = s->nslots++;
    }
    s->slots[k] = (live_slot){.size = size, .cat = (uint8_t)cat};
    return addr_map_put(&s->live, 0, (uint64_t)id, (uint32_t)k);
}

int category_stream_begin(category_stream *s, int64_t from, char *err, size_t errlen) {
    addr_map_free(&s->live);
    memset(&s->live, 0, sizeof s->live);
    s->nslots = 0;
    s->free_head = 0;
    s->have = s->done = 0;
    s->next_key = 0;
    s->last_asked = INT64_MIN;
    if (s->rows)
        sqlite3_reset(s->rows);
    for (;;) { /* the blocks allocated before the pass */
        int r = next_row(s, err, errlen);
        if (r <= 0) {
            s->done = 1;
            return r;
        }
        if (s->row_id >= from) {
            s->have = 1;
            return 0;
        }
        if (put_live(s, s->row_id, 0, s->row_cat) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
}

int category_stream_alloc(category_stream *s, int64_t alloc_id, int64_t size, gmt_category *cat,
                          char *err, size_t errlen) {
    *cat = BLOCK_CATEGORY_UNKNOWN;
    if (GMT_NEVER(alloc_id < s->last_asked)) /* the cursor has passed it */
        return put_live(s, alloc_id, size, *cat) == 0 ? 0 : -1;
    s->last_asked = alloc_id;
    while (!s->done) {
        if (!s->have) {
            int r = next_row(s, err, errlen);
            if (r < 0)
                return -1;
            s->done = r == 0;
            s->have = r == 1;
            continue;
        }
        if (s->row_id >= alloc_id)
            break;
        s->have = 0; /* a block of another device, or of none the pass asks for */
    }
    if (s->have && s->row_id == alloc_id)
        *cat = s->row_cat;
    if (put_live(s, alloc_id, size, *cat) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int category_stream_live(const category_stream *s, int64_t alloc_id, gmt_category *cat,
                         int64_t *size) {
    const uint32_t *k = addr_map_get(&s->live, 0, (uint64_t)alloc_id);
    if (cat)
        *cat = k ? (gmt_category)s->slots[*k].cat : BLOCK_CATEGORY_UNKNOWN;
    if (size)
        *size = k ? s->slots[*k].size : 0;
    return k != NULL;
}

int category_stream_end(category_stream *s, int64_t alloc_id, gmt_category *cat, int64_t *size) {
    const uint32_t *v = addr_map_get(&s->live, 0, (uint64_t)alloc_id);
    uint32_t k = v ? *v : 0;
    if (cat)
        *cat = v ? (gmt_category)s->slots[k].cat : BLOCK_CATEGORY_UNKNOWN;
    if (size)
        *size = v ? s->slots[k].size : 0;
    if (!v)
        return 0;
    addr_map_remove(&s->live, 0, (uint64_t)alloc_id);
    s->slots[k].next_free = s->free_head;
    s->free_head = k + 1;
    return 1;
}

size_t category_stream_live_count(const category_stream *s) { return s->live.count; }

int category_stream_bounded(const category_stream *s) { return s->rows != NULL; }

/* ---- the sources ---------------------------------------------------------------------------- */

static int keep_block(void *ctx, const classified_block *b) {
    category_stream *s = ctx;
    if (gmt_grow((void **)&s->keys, &s->key_cap, s->nkeys, sizeof *s->keys) != 0)
        return 1;
    s->keys[s->nkeys++] = b->alloc_id * 16 + (int64_t)b->category; /* ids are far below 2^59 */
    s->swept_known |= b->category != BLOCK_CATEGORY_UNKNOWN;
    return 0;
}

static int cmp_key(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The map of every block, from a sweep (a database without block_categories): 1 when a block's
 * category is known, 0 when none is, -1 (err). */
static int sweep_into_map(category_stream *s, char *err, size_t errlen) {
    categorizer *cz = categorizer_new(s->db, NULL, err, errlen);
    if (!cz)
        return -1;
    err[0] = '\0';
    int rc = categorizer_sweep_all(cz, keep_block, s, err, errlen);
    categorizer_free(cz);
    if (rc != 0) {
        if (rc > 0 || !err[0])
            snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (s->nkeys > 1) /* none: keys may be NULL, which qsort may not be given */
        qsort(s->keys, s->nkeys, sizeof *s->keys, cmp_key);
    return s->swept_known;
}

/* block_categories as the source: 1 when a row's category is known, 0 when none is, -1 (err). */
static int open_rows(category_stream *s, char *err, size_t errlen) {
    sqlite3_stmt *any =
        db_statement(s->db, "SELECT EXISTS (SELECT 1 FROM block_categories WHERE category <> ?1)");
    int known = -1;
    if (any) {
        sqlite3_bind_text(any, 1, gmt_category_name(BLOCK_CATEGORY_UNKNOWN), -1, SQLITE_STATIC);
        if (sqlite3_step(any) == SQLITE_ROW)
            known = sqlite3_column_int(any, 0) != 0;
        sqlite3_finalize(any);
    }
    if (known == 1 && !(s->rows = db_statement(s->db, "SELECT alloc_id, category FROM "
                                                      "block_categories ORDER BY alloc_id")))
        known = -1;
    if (known < 0)
        snprintf(err, errlen, "reading block_categories: %s", sqlite3_errmsg(s->db));
    return known;
}

int category_stream_open(sqlite3 *db, category_stream **out, char *err, size_t errlen) {
    *out = NULL;
    category_stream *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->db = db;
    int known = db_has_table(db, "block_categories") && category_blocks_stored(db)
                    ? open_rows(s, err, errlen)
                    : sweep_into_map(s, err, errlen);
    if (known <= 0) {
        category_stream_close(s);
        return known < 0 ? -1 : 0;
    }
    *out = s;
    return 0;
}

void category_stream_close(category_stream *s) {
    if (!s)
        return;
    sqlite3_finalize(s->rows);
    free(s->keys);
    addr_map_free(&s->live);
    free(s->slots);
    free(s);
}
