/* trace_names.c — the words for the format's enums.
 *
 * Text reports, JSON and the SQLite tables all say "alloc", "block",
 * "pinned_host": these tables are the single spelling of each, so a query
 * written against one output works against the others. */
#include "trace_format.h"

#define NAME_OF(table, i) ((i) < sizeof(table) / sizeof(table[0]) ? table[i] : "unknown")

static const char *const op_names[TRACE_OP_COUNT] = {
    "alloc",        "free", "free_requested", "map",          "unmap",      "pool_trim",
    "alloc_failed", "oom",  "phys_create",    "phys_release", "va_reserve", "va_free",
};

static const char *const level_names[] = {"segment", "block"};
static const char *const kind_names[TRACE_KIND_COUNT] = {"device", "managed", "pinned_host"};
static const char *const source_names[TRACE_SOURCE_COUNT] = {"cupti", "torch", "nvtx", "memrec"};
static const char *const marker_names[TRACE_MARK_COUNT] = {
    "range_push", "range_pop",  "range_start", "range_end",
    "mark",       "step_begin", "step_end",    "seed_end",
};
static const char *const counter_names[TRACE_COUNTER_COUNT] = {"driver_free", "driver_total",
                                                               "pool_reserved", "pool_used"};

const char *trace_op_name(unsigned op) { return NAME_OF(op_names, op); }

const char *trace_level_name(unsigned level) { return NAME_OF(level_names, level); }

const char *trace_kind_name(unsigned kind) { return NAME_OF(kind_names, kind); }

const char *trace_source_name(unsigned source) { return NAME_OF(source_names, source); }

const char *trace_marker_kind_name(unsigned kind) { return NAME_OF(marker_names, kind); }

const char *trace_counter_kind_name(unsigned kind) { return NAME_OF(counter_names, kind); }

const char *trace_record_kind_name(unsigned kind) {
    switch (kind) {
    case TRACE_REC_PROCESS:
        return "process";
    case TRACE_REC_DEVICE:
        return "device";
    case TRACE_REC_MODULE:
        return "module";
    case TRACE_REC_STRING:
        return "string";
    case TRACE_REC_FRAME:
        return "frame";
    case TRACE_REC_SYMBOL:
        return "symbol";
    case TRACE_REC_STACK:
        return "stack";
    case TRACE_REC_MARKER:
        return "marker";
    case TRACE_REC_COUNTER:
        return "counter";
    case TRACE_REC_THREAD:
        return "thread";
    case TRACE_REC_END:
        return "end";
    case TRACE_REC_EVENT:
        return "event";
    }
    return "unknown";
}
