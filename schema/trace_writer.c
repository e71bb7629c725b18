/* trace_writer.c — the streaming trace writer.
 *
 * Records are encoded into one in-memory chunk; when the chunk reaches
 * `chunk_bytes` (or on an explicit flush) it is compressed as one
 * independent zstd frame and written out. So memory stays bounded (one
 * chunk, one compression buffer, the intern tables), records never straddle
 * frames, and a process killed at any moment leaves complete frames behind.
 *
 * Delta state (previous timestamp, previous address, event context) is
 * reset at the start of every chunk, which is what makes frames
 * independently decodable. See TRACE_FORMAT.md for the byte layout.
 *
 * In sink mode (trace_writer_open_sink) the interning is the same and every
 * record goes to the sink instead, shaped as the reader yields it. */
#include "trace_format.h"
#include "trace_intern.h"
#include "trace_varint.h"
#include "trace_wire.h"

#include "gmt_assert.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* The largest record: PROCESS with four strings at the cap, or a SYMBOL
 * with a full inline chain. The chunk keeps this much room past its target. */
#define RECORD_MAX (4 * (TRACE_WIRE_MAX_STRING + 10) + 256)
_Static_assert((4 * 10 + 3 + TRACE_END_MAX_CALL_NAME) * TRACE_END_MAX_CALLS + 64 <= RECORD_MAX,
               "an END record with every counted call fits in that room");

/* Context fields of a memory event; repeated ones are not written again. */
typedef struct event_context {
    uint64_t stream, pool;
    uint32_t device, tid;
    uint8_t kind, source;
} event_context;

struct trace_writer {
    int fd;
    ZSTD_CCtx *cctx;
    uint8_t *chunk; /* uncompressed records of the current frame */
    size_t chunk_len, chunk_target, chunk_cap;
    uint8_t *times; /* the frame's time column: one svarint per timestamped record */
    size_t times_len;
    int chunk_open;
    uint8_t *zbuf; /* compressed frame */
    size_t zbuf_cap;

    /* delta state, reset per chunk */
    uint64_t prev_ts, prev_addr;
    uint64_t last_ts; /* the last timestamp written, any chunk: END's when the caller has none */
    event_context ctx;

    uint64_t chunks, events, bytes_written;
    uint64_t chunk_events_before;
    int header_written;
    int appending; /* continues an existing trace: no END record on close */

    key_table frames, stacks;
    string_table strings;
    uint32_t next_string, next_frame, next_stack;

    int failed;
    char error[256];

    /* sink mode: records go to sink, their text NUL-terminated in `text` */
    trace_record_sink sink;
    void *sink_ctx;
    char *text;
    size_t text_len;
};

/* Text in sink mode: the most one record holds (a PROCESS's four strings at the cap). */
#define SINK_TEXT (4 * ((size_t)TRACE_WIRE_MAX_STRING + 1))
_Static_assert((TRACE_END_MAX_CALL_NAME + 1) * TRACE_END_MAX_CALLS <= SINK_TEXT,
               "an END record's names fit in the sink's text");

static int fail(trace_writer *w, const char *fmt, ...) {
    if (!w->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->error, sizeof w->error, fmt, ap);
        va_end(ap);
        w->failed = 1;
    }
    return -1;
}

static void set_err(char *err, size_t errlen, const char *msg) {
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
}

/* ---- sink mode ------------------------------------------------------------ */

trace_writer *trace_writer_open_sink(trace_record_sink sink, void *ctx, char *err, size_t errlen) {
    trace_writer *w = calloc(1, sizeof *w);
    char *text = malloc(SINK_TEXT);
    if (!w || !text || !sink) {
        set_err(err, errlen, sink ? "out of memory" : "no sink");
        free(w);
        free(text);
        return NULL;
    }
    w->fd = -1;
    w->sink = sink;
    w->sink_ctx = ctx;
    w->text = text;
    w->next_string = w->next_frame = w->next_stack = 1;
    return w;
}

/* A record's text as the reader gives it: cut at the cap, NUL-terminated, never NULL. */
static trace_bytes sink_text(trace_writer *w, const char *s, size_t len) {
    if (!s)
        len = 0;
    if (len > TRACE_WIRE_MAX_STRING)
        len = TRACE_WIRE_MAX_STRING;
    /* room: at most SINK_TEXT per record, whose text starts afresh (see deliver) */
    if (GMT_NEVER(w->text_len + len + 1 > SINK_TEXT))
        len = w->text_len < SINK_TEXT ? SINK_TEXT - w->text_len - 1 : 0;
    char *dst = w->text + w->text_len;
    if (len)
        memcpy(dst, s, len);
    dst[len] = 0;
    w->text_len += len + 1;
    return (trace_bytes){dst, (uint32_t)len};
}

static trace_bytes sink_bytes(trace_writer *w, trace_bytes b) { return sink_text(w, b.ptr, b.len); }

static int deliver(trace_writer *w, const trace_record *rec) {
    w->text_len = 0; /* the next record's text starts afresh */
    if (w->failed)
        return -1;
    if (w->sink(w->sink_ctx, rec) != 0)
        return fail(w, "its reader stopped");
    return 0;
}

/* ---- file mode -------------------------------------------------------------- */

trace_writer *trace_writer_open_fd(int fd, const trace_writer_options *opt, char *err,
                                   size_t errlen) {
    trace_writer *w = calloc(1, sizeof *w);
    if (!w) {
        set_err(err, errlen, "out of memory");
        close(fd);
        return NULL;
    }
    w->fd = fd;
    int level = opt && opt->zstd_level ? opt->zstd_level : 1;
    w->chunk_target = opt && opt->chunk_bytes ? opt->chunk_bytes : 256 * 1024;
    if (w->chunk_target < 1024)
        w->chunk_target = 1024;
    w->chunk_cap = w->chunk_target + RECORD_MAX;
    w->chunk = malloc(w->chunk_cap);
    w->times = malloc(w->chunk_cap);
    w->zbuf_cap = ZSTD_compressBound(2 * w->chunk_cap + 64);
    w->zbuf = malloc(w->zbuf_cap);
    w->cctx = ZSTD_createCCtx();
    if (!w->chunk || !w->times || !w->zbuf || !w->cctx) {
        set_err(err, errlen, "out of memory");
        trace_writer_close(w, NULL, NULL, 0);
        return NULL;
    }
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
    w->next_string = w->next_frame = w->next_stack = 1;
    return w;
}

trace_writer *trace_writer_open_append(int fd, const trace_writer_options *opt,
                                       const trace_append_state *st, char *err, size_t errlen) {
    trace_writer *w = trace_writer_open_fd(fd, opt, err, errlen);
    if (!w)
        return NULL;
    w->appending = 1;
    w->header_written = 1;
    w->chunks = st->frames;
    w->events = st->events;
    w->next_string = st->next_string_id ? st->next_string_id : 1;
    w->next_frame = st->next_frame_id ? st->next_frame_id : 1;
    w->next_stack = st->next_stack_id ? st->next_stack_id : 1;
    return w;
}

trace_writer *trace_writer_open(const char *path, const trace_writer_options *opt, char *err,
                                size_t errlen) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (err && errlen)
            snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return NULL;
    }
    return trace_writer_open_fd(fd, opt, err, errlen);
}

static int write_all(trace_writer *w, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return fail(w, "writing trace: %s", strerror(errno));
        }
        p += k;
        n -= (size_t)k;
        w->bytes_written += (uint64_t)k;
    }
    return 0;
}

/* A frame's content is: [file header, first frame only] CHUNK record, the
 * time column, the records. The CHUNK record carries the column's length,
 * known only now, so the three parts are fed to zstd as one frame here. */
int trace_writer_flush(trace_writer *w) {
    if (w->failed)
        return -1;
    if (!w->chunk_open)
        return 0;
    uint8_t prefix[64], *p = prefix;
    if (!w->header_written) {
        memcpy(p, TRACE_WIRE_MAGIC, TRACE_WIRE_MAGIC_LEN);
        p = varint_put(p + TRACE_WIRE_MAGIC_LEN, TRACE_FORMAT_VERSION);
        p = varint_put(p, 0); /* flags: none defined */
        w->header_written = 1;
    }
    *p++ = TRACE_WIRE_TAG_CHUNK;
    p = varint_put(p, w->chunks);
    p = varint_put(p, w->chunk_events_before);
    p = varint_put(p, w->times_len);
    const struct {
        const void *ptr;
        size_t len;
    } parts[3] = {
        {prefix, (size_t)(p - prefix)}, {w->times, w->times_len}, {w->chunk, w->chunk_len}};
    ZSTD_CCtx_reset(w->cctx, ZSTD_reset_session_only);
    ZSTD_CCtx_setPledgedSrcSize(w->cctx, parts[0].len + parts[1].len + parts[2].len);
    ZSTD_outBuffer out = {w->zbuf, w->zbuf_cap, 0};
    for (int i = 0; i < 3; i++) {
        ZSTD_inBuffer in = {parts[i].ptr, parts[i].len, 0};
        ZSTD_EndDirective mode = i == 2 ? ZSTD_e_end : ZSTD_e_continue;
        size_t left;
        do {
            left = ZSTD_compressStream2(w->cctx, &out, &in, mode);
            if (ZSTD_isError(left))
                return fail(w, "compressing trace: %s", ZSTD_getErrorName(left));
            /* zbuf is ZSTD_compressBound of more than a frame's content: never full */
            if (GMT_NEVER(out.pos == out.size && (mode == ZSTD_e_end ? left : in.size - in.pos)))
                return fail(w, "compressing trace: a frame outgrew its buffer");
        } while (mode == ZSTD_e_end ? left != 0 : in.pos < in.size);
    }
    w->chunk_len = w->times_len = 0;
    w->chunk_open = 0;
    w->chunks++;
    return write_all(w, w->zbuf, out.pos);
}

/* Returns the write position for one record, opening a frame (with its
 * delta state reset) when none is open; NULL once the writer has failed. */
static uint8_t *record_begin(trace_writer *w) {
    if (w->failed)
        return NULL;
    if (!w->chunk_open) {
        w->chunk_open = 1;
        w->chunk_events_before = w->events;
        w->prev_ts = w->prev_addr = 0;
        memset(&w->ctx, 0, sizeof w->ctx);
    }
    /* a frame is flushed once it reaches its target (record_end), and the chunk and the time
     * column keep RECORD_MAX past it: room for any one record */
    if (GMT_NEVER(w->chunk_len + w->times_len >= w->chunk_target)) {
        fail(w, "writing trace: a record would not fit its frame");
        return NULL;
    }
    return w->chunk + w->chunk_len;
}

/* Commits a record that ends at p; closes the frame once it is full. */
static int record_end(trace_writer *w, uint8_t *p) {
    w->chunk_len = (size_t)(p - w->chunk);
    if (w->chunk_len + w->times_len >= w->chunk_target)
        return trace_writer_flush(w);
    return 0;
}

/* Timestamps go to the time column, not the record: see TRACE_FORMAT.md. */
static void put_ts(trace_writer *w, uint64_t ts) {
    w->last_ts = ts;
    uint8_t *t = varint_put(w->times + w->times_len, zigzag_encode((int64_t)(ts - w->prev_ts)));
    w->times_len = (size_t)(t - w->times);
    w->prev_ts = ts;
}

static uint8_t *put_bytes(uint8_t *p, const char *s, size_t len) {
    if (!s)
        len = 0;
    if (len > TRACE_WIRE_MAX_STRING)
        len = TRACE_WIRE_MAX_STRING;
    p = varint_put(p, len);
    if (len)
        memcpy(p, s, len);
    return p + len;
}

static uint8_t *put_tb(uint8_t *p, trace_bytes b) { return put_bytes(p, b.ptr, b.len); }

int trace_writer_event(trace_writer *w, const trace_event *ev) {
    if (w->sink) { /* op and level as the tag byte carries them */
        trace_record rec = {.kind = TRACE_REC_EVENT, .u.event = *ev};
        rec.u.event.op = ev->op & TRACE_WIRE_OP_MASK;
        rec.u.event.level = ev->level ? TRACE_LEVEL_BLOCK : TRACE_LEVEL_SEGMENT;
        if (w->failed)
            return -1;
        w->last_ts = ev->ts_ns;
        w->events++;
        return deliver(w, &rec);
    }
    uint8_t *p = record_begin(w);
    if (!p)
        return -1;
    uint8_t *tag = p++;
    unsigned bits = TRACE_WIRE_TAG_EVENT | (ev->op & TRACE_WIRE_OP_MASK) |
                    (ev->level ? TRACE_WIRE_LEVEL_BIT : 0);
    if (ev->device != w->ctx.device || ev->tid != w->ctx.tid || ev->stream != w->ctx.stream ||
        ev->pool != w->ctx.pool || ev->kind != w->ctx.kind || ev->source != w->ctx.source) {
        bits |= TRACE_WIRE_CTX_BIT;
        p = varint_put(p, ev->device);
        p = varint_put(p, ev->tid);
        p = varint_put(p, ev->stream);
        p = varint_put(p, ev->pool);
        *p++ = ev->kind;
        *p++ = ev->source;
        w->ctx = (event_context){ev->stream, ev->pool, ev->device, ev->tid, ev->kind, ev->source};
    }
    put_ts(w, ev->ts_ns);
    p = varint_put(p, zigzag_encode((int64_t)(ev->addr - w->prev_addr)));
    w->prev_addr = ev->addr;
    p = varint_put(p, ev->size);
    if (ev->requested != ev->size) {
        bits |= TRACE_WIRE_REQ_BIT;
        p = varint_put(p, zigzag_encode((int64_t)(ev->size - ev->requested)));
    }
    p = varint_put(p, ev->stack_id);
    *tag = (uint8_t)bits;
    w->events++;
    return record_end(w, p);
}

int trace_writer_process(trace_writer *w, const trace_process *pr) {
    if (w->sink) {
        trace_record rec = {.kind = TRACE_REC_PROCESS, .u.process = *pr};
        rec.u.process.host = sink_bytes(w, pr->host);
        rec.u.process.cmdline = sink_bytes(w, pr->cmdline);
        rec.u.process.clock_source = sink_bytes(w, pr->clock_source);
        rec.u.process.producer = sink_bytes(w, pr->producer);
        return deliver(w, &rec);
    }
    uint8_t *p = record_begin(w);
    if (!p)
        return -1;
    *p++ = TRACE_REC_PROCESS;
    p = varint_put(p, pr->pid);
    p = varint_put(p, pr->ppid);
    p = varint_put(p, zigzag_encode(pr->rank));
    p = varint_put(p, pr->wall_anchor_ns);
    p = varint_put(p, pr->clock_anchor_ns);
    p = put_tb(p, pr->host);
    p = put_tb(p, pr->cmdline);
    p = put_tb(p, pr->clock_source);
    p = put_tb(p, pr->producer);
    return record_end(w, p);
}

int trace_writer_device(trace_writer *w, const trace_device *d) {
    if (w->sink) {
        trace_record rec = {.kind = TRACE_REC_DEVICE, .u.device = *d};
        rec.u.device.name = sink_bytes(w, d->name);
        return deliver(w, &rec);
    }
    uint8_t *p = record_begin(w);
    if (!p)
        return -1;
    *p++ = TRACE_REC_DEVICE;
    p = varint_put(p, d->device);
    p = varint_put(p, d->total_bytes);
    p = put_tb(p, d->name);
    return record_end(w, p);
}

int trace_writer_module(trace_writer *w, const trace_module *m) {
    if (w->sink) {
        trace_record rec = {.kind = TRACE_REC_MODULE, .u.module = *m};
        rec.u.module.path = sink_bytes(w, m->path);
        rec.u.module.build_id = sink_bytes(w, m->build_id);
        return deliver(w, &rec);
    }
    uint8_t *p = record_begin(w);
    if (!p)
        return -1;
    *p++ = TRACE_REC_MODULE;
    p = varint_put(p, m->module_id);
    p = varint_put(p, m->base);
    p = varint_put(p, m->size);
    p = put_tb(p, m->path);
    p = put_tb(p, m->build_id);
    return record_end(w, p);
}

int trace_writer_symbol(trace_writer *w, const trace_symbol *s) {
    if (s->count > TRACE_SYMBOL_MAX_INLINE)
        return fail(w, "symbol of frame %u has %u inline entries (max %d)", s->frame_id, s->count,
                    TRACE_SYMBOL_MAX_INLINE);
    if (w->sink) {
        trace_record rec = {.kind = TRACE_REC_SYMBOL, .u.symbol = *s};
        return deliver(w, &rec);
    }
    uint8_t *p = record_begin(w);
    if (!p)
        return -1;
    *p++ = TRACE_REC_SYMBOL;
    p = varint_put(p, s->frame_id);
    p = varint_put(p, s->count);
    for (uint32_t i = 0; i < s->count; i++) {
        p = varint_put(p, s->entries[i].function_id);
        p = varint_put(p, s->entries[i].file_id);
        p = varint_put(p, s->entries[i].line);
    }
    return record_end(w, p);
}

int trace_writer_marker(trace_writer *w, const trace_marker *m) {
    if (w->sink) {
        trace_record rec = {.kind = TRACE_REC_MARKER, .u.marker = *m};
        if (!w->failed)
            w->last_ts = m->ts_ns;
        return deliver(w, &rec);
    }
    uint8_t *p = record_begin(w);
    if (!p)
        return -1;
    *p++ = TRACE_REC_MARKER;
    *p++ = m->kind;
    put_ts(w, m->ts_ns);
    p = varint_put(p, m->tid);
    p = varint_put(p, m->range_id);
    p = varint_put(p, zigzag_encode(m->value));
    p = varint_put(p, m->domain_id);
    p = varint_put(p, m->name_id);
    return record_end(w, p);
}

int trace_writer_counter(trace_writer *w, const trace_counter *c) {
    if (w->sink) {
        trace_record rec = {.kind = TRACE_REC_COUNTER, .u.counter = *c};
        if (!w->failed)
            w->last_ts = c->ts_ns;
        return deliver(w, &rec);
    }
    uint8_t *p = record_begin(w);
    if (!p)
        return -1;
    *p++ = TRACE_REC_COUNTER;
    *p++ = c->kind;
    put_ts(w, c->ts_ns);
    p = varint_put(p, c->device);
    p = varint_put(p, c->key);
    p = varint_put(p, c->value);
    return record_end(w, p);
}

int trace_writer_thread(trace_writer *w, const trace_thread *t) {
    if (w->sink) {
        trace_record rec = {.kind = TRACE_REC_THREAD, .u.thread = *t};
        return deliver(w, &rec);
    }
    uint8_t *p = record_begin(w);
    if (!p)
        return -1;
    *p++ = TRACE_REC_THREAD;
    p = varint_put(p, t->tid);
    p = varint_put(p, t->name_id);
    return record_end(w, p);
}

uint32_t trace_writer_string(trace_writer *w, const char *s, size_t len) {
    if (w->failed)
        return 0;
    if (len > TRACE_WIRE_MAX_STRING)
        len = TRACE_WIRE_MAX_STRING; /* interned under its truncated value */
    int added;
    uint32_t id = string_table_intern(&w->strings, s ? s : "", s ? len : 0, w->next_string, &added);
    if (!id)
        return fail(w, "out of memory interning a string"), 0;
    if (!added)
        return id;
    w->next_string++;
    if (w->sink) {
        trace_record rec = {.kind = TRACE_REC_STRING,
                            .u.string = {id, sink_text(w, s ? s : "", s ? len : 0)}};
        return deliver(w, &rec) == 0 ? id : 0;
    }
    uint8_t *p = record_begin(w);
    if (!p)
        return 0;
    *p++ = TRACE_REC_STRING;
    p = varint_put(p, id);
    p = put_bytes(p, s, len);
    return record_end(w, p) == 0 ? id : 0;
}

uint32_t trace_writer_frame(trace_writer *w, const trace_frame *f) {
    if (w->failed)
        return 0;
    /* Native frames are identified by where they are, the others by what
     * they say; the kind sits in the top bits so the two never collide. */
    uint64_t a, b;
    if (f->kind == TRACE_FRAME_NATIVE) {
        a = f->ip;
        b = (uint64_t)f->module_id;
    } else {
        a = (uint64_t)f->function_id << 32 | f->file_id;
        b = (uint64_t)f->kind << 62 | f->line;
    }
    uint32_t id = key_table_intern(&w->frames, a, b, w->next_frame);
    if (!id)
        return fail(w, "out of memory interning a frame"), 0;
    if (id != w->next_frame)
        return id;
    w->next_frame++;
    if (w->sink) {
        trace_record rec = {.kind = TRACE_REC_FRAME, .u.frame = *f};
        rec.u.frame.frame_id = id;
        return deliver(w, &rec) == 0 ? id : 0;
    }
    uint8_t *p = record_begin(w);
    if (!p)
        return 0;
    *p++ = TRACE_REC_FRAME;
    p = varint_put(p, id);
    *p++ = f->kind;
    p = varint_put(p, f->module_id);
    p = varint_put(p, f->ip);
    p = varint_put(p, f->function_id);
    p = varint_put(p, f->file_id);
    p = varint_put(p, f->line);
    return record_end(w, p) == 0 ? id : 0;
}

uint32_t trace_writer_stack(trace_writer *w, uint32_t parent_id, uint32_t frame_id) {
    if (w->failed)
        return 0;
    uint32_t id = key_table_intern(&w->stacks, parent_id, frame_id, w->next_stack);
    if (!id)
        return fail(w, "out of memory interning a stack"), 0;
    if (id != w->next_stack)
        return id;
    w->next_stack++;
    if (w->sink) {
        trace_record rec = {.kind = TRACE_REC_STACK, .u.stack = {id, parent_id, frame_id}};
        return deliver(w, &rec) == 0 ? id : 0;
    }
    uint8_t *p = record_begin(w);
    if (!p)
        return 0;
    *p++ = TRACE_REC_STACK;
    p = varint_put(p, id);
    p = varint_put(p, parent_id);
    p = varint_put(p, frame_id);
    return record_end(w, p) == 0 ? id : 0;
}

/* The END record's counted calls are well formed: few enough, each call once. */
static int check_end_calls(trace_writer *w, const trace_end *end) {
    if (!end || !end->n_calls)
        return 0;
    if (end->n_calls > TRACE_END_MAX_CALLS || !end->calls)
        return fail(w, "END record: %u counted calls (at most %d)", end->n_calls,
                    TRACE_END_MAX_CALLS);
    for (uint32_t i = 0; i < end->n_calls; i++)
        for (uint32_t j = 0; j < i; j++)
            if (end->calls[i].call_id == end->calls[j].call_id)
                return fail(w, "END record: call %u counted twice", end->calls[i].call_id);
    return 0;
}

/* An entry's name as the reader gives it back: cut at TRACE_END_MAX_CALL_NAME. */
static trace_bytes call_name(trace_bytes name) {
    if (!name.ptr)
        name.len = 0;
    if (name.len > TRACE_END_MAX_CALL_NAME)
        name.len = TRACE_END_MAX_CALL_NAME;
    return name;
}

static void deliver_end(trace_writer *w, const trace_end *end) {
    trace_record rec = {.kind = TRACE_REC_END,
                        .u.end = end ? *end : (trace_end){.flags = TRACE_END_CLEAN}};
    if (!end)
        rec.u.end.ts_ns = w->last_ts;
    if (!rec.u.end.events)
        rec.u.end.events = w->events;
    rec.u.end.flags &= ~(uint32_t)TRACE_WIRE_END_CALLS; /* as the reader gives it */
    trace_call_count calls[TRACE_END_MAX_CALLS];
    for (uint32_t i = 0; i < rec.u.end.n_calls; i++) { /* check_end_calls held */
        calls[i] = rec.u.end.calls[i];
        calls[i].name = sink_bytes(w, call_name(calls[i].name));
    }
    rec.u.end.calls = rec.u.end.n_calls ? calls : NULL;
    deliver(w, &rec);
}

int trace_writer_close(trace_writer *w, const trace_end *end, char *err, size_t errlen) {
    if (!w)
        return 0;
    if (!w->appending)
        check_end_calls(w, end);
    if (w->sink && !w->failed)
        deliver_end(w, end);
    if (!w->failed && w->cctx && w->appending) {
        trace_writer_flush(w);
    } else if (!w->failed && w->cctx) {
        trace_end e = end ? *end : (trace_end){.flags = TRACE_END_CLEAN};
        if (!end)
            e.ts_ns = w->last_ts;
        if (!e.events)
            e.events = w->events;
        uint8_t *p = record_begin(w);
        if (p) {
            *p++ = TRACE_REC_END;
            put_ts(w, e.ts_ns);
            p = varint_put(p, e.events);
            p = varint_put(p, e.dropped);
            uint32_t flags = e.flags & ~(uint32_t)TRACE_WIRE_END_CALLS;
            p = varint_put(p, flags | (e.n_calls ? TRACE_WIRE_END_CALLS : 0));
            if (e.n_calls)
                p = varint_put(p, e.n_calls);
            for (uint32_t i = 0; i < e.n_calls; i++) {
                const trace_call_count *c = &e.calls[i];
                p = varint_put(p, c->call_id);
                p = put_tb(p, call_name(c->name));
                p = varint_put(p, c->calls);
                p = varint_put(p, c->bytes);
            }
            w->chunk_len = (size_t)(p - w->chunk);
            trace_writer_flush(w);
        }
    }
    if (w->fd >= 0 && close(w->fd) != 0)
        fail(w, "closing trace: %s", strerror(errno));
    int rc = w->failed ? -1 : 0;
    if (rc)
        set_err(err, errlen, w->error);
    ZSTD_freeCCtx(w->cctx);
    free(w->text);
    free(w->chunk);
    free(w->times);
    free(w->zbuf);
    key_table_free(&w->frames);
    key_table_free(&w->stacks);
    string_table_free(&w->strings);
    free(w);
    return rc;
}

const char *trace_writer_error(const trace_writer *w) { return w->failed ? w->error : ""; }

uint64_t trace_writer_events(const trace_writer *w) { return w->events; }

uint64_t trace_writer_bytes_written(const trace_writer *w) { return w->bytes_written; }
