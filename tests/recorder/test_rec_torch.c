/* test_rec_torch.c — rec_torch.c through its exported entry points, as
 * memrec_torch.py calls them: frames and stacks defined once, entries
 * emitted in bulk, read back from the trace exactly: each PyTorch action's
 * op/level/sizes (the snapshot importer's mapping), the oom's counter, the
 * Python and C++ frames of the stacks, and the Unix-time -> trace-clock
 * conversion (and its clamp at "now"); tensor names as marks of domain
 * memrec.tensor, after the entries they name. */
#include "check.h"
#include "rec_core.h"
#include "rec_readback.h"
#include "rec_torch.h"

#include "alloc_model.h" /* am_round_size: the rounding the recorder applies */

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static readback rb;

static uint64_t wall_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Checks frame `depth` (0 = innermost) of trace stack `stack`. */
static void check_frame(uint32_t stack, unsigned depth, const char *function, const char *file,
                        uint32_t line, uint8_t kind) {
    for (unsigned i = 0; i < depth && stack; i++)
        stack = rb.stacks[stack].parent_id;
    CHECK(stack != 0 && stack < RB_IDS);
    if (!stack || stack >= RB_IDS)
        return;
    const trace_frame *f = &rb.frames[rb.stacks[stack].frame_id];
    CHECK_STR_EQ(rb_string(&rb, f->function_id), function);
    CHECK_STR_EQ(f->file_id ? rb_string(&rb, f->file_id) : "", file);
    CHECK_EQ_U64(f->line, line);
    CHECK_EQ_U64(f->kind, kind);
}

static void check_event(const trace_event *e, uint8_t op, uint8_t level, uint64_t addr,
                        uint64_t size, uint64_t requested, uint64_t stream) {
    CHECK_EQ_U64(e->op, op);
    CHECK_EQ_U64(e->level, level);
    CHECK_EQ_U64(e->addr, addr);
    CHECK_EQ_U64(e->size, size);
    CHECK_EQ_U64(e->requested, requested);
    CHECK_EQ_U64(e->stream, stream);
    CHECK_EQ_U64(e->source, TRACE_SOURCE_TORCH);
    CHECK_EQ_U64(e->kind, TRACE_KIND_DEVICE);
}

/* Tensor names (memrec_torch_tensor_names): marks of domain memrec.tensor
 * with the storage's address as value, written through the late lane after
 * the history entries emitted before them (in trace order and in time), all
 * stamped with one reading of the clock; skipped whole when too long for a
 * mark (255 bytes), empty, NULL or at address 0; none without a session or
 * while the history is not drained; and a name with "step" and a number in
 * it never counts as the program marking steps. */
static void test_tensor_names(void) {
    enum { A = 0x7f0000200000ull, MIB = 1u << 20 };
    char at_limit[256], over[257];
    int n = snprintf(at_limit, sizeof at_limit, "parameter ");
    memset(at_limit + n, 'w', sizeof at_limit - 1 - (size_t)n);
    at_limit[255] = 0; /* 255 bytes: fits */
    memcpy(over, at_limit, 255);
    over[255] = 'w';
    over[256] = 0; /* 256 bytes: skipped, never cut */
    const uint64_t addrs[] = {A, A + 1024, A + 2048, A + 4096, A + 5120, A + 6144, 0, A + 7168};
    const char *texts[] = {"parameter layers.0.weight",
                           "gradient layers.0.weight.grad",
                           "optimizer_state layers.0.weight.step 2",
                           NULL,
                           "",
                           over,
                           "parameter at.address.zero",
                           at_limit};
    CHECK_EQ_U64(memrec_torch_tensor_names(8, addrs, texts), 0); /* no session */

    rec_config c;
    CHECK(rb_session_start(&c, "names.zst", 0) == 0);
    CHECK_EQ_U64(memrec_torch_tensor_names(8, addrs, texts), 0); /* history not drained */
    memrec_torch_history_on();
    uint64_t t = wall_us();
    const uint64_t entries[][MEMREC_TORCH_FIELDS] = {
        {t, GMT_TORCH_SEGMENT_ALLOC, A, 2 * MIB, 0, 0, 0, 0, 0},
        {t + 5000000, GMT_TORCH_ALLOC, A, 1000, 0, 0, 0, 0, 0}, /* clamped to now */
    };
    CHECK_EQ_U64(memrec_torch_emit(&entries[0][0], 2), 2);
    CHECK_EQ_U64(memrec_torch_tensor_names(0, addrs, texts), 0);
    CHECK_EQ_U64(memrec_torch_tensor_names(8, NULL, texts), 0);
    CHECK_EQ_U64(memrec_torch_tensor_names(8, addrs, texts), 4);
    CHECK_EQ_U64(memrec_torch_program_steps(), 0); /* "...step 2" named a tensor, not a step */
    memrec_torch_drained(wall_us());
    memrec_torch_history_off();
    CHECK_EQ_U64(memrec_torch_tensor_names(8, addrs, texts), 0); /* lane closed */
    CHECK(rec_session_stop() == 0);

    CHECK(rb_read(c.path, &rb) == 0);
    CHECK_EQ_U64(rb.n_events, 2);
    CHECK_EQ_U64(rb.n_markers, 4);
    const uint64_t want_value[] = {A, A + 1024, A + 2048, A + 7168};
    const char *want_name[] = {texts[0], texts[1], texts[2], at_limit};
    for (size_t i = 0; i < 4 && i < rb.n_markers; i++) {
        const trace_marker *m = &rb.markers[i];
        CHECK_EQ_U64(m->kind, TRACE_MARK_MARK);
        CHECK_STR_EQ(rb.marker_domains[i], TRACE_TENSOR_DOMAIN);
        CHECK_STR_EQ(rb.marker_names[i], want_name[i]);
        CHECK_EQ_U64((uint64_t)m->value, want_value[i]);
        CHECK_EQ_U64(m->ts_ns, rb.markers[0].ts_ns); /* one clock reading */
        if (rb.n_events == 2)
            CHECK(m->ts_ns >= rb.events[1].ts_ns);
    }
    rb_free(&rb);
    /* In the file, both events come before the first mark. */
    trace_reader *r = rb_open(c.path);
    CHECK(r != NULL);
    size_t at = 0, last_event = 0, first_mark = 0;
    trace_record rec;
    while (r && trace_reader_next(r, &rec) == 1) {
        at++;
        if (rec.kind == TRACE_REC_EVENT)
            last_event = at;
        else if (rec.kind == TRACE_REC_MARKER && !first_mark)
            first_mark = at;
    }
    if (r)
        trace_reader_close(r);
    CHECK(last_event > 0 && first_mark > last_event);
}

int main(void) {
    CHECK_EQ_U64(am_round_size(0), 512);
    CHECK_EQ_U64(am_round_size(512), 512);
    CHECK_EQ_U64(am_round_size(513), 1024);
    CHECK_EQ_U64(memrec_torch_emit(NULL, 1), 0);

    rb_tmpdir("test_rec_torch");
    rec_config c;
    CHECK(rb_session_start(&c, "torch.zst", 64) == 0);
    CHECK(memrec_torch_recording() == 1);

    const char *functions[] = {"train_step", "<module>", "at::native::empty_cuda"};
    const char *files[] = {"train.py", "train.py", "TensorFactories.cpp"};
    const uint32_t lines[] = {88, 120, 42};
    CHECK(memrec_torch_define_frames(1, 3, functions, files, lines) == 0);
    CHECK(memrec_torch_define_frames(0, 1, functions, files, lines) == -1);
    /* stack 1: train_step <- <module>; stack 2: empty_cuda <- train_step <- <module> */
    const uint32_t depths[] = {2, 3};
    const uint32_t frame_ids[] = {1, 2, 3, 1, 2};
    CHECK(memrec_torch_define_stacks(1, 2, depths, frame_ids) == 0);
    const uint32_t bad_depth[] = {1}, bad_frame[] = {77};
    CHECK(memrec_torch_define_stacks(3, 1, bad_depth, bad_frame) == -1);

    uint64_t before_ns = rec_clock_ns();
    uint64_t t = wall_us() - 1000000; /* one second ago */
    enum { A = 0x7f0000000000ull, MIB = 1u << 20 };
    const uint64_t entries[][MEMREC_TORCH_FIELDS] = {
        /* the first four in a CUDA graph's private pool (1, 0) */
        {t, GMT_TORCH_SEGMENT_ALLOC, A, 2 * MIB, 5, 0, 2, 0, 1ull << 32},
        {t, GMT_TORCH_ALLOC, A, 1000, 5, 0, 1, 0, 1ull << 32},
        {t + 1, GMT_TORCH_FREE_REQUESTED, A, 1000, 5, 0, 1, 0, 1ull << 32},
        {t + 2, GMT_TORCH_FREE_COMPLETED, A, 1000, 5, 0, 0, 0, 1ull << 32},
        {t + 3, 99, A, 1, 0, 0, 0, 0, 0}, /* unknown action: skipped */
        {t + 4, GMT_TORCH_SEGMENT_FREE, A, 2 * MIB, 5, 0, 0, 0, 0},
        {t + 5, GMT_TORCH_SEGMENT_MAP, A + 4 * MIB, 6 * MIB, 0, 1, 0, 0, 0}, /* 3 small pages */
        {t + 6, GMT_TORCH_SEGMENT_UNMAP, A + 4 * MIB, 6 * MIB, 0, 1, 0, 0, 0},
        {t + 7, GMT_TORCH_OOM, 0, 3 * MIB + 1, 0, 1, 1, 123456, 0},
        {t + 10000000, GMT_TORCH_ALLOC, A, 0, 0, 0, 0, 0, 0}, /* 10 s ahead: clamped */
    };
    CHECK_EQ_U64(memrec_torch_emit(&entries[0][0], 10), 9);
    uint64_t after_ns = rec_clock_ns();
    memrec_torch_device(1, 16ull << 30, "Fake GPU");
    CHECK(rec_session_stop() == 0);
    CHECK(memrec_torch_recording() == 0);
    CHECK_EQ_U64(memrec_torch_emit(&entries[0][0], 1), 0); /* no session: nothing */

    CHECK(rb_read(c.path, &rb) == 0);
    const trace_event *events = rb.events;
    CHECK_EQ_U64(rb.n_events, 11);
    if (rb.n_events == 11) {
        check_event(&events[0], TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, A, 2 * MIB, 2 * MIB, 5);
        check_event(&events[1], TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, A, 1024, 1000, 5);
        check_event(&events[2], TRACE_OP_FREE_REQUESTED, TRACE_LEVEL_BLOCK, A, 1024, 1000, 5);
        check_event(&events[3], TRACE_OP_FREE, TRACE_LEVEL_BLOCK, A, 1024, 1000, 5);
        check_event(&events[4], TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, A, 2 * MIB, 2 * MIB, 5);
        /* PyTorch's one segment_map of three pages: a map per page, as cuMemMap was called */
        for (int k = 0; k < 3; k++)
            check_event(&events[5 + k], TRACE_OP_MAP, TRACE_LEVEL_SEGMENT,
                        A + (uint64_t)(4 + 2 * k) * MIB, 2 * MIB, 2 * MIB, 0);
        check_event(&events[8], TRACE_OP_UNMAP, TRACE_LEVEL_SEGMENT, A + 4 * MIB, 6 * MIB, 6 * MIB,
                    0);
        check_event(&events[9], TRACE_OP_OOM, TRACE_LEVEL_BLOCK, 0, 3 * MIB + 512, 3 * MIB + 1, 0);
        check_event(&events[10], TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, A, 512, 1, 0);
        CHECK_EQ_U64(events[5].device, 1);
        for (int k = 0; k < 11; k++) /* the private pool's events, and only they, carry it */
            CHECK_EQ_U64(events[k].pool, k < 4 ? 1ull << 32 : 0);
        CHECK_EQ_U64(events[3].stack_id, 0);
        check_frame(events[1].stack_id, 0, "train_step", "train.py", 88, TRACE_FRAME_PYTHON);
        check_frame(events[1].stack_id, 1, "<module>", "train.py", 120, TRACE_FRAME_PYTHON);
        CHECK_EQ_U64(rb.stacks[events[1].stack_id].parent_id != 0, 1);
        check_frame(events[0].stack_id, 0, "at::native::empty_cuda", "TensorFactories.cpp", 42,
                    TRACE_FRAME_OTHER);
        check_frame(events[0].stack_id, 1, "train_step", "train.py", 88, TRACE_FRAME_PYTHON);
        /* One second before the emit, on the trace clock (5 ms of slack). */
        uint64_t expect_lo = before_ns - 1000000000ull - 5000000ull;
        uint64_t expect_hi = after_ns - 1000000000ull + 5000000ull;
        CHECK(events[0].ts_ns >= expect_lo && events[0].ts_ns <= expect_hi);
        CHECK_EQ_U64(events[2].ts_ns - events[1].ts_ns, 1000); /* 1 us apart */
        CHECK(events[10].ts_ns >= before_ns && events[10].ts_ns <= after_ns);
    }
    CHECK_EQ_U64(rb.n_counters, 1);
    CHECK_EQ_U64(rb.counters[0].kind, TRACE_COUNTER_DRIVER_FREE);
    CHECK_EQ_U64(rb.counters[0].value, 123456);
    CHECK_EQ_U64(rb.counters[0].device, 1);
    rb_free(&rb);
    test_tensor_names();
    return rb_finish("test_rec_torch");
}
