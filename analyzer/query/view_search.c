/* view_search.c — the viewer's search (view_search.h): the frames by text, the stacks holding
 * them down the trie, then one pass over the device's events for the sites' blocks and the
 * histogram; an address through the segments' (device, addr) index and one pass for the
 * blocks, each block's detail then a point lookup (block_detail.h). */
#include "view_search.h"
#include "gmt_grow.h"

#include "addr_map.h"
#include "block_sweep.h"
#include "db_query.h"
#include "event_scan.h"
#include "trace_format.h"
#include "when.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int view_axis_read(sqlite3 *db, view_axis *out) {
    out->timed = when_has_timestamps(db);
    out->last_event = db_query_i64(db, "SELECT max(event_id) FROM event_rows", 0, 0, 0);
    out->end = out->timed ? db_query_i64(db, "SELECT ts_ns FROM event_rows WHERE event_id = ?1",
                                         out->last_event, 0, 0)
                          : out->last_event;
    if (out->end < 0)
        out->end = 0;
    return 0;
}

/* strcasestr over ASCII: the text's bytes compared case-folded */
static int holds(const char *hay, const char *needle) {
    if (!hay)
        return 0;
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

int view_search_frame_matches(const char *name, const char *file, const char *text) {
    return holds(name, text) || holds(file, text);
}

/* SQL's side of the rule above: the frames are matched in C (ASCII case folding, the same as
 * holds()), through a function registered on the connection for this statement. */
static void sql_matches(sqlite3_context *c, int argc, sqlite3_value **v) {
    (void)argc; /* 3: registered so */
    const char *text = (const char *)sqlite3_value_text(v[2]);
    sqlite3_result_int(c, text && view_search_frame_matches((const char *)sqlite3_value_text(v[0]),
                                                            (const char *)sqlite3_value_text(v[1]),
                                                            text));
}

/* ---- by frame text ------------------------------------------------------------------- */

typedef struct site_acc {
    int64_t stack_id, blocks, bytes, live, peak;
} site_acc;

static int by_bytes(const void *a, const void *b) {
    const view_site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return (x->stack_id > y->stack_id) - (x->stack_id < y->stack_id);
}

/* The stacks holding a matching frame into `stacks` (stack id -> index + 1 in *acc). */
static int matching_stacks(sqlite3 *db, const char *text, addr_map *stacks, site_acc **acc,
                           size_t *n, int64_t *frames, char *err, size_t errlen) {
    if (sqlite3_create_function(db, "gmt_view_matches", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                sql_matches, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "search: %s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_stmt *st =
        db_statement(db, "SELECT count(*) FROM frames WHERE gmt_view_matches(name, file, ?1)");
    int failed = 0;
    if (st) {
        sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
        *frames = db_next_row(st, &failed) ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_finalize(st);
    }
    st = db_statement(db, "WITH RECURSIVE m(id) AS (SELECT s.stack_id FROM stacks AS s JOIN frames "
                          "AS f ON f.frame_id = s.frame_id WHERE gmt_view_matches(f.name, f.file, "
                          "?1) UNION SELECT c.stack_id FROM stacks AS c JOIN m ON c.parent_id = "
                          "m.id) SELECT id FROM m");
    if (!st) {
        snprintf(err, errlen, "search: %s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && db_next_row(st, &failed)) {
        if (gmt_grow_uninit((void **)acc, &cap, *n, sizeof **acc, 64) != 0) {
            rc = -1;
            break;
        }
        int64_t id = sqlite3_column_int64(st, 0);
        (*acc)[*n] = (site_acc){.stack_id = id};
        (*n)++;
        rc = addr_map_put(stacks, 0, (uint64_t)id, (uint32_t)*n);
    }
    sqlite3_finalize(st);
    if (failed)
        snprintf(err, errlen, "search: %s", sqlite3_errmsg(db));
    else if (rc)
        snprintf(err, errlen, "search: out of memory");
    return failed || rc ? -1 : 0;
}

enum { ID, TS, DEVICE, OP, LEVEL, KIND, SIZE, STACK, ALLOC, ADDR, NCOL };
static const int scan_columns[NCOL] = {
    EVENT_COL_event_id,       EVENT_COL_ts_ns, EVENT_COL_device, EVENT_COL_op,
    EVENT_COL_level,          EVENT_COL_kind,  EVENT_COL_size,   EVENT_COL_stack_id,
    EVENT_COL_alloc_event_id, EVENT_COL_addr};

/* block_sweep.h's blocks: an allocator block's alloc, or a whole-block segment's alloc/map */
static int is_block_alloc(const int64_t *const *v, long r, const addr_map *whole) {
    int64_t op = v[OP][r], level = v[LEVEL][r];
    if (level == TRACE_LEVEL_BLOCK)
        return op == TRACE_OP_ALLOC;
    return (op == TRACE_OP_ALLOC || op == TRACE_OP_MAP) &&
           addr_map_get(whole, 0, (uint64_t)v[ID][r]) != NULL;
}

/* The pass: each matching site's blocks, bytes and live peak, and the histogram. */
static int sites_pass(sqlite3 *db, int device, const addr_map *stacks, site_acc *acc,
                      view_search_frames *out, char *err, size_t errlen) {
    addr_map whole = {0}, live = {0}; /* live: a matching block's alloc id -> site index + 1 */
    if (block_sweep_whole_segments(db, &whole) != 0) {
        snprintf(err, errlen, "search: reading the segments: %s", sqlite3_errmsg(db));
        return -1;
    }
    event_scan *scan =
        event_scan_open(db, event_scan_mask(scan_columns, NCOL), INT64_MIN, INT64_MAX, err, errlen);
    if (!scan) {
        addr_map_free(&whole);
        return -1;
    }
    const int64_t *col[EVENT_STORE_NCOLS], *v[NCOL];
    long n;
    int rc = 0;
    while (rc == 0 && (n = event_scan_next(scan, col)) > 0) {
        event_scan_pick(col, scan_columns, NCOL, v);
        for (long r = 0; r < n && rc == 0; r++) {
            if (v[DEVICE][r] != device || v[KIND][r] != TRACE_KIND_DEVICE)
                continue;
            int64_t op = v[OP][r], size = event_value_or(v[SIZE][r], 0);
            if (op == TRACE_OP_ALLOC || op == TRACE_OP_MAP) {
                uint32_t *at = addr_map_get(stacks, 0, (uint64_t)event_value_or(v[STACK][r], 0));
                if (!at || !is_block_alloc(v, r, &whole))
                    continue;
                site_acc *s = &acc[*at - 1];
                if ((s->live += size) > s->peak)
                    s->peak = s->live;
                rc = addr_map_put(&live, 0, (uint64_t)v[ID][r], *at);
                if (v[ID][r] < 1)
                    continue; /* seeded: live before the recording, not allocated in it */
                s->blocks++;
                s->bytes += size;
                int64_t x = out->axis.timed ? v[TS][r] : v[ID][r];
                size_t b = x <= 0 ? 0 : (size_t)(x / out->bucket_width);
                if (b >= VIEW_SEARCH_BUCKETS)
                    b = VIEW_SEARCH_BUCKETS - 1;
                out->hist_blocks[b]++;
                out->hist_bytes[b] += size;
            } else if ((op == TRACE_OP_FREE || op == TRACE_OP_UNMAP) &&
                       v[ALLOC][r] != EVENT_STORE_NULL) {
                uint32_t *at = addr_map_get(&live, 0, (uint64_t)v[ALLOC][r]);
                if (!at)
                    continue;
                acc[*at - 1].live -= size;
                addr_map_remove(&live, 0, (uint64_t)v[ALLOC][r]);
            }
        }
    }
    if (rc == 0 && n < 0) {
        snprintf(err, errlen, "search: %s", event_scan_error(scan));
        rc = -1;
    } else if (rc) {
        snprintf(err, errlen, "search: out of memory");
    }
    event_scan_close(scan);
    addr_map_free(&whole);
    addr_map_free(&live);
    return rc;
}

int view_search_frames_read(sqlite3 *db, int device, const char *text, view_search_frames *out,
                            char *err, size_t errlen) {
    assert(db && text && out);
    memset(out, 0, sizeof *out);
    if (!*text || strlen(text) > VIEW_SEARCH_MAX_TEXT) {
        snprintf(err, errlen, "search: the text is 1 to %d bytes", VIEW_SEARCH_MAX_TEXT);
        return -1;
    }
    view_axis_read(db, &out->axis);
    out->bucket_width = out->axis.end / VIEW_SEARCH_BUCKETS + 1;
    addr_map stacks = {0};
    site_acc *acc = NULL;
    size_t n = 0;
    int rc = matching_stacks(db, text, &stacks, &acc, &n, &out->frames_total, err, errlen);
    out->stacks_total = n;
    if (rc == 0 && n)
        rc = sites_pass(db, device, &stacks, acc, out, err, errlen);
    addr_map_free(&stacks);
    size_t kept = 0; /* the sites that allocated */
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (acc[i].blocks || acc[i].peak)
            acc[kept++] = acc[i];
    if (rc == 0 && kept && !(out->sites = malloc(kept * sizeof *out->sites))) {
        snprintf(err, errlen, "search: out of memory");
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < kept; i++) {
        out->sites[i] = (view_site){acc[i].stack_id, acc[i].blocks, acc[i].bytes, acc[i].peak};
        out->blocks += acc[i].blocks;
        out->bytes += acc[i].bytes;
    }
    free(acc);
    if (rc != 0) {
        view_search_frames_free(out);
        return -1;
    }
    if (kept)
        qsort(out->sites, kept, sizeof *out->sites, by_bytes);
    out->sites_total = kept;
    out->nsites = kept < VIEW_SEARCH_MAX_SITES ? kept : VIEW_SEARCH_MAX_SITES;
    return 0;
}

void view_search_frames_free(view_search_frames *s) {
    free(s->sites);
    s->sites = NULL;
    s->nsites = 0;
}

/* ---- by address ---------------------------------------------------------------------- */

static int address_segments(sqlite3 *db, int device, uint64_t addr, view_search_addr *out,
                            char *err, size_t errlen) {
    sqlite3_stmt *st = db_statement(
        db, "SELECT segment_id, addr, size, alloc_ts_ns, coalesce(free_event_id, 0), "
            "coalesce(free_ts_ns, -1) FROM segments WHERE device = ?1 AND addr <= ?2 AND "
            "?2 < addr + size ORDER BY segment_id");
    if (!st) {
        snprintf(err, errlen, "search: %s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, (int64_t)addr);
    int failed = 0;
    while (db_next_row(st, &failed)) {
        if (out->nsegments < VIEW_SEARCH_MAX_SEGMENTS) {
            view_segment_hit *h = &out->segments[out->nsegments++];
            int64_t *f[6] = {&h->segment_id,  &h->addr,          &h->size,
                             &h->alloc_ts_ns, &h->free_event_id, &h->free_ts_ns};
            for (int i = 0; i < 6; i++)
                *f[i] = sqlite3_column_int64(st, i);
        }
        out->segments_total++;
    }
    sqlite3_finalize(st);
    if (failed)
        snprintf(err, errlen, "search: %s", sqlite3_errmsg(db));
    return failed ? -1 : 0;
}

/* The allocations (every kind, as the `allocations` view has them) that held addr: their ids,
 * the first VIEW_SEARCH_MAX_BLOCKS in event order. */
static int address_blocks(sqlite3 *db, int device, uint64_t addr, int64_t *ids,
                          view_search_addr *out, char *err, size_t errlen) {
    addr_map whole = {0};
    if (block_sweep_whole_segments(db, &whole) != 0) {
        snprintf(err, errlen, "search: reading the segments: %s", sqlite3_errmsg(db));
        return -1;
    }
    event_scan *scan =
        event_scan_open(db, event_scan_mask(scan_columns, NCOL), INT64_MIN, INT64_MAX, err, errlen);
    if (!scan) {
        addr_map_free(&whole);
        return -1;
    }
    const int64_t *col[EVENT_STORE_NCOLS], *v[NCOL];
    long n;
    while ((n = event_scan_next(scan, col)) > 0) {
        event_scan_pick(col, scan_columns, NCOL, v);
        for (long r = 0; r < n; r++) {
            if (v[DEVICE][r] != device || v[ADDR][r] == EVENT_STORE_NULL ||
                !is_block_alloc(v, r, &whole))
                continue;
            uint64_t a = (uint64_t)v[ADDR][r], size = (uint64_t)event_value_or(v[SIZE][r], 0);
            if (a <= addr && addr - a < size) {
                if (out->blocks_total < VIEW_SEARCH_MAX_BLOCKS)
                    ids[out->blocks_total] = v[ID][r];
                out->blocks_total++;
            }
        }
    }
    int rc = 0;
    if (n < 0) {
        snprintf(err, errlen, "search: %s", event_scan_error(scan));
        rc = -1;
    }
    event_scan_close(scan);
    addr_map_free(&whole);
    return rc;
}

int view_search_addr_read(sqlite3 *db, int device, uint64_t addr, view_search_addr *out, char *err,
                          size_t errlen) {
    assert(db && out);
    memset(out, 0, sizeof *out);
    out->addr = addr;
    int64_t ids[VIEW_SEARCH_MAX_BLOCKS];
    if (address_segments(db, device, addr, out, err, errlen) != 0 ||
        address_blocks(db, device, addr, ids, out, err, errlen) != 0)
        return -1;
    size_t n =
        out->blocks_total < VIEW_SEARCH_MAX_BLOCKS ? out->blocks_total : VIEW_SEARCH_MAX_BLOCKS;
    if (n && !(out->blocks = calloc(n, sizeof *out->blocks))) {
        snprintf(err, errlen, "search: out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int rc = block_detail_read(db, ids[i], &out->blocks[out->nblocks], err, errlen);
        if (rc < 0) {
            view_search_addr_free(out);
            return -1;
        }
        if (rc == 0)
            out->nblocks++;
    }
    return 0;
}

void view_search_addr_free(view_search_addr *s) {
    free(s->blocks);
    s->blocks = NULL;
    s->nblocks = 0;
}
