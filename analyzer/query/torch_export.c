/* torch_export.c — see torch_export.h. */
#include "torch_export.h"

#include "db_query.h"
#include "event_scan.h"
#include "gmt_grow.h"
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int torch_export_device_count(sqlite3 *db) {
    long long n = db_query_int(db, "SELECT max(device) + 1 FROM devices", 0);
    return n > 0 && n <= GMT_MAX_DEVICES ? (int)n : 0;
}

int torch_export_timed(sqlite3 *db) {
    return db_query_int(db, "SELECT value FROM meta WHERE key = 'timestamps'", 1) != 0;
}

int64_t torch_export_last_event(sqlite3 *db) {
    return db_query_int(db, "SELECT max(event_id) FROM event_rows", 0);
}

/* A device's segments rows: made by event `id`, ended by `free_id` (0: live at the end). */
typedef struct seg_row {
    int64_t id, free_id;
    int whole_block;
} seg_row;

typedef struct seg_rows {
    seg_row *by_id; /* by id */
    int64_t *frees; /* the free ids, sorted */
    size_t n, nfrees;
} seg_rows;

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int load_segments(sqlite3 *db, int device, seg_rows *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    sqlite3_stmt *st = db_statement(db, "SELECT segment_id, coalesce(free_event_id, 0), "
                                        "whole_block FROM segments WHERE device = ?1 AND kind = "
                                        "'device' ORDER BY segment_id");
    if (!st) {
        snprintf(err, errlen, "cannot read the segments: %s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int(st, 1, device);
    size_t cap = 0, fcap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (gmt_grow((void **)&r->by_id, &cap, r->n, sizeof *r->by_id) != 0 ||
            gmt_grow((void **)&r->frees, &fcap, r->nfrees, sizeof *r->frees) != 0) {
            sqlite3_finalize(st);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        seg_row *s = &r->by_id[r->n++];
        s->id = sqlite3_column_int64(st, 0);
        s->free_id = sqlite3_column_int64(st, 1);
        s->whole_block = sqlite3_column_int(st, 2);
        if (s->free_id > 0)
            r->frees[r->nfrees++] = s->free_id;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "cannot read the segments: %s", sqlite3_errmsg(db));
        return -1;
    }
    if (r->nfrees)
        qsort(r->frees, r->nfrees, sizeof *r->frees, cmp_i64);
    return 0;
}

/* The row made by event id, or NULL. */
static const seg_row *seg_made_by(const seg_rows *r, int64_t id) {
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->by_id[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n && r->by_id[lo].id == id ? &r->by_id[lo] : NULL;
}

static int seg_ended_by(const seg_rows *r, int64_t id) {
    return r->nfrees && bsearch(&id, r->frees, r->nfrees, sizeof *r->frees, cmp_i64) != NULL;
}

/* The row a free ended (its alloc_event_id names it), or NULL. */
static const seg_row *seg_of_free(const seg_rows *r, int64_t alloc_id, int64_t free_id) {
    const seg_row *s = seg_made_by(r, alloc_id);
    return s && s->free_id == free_id ? s : NULL;
}

static uint64_t device_free_at(sqlite3 *db, int device, int64_t ts_ns) {
    int64_t v = db_query_i64(db,
                             "SELECT value FROM counters WHERE device = ?1 AND kind = "
                             "'driver_free' AND ts_ns <= ?2 ORDER BY ts_ns DESC LIMIT 1",
                             device, ts_ns, 0);
    return v > 0 ? (uint64_t)v : 0;
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
    C_N
};

int torch_export_events(sqlite3 *db, int device, torch_event_fn fn, void *ctx, char *err,
                        size_t errlen) {
    static const int want[C_N] = {
        EVENT_COL_event_id,       EVENT_COL_ts_ns,  EVENT_COL_device,   EVENT_COL_op,
        EVENT_COL_level,          EVENT_COL_kind,   EVENT_COL_addr,     EVENT_COL_size,
        EVENT_COL_requested_size, EVENT_COL_stream, EVENT_COL_stack_id, EVENT_COL_segment_id,
        EVENT_COL_alloc_event_id};
    seg_rows segs;
    if (load_segments(db, device, &segs, err, errlen) != 0)
        return -1;
    int64_t last = torch_export_last_event(db);
    event_scan *s =
        last >= 1 ? event_scan_open(db, event_scan_mask(want, C_N), 1, last, err, errlen) : NULL;
    int rc = last >= 1 && !s ? -1 : 0;
    long n;
    const int64_t *cols[EVENT_STORE_NCOLS], *v[C_N];
    while (rc == 0 && s && (n = event_scan_next(s, cols)) != 0) {
        if (n < 0) {
            snprintf(err, errlen, "%s", event_scan_error(s));
            rc = -1;
            break;
        }
        event_scan_pick(cols, want, C_N, v);
        for (long i = 0; i < n && rc == 0; i++) {
            if (v[C_DEV][i] != device || event_value_or(v[C_KIND][i], -1) != TRACE_KIND_DEVICE)
                continue;
            int64_t id = v[C_ID][i], op = v[C_OP][i];
            int block = event_value_or(v[C_LEVEL][i], -1) == TRACE_LEVEL_BLOCK;
            int64_t req = v[C_REQ][i];
            torch_event e = {
                .addr = (uint64_t)event_value_or(v[C_ADDR][i], 0),
                .size = (uint64_t)event_value_or(v[C_SIZE][i], 0),
                .stream = (uint64_t)event_value_or(v[C_STREAM][i], 0),
                .time_us = event_value_or(v[C_TS][i], 0) / 1000,
                .stack_id = event_value_or(v[C_STACK][i], 0),
                .event_id = id,
                .block_id = TORCH_NO_BLOCK,
            };
            if (block && req != EVENT_STORE_NULL && req >= 0)
                e.size = (uint64_t)req;
            const seg_row *sr = NULL;
            const char *then = NULL; /* a whole block's alloc after its segment's */
            int64_t alloc_id = event_value_or(v[C_ALLOC][i], 0);
            if (op == TRACE_OP_ALLOC && block) {
                e.action = "alloc";
                e.block_id = id;
            } else if (op == TRACE_OP_FREE_REQUESTED && block) {
                e.action = "free_requested";
                e.block_id = alloc_id;
            } else if (op == TRACE_OP_FREE && block) {
                e.action = "free_completed";
                e.block_id = alloc_id;
            } else if (op == TRACE_OP_OOM) {
                e.action = "oom";
                e.addr = 0;
                e.device_free = device_free_at(db, device, event_value_or(v[C_TS][i], 0));
            } else if ((op == TRACE_OP_ALLOC || op == TRACE_OP_MAP) && !block &&
                       (sr = seg_made_by(&segs, id)) != NULL) {
                e.action = op == TRACE_OP_MAP ? "segment_map" : "segment_alloc";
                if (sr->whole_block && op == TRACE_OP_ALLOC)
                    then = "alloc";
            } else if ((op == TRACE_OP_FREE || op == TRACE_OP_UNMAP) && !block &&
                       seg_ended_by(&segs, id)) {
                e.action = op == TRACE_OP_UNMAP ? "segment_unmap" : "segment_free";
                sr = seg_of_free(&segs, alloc_id, id);
                if (sr && sr->whole_block && op == TRACE_OP_FREE) {
                    torch_event b = e;
                    b.action = "free_completed";
                    b.block_id = alloc_id;
                    if (fn(ctx, &b) != 0)
                        rc = -2;
                }
            } else
                continue;
            if (rc == 0 && fn(ctx, &e) != 0)
                rc = -2;
            if (rc == 0 && then) {
                e.action = then;
                e.block_id = id;
                if (fn(ctx, &e) != 0)
                    rc = -2;
            }
        }
    }
    if (s)
        event_scan_close(s);
    free(segs.by_id);
    free(segs.frees);
    return rc == 0 ? 0 : -1;
}

/* ---- the allocator settings: meta's JSON text as a tree ------------------------------------ */

typedef struct jp {
    const char *p;
    int depth, oom, bad;
} jp;

#define JSON_MAX_DEPTH 16

static void ws(jp *j) {
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
        j->p++;
}

static void put_utf8(char *out, size_t *n, uint32_t c) {
    if (c < 0x80)
        out[(*n)++] = (char)c;
    else if (c < 0x800) {
        out[(*n)++] = (char)(0xc0 | (c >> 6));
        out[(*n)++] = (char)(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        out[(*n)++] = (char)(0xe0 | (c >> 12));
        out[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[(*n)++] = (char)(0x80 | (c & 0x3f));
    } else {
        out[(*n)++] = (char)(0xf0 | (c >> 18));
        out[(*n)++] = (char)(0x80 | ((c >> 12) & 0x3f));
        out[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[(*n)++] = (char)(0x80 | (c & 0x3f));
    }
}

static int hex4(const char *p, uint32_t *v) {
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        int d = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : -1;
        if (d < 0)
            return -1;
        *v = *v * 16 + (uint32_t)d;
    }
    return 0;
}

/* A JSON string at j->p (its opening quote), malloc'd; NULL on an error (j->bad or j->oom). */
static char *json_str(jp *j) {
    const char *p = j->p + 1, *end = p;
    while (*end && *end != '"')
        end += end[0] == '\\' && end[1] ? 2 : 1;
    if (*end != '"') {
        j->bad = 1;
        return NULL;
    }
    char *out = malloc((size_t)(end - p) + 1); /* an escape never writes more than it reads */
    if (!out) {
        j->oom = 1;
        return NULL;
    }
    size_t n = 0;
    while (p < end) {
        if (*p != '\\') {
            out[n++] = *p++;
            continue;
        }
        char e = p[1];
        p += 2;
        uint32_t c, lo;
        switch (e) {
        case 'b':
            out[n++] = '\b';
            break;
        case 'f':
            out[n++] = '\f';
            break;
        case 'n':
            out[n++] = '\n';
            break;
        case 'r':
            out[n++] = '\r';
            break;
        case 't':
            out[n++] = '\t';
            break;
        case 'u':
            if (end - p < 4 || hex4(p, &c) != 0) {
                j->bad = 1;
                free(out);
                return NULL;
            }
            p += 4;
            if (c >= 0xd800 && c < 0xdc00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
                hex4(p + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
                c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            } else if (c >= 0xd800 && c < 0xe000)
                c = 0xfffd; /* a lone surrogate */
            put_utf8(out, &n, c);
            break;
        default:
            out[n++] = e;
            break; /* \" \\ \/ */
        }
    }
    out[n] = 0;
    j->p = end + 1;
    return out;
}

static void json_value(jp *j, torch_value *v);

/* The items of a list or dict (dict: keys too), after its opening bracket. */
static void json_items(jp *j, torch_value *v, int dict) {
    char close = dict ? '}' : ']';
    size_t cap = 0, kcap = 0;
    ws(j);
    if (*j->p == close) {
        j->p++;
        return;
    }
    for (;;) {
        if (gmt_grow((void **)&v->items, &cap, v->n, sizeof *v->items) != 0 ||
            (dict && gmt_grow((void **)&v->keys, &kcap, v->n, sizeof *v->keys) != 0)) {
            j->oom = 1;
            return;
        }
        ws(j);
        if (dict) {
            if (*j->p != '"') {
                j->bad = 1;
                return;
            }
            if (!(v->keys[v->n] = json_str(j)))
                return;
            ws(j);
            if (*j->p++ != ':') {
                j->bad = 1;
                v->n++;
                return;
            }
        }
        json_value(j, &v->items[v->n++]);
        if (j->bad || j->oom)
            return;
        ws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p++ != close)
            j->bad = 1;
        return;
    }
}

static void json_value(jp *j, torch_value *v) {
    memset(v, 0, sizeof *v);
    ws(j);
    const char *p = j->p;
    if (*p == '{' || *p == '[') {
        if (++j->depth > JSON_MAX_DEPTH) {
            j->bad = 1;
            return;
        }
        v->type = *p == '{' ? TORCH_VALUE_DICT : TORCH_VALUE_LIST;
        j->p++;
        json_items(j, v, *p == '{');
        j->depth--;
    } else if (*p == '"') {
        v->type = TORCH_VALUE_STR;
        v->str = json_str(j);
    } else if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
        v->type = TORCH_VALUE_BOOL;
        v->i = *p == 't';
        j->p += *p == 't' ? 4 : 5;
    } else if (!strncmp(p, "null", 4)) {
        j->p += 4;
    } else {
        char *end;
        size_t len = strspn(p, "+-0123456789.eE");
        if (!len) {
            j->bad = 1;
            return;
        }
        if (strcspn(p, ".eE") < len) {
            v->type = TORCH_VALUE_FLOAT;
            v->f = strtod(p, &end);
        } else {
            v->type = TORCH_VALUE_INT;
            v->i = strtoll(p, &end, 10);
        }
        if (end != p + len)
            j->bad = 1;
        j->p = end;
    }
}

void torch_value_free(torch_value *v) {
    for (size_t i = 0; i < v->n; i++) {
        torch_value_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    memset(v, 0, sizeof *v);
}

int torch_export_settings(sqlite3 *db, torch_value *out) {
    char buf[8192];
    db_meta_text(db, "allocator_settings", buf, sizeof buf);
    jp j = {.p = buf};
    json_value(&j, out);
    ws(&j);
    int oom = j.oom;
    if (j.oom || j.bad || *j.p || out->type != TORCH_VALUE_DICT) {
        torch_value_free(out);
        out->type = TORCH_VALUE_DICT; /* text that is not one object: no settings */
    }
    return oom ? -1 : 0;
}
