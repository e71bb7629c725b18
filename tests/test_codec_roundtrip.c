/* test_codec_roundtrip.c — every record kind (the END record's counted calls
 * too), and seeded random event streams, come back from the reader exactly
 * as they were written; a version 1 trace still reads; open errors (empty,
 * not a trace, newer version) are clear one-liners. */
#include "check.h"
#include "trace_format.h"
#include "trace_wire.h"

#include <stdint.h>
#include <unistd.h>
#include <zstd.h>

static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static char tmpdir[] = "/tmp/gmt-codec-XXXXXX";

static const char *tmp_path(const char *name) {
    static char buf[256];
    snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
    return buf;
}

static trace_bytes tb(const char *s) { return (trace_bytes){s, (uint32_t)strlen(s)}; }

static int bytes_eq(trace_bytes a, trace_bytes b) {
    return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0 && a.ptr[a.len] == 0;
}

/* Random events that look like a trace: monotone-ish time, clustered
 * addresses, repeated contexts, sizes with and without a requested size. */
static trace_event random_event(void) {
    static uint64_t ts = 1000000000ULL;
    trace_event ev = {0};
    ts += rnd() % 5000;
    if (rnd() % 50 == 0)
        ts -= rnd() % 3000; /* threads' buffers interleave: time may go back */
    ev.ts_ns = ts;
    ev.addr = 0x7f0000000000ULL + (rnd() % 4096) * 512;
    if (rnd() % 100 == 0)
        ev.addr = rnd(); /* anything at all must survive, too */
    ev.size = (rnd() % 8 == 0) ? rnd() : (rnd() % 100000) * 512;
    ev.requested = (rnd() % 3) ? ev.size - (ev.size ? rnd() % 512 % ev.size : 0) : ev.size;
    if (rnd() % 200 == 0)
        ev.requested = ev.size + 7; /* requested > size is odd, but must round trip */
    ev.stream = rnd() % 4 == 0 ? rnd() : rnd() % 3;
    ev.pool = rnd() % 10 == 0 ? rnd() % 5 : 0;
    ev.stack_id = (uint32_t)(rnd() % 20000);
    ev.tid = (uint32_t)(1000 + rnd() % 4);
    ev.device = (uint32_t)(rnd() % 3);
    ev.op = (uint8_t)(rnd() % TRACE_OP_COUNT);
    ev.level = (uint8_t)(rnd() % 2);
    ev.kind = (uint8_t)(rnd() % TRACE_KIND_COUNT);
    ev.source = (uint8_t)(rnd() % 7 == 0 ? rnd() % TRACE_SOURCE_COUNT : TRACE_SOURCE_TORCH);
    return ev;
}

static int event_eq(const trace_event *a, const trace_event *b) {
    return a->ts_ns == b->ts_ns && a->addr == b->addr && a->size == b->size &&
           a->requested == b->requested && a->stream == b->stream && a->pool == b->pool &&
           a->stack_id == b->stack_id && a->tid == b->tid && a->device == b->device &&
           a->op == b->op && a->level == b->level && a->kind == b->kind && a->source == b->source;
}

static void test_random_streams(void) {
    for (uint64_t seed = 1; seed <= 5; seed++) {
        rng_state = seed * 0x9E3779B97F4A7C15ULL;
        size_t n = 20000 + seed * 7919;
        trace_event *evs = malloc(n * sizeof *evs);
        for (size_t i = 0; i < n; i++)
            evs[i] = random_event();
        /* Small chunks force many frames, so the delta reset is exercised. */
        trace_writer_options opt = {.zstd_level = (int)(seed % 3) + 1,
                                    .chunk_bytes = seed % 2 ? 4096 : 0};
        char err[256];
        trace_writer *w = trace_writer_open(tmp_path("random.zst"), &opt, err, sizeof err);
        CHECK(w != NULL);
        for (size_t i = 0; i < n; i++)
            CHECK(trace_writer_event(w, &evs[i]) == 0);
        CHECK_EQ_U64(trace_writer_events(w), n);
        CHECK(trace_writer_close(w, NULL, err, sizeof err) == 0);

        trace_reader *r = trace_reader_open(tmp_path("random.zst"), err, sizeof err);
        CHECK(r != NULL);
        if (!r) {
            fprintf(stderr, "open: %s\n", err);
            free(evs);
            return;
        }
        trace_record rec;
        size_t got = 0, mismatches = 0, ends = 0;
        while (trace_reader_next(r, &rec) == 1) {
            if (rec.kind == TRACE_REC_EVENT) {
                if (got >= n || !event_eq(&rec.u.event, &evs[got]))
                    mismatches++;
                got++;
            } else if (rec.kind == TRACE_REC_END) {
                ends++;
                CHECK_EQ_U64(rec.u.end.events, n);
                CHECK(rec.u.end.flags & TRACE_END_CLEAN);
            }
        }
        CHECK_EQ_U64(got, n);
        CHECK_EQ_U64(mismatches, 0);
        CHECK_EQ_U64(ends, 1);
        const trace_reader_stats *st = trace_reader_get_stats(r);
        CHECK(!st->truncated);
        CHECK_EQ_U64(st->corrupt_frames, 0);
        CHECK(st->clean_end);
        CHECK_EQ_U64(trace_reader_warning_count(r), 0);
        if (opt.chunk_bytes == 4096)
            CHECK(st->frames > 10);
        trace_reader_close(r);
        free(evs);
    }
}

/* One of each record kind, with edge values, read back field by field. */
/* test_every_record_kind's records: what was written, what each record must read back as. */
static char build_id[20];
static trace_process proc;
static trace_device dev;
static trace_module mod;
static trace_frame native;
static trace_event every_event;
static uint32_t s_fn, s_file, s_step, f1, f2;
static int seen[256];

/* The END record's counted calls: a name at the cap's far side is cut to it. */
static char long_name[TRACE_END_MAX_CALL_NAME + 2];
static trace_call_count end_calls[] = {
    {.call_id = 638, .name = {"cuGraphAddMemAllocNode", 22}, .calls = 3, .bytes = 12u << 20},
    {.call_id = UINT32_MAX, .name = {"", 0}, .calls = UINT64_MAX, .bytes = 0},
    {.call_id = 7, .name = {NULL, 0}, .calls = 1, .bytes = UINT64_MAX}, /* name set at write */
};

static void check_end_calls(const trace_end *e) {
    CHECK_EQ_U64(e->n_calls, 3);
    if (e->n_calls != 3 || !e->calls)
        return;
    CHECK(e->calls[0].call_id == 638 && e->calls[0].calls == 3);
    CHECK_EQ_U64(e->calls[0].bytes, 12u << 20);
    CHECK_STR_EQ(e->calls[0].name.ptr, "cuGraphAddMemAllocNode");
    CHECK(e->calls[1].call_id == UINT32_MAX && e->calls[1].calls == UINT64_MAX);
    CHECK(e->calls[1].bytes == 0 && e->calls[1].name.len == 0 && e->calls[1].name.ptr[0] == 0);
    CHECK(e->calls[2].call_id == 7 && e->calls[2].bytes == UINT64_MAX);
    CHECK_EQ_U64(e->calls[2].name.len, TRACE_END_MAX_CALL_NAME); /* cut */
    CHECK(e->calls[2].name.ptr[TRACE_END_MAX_CALL_NAME] == 0 && e->calls[2].name.ptr[0] == 'x');
}

/* Writes one record of every kind (the END record at close: ok when it went). */
static int write_every_kind(trace_writer *w) {
    char err[256];
    for (int i = 0; i < 20; i++)
        build_id[i] = (char)(i * 13); /* includes a NUL byte */
    proc = (trace_process){.pid = 4242,
                           .ppid = 1,
                           .rank = -1,
                           .wall_anchor_ns = 1795000000000000000ULL,
                           .clock_anchor_ns = 123456789,
                           .host = tb("node-7"),
                           .cmdline = tb("python train.py --lr 3e-4"),
                           .clock_source = tb("CLOCK_MONOTONIC"),
                           .producer = tb("test")};
    CHECK(trace_writer_process(w, &proc) == 0);
    dev = (trace_device){.device = 1, .total_bytes = 85899345920ULL, .name = tb("NVIDIA H100")};
    CHECK(trace_writer_device(w, &dev) == 0);
    mod = (trace_module){.module_id = 3,
                         .base = 0x7f1200000000ULL,
                         .size = 1 << 20,
                         .path = tb("/usr/lib/libtorch_cuda.so"),
                         .build_id = {build_id, sizeof build_id}};
    CHECK(trace_writer_module(w, &mod) == 0);
    s_fn = trace_writer_string(w, "forward", 7);
    s_file = trace_writer_string(w, "model.py", 8);
    s_step = trace_writer_string(w, "step 3", 6);
    CHECK_EQ_U64(s_fn, 1);
    CHECK_EQ_U64(s_file, 2);
    CHECK_EQ_U64(trace_writer_string(w, "forward", 7), s_fn); /* interned once */
    native = (trace_frame){.kind = TRACE_FRAME_NATIVE, .module_id = 3, .ip = 0x7f1200001234ULL};
    trace_frame py = {
        .kind = TRACE_FRAME_PYTHON, .function_id = s_fn, .file_id = s_file, .line = 54};
    f1 = trace_writer_frame(w, &native);
    f2 = trace_writer_frame(w, &py);
    CHECK_EQ_U64(f1, 1);
    CHECK_EQ_U64(f2, 2);
    CHECK_EQ_U64(trace_writer_frame(w, &py), f2);
    trace_frame py_other_line = py;
    py_other_line.line = 55;
    CHECK_EQ_U64(trace_writer_frame(w, &py_other_line), 3);
    uint32_t st1 = trace_writer_stack(w, 0, f2);
    uint32_t st2 = trace_writer_stack(w, st1, f1);
    CHECK_EQ_U64(st1, 1);
    CHECK_EQ_U64(st2, 2);
    CHECK_EQ_U64(trace_writer_stack(w, st1, f1), st2);
    static const trace_symbol_entry entries[2] = {{1, 2, 10}, {2, 1, 20}};
    trace_symbol sym = {.frame_id = f1, .count = 2, .entries = entries};
    CHECK(trace_writer_symbol(w, &sym) == 0);
    trace_thread th = {.tid = 77, .name_id = s_fn};
    CHECK(trace_writer_thread(w, &th) == 0);
    trace_marker mk = {.ts_ns = 5000,
                       .range_id = 9,
                       .value = -3,
                       .tid = 77,
                       .domain_id = 0,
                       .name_id = s_step,
                       .kind = TRACE_MARK_RANGE_START};
    CHECK(trace_writer_marker(w, &mk) == 0);
    trace_counter ct = {.ts_ns = 4000,
                        .key = 0xabc,
                        .value = UINT64_MAX,
                        .device = 1,
                        .kind = TRACE_COUNTER_POOL_USED};
    CHECK(trace_writer_counter(w, &ct) == 0);
    every_event = (trace_event){.ts_ns = UINT64_MAX,
                                .addr = 0,
                                .size = UINT64_MAX,
                                .requested = 1,
                                .stream = UINT64_MAX,
                                .pool = 1,
                                .stack_id = UINT32_MAX,
                                .tid = UINT32_MAX,
                                .device = 1,
                                .op = TRACE_OP_VA_FREE,
                                .level = TRACE_LEVEL_BLOCK,
                                .kind = TRACE_KIND_PINNED_HOST};
    CHECK(trace_writer_event(w, &every_event) == 0);
    trace_end end = {.ts_ns = 6000,
                     .events = 1,
                     .dropped = 17,
                     .flags = 0,
                     .n_calls = sizeof end_calls / sizeof end_calls[0],
                     .calls = end_calls};
    long_name[sizeof long_name - 1] = '\0';
    memset(long_name, 'x', sizeof long_name - 1);
    end_calls[2].name = tb(long_name);
    return trace_writer_close(w, &end, err, sizeof err);
}

/* One record as write_every_kind wrote it; counts it in seen[]. A trace_record_sink. */
static int check_every_kind(void *ctx, const trace_record *r) {
    (void)ctx;
    const trace_record rec = *r;
    seen[rec.kind & 0xff]++;
    switch (rec.kind) {
    case TRACE_REC_PROCESS: {
        const trace_process *p = &rec.u.process;
        CHECK(p->pid == 4242 && p->ppid == 1 && p->rank == -1);
        CHECK_EQ_U64(p->wall_anchor_ns, proc.wall_anchor_ns);
        CHECK_EQ_U64(p->clock_anchor_ns, 123456789);
        CHECK(bytes_eq(p->host, proc.host) && bytes_eq(p->cmdline, proc.cmdline));
        CHECK(bytes_eq(p->clock_source, proc.clock_source));
        CHECK(bytes_eq(p->producer, proc.producer));
        CHECK(p->host.ptr[p->host.len] == 0 && p->producer.ptr[p->producer.len] == 0);
        break;
    }
    case TRACE_REC_DEVICE:
        CHECK(rec.u.device.device == 1 && rec.u.device.total_bytes == dev.total_bytes);
        CHECK_STR_EQ(rec.u.device.name.ptr, "NVIDIA H100");
        break;
    case TRACE_REC_MODULE:
        CHECK(rec.u.module.module_id == 3 && rec.u.module.base == mod.base);
        CHECK_EQ_U64(rec.u.module.size, mod.size);
        CHECK(bytes_eq(rec.u.module.path, mod.path));
        CHECK(bytes_eq(rec.u.module.build_id, mod.build_id));
        break;
    case TRACE_REC_STRING:
        if (rec.u.string.string_id == s_step)
            CHECK_STR_EQ(rec.u.string.text.ptr, "step 3");
        CHECK(rec.u.string.string_id >= 1 && rec.u.string.string_id <= 3);
        break;
    case TRACE_REC_FRAME:
        if (rec.u.frame.frame_id == 1)
            CHECK(rec.u.frame.kind == TRACE_FRAME_NATIVE && rec.u.frame.ip == native.ip &&
                  rec.u.frame.module_id == 3);
        if (rec.u.frame.frame_id == 2)
            CHECK(rec.u.frame.kind == TRACE_FRAME_PYTHON && rec.u.frame.line == 54 &&
                  rec.u.frame.function_id == s_fn && rec.u.frame.file_id == s_file);
        break;
    case TRACE_REC_STACK:
        if (rec.u.stack.stack_id == 2)
            CHECK(rec.u.stack.parent_id == 1 && rec.u.stack.frame_id == f1);
        break;
    case TRACE_REC_SYMBOL:
        CHECK(rec.u.symbol.frame_id == f1 && rec.u.symbol.count == 2);
        CHECK(rec.u.symbol.entries[1].line == 20 && rec.u.symbol.entries[0].file_id == s_file);
        break;
    case TRACE_REC_THREAD:
        CHECK(rec.u.thread.tid == 77 && rec.u.thread.name_id == s_fn);
        break;
    case TRACE_REC_MARKER:
        CHECK(rec.u.marker.ts_ns == 5000 && rec.u.marker.range_id == 9);
        CHECK(rec.u.marker.value == -3 && rec.u.marker.kind == TRACE_MARK_RANGE_START);
        CHECK(rec.u.marker.name_id == s_step && rec.u.marker.tid == 77);
        break;
    case TRACE_REC_COUNTER:
        CHECK(rec.u.counter.ts_ns == 4000 && rec.u.counter.key == 0xabc);
        CHECK(rec.u.counter.value == UINT64_MAX && rec.u.counter.device == 1);
        CHECK(rec.u.counter.kind == TRACE_COUNTER_POOL_USED);
        break;
    case TRACE_REC_EVENT:
        CHECK(event_eq(&rec.u.event, &every_event));
        break;
    case TRACE_REC_END:
        CHECK(rec.u.end.ts_ns == 6000 && rec.u.end.events == 1);
        CHECK(rec.u.end.dropped == 17 && rec.u.end.flags == 0);
        check_end_calls(&rec.u.end);
        break;
    }
    return 0;
}

static void check_seen_every_kind(void) {
    CHECK_EQ_U64(seen[TRACE_REC_STRING], 3);
    CHECK_EQ_U64(seen[TRACE_REC_FRAME], 3);
    CHECK_EQ_U64(seen[TRACE_REC_STACK], 2);
    static const unsigned once[] = {TRACE_REC_PROCESS, TRACE_REC_DEVICE,       TRACE_REC_MODULE,
                                    TRACE_REC_SYMBOL,  TRACE_REC_THREAD,       TRACE_REC_MARKER,
                                    TRACE_REC_COUNTER, TRACE_REC_EVENT & 0xff, TRACE_REC_END};
    for (size_t i = 0; i < sizeof once / sizeof once[0]; i++)
        CHECK_EQ_U64(seen[once[i]], 1);
}

static void test_every_record_kind(void) {
    char err[256];
    trace_writer *w = trace_writer_open(tmp_path("kinds.zst"), NULL, err, sizeof err);
    CHECK(w != NULL);
    if (!w)
        return;
    CHECK(write_every_kind(w) == 0);
    trace_reader *r = trace_reader_open(tmp_path("kinds.zst"), err, sizeof err);
    CHECK(r != NULL);
    if (!r)
        return;
    CHECK_EQ_U64(trace_reader_version(r), TRACE_FORMAT_VERSION);
    trace_record rec;
    memset(seen, 0, sizeof seen);
    while (trace_reader_next(r, &rec) == 1)
        check_every_kind(NULL, &rec);
    check_seen_every_kind();
    CHECK(!trace_reader_get_stats(r)->clean_end); /* flags were 0 */
    trace_reader_close(r);
}

/* The same records through a sink writer: what the reader gave, with no file. */
static void test_sink_every_record_kind(void) {
    char err[256];
    trace_writer *w = trace_writer_open_sink(check_every_kind, NULL, err, sizeof err);
    CHECK(w != NULL);
    if (!w)
        return;
    memset(seen, 0, sizeof seen);
    CHECK(write_every_kind(w) == 0);
    check_seen_every_kind();
}

/* END's time when the caller gives none, and an event's op and level: what the reader of the
 * file gives, the sink gives, even when the last chunk holds no timed record (small chunks,
 * strings after the events) and for codes wider than the tag byte keeps. */
static trace_record last_seen, first_event;
static int keep_last(void *ctx, const trace_record *r) {
    (void)ctx;
    if (r->kind == TRACE_REC_EVENT && first_event.kind != TRACE_REC_EVENT)
        first_event = *r;
    last_seen = *r;
    return 0;
}

static void write_small_chunks(trace_writer *w) {
    char err[256];
    for (int i = 0; i < 300; i++) {
        trace_event e = {.ts_ns = 1000 + 7 * (uint64_t)i,
                         .addr = 4096 * (uint64_t)i,
                         .size = 512,
                         .requested = 512,
                         .op = i ? TRACE_OP_ALLOC : 0x13,
                         .level = i ? 0 : 7};
        CHECK(trace_writer_event(w, &e) == 0);
    }
    char text[40];
    for (int i = 0; i < 60; i++) { /* untimed records, filling a chunk of their own */
        snprintf(text, sizeof text, "string number %d of the tail", i);
        CHECK(trace_writer_string(w, text, strlen(text)) != 0);
    }
    CHECK(trace_writer_close(w, NULL, err, sizeof err) == 0);
}

static void test_sink_end_time(void) {
    char err[256];
    trace_writer_options small = {.chunk_bytes = 1024};
    trace_writer *w = trace_writer_open(tmp_path("small.zst"), &small, err, sizeof err);
    CHECK(w != NULL);
    if (!w)
        return;
    write_small_chunks(w);
    trace_reader *r = trace_reader_open(tmp_path("small.zst"), err, sizeof err);
    CHECK(r != NULL);
    trace_record rec, file_first = {0}, file_end = {0};
    while (r && trace_reader_next(r, &rec) == 1) {
        if (rec.kind == TRACE_REC_EVENT && file_first.kind != TRACE_REC_EVENT)
            file_first = rec;
        if (rec.kind == TRACE_REC_END)
            file_end = rec;
    }
    CHECK(r && trace_reader_get_stats(r)->frames > 2);
    trace_reader_close(r);
    w = trace_writer_open_sink(keep_last, NULL, err, sizeof err);
    CHECK(w != NULL);
    if (!w)
        return;
    write_small_chunks(w);
    CHECK(file_end.kind == TRACE_REC_END && last_seen.kind == TRACE_REC_END);
    CHECK_EQ_U64(file_end.u.end.ts_ns, 1000 + 7 * 299); /* the last timestamp written */
    CHECK_EQ_U64(last_seen.u.end.ts_ns, file_end.u.end.ts_ns);
    CHECK(last_seen.u.end.events == 300 && file_end.u.end.events == 300);
    CHECK(file_first.u.event.op == 3 && file_first.u.event.level == 1);
    CHECK(first_event.u.event.op == file_first.u.event.op &&
          first_event.u.event.level == file_first.u.event.level);
}

/* A sink's texts are cut at the cap as the file's are; a sink that refuses a record fails the
 * writer, which then writes nothing more. */
static int last_text_len, calls;
static int refuse_third(void *ctx, const trace_record *r) {
    (void)ctx;
    if (r->kind == TRACE_REC_STRING) {
        last_text_len = (int)r->u.string.text.len;
        CHECK(r->u.string.text.ptr[r->u.string.text.len] == 0);
    }
    return ++calls == 3 ? -1 : 0;
}

static void test_sink_limits(void) {
    char err[256];
    trace_writer *w = trace_writer_open_sink(refuse_third, NULL, err, sizeof err);
    CHECK(w != NULL);
    if (!w)
        return;
    size_t big = TRACE_WIRE_MAX_STRING + 100;
    char *text = malloc(big);
    memset(text, 'x', big);
    CHECK(trace_writer_string(w, text, big) == 1);
    CHECK_EQ_U64(last_text_len, TRACE_WIRE_MAX_STRING);
    CHECK(trace_writer_string(w, text, big) == 1); /* interned under its cut value */
    CHECK(trace_writer_string(w, "a", 1) == 2);
    CHECK(trace_writer_string(w, "b", 1) == 0); /* the third record: refused */
    CHECK(strstr(trace_writer_error(w), "reader stopped") != NULL);
    trace_event e = {.size = 1, .requested = 1};
    CHECK(trace_writer_event(w, &e) == -1 && calls == 3);
    CHECK(trace_writer_close(w, NULL, err, sizeof err) == -1 && calls == 3); /* no END either */
    CHECK(strstr(err, "reader stopped") != NULL);
    free(text);
}

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    if (len)
        CHECK(fwrite(data, 1, len, f) == len);
    fclose(f);
}

static void expect_open_error(const char *path, const char *needle) {
    char err[512] = "";
    trace_reader *r = trace_reader_open(path, err, sizeof err);
    CHECK(r == NULL);
    if (r) {
        trace_reader_close(r);
        return;
    }
    if (!strstr(err, needle))
        fprintf(stderr, "error '%s' lacks '%s'\n", err, needle);
    CHECK(strstr(err, needle) != NULL);
    CHECK(strchr(err, '\n') == NULL);
}

static void test_open_errors(void) {
    write_file(tmp_path("empty"), "", 0);
    expect_open_error(tmp_path("empty"), "is empty");
    write_file(tmp_path("text"), "hello, world\n", 13);
    expect_open_error(tmp_path("text"), "not a gpumemtrace trace");
    expect_open_error(tmp_path("does-not-exist"), "cannot open");
    expect_open_error(tmpdir, "is a directory");

    /* zstd data, but not ours */
    uint8_t z[256];
    size_t n = ZSTD_compress(z, sizeof z, "just some text", 14, 1);
    write_file(tmp_path("other.zst"), z, n);
    expect_open_error(tmp_path("other.zst"), "without a trace header");

    /* our header with a version newer than this build */
    const uint8_t newer[] = {'G', 'P',  'U', 'M', 'E', 'M', 'T', 'R', TRACE_FORMAT_VERSION + 1,
                             0,   0x01, 0,   0};
    n = ZSTD_compress(z, sizeof z, newer, sizeof newer, 1);
    write_file(tmp_path("newer.zst"), z, n);
    char want[32];
    snprintf(want, sizeof want, "version %d", TRACE_FORMAT_VERSION + 1);
    expect_open_error(tmp_path("newer.zst"), want);
}

/* A trace of one frame made of `content` bytes, read back: its END record
 * (has_end; its calls dangle once the reader is closed: the first one's name
 * is kept in end_name0) and the reader's warnings. */
static char end_name0[64];
static void read_raw(const char *name, const uint8_t *content, size_t len, trace_end *end,
                     int *has_end, size_t *warnings, uint32_t *version) {
    uint8_t z[512];
    size_t n = ZSTD_compress(z, sizeof z, content, len, 1);
    CHECK(!ZSTD_isError(n));
    write_file(tmp_path(name), z, n);
    char err[256];
    trace_reader *r = trace_reader_open(tmp_path(name), err, sizeof err);
    CHECK(r != NULL);
    *has_end = 0;
    if (!r)
        return;
    trace_record rec;
    while (trace_reader_next(r, &rec) == 1)
        if (rec.kind == TRACE_REC_END) {
            *end = rec.u.end;
            *has_end = 1;
            snprintf(end_name0, sizeof end_name0, "%s", end->n_calls ? end->calls[0].name.ptr : "");
        }
    *warnings = trace_reader_warning_count(r);
    *version = trace_reader_version(r);
    trace_reader_close(r);
}

/* A trace's bytes before its END record's fields: the header of `version`, chunk 0 (0 events
 * before it) with a time column of one ts (6000, zigzag 12000), the END tag; then `end`. */
static size_t raw_trace(uint8_t version, const uint8_t *end, size_t n, uint8_t *out) {
    const uint8_t head[] = {'G', 'P', 'U', 'M', 'E', 'M',  'T',  'R', 0,
                            0,   1,   0,   0,   2,   0xe0, 0x5d, 0x0c};
    memcpy(out, head, sizeof head);
    out[8] = version;
    memcpy(out + sizeof head, end, n);
    return sizeof head + n;
}

/* Traces of version 1 (written before the END record had counted calls) still read: the
 * bytes of a version 1 recorder's END; a version 2 END without calls is the same bytes, one
 * with calls says so in its flags; a malformed list is damage, not a crash. */
static void test_older_versions(void) {
    uint8_t raw[128];
    const uint8_t v1_end[] = {0, 5, TRACE_END_CLEAN}; /* events 0, dropped 5, flags */
    size_t v1_len = raw_trace(1, v1_end, sizeof v1_end, raw);
    trace_end e = {0};
    int has_end;
    size_t warnings;
    uint32_t version;
    read_raw("v1.zst", raw, v1_len, &e, &has_end, &warnings, &version);
    CHECK(has_end && warnings == 0 && version == 1);
    CHECK(e.ts_ns == 6000 && e.dropped == 5 && e.flags == TRACE_END_CLEAN);
    CHECK(e.n_calls == 0 && e.calls == NULL);

    /* the same END from this build: the same bytes but the version */
    char err[256];
    trace_writer *w = trace_writer_open(tmp_path("v2-none.zst"), NULL, err, sizeof err);
    CHECK(w != NULL);
    trace_end none = {.ts_ns = 6000, .dropped = 5, .flags = TRACE_END_CLEAN};
    CHECK(w && trace_writer_close(w, &none, err, sizeof err) == 0);
    FILE *f = fopen(tmp_path("v2-none.zst"), "rb");
    uint8_t z[256], plain[256];
    size_t zn = f ? fread(z, 1, sizeof z, f) : 0;
    if (f)
        fclose(f);
    size_t pn = ZSTD_decompress(plain, sizeof plain, z, zn);
    CHECK(!ZSTD_isError(pn) && pn == v1_len);
    if (!ZSTD_isError(pn) && pn == v1_len) {
        CHECK_EQ_U64(plain[8], TRACE_FORMAT_VERSION);
        plain[8] = 1;
        CHECK(memcmp(plain, raw, v1_len) == 0);
    }

    /* version 2: flags clean | TRACE_WIRE_END_CALLS, 1 call (639, "free", 2 calls, 4096 B) */
    const uint8_t v2_end[] = {
        0,    0,   TRACE_END_CLEAN | TRACE_WIRE_END_CALLS, 1, 0xff, 0x04, 4, 'f', 'r', 'e', 'e', 2,
        0x80, 0x20};
    size_t v2_len = raw_trace(2, v2_end, sizeof v2_end, raw);
    read_raw("v2.zst", raw, v2_len, &e, &has_end, &warnings, &version);
    CHECK(has_end && warnings == 0 && version == 2 && e.flags == TRACE_END_CLEAN);
    CHECK(e.n_calls == 1 && e.calls != NULL);
    CHECK_STR_EQ(end_name0, "free");
    trace_reader *r = trace_reader_open(tmp_path("v2.zst"), err, sizeof err);
    trace_record rec;
    while (r && trace_reader_next(r, &rec) == 1)
        if (rec.kind == TRACE_REC_END && rec.u.end.n_calls == 1) {
            CHECK(rec.u.end.calls[0].call_id == 639 && rec.u.end.calls[0].calls == 2);
            CHECK_EQ_U64(rec.u.end.calls[0].bytes, 4096);
        }
    trace_reader_close(r);

    /* a list cut short; more calls than a reader keeps; the same call twice: damage */
    read_raw("v2-cut.zst", raw, v2_len - 1, &e, &has_end, &warnings, &version);
    CHECK(!has_end && warnings == 1);
    uint8_t many[sizeof v2_end];
    memcpy(many, v2_end, sizeof many);
    many[3] = TRACE_END_MAX_CALLS + 1; /* the count */
    read_raw("v2-many.zst", raw, raw_trace(2, many, sizeof many, raw), &e, &has_end, &warnings,
             &version);
    CHECK(!has_end && warnings == 1);
    const uint8_t twice[] = {0, 0, TRACE_END_CLEAN | TRACE_WIRE_END_CALLS, 2, 7, 0, 1, 0, 7, 0,
                             1, 0};
    read_raw("v2-twice.zst", raw, raw_trace(2, twice, sizeof twice, raw), &e, &has_end, &warnings,
             &version);
    CHECK(!has_end && warnings == 1);
}

/* The writer refuses an END record it could not write as the format says. */
static void test_end_limits(void) {
    static trace_call_count many[TRACE_END_MAX_CALLS + 1];
    for (uint32_t i = 0; i < TRACE_END_MAX_CALLS + 1; i++)
        many[i] = (trace_call_count){.call_id = i, .name = {"c", 1}, .calls = 1};
    char err[256] = "";
    trace_end end = {.n_calls = TRACE_END_MAX_CALLS + 1, .calls = many};
    trace_writer *w = trace_writer_open(tmp_path("many.zst"), NULL, err, sizeof err);
    CHECK(w && trace_writer_close(w, &end, err, sizeof err) == -1);
    CHECK(strstr(err, "counted calls") != NULL);
    end.n_calls = TRACE_END_MAX_CALLS; /* the most there may be */
    w = trace_writer_open(tmp_path("max.zst"), NULL, err, sizeof err);
    CHECK(w && trace_writer_close(w, &end, err, sizeof err) == 0);
    trace_end got = {0};
    int has_end = 0;
    size_t warnings = 0;
    uint32_t version = 0;
    trace_reader *r = trace_reader_open(tmp_path("max.zst"), err, sizeof err);
    CHECK(r != NULL);
    trace_record rec;
    while (r && trace_reader_next(r, &rec) == 1)
        if (rec.kind == TRACE_REC_END) {
            got = rec.u.end;
            has_end = 1;
            CHECK(rec.u.end.n_calls == TRACE_END_MAX_CALLS &&
                  rec.u.end.calls[TRACE_END_MAX_CALLS - 1].call_id == TRACE_END_MAX_CALLS - 1);
        }
    warnings = r ? trace_reader_warning_count(r) : 1;
    version = r ? trace_reader_version(r) : 0;
    trace_reader_close(r);
    CHECK(has_end && warnings == 0 && version == TRACE_FORMAT_VERSION);
    CHECK_EQ_U64(got.n_calls, TRACE_END_MAX_CALLS);
    many[1].call_id = 0; /* twice */
    end.n_calls = 2;
    w = trace_writer_open(tmp_path("twice.zst"), NULL, err, sizeof err);
    CHECK(w && trace_writer_close(w, &end, err, sizeof err) == -1);
    CHECK(strstr(err, "counted twice") != NULL);
}

static void test_writer_errors(void) {
    char err[256] = "";
    CHECK(trace_writer_open("/nonexistent-dir/x.zst", NULL, err, sizeof err) == NULL);
    CHECK(strstr(err, "cannot create") != NULL);
    /* Disk full: /dev/full accepts the open and fails every write. */
    trace_writer *w = trace_writer_open("/dev/full", NULL, err, sizeof err);
    if (!w)
        return;
    trace_event ev = {.size = 512, .requested = 512};
    CHECK(trace_writer_event(w, &ev) == 0); /* buffered */
    CHECK(trace_writer_flush(w) == -1);
    CHECK(strstr(trace_writer_error(w), "No space") != NULL);
    CHECK(trace_writer_event(w, &ev) == -1); /* stays failed */
    CHECK(trace_writer_close(w, NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "No space") != NULL);
}

int main(void) {
    if (!mkdtemp(tmpdir))
        return 1;
    test_every_record_kind();
    test_sink_every_record_kind();
    test_sink_limits();
    test_sink_end_time();
    test_random_streams();
    test_open_errors();
    test_older_versions();
    test_end_limits();
    test_writer_errors();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        return 1;
    return check_finish("test_codec_roundtrip");
}
