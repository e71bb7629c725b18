/* torch_context.h — what `export --to pytorch` adds to torch_export.h's history: the
 * annotations (steps and NVTX ranges), each block's category, and where a native frame
 * without a symbol sits in its module. The facts; export_pytorch.c prints them.
 *
 * What the real consumers write and read (PyTorch's sources, read for this):
 *  - torch/csrc/cuda/memory_snapshot.cpp, _memory_snapshot_pickled: the snapshot's
 *    "external_annotations" is a list of dicts, each the annotation's metadata then "device"
 *    and "time_us"; _initRecordAnnotations records {"name": the record_function's name,
 *    "stage": "START"} when a range opens and "END" when it closes. Our reader
 *    (input/snapshot.c, read_annotations) reads device, stage, name, time_us, in time order.
 *  - PyTorch 2.4-2.6 recorded those ranges in device_traces instead, as entries with action
 *    "user_defined" whose one frame has the stage as its name and the range's name as its
 *    filename (input/snapshot_import.c, user_defined, reads them so).
 *  - torch/utils/viz/MemoryViz.js, annotate_snapshot: an entry's "category", when present, is
 *    added to snapshot.categories; when any is present and none is "unknown", it then pushes
 *    "unknown" to `snapshot.categores` (sic) — a TypeError in the versions with that typo, so
 *    an export with categories has an entry that says "unknown". process_alloc_data colours
 *    each allocation by categories.indexOf(element.category || 'unknown').
 *  - torch/csrc/profiler/unwind/unwind.cpp, symbolize: an address PyTorch cannot symbolize is
 *    Frame{filename "??", funcname "<unwind unsupported>", line 0}, and addr2line's answer for
 *    one it looks up without a symbol is "??" and "??:0"; PyTorch keeps no offset.
 *
 * Memory: the annotations (two per step or range); for categories the live blocks'
 * (category_stream.h: block_categories read in alloc_id order beside the entries; a database
 * without that table, a map of every block); the modules table for offsets. Never the events. */
#ifndef GMT_TORCH_CONTEXT_H
#define GMT_TORCH_CONTEXT_H

#include "torch_export.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* One START or END of a range: every NVTX range with a name (the `ranges` view; one still open
 * at the end has its START only), and every step not already such a range (a memrec.h step, a
 * step from marks: the `steps` table, named as there, "step N" when it has no name).
 *
 * time_us is the microsecond it happened in (ns since the first event, as torch_export.h's
 * entries), one later when that keeps the order of the events around it: a reader (ours,
 * MemoryViz's) puts an annotation before the entries of its microsecond, while a recording's
 * event at or before the marker within that microsecond came first (steps.begin_event_id counts
 * it before the step); the later microsecond is taken when no event follows the marker within
 * its own. Two events of one microsecond on either side of a marker cannot both keep their
 * side. */
typedef struct torch_annotation {
    int64_t time_us;
    int64_t ts_ns;
    int end;    /* 0: "START", 1: "END" */
    char *name; /* owned by the list */
} torch_annotation;

typedef struct torch_annotations {
    torch_annotation *items; /* in time order; at one time, ENDs of ranges begun earlier first */
    size_t n;
} torch_annotations;

/* 0, or -1 with a one-line message in err. Free with torch_annotations_free. */
int torch_annotations_read(sqlite3 *db, torch_annotations *out, char *err, size_t errlen);
void torch_annotations_free(torch_annotations *a);
/* "START" or "END". */
const char *torch_annotation_stage(const torch_annotation *a);

/* Each entry's category (its block's: categories.h's sweep, no user rules), streamed as the
 * entries of one device go by (category_stream.h): memory bounded by the live blocks. */
typedef struct torch_categories torch_categories;

/* *out: the stream, or NULL when the analyzer knows none (every block unknown, or none at all:
 * the export then writes no "category"). 0, or -1 with a one-line message in err. */
int torch_categories_read(sqlite3 *db, torch_categories **out, char *err, size_t errlen);
/* Starts a device's entries (torch_export_events: from event 1, the seed's blocks live). 0, or
 * -1 with a one-line message in err. */
int torch_categories_begin(torch_categories *c, char *err, size_t errlen);
/* The category name of entry e, given every entry of the device in order ("alloc" keeps its
 * block, "free_completed" forgets it); "unknown" for an entry of no block (a segment's, an
 * oom) or of a block the analyzer does not know. NULL with a one-line message in err. */
const char *torch_category_of(torch_categories *c, const torch_event *e, char *err, size_t errlen);
void torch_categories_free(torch_categories *c);

/* The modules (path, load base), for a native frame's offset. */
typedef struct torch_modules torch_modules;
/* NULL when out of memory (a database without modules gives an empty one). */
torch_modules *torch_modules_read(sqlite3 *db);
/* The file offset of ip in the module at path (ip - load_base, schema.sql's modules): 1 and
 * *offset, or 0 when the module or its base is unknown. */
int torch_module_offset(const torch_modules *m, const char *path, uint64_t ip, uint64_t *offset);
void torch_modules_free(torch_modules *m);

#endif
