/* trace_reader.c — the streaming trace reader.
 *
 * Reads a trace one zstd frame at a time (never the whole file), decodes the
 * frame's records and hands them out one by one. Damage is expected, not
 * exceptional: a recording killed mid-write ends inside a frame, a disk
 * error can flip bytes. So:
 *   - a frame is used only once it decoded completely and its checksum held;
 *     a file cut anywhere therefore yields exactly the events of its complete
 *     frames, a prefix, and the warning "truncated after N events";
 *   - a frame that fails to decode is reported with its byte offset, and the
 *     reader scans forward for the next zstd frame magic and goes on;
 *   - a frame that decodes but holds a malformed record (a writer bug, or a
 *     hostile file with a valid checksum) is reported and its rest skipped.
 * Every length and varint is bounds-checked against the frame's content. */
#include "trace_format.h"
#include "trace_varint.h"
#include "trace_wire.h"

#include "gmt_assert.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define INPUT_BUFFER (128u * 1024)

struct trace_reader {
    int fd;
    uint8_t *in; /* file bytes [in_off, in_off + in_len) */
    size_t in_pos, in_len;
    uint64_t in_off;
    int in_eof;

    ZSTD_DCtx *dctx;
    uint8_t *out; /* content of the current frame */
    size_t out_cap, out_len;
    const uint8_t *pos, *end;   /* record cursor inside out */
    const uint8_t *tpos, *tend; /* the frame's time column inside out */
    uint64_t frame_off;         /* file offset of the current frame */

    /* delta state, reset by every CHUNK record */
    uint64_t prev_ts, prev_addr, ctx_stream, ctx_pool;
    uint32_t ctx_device, ctx_tid;
    uint8_t ctx_kind, ctx_source;

    uint32_t version;
    int in_damage; /* inside a corrupt region: one warning per region */
    int finished;
    int follow;          /* trace_reader_follow: the end is where the file ends now */
    uint64_t resume_off; /* where the last decode_frame that found no frame stopped */

    char *scratch; /* NUL-terminated copies of the current record's strings */
    size_t scratch_len, scratch_cap;
    trace_symbol_entry symbol_entries[TRACE_SYMBOL_MAX_INLINE];
    trace_call_count end_calls[TRACE_END_MAX_CALLS]; /* the current END record's */

    trace_reader_stats stats;
    char *warnings[TRACE_READER_MAX_WARNINGS];
    uint8_t warning_kinds[TRACE_READER_MAX_WARNINGS]; /* db_warning */
    size_t warning_count;
    char error[256];
};

static void warn(trace_reader *r, db_warning kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn(trace_reader *r, db_warning kind, const char *fmt, ...) {
    if (r->warning_count < TRACE_READER_MAX_WARNINGS) {
        r->warning_kinds[r->warning_count] = (uint8_t)kind;
        char buf[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        r->warnings[r->warning_count] = strdup(buf);
        if (!r->warnings[r->warning_count])
            return;
    }
    r->warning_count++;
}

/* ---- input: a forward-reading window over the file, seekable ---------- */

static void input_seek(trace_reader *r, uint64_t off) {
    r->in_off = off;
    r->in_pos = r->in_len = 0;
    r->in_eof = 0;
}

/* Reads more of the file after what is buffered; returns bytes added, 0 at
 * the end of the file, -1 on an I/O error. */
static ssize_t input_refill(trace_reader *r) {
    if (r->in_pos > 0) {
        memmove(r->in, r->in + r->in_pos, r->in_len - r->in_pos);
        r->in_off += r->in_pos;
        r->in_len -= r->in_pos;
        r->in_pos = 0;
    }
    if (r->in_eof || r->in_len == INPUT_BUFFER)
        return 0;
    for (;;) {
        ssize_t n = pread(r->fd, r->in + r->in_len, INPUT_BUFFER - r->in_len,
                          (off_t)(r->in_off + r->in_len));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(r->error, sizeof r->error, "reading trace: %s", strerror(errno));
            return -1;
        }
        if (n == 0)
            r->in_eof = 1;
        r->in_len += (size_t)n;
        return n;
    }
}

/* Makes at least `need` bytes available if the file has them. */
static int input_ensure(trace_reader *r, size_t need) {
    while (r->in_len - r->in_pos < need) {
        ssize_t n = input_refill(r);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
    }
    return 0;
}

/* Positions the input at the next zstd frame magic at or after `from`.
 * Returns 1 when found, 0 at the end of the file, -1 on an I/O error. */
static int input_find_magic(trace_reader *r, uint64_t from) {
    input_seek(r, from);
    for (;;) {
        if (input_ensure(r, 4) < 0)
            return -1;
        size_t avail = r->in_len - r->in_pos;
        if (avail < 4) {
            r->in_pos = r->in_len;
            return 0;
        }
        const uint8_t *base = r->in + r->in_pos;
        for (size_t i = 0; i + 4 <= avail; i++) {
            if (base[i] == 0x28 && memcmp(base + i, TRACE_WIRE_ZSTD_MAGIC, 4) == 0) {
                r->in_pos += i;
                return 1;
            }
        }
        r->in_pos = r->in_len - 3; /* keep a possible magic split at the edge */
        if (r->in_eof)
            return (r->in_pos = r->in_len), 0;
        if (input_refill(r) < 0)
            return -1;
    }
}

/* ---- frames ---------------------------------------------------------- */

static void damage(trace_reader *r, uint64_t off, const char *why) {
    if (!r->in_damage) {
        r->stats.corrupt_frames++;
        warn(r, DB_WARNING_CORRUPT_FRAME,
             "corrupt data at byte offset %llu (%s); skipped to the next frame",
             (unsigned long long)off, why);
    }
    r->in_damage = 1;
}

/* Decodes the next complete frame into r->out. Returns 1, 0 at the end of
 * the data (clean or truncated), -1 on an I/O error. */
static int decode_frame(trace_reader *r) {
    for (;;) {
        if (input_ensure(r, 4) < 0)
            return -1;
        size_t avail = r->in_len - r->in_pos;
        uint64_t off = r->in_off + r->in_pos;
        r->resume_off = off;
        if (avail == 0)
            return 0;
        if (avail < 4 || memcmp(r->in + r->in_pos, TRACE_WIRE_ZSTD_MAGIC, 4) != 0) {
            if (avail < 4 && memcmp(r->in + r->in_pos, TRACE_WIRE_ZSTD_MAGIC, avail) == 0) {
                r->stats.truncated = 1;
                r->in_pos = r->in_len;
                return 0;
            }
            damage(r, off, "no zstd frame starts here");
            int found = input_find_magic(r, off + 1);
            if (found == 0) { /* damage to the end: a magic may still come after it */
                uint64_t end = r->in_off + r->in_pos;
                r->resume_off = end > off + 4 ? end - 3 : off + 1;
            }
            if (found <= 0)
                return found;
            continue;
        }
        ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
        r->out_len = 0;
        const char *bad = NULL;
        for (;;) {
            if (r->in_pos == r->in_len) {
                ssize_t n = input_refill(r);
                if (n < 0)
                    return -1;
                if (n == 0) { /* the file ends inside this frame */
                    r->stats.truncated = 1;
                    return 0;
                }
            }
            if (r->out_len == r->out_cap) {
                if (r->out_cap >= TRACE_WIRE_MAX_CHUNK) {
                    bad = "frame content over the 64 MiB limit";
                    break;
                }
                size_t cap = r->out_cap * 2;
                uint8_t *out = realloc(r->out, cap);
                if (!out) {
                    snprintf(r->error, sizeof r->error, "out of memory reading trace");
                    return -1;
                }
                r->out = out;
                r->out_cap = cap;
            }
            ZSTD_inBuffer ib = {r->in + r->in_pos, r->in_len - r->in_pos, 0};
            ZSTD_outBuffer ob = {r->out, r->out_cap, r->out_len};
            size_t ret = ZSTD_decompressStream(r->dctx, &ob, &ib);
            r->in_pos += ib.pos;
            r->out_len = ob.pos;
            if (ZSTD_isError(ret)) {
                bad = ZSTD_getErrorName(ret);
                break;
            }
            if (ret == 0)
                break;
        }
        if (bad) {
            damage(r, off, bad);
            int found = input_find_magic(r, off + 1);
            if (found <= 0)
                return found;
            continue;
        }
        r->in_damage = 0;
        r->frame_off = off;
        r->stats.frames++;
        r->pos = r->out;
        r->end = r->out + r->out_len;
        return 1;
    }
}

/* ---- records ---------------------------------------------------------- */

typedef struct cursor {
    const uint8_t *p, *end;
    int bad;
} cursor;

static uint64_t get_u64(cursor *c) {
    uint64_t v = 0;
    if (!c->bad && varint_get(&c->p, c->end, &v) != 0)
        c->bad = 1;
    return v;
}

static uint32_t get_u32(cursor *c) {
    uint64_t v = get_u64(c);
    if (v > UINT32_MAX)
        c->bad = 1;
    return (uint32_t)v;
}

static uint8_t get_byte(cursor *c) {
    if (c->bad || c->p >= c->end) {
        c->bad = 1;
        return 0;
    }
    return *c->p++;
}

static trace_bytes get_bytes(trace_reader *r, cursor *c) {
    trace_bytes b = {"", 0};
    uint64_t len = get_u64(c);
    if (c->bad || len > (uint64_t)(c->end - c->p) || len > TRACE_WIRE_MAX_STRING) {
        c->bad = 1;
        return b;
    }
    /* The scratch grows only between records, to the rest of the frame and then some (see
     * trace_reader_next), so earlier pointers into it stay valid: a string needs its length
     * and a NUL, no more than it and its length's varint take of the frame. */
    if (GMT_NEVER(r->scratch_len + len + 1 > r->scratch_cap)) {
        c->bad = 1;
        return b;
    }
    char *dst = r->scratch + r->scratch_len;
    memcpy(dst, c->p, len);
    dst[len] = 0;
    r->scratch_len += len + 1;
    c->p += len;
    b.ptr = dst;
    b.len = (uint32_t)len;
    return b;
}

/* Timestamps come from the frame's time column, in record order. */
static uint64_t get_ts(trace_reader *r, cursor *c) {
    uint64_t delta = 0;
    if (!c->bad && varint_get(&r->tpos, r->tend, &delta) != 0)
        c->bad = 1;
    r->prev_ts += (uint64_t)zigzag_decode(delta);
    return r->prev_ts;
}

static void parse_event(trace_reader *r, cursor *c, unsigned tag, trace_event *ev) {
    if (tag & TRACE_WIRE_CTX_BIT) {
        r->ctx_device = get_u32(c);
        r->ctx_tid = get_u32(c);
        r->ctx_stream = get_u64(c);
        r->ctx_pool = get_u64(c);
        r->ctx_kind = get_byte(c);
        r->ctx_source = get_byte(c);
    }
    ev->op = tag & TRACE_WIRE_OP_MASK;
    ev->level = (tag & TRACE_WIRE_LEVEL_BIT) ? TRACE_LEVEL_BLOCK : TRACE_LEVEL_SEGMENT;
    ev->device = r->ctx_device;
    ev->tid = r->ctx_tid;
    ev->stream = r->ctx_stream;
    ev->pool = r->ctx_pool;
    ev->kind = r->ctx_kind;
    ev->source = r->ctx_source;
    ev->ts_ns = get_ts(r, c);
    r->prev_addr += (uint64_t)zigzag_decode(get_u64(c));
    ev->addr = r->prev_addr;
    ev->size = get_u64(c);
    ev->requested = ev->size;
    if (tag & TRACE_WIRE_REQ_BIT)
        ev->requested = ev->size - (uint64_t)zigzag_decode(get_u64(c));
    ev->stack_id = get_u32(c);
    if (ev->op >= TRACE_OP_COUNT || ev->kind >= TRACE_KIND_COUNT ||
        ev->source >= TRACE_SOURCE_COUNT)
        c->bad = 1;
}

/* END: the counted calls follow its flags when they say so (version 2 on; a version 1 END
 * never does), so an END reads right even when the header that gave the version was lost. */
static void parse_end(trace_reader *r, cursor *c, trace_end *e) {
    e->ts_ns = get_ts(r, c);
    e->events = get_u64(c);
    e->dropped = get_u64(c);
    uint32_t flags = get_u32(c);
    e->flags = flags & ~(uint32_t)TRACE_WIRE_END_CALLS;
    e->n_calls = 0;
    e->calls = NULL;
    if (!(flags & TRACE_WIRE_END_CALLS))
        return;
    uint32_t n = get_u32(c);
    if (n > TRACE_END_MAX_CALLS) {
        c->bad = 1;
        return;
    }
    for (uint32_t i = 0; i < n && !c->bad; i++) {
        trace_call_count *k = &r->end_calls[i];
        k->call_id = get_u32(c);
        k->name = get_bytes(r, c);
        k->calls = get_u64(c);
        k->bytes = get_u64(c);
        if (k->name.len > TRACE_END_MAX_CALL_NAME)
            c->bad = 1;
        for (uint32_t j = 0; j < i; j++)
            if (r->end_calls[j].call_id == k->call_id)
                c->bad = 1; /* each call once */
    }
    e->n_calls = n;
    e->calls = n ? r->end_calls : NULL;
}

/* Decodes one record at c into rec. Returns 0, or -1 when it is malformed. */
static int parse_record(trace_reader *r, cursor *c, trace_record *rec) {
    unsigned tag = get_byte(c);
    if (tag & TRACE_WIRE_TAG_EVENT) {
        rec->kind = TRACE_REC_EVENT;
        parse_event(r, c, tag, &rec->u.event);
        return c->bad ? -1 : 0;
    }
    rec->kind = (trace_record_kind)tag;
    switch (tag) {
    case TRACE_REC_PROCESS: {
        trace_process *p = &rec->u.process;
        p->pid = get_u32(c);
        p->ppid = get_u32(c);
        p->rank = (int32_t)zigzag_decode(get_u64(c));
        p->wall_anchor_ns = get_u64(c);
        p->clock_anchor_ns = get_u64(c);
        p->host = get_bytes(r, c);
        p->cmdline = get_bytes(r, c);
        p->clock_source = get_bytes(r, c);
        p->producer = get_bytes(r, c);
        break;
    }
    case TRACE_REC_DEVICE:
        rec->u.device.device = get_u32(c);
        rec->u.device.total_bytes = get_u64(c);
        rec->u.device.name = get_bytes(r, c);
        break;
    case TRACE_REC_MODULE:
        rec->u.module.module_id = get_u32(c);
        rec->u.module.base = get_u64(c);
        rec->u.module.size = get_u64(c);
        rec->u.module.path = get_bytes(r, c);
        rec->u.module.build_id = get_bytes(r, c);
        break;
    case TRACE_REC_STRING:
        rec->u.string.string_id = get_u32(c);
        rec->u.string.text = get_bytes(r, c);
        break;
    case TRACE_REC_FRAME: {
        trace_frame *f = &rec->u.frame;
        f->frame_id = get_u32(c);
        f->kind = get_byte(c);
        f->module_id = get_u32(c);
        f->ip = get_u64(c);
        f->function_id = get_u32(c);
        f->file_id = get_u32(c);
        f->line = get_u32(c);
        if (f->kind >= TRACE_FRAME_COUNT)
            c->bad = 1;
        break;
    }
    case TRACE_REC_SYMBOL: {
        trace_symbol *s = &rec->u.symbol;
        s->frame_id = get_u32(c);
        s->count = get_u32(c);
        if (s->count > TRACE_SYMBOL_MAX_INLINE) {
            c->bad = 1;
            break;
        }
        for (uint32_t i = 0; i < s->count; i++) {
            r->symbol_entries[i].function_id = get_u32(c);
            r->symbol_entries[i].file_id = get_u32(c);
            r->symbol_entries[i].line = get_u32(c);
        }
        s->entries = r->symbol_entries;
        break;
    }
    case TRACE_REC_STACK:
        rec->u.stack.stack_id = get_u32(c);
        rec->u.stack.parent_id = get_u32(c);
        rec->u.stack.frame_id = get_u32(c);
        break;
    case TRACE_REC_MARKER: {
        trace_marker *m = &rec->u.marker;
        m->kind = get_byte(c);
        m->ts_ns = get_ts(r, c);
        m->tid = get_u32(c);
        m->range_id = get_u64(c);
        m->value = zigzag_decode(get_u64(c));
        m->domain_id = get_u32(c);
        m->name_id = get_u32(c);
        if (m->kind >= TRACE_MARK_COUNT)
            c->bad = 1;
        break;
    }
    case TRACE_REC_COUNTER: {
        trace_counter *k = &rec->u.counter;
        k->kind = get_byte(c);
        k->ts_ns = get_ts(r, c);
        k->device = get_u32(c);
        k->key = get_u64(c);
        k->value = get_u64(c);
        if (k->kind >= TRACE_COUNTER_COUNT)
            c->bad = 1;
        break;
    }
    case TRACE_REC_THREAD:
        rec->u.thread.tid = get_u32(c);
        rec->u.thread.name_id = get_u32(c);
        break;
    case TRACE_REC_END:
        parse_end(r, c, &rec->u.end);
        break;
    default:
        c->bad = 1;
    }
    return c->bad ? -1 : 0;
}

/* Reads the start of a frame's content: the file header (first frame) and
 * the CHUNK record and the time column; resets the delta state. Returns 0
 * or -1 (malformed). */
static int parse_chunk_header(trace_reader *r) {
    cursor c = {r->pos, r->end, 0};
    if ((size_t)(c.end - c.p) >= TRACE_WIRE_MAGIC_LEN &&
        memcmp(c.p, TRACE_WIRE_MAGIC, TRACE_WIRE_MAGIC_LEN) == 0) {
        c.p += TRACE_WIRE_MAGIC_LEN;
        uint32_t version = get_u32(&c);
        (void)get_u64(&c); /* flags */
        if (c.bad || version == 0 || version > TRACE_FORMAT_VERSION)
            return -1;
        r->version = version;
    }
    if (get_byte(&c) != TRACE_WIRE_TAG_CHUNK)
        return -1;
    (void)get_u64(&c); /* sequence number: order is the file's order */
    uint64_t events_before = get_u64(&c);
    uint64_t times_len = get_u64(&c);
    if (c.bad || times_len > (uint64_t)(c.end - c.p))
        return -1;
    r->tpos = c.p;
    r->tend = c.p + times_len;
    c.p += times_len;
    uint64_t seen = r->stats.events + r->stats.lost_events;
    if (events_before > seen)
        r->stats.lost_events += events_before - seen;
    r->prev_ts = r->prev_addr = r->ctx_stream = r->ctx_pool = 0;
    r->ctx_device = r->ctx_tid = 0;
    r->ctx_kind = r->ctx_source = 0;
    r->pos = c.p;
    return 0;
}

/* Starts reading a freshly decoded frame; a frame without a proper start is
 * reported and skipped whole (the next call decodes the next frame). */
static void begin_chunk(trace_reader *r) {
    if (parse_chunk_header(r) == 0)
        return;
    warn(r, DB_WARNING_CORRUPT_FRAME,
         "malformed frame at byte offset %llu: no chunk header; frame skipped",
         (unsigned long long)r->frame_off);
    r->pos = r->end;
    r->tpos = r->tend = NULL;
}

int trace_reader_next(trace_reader *r, trace_record *rec) {
    r->scratch_len = 0;
    for (;;) {
        if (r->finished)
            return 0;
        if (r->pos == r->end) {
            if (r->tpos != r->tend) {
                warn(r, DB_WARNING_CORRUPT_FRAME,
                     "malformed frame at byte offset %llu: time column longer than its "
                     "records",
                     (unsigned long long)r->frame_off);
                r->tpos = r->tend;
            }
            int rc = decode_frame(r);
            if (rc < 0)
                return -1;
            if (rc == 0 && r->follow) { /* a frame still being written: tried again next call */
                input_seek(r, r->resume_off);
                r->stats.truncated = 0;
                return 0;
            }
            if (rc == 0) {
                r->finished = 1;
                if (r->stats.truncated)
                    warn(r, DB_WARNING_TRUNCATED, "truncated after %llu events",
                         (unsigned long long)r->stats.events);
                return 0;
            }
            begin_chunk(r);
            if (r->pos == r->end)
                continue;
        }
        /* No record holds more strings than the frame has bytes: reserve that
         * much scratch once, so get_bytes never moves earlier strings. */
        size_t need = (size_t)(r->end - r->pos) + 8;
        if (need > r->scratch_cap) {
            char *s = realloc(r->scratch, need);
            if (!s) {
                snprintf(r->error, sizeof r->error, "out of memory reading trace");
                return -1;
            }
            r->scratch = s;
            r->scratch_cap = need;
        }
        cursor c = {r->pos, r->end, 0};
        if (parse_record(r, &c, rec) != 0) {
            warn(r, DB_WARNING_CORRUPT_FRAME,
                 "malformed record at byte %llu of the frame at byte offset %llu; rest of "
                 "the frame skipped",
                 (unsigned long long)(r->pos - r->out), (unsigned long long)r->frame_off);
            r->stats.corrupt_frames++;
            r->pos = r->end;
            r->tpos = r->tend;
            continue;
        }
        if (GMT_NEVER(c.p > r->end)) { /* every read is bounds-checked against the frame */
            r->pos = r->end;
            continue;
        }
        r->pos = c.p;
        r->stats.records++;
        if (rec->kind == TRACE_REC_EVENT)
            r->stats.events++;
        else if (rec->kind == TRACE_REC_END && (rec->u.end.flags & TRACE_END_CLEAN))
            r->stats.clean_end = 1;
        return 1;
    }
}

/* ---- open / close ------------------------------------------------------ */

static trace_reader *open_fail(trace_reader *r, char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    trace_reader_close(r);
    return NULL;
}

trace_reader *trace_reader_open(const char *path, char *err, size_t errlen) {
    trace_reader *r = calloc(1, sizeof *r);
    if (!r)
        return open_fail(NULL, err, errlen, "out of memory");
    r->fd = -1;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0)
        return open_fail(r, err, errlen, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(r->fd, &st) != 0)
        return open_fail(r, err, errlen, "cannot stat %s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return open_fail(r, err, errlen, "%s is a directory, not a trace", path);
    r->stats.file_bytes = (uint64_t)st.st_size;
    r->in = malloc(INPUT_BUFFER);
    r->out_cap = 64u << 10; /* grows to the largest frame */
    r->out = malloc(r->out_cap);
    r->dctx = ZSTD_createDCtx();
    if (!r->in || !r->out || !r->dctx)
        return open_fail(r, err, errlen, "out of memory");
    ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, 24);

    if (input_ensure(r, TRACE_WIRE_MAGIC_LEN) < 0)
        return open_fail(r, err, errlen, "%s", r->error);
    size_t avail = r->in_len;
    if (avail == 0)
        return open_fail(r, err, errlen, "%s is empty, not a trace", path);
    if (avail < 4 || memcmp(r->in, TRACE_WIRE_ZSTD_MAGIC, 4) != 0)
        return open_fail(r, err, errlen, "%s is not a gpumemtrace trace (not zstd data)", path);

    /* Look at the first frame now, so "not a trace" and "too new" are open
     * errors. A damaged or cut first frame is not: the rest may be good. */
    int rc = decode_frame(r);
    if (rc < 0)
        return open_fail(r, err, errlen, "%s", r->error);
    if (rc == 1 && r->stats.corrupt_frames == 0) {
        if (r->out_len < TRACE_WIRE_MAGIC_LEN ||
            memcmp(r->out, TRACE_WIRE_MAGIC, TRACE_WIRE_MAGIC_LEN) != 0)
            return open_fail(r, err, errlen,
                             "%s is not a gpumemtrace trace (zstd data without a trace header)",
                             path);
        cursor c = {r->out + TRACE_WIRE_MAGIC_LEN, r->end, 0};
        uint64_t version = get_u64(&c);
        if (c.bad || version == 0)
            return open_fail(r, err, errlen, "%s has a malformed trace header", path);
        if (version > TRACE_FORMAT_VERSION)
            return open_fail(r, err, errlen,
                             "%s is trace format version %llu; this build reads up to version "
                             "%d: upgrade gpumemtrace",
                             path, (unsigned long long)version, TRACE_FORMAT_VERSION);
        r->version = (uint32_t)version;
        begin_chunk(r);
    } else if (rc == 0) {
        r->finished = 1;
        if (r->stats.truncated)
            warn(r, DB_WARNING_TRUNCATED, "truncated after 0 events");
    } else {
        begin_chunk(r); /* the first good frame after a damaged start */
    }
    return r;
}

void trace_reader_close(trace_reader *r) {
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    ZSTD_freeDCtx(r->dctx);
    free(r->in);
    free(r->out);
    free(r->scratch);
    for (size_t i = 0; i < r->warning_count && i < TRACE_READER_MAX_WARNINGS; i++)
        free(r->warnings[i]);
    free(r);
}

void trace_reader_follow(trace_reader *r) {
    r->follow = 1;
    if (r->finished && r->stats.frames > 0) { /* opened at the end of its first frame */
        r->finished = 0;
        r->stats.truncated = 0;
        input_seek(r, r->resume_off);
    }
}

const trace_reader_stats *trace_reader_get_stats(const trace_reader *r) { return &r->stats; }

uint64_t trace_reader_position(const trace_reader *r) { return r->in_off + r->in_pos; }

uint32_t trace_reader_version(const trace_reader *r) { return r->version; }

size_t trace_reader_warning_count(const trace_reader *r) { return r->warning_count; }

const char *trace_reader_warning(const trace_reader *r, size_t i) {
    if (i >= r->warning_count || i >= TRACE_READER_MAX_WARNINGS)
        return NULL;
    return r->warnings[i] ? r->warnings[i] : "";
}

db_warning trace_reader_warning_kind(const trace_reader *r, size_t i) {
    if (i >= r->warning_count || i >= TRACE_READER_MAX_WARNINGS)
        return DB_WARNING_CORRUPT_FRAME;
    return (db_warning)r->warning_kinds[i];
}

const char *trace_reader_error(const trace_reader *r) { return r->error; }
