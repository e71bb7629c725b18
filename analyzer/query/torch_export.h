/* torch_export.h — a database as PyTorch's history has it (`memanalyze export --to pytorch`):
 * each device's memory events as the entries torch.cuda.memory._dump_snapshot writes in
 * device_traces, in event order; the final segments are layout.h's layout at the last event.
 *
 * Device memory only, events with event_id >= 1 (the seed is what a snapshot's reader
 * rebuilds from the final segments, walking the history backwards). The ops become PyTorch's
 * actions (model/torch_history.h's table read backwards): a block's alloc "alloc", its
 * free_requested "free_requested", its free "free_completed"; a segment's alloc
 * "segment_alloc", its free "segment_free", a mapped range's map and unmap "segment_map" and
 * "segment_unmap"; an oom "oom" with the driver's free bytes then (the last driver_free
 * sample at or before it, 0 when none). A segment only once (the event that made its segments
 * row, and the one that ended it: two reports of one segment, PyTorch's and the driver's, are
 * one entry). A segment no allocator sub-allocates (a plain cudaMalloc, a memrec region's
 * driver call) is also its own block: "alloc" right after its "segment_alloc",
 * "free_completed" right before its "segment_free". Ops a history has no action for
 * (alloc_failed, pool_trim, phys_create/release, va_reserve/free) are left out. A block's size
 * is its request where the database has one (the history's sizes are requests), else its
 * size. */
#ifndef GMT_TORCH_EXPORT_H
#define GMT_TORCH_EXPORT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define TORCH_NO_BLOCK INT64_MIN

typedef struct torch_event {
    const char *action; /* PyTorch's name: "alloc", "free_requested", ... */
    uint64_t addr, size, stream;
    uint64_t device_free; /* "oom" only */
    int64_t time_us;      /* since the first recorded event (see torch_export_timed) */
    int64_t stack_id;     /* its frames (stack_names.h); 0: none */
    int64_t event_id;     /* the database's row */
    int64_t block_id;     /* a block's entry (alloc, free_requested, free_completed): the event
                             id of its alloc (allocations.alloc_id, <= 0 when seeded);
                             TORCH_NO_BLOCK: none */
} torch_event;

/* The devices a history needs a list for: the greatest device of the devices table + 1 (0
 * when it has none). */
int torch_export_device_count(sqlite3 *db);

/* Whether the events have times (meta `timestamps`; 0: an input without them, a PyTorch <= 2.1
 * snapshot, whose entries then get no time_us either). */
int torch_export_timed(sqlite3 *db);

/* The last event id (the end state's moment); 0 when there is none. */
int64_t torch_export_last_event(sqlite3 *db);

/* Hands each entry of `device`'s history to fn, in event order; fn returns 0, or -1 to stop
 * (torch_export_events then returns -1 with err untouched). 0, or -1 with a one-line message
 * in err. */
typedef int (*torch_event_fn)(void *ctx, const torch_event *e);
int torch_export_events(sqlite3 *db, int device, torch_event_fn fn, void *ctx, char *err,
                        size_t errlen);

/* The allocator settings the replay followed (meta `allocator_settings`: the text of one JSON
 * object with PyTorch's names, a snapshot's allocator_settings dict) as a tree of values, for
 * the snapshot's allocator_settings. */
typedef enum torch_value_type {
    TORCH_VALUE_NULL,
    TORCH_VALUE_BOOL,
    TORCH_VALUE_INT,
    TORCH_VALUE_FLOAT,
    TORCH_VALUE_STR,
    TORCH_VALUE_LIST,
    TORCH_VALUE_DICT
} torch_value_type;

typedef struct torch_value {
    torch_value_type type;
    int64_t i;                 /* BOOL (0/1), INT */
    double f;                  /* FLOAT */
    char *str;                 /* STR */
    struct torch_value *items; /* LIST, DICT: the values */
    char **keys;               /* DICT: the keys */
    size_t n;
} torch_value;

/* The settings as a DICT (empty when the database has none, or text that is not a JSON
 * object). 0, or -1 when out of memory. Free with torch_value_free. */
int torch_export_settings(sqlite3 *db, torch_value *out);
void torch_value_free(torch_value *v);

#endif
