/* test_symbolize.c — offline symbolization against known answers.
 *
 * This program is its own subject: built with -g, it calls a() -> b() ->
 * c() (noinline) and c() runs an always_inline function; each level stores a
 * return address, so the ips point at known call lines (CALL_AT notes
 * each call's __LINE__). It writes a trace with the codec itself —
 * a MODULE record for its own executable found with dl_iterate_phdr (path,
 * load bias, build-id) and native FRAME records at those ips — runs the
 * symbolizer and checks names, file and lines, the inline chain included.
 * Then the cases that must not hurt: a module missing on disk, a rebuilt
 * module (other build-id), a second run (nothing rewritten), a trace cut
 * inside its last frame, and the original bytes kept as the new file's
 * prefix. */
#include "check.h"
#include "trace_format.h"
#include "trace_symbolize.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* Makes a call and notes its source line: both are the line of the macro. */
#define CALL_AT(call, line_var)                                                                    \
    do {                                                                                           \
        call;                                                                                      \
        line_var = __LINE__;                                                                       \
    } while (0)

/* ---- the subject ----------------------------------------------------------- */

enum { IP_INLINED, IP_IN_B, IP_IN_A, IP_IN_MAIN, IP_COUNT };
static uint64_t ips[IP_COUNT];
static unsigned line_in_inlined, line_in_c, line_in_b, line_in_a, line_in_main;
static volatile int sink; /* work after each call: no tail calls */

NOINLINE void capture_caller(void);
NOINLINE void capture_caller(void) {
    ips[IP_INLINED] = (uint64_t)(uintptr_t)__builtin_return_address(0);
    sink++;
}

static inline __attribute__((always_inline)) void inlined_step(void) {
    CALL_AT(capture_caller(), line_in_inlined);
    sink++;
}

NOINLINE void c(void);
NOINLINE void c(void) {
    CALL_AT(inlined_step(), line_in_c);
    ips[IP_IN_B] = (uint64_t)(uintptr_t)__builtin_return_address(0);
    sink++;
}

NOINLINE void b(void);
NOINLINE void b(void) {
    CALL_AT(c(), line_in_b);
    ips[IP_IN_A] = (uint64_t)(uintptr_t)__builtin_return_address(0);
    sink++;
}

NOINLINE void a(void);
NOINLINE void a(void) {
    CALL_AT(b(), line_in_a);
    ips[IP_IN_MAIN] = (uint64_t)(uintptr_t)__builtin_return_address(0);
    sink++;
}

/* ---- this executable as a MODULE record --------------------------------------- */

typedef struct self_module {
    char path[4096];
    uint64_t bias, size;
    uint8_t build_id[64];
    uint32_t build_id_len;
    int found;
} self_module;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    self_module *m = arg;
    uint64_t target = (uint64_t)(uintptr_t)&a, hi = 0;
    int holds = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t start = info->dlpi_addr + ph->p_vaddr;
        holds |= target >= start && target < start + ph->p_memsz;
        if (ph->p_vaddr + ph->p_memsz > hi)
            hi = ph->p_vaddr + ph->p_memsz;
    }
    if (!holds)
        return 0;
    m->bias = info->dlpi_addr;
    m->size = hi;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(uintptr_t)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const void *)p;
            const uint8_t *name = p + sizeof *nh, *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
                nh->n_descsz <= sizeof m->build_id) {
                memcpy(m->build_id, desc, nh->n_descsz);
                m->build_id_len = nh->n_descsz;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    ssize_t n = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
    m->path[n > 0 ? n : 0] = 0;
    m->found = n > 0;
    return 1;
}

/* ---- traces ------------------------------------------------------------------ */

static char tmpdir[] = "/tmp/gmt-symbolize-XXXXXX";
static char warnings[8][1024];
static int warning_count;

static void collect_warning(void *ctx, const char *message) {
    (void)ctx;
    if (warning_count < 8)
        snprintf(warnings[warning_count], sizeof warnings[0], "%s", message);
    warning_count++;
}

static const char *tmp_path(const char *name) {
    static char buf[8][512];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", tmpdir, name);
    return p;
}

/* Writes a trace of the subject's ips: module 1 = `module_path` with the
 * given build-id, frames 1..IP_COUNT (the last without a module id: found by
 * address), one stack and one event. `flush_every` > 0 ends a zstd frame
 * after that many frames (for the cut-trace case). */
static void write_trace(const char *path, const self_module *m, const char *module_path,
                        const uint8_t *build_id, uint32_t build_id_len) {
    char err[256];
    trace_writer *w = trace_writer_open(path, NULL, err, sizeof err);
    CHECK(w != NULL);
    if (!w)
        return;
    trace_module mod = {1,
                        m->bias,
                        m->size,
                        {module_path, (uint32_t)strlen(module_path)},
                        {(const char *)build_id, build_id_len}};
    CHECK(trace_writer_module(w, &mod) == 0);
    uint32_t parent = 0;
    for (int i = 0; i < IP_COUNT; i++) {
        trace_frame f = {
            .kind = TRACE_FRAME_NATIVE, .module_id = i == IP_IN_MAIN ? 0 : 1, .ip = ips[i]};
        uint32_t id = trace_writer_frame(w, &f);
        CHECK_EQ_U64(id, (uint64_t)i + 1);
        parent = trace_writer_stack(w, parent, id);
    }
    trace_event ev = {
        .ts_ns = 1000, .addr = 0x7000000, .size = 4096, .requested = 4096, .stack_id = parent};
    CHECK(trace_writer_event(w, &ev) == 0);
    CHECK(trace_writer_flush(w) == 0);
    CHECK(trace_writer_event(w, &ev) == 0); /* a second frame, for the cut case */
    CHECK(trace_writer_close(w, NULL, err, sizeof err) == 0);
}

/* What a trace says about its frames after symbolization. */
typedef struct symbols_seen {
    char strings[64][256];
    trace_symbol_entry chain[IP_COUNT + 1][TRACE_SYMBOL_MAX_INLINE];
    uint32_t chain_len[IP_COUNT + 1];
    int symbol_records, events, warnings, clean_end;
} symbols_seen;

static void read_symbols(const char *path, symbols_seen *s) {
    memset(s, 0, sizeof *s);
    char err[256];
    trace_reader *r = trace_reader_open(path, err, sizeof err);
    CHECK(r != NULL);
    if (!r)
        return;
    trace_record rec;
    while (trace_reader_next(r, &rec) == 1) {
        if (rec.kind == TRACE_REC_STRING && rec.u.string.string_id < 64)
            snprintf(s->strings[rec.u.string.string_id], 256, "%s", rec.u.string.text.ptr);
        if (rec.kind == TRACE_REC_EVENT)
            s->events++;
        if (rec.kind != TRACE_REC_SYMBOL)
            continue;
        s->symbol_records++;
        uint32_t id = rec.u.symbol.frame_id;
        CHECK(id >= 1 && id <= IP_COUNT);
        if (id < 1 || id > IP_COUNT)
            continue;
        s->chain_len[id] = rec.u.symbol.count;
        memcpy(s->chain[id], rec.u.symbol.entries, rec.u.symbol.count * sizeof *s->chain[id]);
    }
    s->warnings = (int)trace_reader_warning_count(r);
    s->clean_end = trace_reader_get_stats(r)->clean_end;
    trace_reader_close(r);
}

static const char *str(const symbols_seen *s, uint32_t id) { return id < 64 ? s->strings[id] : ""; }

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* One level of a chain: function name, this source file, line. */
static void check_entry(const symbols_seen *s, int frame, unsigned level, const char *function,
                        unsigned line) {
    CHECK(level < s->chain_len[frame + 1]);
    const trace_symbol_entry *e = &s->chain[frame + 1][level];
    CHECK_STR_EQ(str(s, e->function_id), function);
    CHECK(ends_with(str(s, e->file_id), "test_symbolize.c"));
    CHECK_EQ_U64(e->line, line);
}

static size_t file_bytes(const char *path, char **out) {
    FILE *f = fopen(path, "rb");
    *out = NULL;
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc(n > 0 ? (size_t)n : 1);
    size_t got = *out ? fread(*out, 1, (size_t)n, f) : 0;
    fclose(f);
    return got;
}

/* ---- the cases ----------------------------------------------------------------- */

static void test_names_lines_and_inline_chain(const self_module *m) {
    const char *path = tmp_path("good.zst");
    write_trace(path, m, m->path, m->build_id, m->build_id_len);
    char *before = NULL, *after = NULL;
    size_t before_len = file_bytes(path, &before);

    trace_symbolize_result res;
    char err[512] = "";
    warning_count = 0;
    CHECK(trace_symbolize_file(path, &res, collect_warning, NULL, err, sizeof err) == 0);
    CHECK_EQ_U64(warning_count, 0);
    CHECK_EQ_U64(res.events, 2);
    CHECK_EQ_U64(res.native_frames, IP_COUNT);
    CHECK_EQ_U64(res.symbolized, IP_COUNT);
    CHECK_EQ_U64(res.already_symbolized, 0);
    CHECK_EQ_U64(res.unresolved, 0);
    CHECK(res.rewritten);

    /* The recorded bytes are untouched: the new file starts with them. */
    size_t after_len = file_bytes(path, &after);
    CHECK_EQ_U64(res.file_bytes, after_len);
    CHECK(after_len > before_len && before && after && !memcmp(before, after, before_len));
    free(before);
    free(after);

    symbols_seen s;
    read_symbols(path, &s);
    CHECK_EQ_U64(s.symbol_records, IP_COUNT);
    CHECK_EQ_U64(s.events, 2);
    CHECK_EQ_U64(s.warnings, 0);
    CHECK(s.clean_end);
    /* In c(), inside the inlined step: the callee first, then c at its call. */
    CHECK_EQ_U64(s.chain_len[IP_INLINED + 1], 2);
    check_entry(&s, IP_INLINED, 0, "inlined_step", line_in_inlined);
    check_entry(&s, IP_INLINED, 1, "c", line_in_c);
    CHECK_EQ_U64(s.chain_len[IP_IN_B + 1], 1);
    check_entry(&s, IP_IN_B, 0, "b", line_in_b);
    CHECK_EQ_U64(s.chain_len[IP_IN_A + 1], 1);
    check_entry(&s, IP_IN_A, 0, "a", line_in_a);
    /* recorded without a module id: found by its address */
    check_entry(&s, IP_IN_MAIN, 0, "main", line_in_main);

    /* Twice is once: nothing left to do, the file is not rewritten. */
    before_len = file_bytes(path, &before);
    CHECK(trace_symbolize_file(path, &res, collect_warning, NULL, err, sizeof err) == 0);
    CHECK_EQ_U64(res.symbolized, 0);
    CHECK_EQ_U64(res.already_symbolized, IP_COUNT);
    CHECK(!res.rewritten);
    after_len = file_bytes(path, &after);
    CHECK(after_len == before_len && before && after && !memcmp(before, after, before_len));
    free(before);
    free(after);
    read_symbols(path, &s);
    CHECK_EQ_U64(s.symbol_records, IP_COUNT);
}

/* A module that is gone, or another build of it: frames stay as they were,
 * one warning, the trace is not touched. */
static void test_unusable_module(const self_module *m, const char *module_path,
                                 const uint8_t *build_id, uint32_t build_id_len,
                                 const char *expected_warning) {
    const char *path = tmp_path("unusable.zst");
    write_trace(path, m, module_path, build_id, build_id_len);
    char *before = NULL, *after = NULL;
    size_t before_len = file_bytes(path, &before);
    trace_symbolize_result res;
    char err[512] = "";
    warning_count = 0;
    CHECK(trace_symbolize_file(path, &res, collect_warning, NULL, err, sizeof err) == 0);
    CHECK_EQ_U64(warning_count, 1);
    CHECK(strstr(warnings[0], expected_warning) != NULL);
    if (!strstr(warnings[0], expected_warning))
        fprintf(stderr, "warning was: %s\n", warnings[0]);
    CHECK_EQ_U64(res.symbolized, 0);
    CHECK_EQ_U64(res.unresolved, IP_COUNT);
    CHECK(!res.rewritten);
    size_t after_len = file_bytes(path, &after);
    CHECK(after_len == before_len && before && after && !memcmp(before, after, before_len));
    free(before);
    free(after);
    symbols_seen s;
    read_symbols(path, &s);
    CHECK_EQ_U64(s.symbol_records, 0);
    CHECK_EQ_U64(s.events, 2);
}

/* A recording killed inside its last zstd frame: the complete frames keep
 * their records, the partial one is dropped, the symbols follow. */
static void test_cut_trace(const self_module *m) {
    const char *path = tmp_path("cut.zst");
    write_trace(path, m, m->path, m->build_id, m->build_id_len);
    struct stat st;
    CHECK(stat(path, &st) == 0);
    CHECK(truncate(path, st.st_size - 3) == 0);
    trace_symbolize_result res;
    char err[512] = "";
    warning_count = 0;
    CHECK(trace_symbolize_file(path, &res, collect_warning, NULL, err, sizeof err) == 0);
    CHECK_EQ_U64(res.events, 1);
    CHECK_EQ_U64(res.symbolized, IP_COUNT);
    CHECK_EQ_U64(warning_count, 1);
    CHECK(strstr(warnings[0], "incomplete frame was dropped") != NULL);
    symbols_seen s;
    read_symbols(path, &s);
    CHECK_EQ_U64(s.events, 1);
    CHECK_EQ_U64(s.symbol_records, IP_COUNT);
    CHECK_EQ_U64(s.warnings, 0); /* no damage: the partial frame is gone, not garbled */
    CHECK(!s.clean_end);         /* and the END record it held is not invented */
    check_entry(&s, IP_IN_B, 0, "b", line_in_b);
}

static void test_not_a_trace(void) {
    const char *path = tmp_path("not-a-trace");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("hello", f);
        fclose(f);
    }
    char err[512] = "";
    CHECK(trace_symbolize_file(path, NULL, NULL, NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "not a gpumemtrace trace") != NULL);
    CHECK(trace_symbolize_file(tmp_path("missing.zst"), NULL, NULL, NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "cannot open") != NULL);
}

int main(void) {
    CALL_AT(a(), line_in_main);
    self_module m = {0};
    dl_iterate_phdr(find_self, &m);
    CHECK(m.found);
    if (!m.found)
        return check_finish("test_symbolize");
    if (!mkdtemp(tmpdir))
        CHECK_SKIP("cannot create a temporary directory");

    test_names_lines_and_inline_chain(&m);
    test_unusable_module(&m, "/nonexistent/gmt/libgone.so", NULL, 0, "not on disk");
    if (m.build_id_len) {
        uint8_t other[64];
        memcpy(other, m.build_id, m.build_id_len);
        other[0] ^= 0xff;
        test_unusable_module(&m, m.path, other, m.build_id_len, "not the one recorded");
    }
    test_cut_trace(&m);
    test_not_a_trace();

    const char *names[] = {"good.zst", "unusable.zst", "cut.zst", "not-a-trace"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(tmp_path(names[i]));
    rmdir(tmpdir);
    return check_finish("test_symbolize");
}
