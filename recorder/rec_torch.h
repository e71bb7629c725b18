/* rec_torch.h — PyTorch's caching-allocator history, live: the C side of
 * recorder/python/memrec_torch.py.
 *
 * The Python side drains torch.cuda.memory._snapshot()'s device_traces
 * from a Python thread (never from a CUDA callback) and hands the new
 * entries over in bulk through ctypes. Python interns too: each distinct
 * frame (function, file, line) and each distinct stack (a list of frame
 * ids) crosses once, as a numbered definition; entries then carry only a
 * stack id. Frames become symbolic tokens of the stack trie (rec_stack.h),
 * named by this module's resolver on the writer thread.
 *
 * Each entry becomes the event model/torch_history.h's table says (the one
 * analyzer/input/snapshot_import.c applies to a pickle's history, so the
 * analyzer replays live history and pickles alike): block alloc,
 * free_requested and free (size = the allocator's rounding of the request),
 * segment alloc, free, map and unmap (joining CUPTI's cuMemAlloc and cuMemMap
 * by address), and for an oom a DRIVER_FREE counter (device_free), then an oom
 * event; snapshot entries and unknown actions make nothing. Entries carry
 * torch_history.h's action numbers (gmt_torch_action), which
 * python/memrec_torch.py's ACTIONS spells out. PyTorch stamps entries with
 * Unix time in microseconds; they are put on the trace clock
 * (CLOCK_MONOTONIC) with an anchor taken once per session, and never later
 * than now.
 *
 * Every function is exported (memrec_torch_*, see libmemrec.map), returns
 * at once when nothing records, and never fails loudly. */
#ifndef GMT_REC_TORCH_H
#define GMT_REC_TORCH_H

#include "torch_history.h"

#include <stdint.h>

#define MEMREC_EXPORT_TORCH __attribute__((visibility("default")))

/* An entry is MEMREC_TORCH_FIELDS consecutive uint64 values, in this order. */
enum memrec_torch_field {
    MEMREC_TORCH_TIME_US = 0, /* PyTorch's time_us (Unix time) */
    MEMREC_TORCH_ACTION,      /* gmt_torch_action (torch_history.h) */
    MEMREC_TORCH_ADDR,
    MEMREC_TORCH_SIZE, /* the size PyTorch recorded (the request for blocks) */
    MEMREC_TORCH_STREAM,
    MEMREC_TORCH_DEVICE,
    MEMREC_TORCH_STACK,       /* a stack id from memrec_torch_define_stacks; 0 = none */
    MEMREC_TORCH_DEVICE_FREE, /* oom: the driver's free bytes; else 0 */
    MEMREC_TORCH_POOL,        /* the private pool of the segment holding ADDR when the history was
                                 drained (segment_pool_id (a, b) as a * 2^32 + b); 0 = the default */
    MEMREC_TORCH_FIELDS
};

/* Actions beyond torch_history.h's, for PyTorch's annotations (record_function
 * ranges, ProfilerStep#N: external_annotations START/END, or the legacy
 * user_defined history entries): a late range marker at the entry's time,
 * named by the frame whose id is in MEMREC_TORCH_STACK (its function name). */
#define MEMREC_TORCH_RANGE_START 0x100u
#define MEMREC_TORCH_RANGE_END 0x101u

/* 1 while a session records (the Python side skips its drains otherwise). */
MEMREC_EXPORT_TORCH int memrec_torch_recording(void);

/* Defines frames first_id .. first_id+count-1 (ids start at 1): names and
 * files are copied (NULL = ""). A frame whose file ends in ".py" is a Python
 * frame, any other (PyTorch's C++ frames) an already symbolized one.
 * Returns 0, -1 for id 0 or out of memory. Defining an id again replaces
 * nothing (the first definition stays: tokens already written name it). */
MEMREC_EXPORT_TORCH int memrec_torch_define_frames(uint32_t first_id, uint32_t count,
                                                   const char *const *functions,
                                                   const char *const *files, const uint32_t *lines);

/* Defines stacks first_id .. first_id+count-1: stack i has depths[i]
 * frames, taken in turn from frame_ids (innermost first, as PyTorch lists
 * them). Each is interned in the stack trie at once. Returns 0, -1 for id 0,
 * an undefined frame id or out of memory (that stack is then "no stack"). */
MEMREC_EXPORT_TORCH int memrec_torch_define_stacks(uint32_t first_id, uint32_t count,
                                                   const uint32_t *depths,
                                                   const uint32_t *frame_ids);

/* Emits `count` entries (count * MEMREC_TORCH_FIELDS values), which should
 * be in time order. Returns how many became trace records; entries with an
 * action that makes no event (snapshot, unknown) are skipped. They go
 * through the late lane (rec_core.h). */
MEMREC_EXPORT_TORCH uint32_t memrec_torch_emit(const uint64_t *fields, uint32_t count);

/* The history was just turned on: from now on the writer holds back what
 * is newer than the last drain (rec_core.h, "the late lane"), so PyTorch's
 * block events, written a drain later, still land in time order. */
MEMREC_EXPORT_TORCH void memrec_torch_history_on(void);

/* The history is no longer drained (a drain failed, or it was turned
 * off): the writer stops holding records back for it. */
MEMREC_EXPORT_TORCH void memrec_torch_history_off(void);

/* Every history entry up to time_us (Unix time in µs, read just before the
 * snapshot that was drained) has been emitted. */
MEMREC_EXPORT_TORCH void memrec_torch_drained(uint64_t time_us);

/* The next drain comes within `within_ms` from now (the drains' budget can
 * space them up to 30 s apart): the writer holds newer records back that
 * long, so PyTorch's entries still land in time order (rec_late_expect:
 * at least 2 s, at most 60 s). */
MEMREC_EXPORT_TORCH void memrec_torch_expect_drain(uint64_t within_ms);

/* Describes a device (torch.cuda.get_device_properties): written once. */
MEMREC_EXPORT_TORCH void memrec_torch_device(uint32_t device, uint64_t total_bytes,
                                             const char *name);

/* One warning line through the recorder's log, once per `code` (0..63). */
MEMREC_EXPORT_TORCH void memrec_torch_warn(uint32_t code, const char *message);

/* The optimizer step hook (memrec_torch.py): step `ended` ends (< 0: none)
 * and step `begun` begins, as memrec_step_end/begin would mark them, in
 * domain REC_OPTIMIZER_DOMAIN. Marks nothing once the program marked a
 * step itself (NVTX or memrec.h: one source of steps per run) and returns
 * 0 then, 1 when it marked. */
MEMREC_EXPORT_TORCH int memrec_torch_optimizer_step(int64_t ended, int64_t begun);

/* 1 once the program marked a step itself (NVTX names, memrec.h). */
MEMREC_EXPORT_TORCH int memrec_torch_program_steps(void);

/* The allocator settings PyTorch reports it runs with (its snapshot's
 * allocator_settings, written in PYTORCH_CUDA_ALLOC_CONF syntax by
 * memrec_torch.py), as a mark TRACE_TORCH_SETTINGS_PREFIX "<conf>" in
 * TRACE_ALLOCATOR_DOMAIN (trace_format.h). Returns 1 when marked, 0 when
 * not recording or when the text is too long for a mark (never cut). */
MEMREC_EXPORT_TORCH int memrec_torch_allocator_settings(const char *conf);

/* Names for the blocks the model's tensors live in (memrec_torch.py's walk at
 * each optimizer step): `count` marks of domain TRACE_TENSOR_DOMAIN
 * (trace_format.h, TRACE_FORMAT.md "Tensor names"), mark i with value
 * addrs[i] (a storage's address) and name texts[i] ("<category> <name>[
 * <count>]"), all stamped now. They go through the late lane, after the
 * history entries the caller drained just before (so the blocks they name
 * precede them in the trace), and never count as the program's steps (a
 * name may hold "step" and a number). Texts longer than a mark's 255 bytes,
 * NULL or empty texts and address 0 are skipped, never cut. Returns how
 * many were written: 0 when nothing records or the history is not drained
 * (its lane is closed: nothing they could name is in the trace). */
MEMREC_EXPORT_TORCH int memrec_torch_tensor_names(uint32_t count, const uint64_t *addrs,
                                                  const char *const *texts);

/* One line at exit through the recorder's log: what draining cost. */
MEMREC_EXPORT_TORCH void memrec_torch_report(const char *message);

/* Trace time of a PyTorch time_us in the current session (tests). */
uint64_t rec_torch_trace_time(uint64_t time_us);

#endif
