/* test_synth.c — the synthetic training traces are what they claim to be.
 *
 * Reads traces written by sim_run back through the codec and checks them
 * against the configuration and against an independent replay: every event
 * is applied to a fresh allocator model in apply mode (addresses given), and
 * every operation must fit — blocks inside segments, frees of live blocks,
 * segments freed only when empty. Then the known answers: the planted leak
 * is exactly leak_bytes per step at train.py:88, steps are the configured
 * ones, several devices and streams appear, OOMs appear when the device is
 * small, and the same seed gives the same bytes. */
#include "alloc_model.h"
#include "check.h"
#include "training_sim.h"

#include <unistd.h>

#define MAX_DEV 8

static char tmpdir[] = "/tmp/gmt-synth-XXXXXX";

typedef struct replay {
    am_model *model[MAX_DEV];
    uint64_t apply_errors, events, segment_events, block_allocs, frees, free_requested;
    uint64_t ooms, alloc_failed, steps_pushed, streams_seen_mask, devices_seen_mask;
    uint64_t leak_allocs, leak_bytes_wrong;
    uint32_t leak_frame;    /* frame id of train.py:88 */
    uint32_t leak_file_id;  /* string id of "train.py" */
    uint32_t *stack_parent; /* by stack id */
    uint32_t *stack_frame;
    size_t stacks_cap;
    uint64_t leak_bytes;
} replay;

static void remember_stack(replay *rp, const trace_stack *s) {
    if (s->stack_id >= rp->stacks_cap) {
        size_t cap = rp->stacks_cap ? rp->stacks_cap * 2 : 1024;
        while (cap <= s->stack_id)
            cap *= 2;
        rp->stack_parent = realloc(rp->stack_parent, cap * sizeof(uint32_t));
        rp->stack_frame = realloc(rp->stack_frame, cap * sizeof(uint32_t));
        rp->stacks_cap = cap;
    }
    rp->stack_parent[s->stack_id] = s->parent_id;
    rp->stack_frame[s->stack_id] = s->frame_id;
}

static int stack_has_frame(const replay *rp, uint32_t stack, uint32_t frame) {
    for (int depth = 0; stack && stack < rp->stacks_cap && depth < 256; depth++) {
        if (rp->stack_frame[stack] == frame)
            return 1;
        stack = rp->stack_parent[stack];
    }
    return 0;
}

static void apply(replay *rp, const trace_event *ev) {
    rp->events++;
    CHECK(ev->device < MAX_DEV);
    if (ev->device >= MAX_DEV)
        return;
    rp->devices_seen_mask |= 1ULL << ev->device;
    rp->streams_seen_mask |= 1ULL << (ev->stream & 63);
    am_model *m = rp->model[ev->device];
    am_error e = AM_OK;
    if (ev->level == TRACE_LEVEL_SEGMENT) {
        rp->segment_events++;
        if (ev->op == TRACE_OP_ALLOC)
            e = am_segment_insert(m, ev->addr, ev->size, ev->stream, 0);
        else if (ev->op == TRACE_OP_FREE)
            e = am_segment_remove(m, ev->addr);
        else if (ev->op == TRACE_OP_ALLOC_FAILED)
            rp->alloc_failed++;
    } else {
        switch (ev->op) {
        case TRACE_OP_ALLOC:
            rp->block_allocs++;
            CHECK(ev->size >= am_round_size(ev->requested)); /* unsplit blocks keep their size */
            e = am_block_place(m, ev->addr, ev->size, ev->requested, ev->stream, 0);
            if (stack_has_frame(rp, ev->stack_id, rp->leak_frame)) {
                rp->leak_allocs++;
                if (ev->requested != rp->leak_bytes)
                    rp->leak_bytes_wrong++;
            }
            break;
        case TRACE_OP_FREE_REQUESTED:
            rp->free_requested++;
            e = am_block_mark_pending(m, ev->addr);
            break;
        case TRACE_OP_FREE:
            rp->frees++;
            e = am_block_release(m, ev->addr);
            break;
        case TRACE_OP_OOM:
            rp->ooms++;
            break;
        default:
            CHECK(!"unexpected block op");
        }
    }
    if (e != AM_OK && rp->apply_errors++ < 5)
        fprintf(stderr, "event %llu (%s %s at 0x%llx, %llu B): %s\n",
                (unsigned long long)rp->events, trace_level_name(ev->level), trace_op_name(ev->op),
                (unsigned long long)ev->addr, (unsigned long long)ev->size, am_strerror(e));
}

static replay *run_and_replay(const sim_config *cfg, const char *name, sim_result *res) {
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    trace_writer *w = trace_writer_open(path, NULL, err, sizeof err);
    CHECK(w != NULL);
    CHECK(sim_run(cfg, w, res, err, sizeof err) == 0);
    CHECK(trace_writer_close(w, NULL, err, sizeof err) == 0);

    replay *rp = calloc(1, sizeof *rp);
    rp->leak_bytes = cfg->leak_bytes;
    for (int i = 0; i < MAX_DEV; i++)
        rp->model[i] = am_model_new(NULL);
    trace_reader *r = trace_reader_open(path, err, sizeof err);
    CHECK(r != NULL);
    if (!r)
        return rp;
    trace_record rec;
    while (trace_reader_next(r, &rec) == 1) {
        switch (rec.kind) {
        case TRACE_REC_EVENT:
            apply(rp, &rec.u.event);
            break;
        case TRACE_REC_STACK:
            remember_stack(rp, &rec.u.stack);
            break;
        case TRACE_REC_STRING:
            if (!strcmp(rec.u.string.text.ptr, SIM_LEAK_FILE))
                rp->leak_file_id = rec.u.string.string_id;
            break;
        case TRACE_REC_FRAME:
            if (rec.u.frame.kind == TRACE_FRAME_PYTHON && rec.u.frame.file_id == rp->leak_file_id &&
                rec.u.frame.line == SIM_LEAK_LINE)
                rp->leak_frame = rec.u.frame.frame_id;
            break;
        case TRACE_REC_MARKER:
            if (rec.u.marker.kind == TRACE_MARK_RANGE_PUSH)
                rp->steps_pushed++;
            break;
        default:
            break;
        }
    }
    CHECK_EQ_U64(trace_reader_warning_count(r), 0);
    trace_reader_close(r);
    return rp;
}

static void free_replay(replay *rp) {
    for (int i = 0; i < MAX_DEV; i++)
        am_model_free(rp->model[i]);
    free(rp->stack_parent);
    free(rp->stack_frame);
    free(rp);
}

static void test_leak_and_consistency(void) {
    sim_config cfg = sim_config_default();
    cfg.steps = 30;
    cfg.leak_bytes = 3 * 1000 * 1000 + 7; /* odd on purpose: requested != rounded */
    sim_result res;
    replay *rp = run_and_replay(&cfg, "leak.zst", &res);
    CHECK_EQ_U64(rp->apply_errors, 0);
    CHECK_EQ_U64(rp->events, res.events);
    CHECK_EQ_U64(res.steps_completed, 30);
    CHECK_EQ_U64(rp->steps_pushed, 30);
    CHECK(rp->leak_frame != 0);
    CHECK_EQ_U64(rp->leak_allocs, 30);
    CHECK_EQ_U64(rp->leak_bytes_wrong, 0);
    CHECK_EQ_U64(res.leaked_bytes, 30 * cfg.leak_bytes);
    CHECK(rp->free_requested > 0); /* the side stream's inputs */
    CHECK(rp->segment_events > 0 && rp->block_allocs > rp->frees);
    CHECK_EQ_U64(rp->ooms, 0);
    /* What stays live at the end: parameters, optimizer state, gradients and the leak,
     * as seen by the independent replay. */
    am_stats_info st = am_stats(rp->model[0]);
    uint64_t h = cfg.hidden, per_layer = (3 + 1 + 4 + 4) * h * h * 2 + 2 * h * 2;
    /* parameters, their gradients, and AdamW's two fp32 states (2 x 2 bytes per bf16 byte) */
    uint64_t expect_requested = cfg.layers * per_layer * (1 + 1 + 4) + 30 * cfg.leak_bytes;
    CHECK_EQ_U64(st.requested_bytes, expect_requested);
    CHECK(st.reserved_bytes >= st.allocated_bytes);
    free_replay(rp);
}

static void test_devices_streams_events(void) {
    sim_config cfg = sim_config_default();
    cfg.devices = 3;
    cfg.streams = 4;
    cfg.max_events = 54321;
    cfg.fragment = 1;
    sim_result res;
    replay *rp = run_and_replay(&cfg, "multi.zst", &res);
    CHECK_EQ_U64(rp->apply_errors, 0);
    CHECK_EQ_U64(rp->events, 54321);
    CHECK_EQ_U64(rp->devices_seen_mask, 0x7);
    CHECK((rp->streams_seen_mask & 0xf) == 0xf); /* streams 0..3 */
    free_replay(rp);
}

static void test_small_device_ooms(void) {
    sim_config cfg = sim_config_default();
    cfg.steps = 10;
    cfg.fragment = 1;
    cfg.device_memory = 5ULL << 29; /* 2.5 GiB: too small once optimizer state exists */
    sim_result res;
    replay *rp = run_and_replay(&cfg, "oom.zst", &res);
    CHECK_EQ_U64(rp->apply_errors, 0);
    CHECK(res.ooms > 0);
    CHECK_EQ_U64(rp->ooms, res.ooms);
    CHECK(rp->alloc_failed >= 2 * rp->ooms); /* a failure, the cache freed, a retry */
    free_replay(rp);
}

int main(void) {
    if (!mkdtemp(tmpdir))
        return 1;
    test_leak_and_consistency();
    test_devices_streams_events();
    test_small_device_ooms();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        return 1;
    return check_finish("test_synth");
}
