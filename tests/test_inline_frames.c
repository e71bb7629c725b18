/* test_inline_frames.c — a native frame's inline chain (its SYMBOL record)
 * becomes frames of its own: `frames` rows for the inlined functions linked
 * by inlined_into, stacks expanded so `stack_frames` lists the inlined
 * callee before the function that holds the ip, while event_rows keeps the
 * trace's stack ids; and `report`/`leaks` name the real caller, not
 * memrec.h's inline wrapper.
 *
 * The trace is hand-built: an app whose train_step calls memrec.h's inline
 * memrec_region_alloc (so one ip in train_step has the chain
 * memrec_region_alloc <- train_step), a setup with a chain of three, main,
 * and a libmemrec frame. The symbols are appended after the END record, as
 * the symbolizer does, and after the stacks that use them; the same trace
 * with the symbols in the stream must give the same rows. */
#include "check.h"
#include "gmt_env.h"
#include "trace_build.h"

#include "layout.h"
#include "stack_names.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BASE 0x7f0000000000ULL
#define REPLAY_MADE_ID 4294967296LL /* 2^32: the first id the replay makes */

enum { SYMBOLS_IN_STREAM, SYMBOLS_AFTER_END };

/* What a symbolizer would say about each native frame. */
typedef struct chain_entry {
    const char *function, *file;
    uint32_t line;
} chain_entry;

typedef struct native_frame {
    uint32_t module_id;
    uint64_t ip;
    size_t count; /* entries of the chain, innermost first; 0: never symbolized */
    chain_entry chain[3];
} native_frame;

enum { F_LIB, F_CALL, F_MAIN, F_DEEP, F_UNSYMBOLIZED, F_COUNT };

static const native_frame frames_in[F_COUNT] = {
    [F_LIB] = {1, 0x7f1000001234, 1, {{"rec_region_alloc", "recorder/rec_api.c", 80}}},
    [F_CALL] = {2,
                0x401234,
                2,
                {{"memrec_region_alloc", "/usr/include/memrec.h", 159},
                 {"train_step", "/home/me/app.c", 42}}},
    [F_MAIN] = {2, 0x401800, 1, {{"main", "/home/me/app.c", 90}}},
    [F_DEEP] = {2,
                0x401300,
                3,
                {{"grow_buffer", "/home/me/pool.h", 12},
                 {"make_workspace", "/home/me/pool.h", 30},
                 {"setup", "/home/me/app.c", 70}}},
    [F_UNSYMBOLIZED] = {2, 0x401900, 0, {{0}}},
};

static uint32_t frame_id[F_COUNT];
static uint32_t stack_leak, stack_setup, stack_plain;
static uint32_t max_string_id;

static uint32_t string(const char *s) {
    uint32_t id = trace_writer_string(w, s, strlen(s));
    CHECK(id != 0);
    if (id > max_string_id)
        max_string_id = id;
    return id;
}

static void write_symbol(int which) {
    const native_frame *f = &frames_in[which];
    trace_symbol_entry entries[3];
    for (size_t i = 0; i < f->count; i++)
        entries[i] = (trace_symbol_entry){string(f->chain[i].function), string(f->chain[i].file),
                                          f->chain[i].line};
    trace_symbol s = {frame_id[which], (uint32_t)f->count, entries};
    if (f->count)
        CHECK(trace_writer_symbol(w, &s) == 0);
}

static void step_marker(trace_marker_kind kind, int64_t step) {
    now_ns += 1000;
    trace_marker m = {.ts_ns = now_ns, .tid = 7, .kind = (uint8_t)kind, .value = step};
    CHECK(trace_writer_marker(w, &m) == 0);
}

static void module(uint32_t id, const char *path) {
    trace_module m = {.module_id = id,
                      .base = id == 1 ? 0x7f1000000000 : 0x400000,
                      .size = 0x100000,
                      .path = {path, (uint32_t)strlen(path)}};
    CHECK(trace_writer_module(w, &m) == 0);
}

/* Closes the recording (END) and reopens the file the way the symbolizer
 * does, numbering after what the reader finds in it. */
static void reopen_for_append(void) {
    char err[256];
    CHECK(trace_writer_close(w, NULL, err, sizeof err) == 0);
    trace_reader *r = trace_reader_open(trace_path, err, sizeof err);
    CHECK(r != NULL);
    trace_record rec;
    while (r && trace_reader_next(r, &rec) == 1)
        ;
    const trace_reader_stats *st = r ? trace_reader_get_stats(r) : NULL;
    trace_append_state app = {st ? st->frames : 0, st ? st->events : 0, max_string_id + 1,
                              F_COUNT + 1, stack_plain + 1};
    trace_reader_close(r);
    int fd = open(trace_path, O_WRONLY | O_APPEND);
    CHECK(fd >= 0);
    w = trace_writer_open_append(fd, NULL, &app, err, sizeof err);
    CHECK(w != NULL);
}

/* The trace: 4 steps, each leaking 1 MiB through memrec_region_alloc;
 * setup's 2 MiB made once in step 0; one block with an unsymbolized stack. */
static void build_trace(int symbols) {
    begin();
    max_string_id = 0;
    module(1, "/opt/gpumemtrace/lib/libmemrec.so");
    module(2, "/home/me/app");
    for (int i = 0; i < F_COUNT; i++) {
        trace_frame f = {
            .kind = TRACE_FRAME_NATIVE, .module_id = frames_in[i].module_id, .ip = frames_in[i].ip};
        frame_id[i] = trace_writer_frame(w, &f);
        CHECK(frame_id[i] == (uint32_t)i + 1);
        if (symbols == SYMBOLS_IN_STREAM)
            write_symbol(i);
    }
    uint32_t at_main = trace_writer_stack(w, 0, frame_id[F_MAIN]);
    stack_leak =
        trace_writer_stack(w, trace_writer_stack(w, at_main, frame_id[F_CALL]), frame_id[F_LIB]);
    stack_setup = trace_writer_stack(w, at_main, frame_id[F_DEEP]);
    stack_plain = trace_writer_stack(w, at_main, frame_id[F_UNSYMBOLIZED]);
    CHECK(stack_plain == 5);
    /* PyTorch's segment: never counted as one block of its own */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, BASE, 64 * MiB, 0, 0);
    for (int step = 0; step < 4; step++) {
        step_marker(TRACE_MARK_STEP_BEGIN, step);
        ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, BASE + (uint64_t)step * MiB, MiB,
           0, stack_leak);
        if (step == 0) {
            ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, BASE + 32 * MiB, 2 * MiB, 0,
               stack_setup);
            ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, BASE + 40 * MiB, MiB, 0,
               stack_plain);
        }
        step_marker(TRACE_MARK_STEP_END, step);
    }
    if (symbols == SYMBOLS_AFTER_END) {
        reopen_for_append();
        for (int i = 0; i < F_COUNT; i++)
            write_symbol(i);
    }
}

/* The first column of the first row as text, in `out`; "" for NULL or none. */
static const char *qs(const char *sql, char *out, size_t len) {
    sqlite3_stmt *st;
    out[0] = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "SQL error in %s: %s\n", sql, sqlite3_errmsg(db));
        return out;
    }
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
}

/* A stack's frames, innermost first, as "name file:line inlined" joined by " | ". */
static const char *stack_text(uint32_t stack_id, char *out, size_t len) {
    char sql[400];
    snprintf(sql, sizeof sql,
             "SELECT group_concat(name || ' ' || file || ':' || line || ' ' || inlined, ' | ')"
             " FROM (SELECT * FROM stack_frames WHERE stack_id = %u ORDER BY depth)",
             stack_id);
    return qs(sql, out, len);
}

static void check_rows(void) {
    char text[1024], sql[400];
    CHECK_STR_EQ(stack_text(stack_leak, text, sizeof text),
                 "rec_region_alloc recorder/rec_api.c:80 0"
                 " | memrec_region_alloc /usr/include/memrec.h:159 1"
                 " | train_step /home/me/app.c:42 0 | main /home/me/app.c:90 0");
    CHECK_STR_EQ(stack_text(stack_setup, text, sizeof text),
                 "grow_buffer /home/me/pool.h:12 1 | make_workspace /home/me/pool.h:30 1"
                 " | setup /home/me/app.c:70 0 | main /home/me/app.c:90 0");
    CHECK_EQ_U64(q("SELECT count(*) FROM stack_frames WHERE stack_id = 5"), 2);
    CHECK_EQ_U64(q("SELECT s.name IS NULL AND f.ip = 0x401900 FROM stack_frames AS s"
                   " JOIN frames AS f USING (frame_id) WHERE s.stack_id = 5 AND s.depth = 0"),
                 1);
    /* frames: the trace's id names the function holding the ip */
    snprintf(sql, sizeof sql, "SELECT name FROM frames WHERE frame_id = %u", frame_id[F_CALL]);
    CHECK_STR_EQ(qs(sql, text, sizeof text), "train_step");
    snprintf(sql, sizeof sql,
             "SELECT inlined = 0 AND inlined_into IS NULL AND line = 42 FROM frames"
             " WHERE frame_id = %u",
             frame_id[F_CALL]);
    CHECK_EQ_U64(q(sql), 1);
    /* ...and one row per inlined function, inlined into the next outer one */
    snprintf(sql, sizeof sql,
             "SELECT name FROM frames WHERE inlined = 1 AND inlined_into = %u"
             " AND ip = 0x401234 AND module = '/home/me/app' AND frame_id >= %lld",
             frame_id[F_CALL], REPLAY_MADE_ID);
    CHECK_STR_EQ(qs(sql, text, sizeof text), "memrec_region_alloc");
    snprintf(sql, sizeof sql,
             "SELECT i.name FROM frames AS i JOIN frames AS o ON i.inlined_into = o.frame_id"
             " WHERE o.inlined_into = %u",
             frame_id[F_DEEP]);
    CHECK_STR_EQ(qs(sql, text, sizeof text), "grow_buffer");
    /* 5 trace frames, 1 + 2 inlined rows; 5 trace nodes, 1 + 2 made nodes */
    CHECK_EQ_U64(q("SELECT count(*) FROM frames"), 8);
    CHECK_EQ_U64(q("SELECT count(*) FROM frames WHERE inlined = 1"), 3);
    CHECK_EQ_U64(q("SELECT count(*) FROM stacks"), 8);
    CHECK_EQ_U64(q("SELECT count(*) FROM stacks WHERE stack_id >= 4294967296"), 3);
    /* events keep the trace's stack ids: the stack of the call */
    CHECK_EQ_U64(q("SELECT count(*) FROM event_rows WHERE stack_id >= 4294967296"), 0);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM event_rows WHERE stack_id = %u", stack_leak);
    CHECK_EQ_U64(q(sql), 4);
}

static void check_sites(void) {
    char label[256];
    CHECK(stack_label(db, stack_leak, label, sizeof label) == 0);
    CHECK_STR_EQ(label, "app.c:42 train_step");
    CHECK(stack_label(db, stack_setup, label, sizeof label) == 0);
    CHECK_STR_EQ(label, "pool.h:12 grow_buffer");
    CHECK(stack_label(db, stack_plain, label, sizeof label) == 0);
    CHECK_STR_EQ(label, "0x401900 (app)");
    /* diff matches sites across runs by the frames' (function, file): all four are in the key */
    stack_names *cache = stack_names_new(db);
    const named_stack *s = cache ? stack_names_get(cache, stack_leak) : NULL;
    CHECK(s && s->frame_count == 4);
    if (s && s->frame_count == 4) {
        CHECK_STR_EQ(s->frames[1].name, "memrec_region_alloc");
        CHECK_STR_EQ(s->frames[2].name, "train_step");
        CHECK(strstr(s->key, "memrec_region_alloc\x1f"
                             "memrec.h\x1e") != NULL);
        CHECK(strstr(s->key, "train_step\x1f"
                             "app.c\x1e") != NULL);
    }
    stack_names_free(cache);
}

/* Runs memanalyze (built beside this test) and returns its output (malloc'ed). */
static char *run_memanalyze(const char *memanalyze, const char *args, int no_summaries) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, GMT_ENV_CACHE_DIR "=%s/cache %s %s %s %s 2>&1", tmpdir,
             no_summaries ? GMT_ENV_NO_SUMMARIES "=1" : "", memanalyze, args, trace_path);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(1, cap);
    CHECK(out != NULL);
    size_t n;
    while (p && out && (n = fread(out + len, 1, cap - 1 - len, p)) > 0)
        len += n;
    int status = p ? pclose(p) : -1;
    if (status != 0)
        fprintf(stderr, "%s: exit status %d\n%s\n", cmd, status, out ? out : "");
    CHECK(status == 0);
    return out;
}

static void check_commands(const char *memanalyze) {
    const char *commands[] = {"report", "report --json", "leaks", "leaks --json"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        char *out = run_memanalyze(memanalyze, commands[i], 0);
        char *scan = run_memanalyze(memanalyze, commands[i], 1);
        if (!out || !scan)
            break;
        if (!strstr(out, "app.c:42 train_step"))
            fprintf(stderr, "`%s` does not name train_step:\n%s\n", commands[i], out);
        CHECK(strstr(out, "app.c:42 train_step") != NULL);
        CHECK(strstr(out, "memrec.h:159") == NULL);
        CHECK_STR_EQ(out, scan); /* the summaries and the scans agree */
        free(out);
        free(scan);
    }
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    (void)cupti_segment; /* trace_build.h's; a CUPTI segment would be one block itself */
    if (tmpdir_make("inline") != 0)
        CHECK_SKIP("cannot make a temporary folder");
    char self[1024], memanalyze[1200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0);
    self[n > 0 ? n : 0] = 0;
    snprintf(memanalyze, sizeof memanalyze, "%s/../analyzer/memanalyze", dirname(self));
    CHECK(access(memanalyze, X_OK) == 0);

    char after_end[1024], in_stream[1024];
    build_trace(SYMBOLS_IN_STREAM);
    replay_it(db_path, DB_READ_ONLY);
    check_rows();
    check_sites();
    stack_text(stack_leak, in_stream, sizeof in_stream);

    build_trace(SYMBOLS_AFTER_END);
    replay_it(db_path, DB_READ_ONLY);
    check_rows();
    check_sites();
    CHECK_STR_EQ(stack_text(stack_leak, after_end, sizeof after_end), in_stream);
    CHECK_EQ_U64(q("SELECT value FROM meta WHERE key = 'clean_shutdown'"), 1);
    check_commands(memanalyze);
    return tmpdir_finish("test_inline_frames");
}
