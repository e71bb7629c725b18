/* test_rec_api.c — memrec.h, used the way a program uses it: through the
 * header's wrappers, which find libmemrec.so's functions at run time.
 *
 * Built twice from this file:
 *   test_rec_api         linked with the recorder and exporting its symbols
 *                        (-rdynamic, as libmemrec.so exports them): no-ops
 *                        before a session (nothing remembered, nothing
 *                        written later), then every call's marker and block
 *                        event read back exactly, stacks starting at the
 *                        program's call site.
 *   test_rec_api_dlopen  not linked with the recorder (TEST_API_DLOPEN): in
 *                        fresh child processes, (1) no libmemrec.so: every
 *                        wrapper is a silent no-op; (2) libmemrec.so loaded
 *                        RTLD_LOCAL with MEMREC_OUTPUT set: its constructor
 *                        records, the wrappers find it by its soname, and
 *                        the trace written at exit holds every call. */
#include "memrec.h"

#include "check.h"
#include "gmt_env.h"
#include "rec_readback.h"
#include "trace_format.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void check_marker(const readback *rb, size_t i, unsigned kind, const char *name,
                         int64_t value) {
    if (i >= rb->n_markers) {
        fprintf(stderr, "marker %zu (%s) missing\n", i, name);
        check_failures++;
        return;
    }
    const trace_marker *m = &rb->markers[i];
    if (m->kind != kind || strcmp(rb->marker_names[i], name) ||
        strcmp(rb->marker_domains[i], "memrec") || m->value != value || m->range_id != 0) {
        fprintf(stderr,
                "marker %zu: got kind %u \"%s\" domain \"%s\" value %" PRId64
                "; want %u \"%s\" \"memrec\" %" PRId64 "\n",
                i, m->kind, rb->marker_names[i], rb->marker_domains[i], m->value, kind, name,
                value);
        check_failures++;
    }
}

static void check_event(const readback *rb, size_t i, unsigned op, uint64_t addr, uint64_t size,
                        uint32_t device) {
    if (i >= rb->n_events) {
        fprintf(stderr, "event %zu missing\n", i);
        check_failures++;
        return;
    }
    const trace_event *e = &rb->events[i];
    if (e->op != op || e->addr != addr || e->size != size || e->requested != size ||
        e->device != device || e->level != TRACE_LEVEL_BLOCK || e->kind != TRACE_KIND_DEVICE ||
        e->source != TRACE_SOURCE_MEMREC) {
        fprintf(stderr,
                "event %zu: got %s 0x%" PRIx64 " +%" PRIu64 " dev %u level %u source %u; want %s "
                "0x%" PRIx64 " +%" PRIu64 " dev %u\n",
                i, trace_op_name(e->op), e->addr, e->size, e->device, e->level, e->source,
                trace_op_name(op), addr, size, device);
        check_failures++;
    }
}

#ifndef TEST_API_DLOPEN
/* ---- test_rec_api: the recorder linked in -------------------------------- */

#include "rec_api.h"
#include "rec_core.h"

#define REGION_A 0x7f0000001000ull
#define REGION_B 0x7f0000002000ull

static int fake_resolver(uint64_t addr, rec_region_place *out) {
    out->device = addr == REGION_B ? 3 : 9;
    out->kind = TRACE_KIND_DEVICE;
    return 0;
}

/* The call site the stacks must start at (exported: dladdr names it). */
__attribute__((noinline)) void test_api_call_site(void);
__attribute__((noinline)) void test_api_call_site(void) {
    memrec_region_alloc((const void *)(uintptr_t)REGION_A, 4096, 1);
    __asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
}

/* The name of the function holding ip, by the dynamic symbol table. */
static const char *symbol_at(uint64_t ip) {
    Dl_info info;
    return ip && dladdr((void *)(uintptr_t)(ip - 1), &info) && info.dli_sname ? info.dli_sname
                                                                              : "?";
}

static void test_linked(void) {
    rec_regions_set_resolver(fake_resolver);
    /* No session: no-ops, and nothing remembered for later. */
    CHECK(memrec_enabled() == 0);
    memrec_step_begin(1);
    memrec_mark("unrecorded");
    memrec_region_alloc((const void *)(uintptr_t)REGION_B, 64, 0);
    CHECK(!rec_regions_any());

    rec_config c;
    CHECK(rb_session_start(&c, "api.zst", 16) == 0);
    CHECK(memrec_enabled() == 1);
    memrec_region_free((const void *)(uintptr_t)REGION_B); /* its alloc was not recorded */
    memrec_step_begin(7);
    memrec_mark("checkpoint");
    test_api_call_site();
    memrec_region_alloc((const void *)(uintptr_t)REGION_B, 512, MEMREC_DEVICE_AUTO);
    memrec_region_alloc(NULL, 16, 0);                           /* ignored */
    memrec_region_alloc((const void *)(uintptr_t)0x5000, 0, 0); /* ignored */
    memrec_region_free((const void *)(uintptr_t)REGION_A);
    memrec_region_free((const void *)(uintptr_t)REGION_A); /* twice: nothing more */
    memrec_region_free((const void *)(uintptr_t)REGION_B);
    char long_name[400];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    memrec_mark(long_name);
    memrec_mark(NULL);
    memrec_step_end(7);
    memrec_step_begin(-2);
    CHECK(rec_session_stop() == 0);
    CHECK(memrec_enabled() == 0);
    memrec_mark("after the session");

    readback rb;
    CHECK(rb_read(c.path, &rb) == 0);
    check_marker(&rb, 0, TRACE_MARK_STEP_BEGIN, "step 7", 7);
    check_marker(&rb, 1, TRACE_MARK_MARK, "checkpoint", 0);
    long_name[255] = '\0'; /* names are cut to 255 bytes */
    check_marker(&rb, 2, TRACE_MARK_MARK, long_name, 0);
    check_marker(&rb, 3, TRACE_MARK_MARK, "", 0);
    check_marker(&rb, 4, TRACE_MARK_STEP_END, "step 7", 7);
    check_marker(&rb, 5, TRACE_MARK_STEP_BEGIN, "step -2", -2);
    CHECK_EQ_U64(rb.n_markers, 6);
    check_event(&rb, 0, TRACE_OP_ALLOC, REGION_A, 4096, 1);
    check_event(&rb, 1, TRACE_OP_ALLOC, REGION_B, 512, 3);
    check_event(&rb, 2, TRACE_OP_FREE, REGION_A, 4096, 1);
    check_event(&rb, 3, TRACE_OP_FREE, REGION_B, 512, 3);
    CHECK_EQ_U64(rb.n_events, 4);
    CHECK(!rec_regions_any());

    /* The stack of the first alloc starts at the program: the innermost
     * frame is the call site or the header's wrapper inlined or not, never
     * the recorder's exported function. */
    uint32_t stack = rb.n_events ? rb.events[0].stack_id : 0;
    CHECK(stack != 0 && stack < 256);
    if (stack && stack < 256) {
        const char *inner = symbol_at(rb.frames[rb.stacks[stack].frame_id].ip);
        uint32_t parent = rb.stacks[stack].parent_id;
        const char *outer =
            parent < 256 ? symbol_at(rb.frames[rb.stacks[parent].frame_id].ip) : "?";
        CHECK(strcmp(inner, "memrec_region_alloc") != 0);
        if (strcmp(inner, "test_api_call_site") && strcmp(outer, "test_api_call_site")) {
            fprintf(stderr, "stack starts at %s, %s: not at test_api_call_site\n", inner, outer);
            check_failures++;
        }
    }
    rb_free(&rb);
}

#else
/* ---- test_rec_api_dlopen: only the header -------------------------------- */

static int run_child(void (*body)(const char *), const char *arg) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        body(arg);
        exit(check_failures ? 1 : 0);
    }
    int status = 0;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status)
                                                                           : -1;
}

static void absent_body(const char *unused) {
    (void)unused;
    CHECK(memrec_enabled() == 0);
    memrec_step_begin(1);
    memrec_step_end(1);
    memrec_mark("nobody listens");
    memrec_region_alloc((const void *)(uintptr_t)0x1000, 64, MEMREC_DEVICE_AUTO);
    memrec_region_free((const void *)(uintptr_t)0x1000);
    /* Looked up once, found nothing. */
    CHECK(memrec_state_ == 1 && !memrec_fns_.mark && !memrec_fns_.enabled);
}

static void loaded_body(const char *library) {
    char out[128];
    rb_path(out, sizeof out, "loaded.zst");
    setenv(GMT_ENV_MEMREC_OUTPUT, out, 1);
    setenv(GMT_ENV_MEMREC_NO_CUPTI, "1", 1);
    setenv(GMT_ENV_MEMREC_QUIET, "1", 1);
    /* RTLD_LOCAL: not in the global namespace, found through its soname. */
    CHECK(dlopen(library, RTLD_LAZY | RTLD_LOCAL) != NULL);
    CHECK(memrec_enabled() == 1);
    memrec_step_begin(4);
    memrec_mark("loaded");
    memrec_region_alloc((const void *)(uintptr_t)0x6000, 64, 5);
    memrec_region_free((const void *)(uintptr_t)0x6000);
    memrec_step_end(4);
    /* exit() runs the library's atexit stop: the trace is complete */
}

static void test_dlopen(const char *library) {
    if (access(library, R_OK) != 0)
        CHECK_SKIP("%s not built", library);
    CHECK(run_child(absent_body, NULL) == 0);
    CHECK(run_child(loaded_body, library) == 0);
    char path[128];
    rb_path(path, sizeof path, "loaded.zst");
    readback rb;
    CHECK(rb_read(path, &rb) == 0);
    check_marker(&rb, 0, TRACE_MARK_STEP_BEGIN, "step 4", 4);
    check_marker(&rb, 1, TRACE_MARK_MARK, "loaded", 0);
    check_marker(&rb, 2, TRACE_MARK_STEP_END, "step 4", 4);
    CHECK_EQ_U64(rb.n_markers, 3);
    check_event(&rb, 0, TRACE_OP_ALLOC, 0x6000, 64, 5);
    check_event(&rb, 1, TRACE_OP_FREE, 0x6000, 64, 5);
    CHECK_EQ_U64(rb.n_events, 2);
    CHECK(rb.n_events == 2 && rb.events[0].stack_id != 0);
    rb_free(&rb);
}
#endif

int main(int argc, char **argv) {
    rb_tmpdir("test_rec_api");
#ifndef TEST_API_DLOPEN
    (void)argc;
    (void)argv;
    test_linked();
    return rb_finish("test_rec_api");
#else
    if (argc < 3)
        CHECK_SKIP("usage: test_rec_api_dlopen SOURCE_DIR LIBMEMREC");
    test_dlopen(argv[2]);
    return rb_finish("test_rec_api_dlopen");
#endif
}
