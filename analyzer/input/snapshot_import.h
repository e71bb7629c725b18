/* snapshot_import.h — a PyTorch memory snapshot pickle becomes a trace.
 *
 * The snapshot's history is a ring buffer: what was live before its first
 * entry must be seeded from its final `segments`, by walking the history
 * backwards (as PyTorch's own viewer does). The importer writes that seed
 * as memory events followed by a seed_end marker, then the history as
 * events, the external annotations as markers and the frames as stacks —
 * so the analyzer replays a snapshot exactly like a recording. Expandable
 * segments are mapped one page per event (see snapshot_import.c). */
#ifndef GMT_SNAPSHOT_IMPORT_H
#define GMT_SNAPSHOT_IMPORT_H

#include "alloc_settings.h"
#include "trace_format.h"

#include <stddef.h>

/* What the database says about the snapshot beyond its events (meta keys of the same
 * names, written by the replay). */
typedef struct snapshot_facts {
    /* allocator_settings: the snapshot's `allocator_settings` dict, with what its
     * PYTORCH_CUDA_ALLOC_CONF string states and the dict has no key for; expandable segments
     * inferred (segment_map/segment_unmap entries, is_expandable segments) when neither says. */
    am_settings settings;
    const char *settings_source; /* "snapshot", "inferred" (nothing but the inference) or "none" */
    int timestamps;              /* 1: the history carries time_us (0: PyTorch <= 2.1, or none) */
    int history;                 /* 1: the snapshot has trace entries (0: segments only) */
} snapshot_facts;

/* The import in steps, for a trace written more than once or not to a file at all (the
 * analyzer replays a snapshot from a sink: replay_records). snapshot_import_open reads the
 * pickle, fills *facts (may be NULL) and works out each device's state before its history;
 * NULL with a one-line message (unreadable, hostile or malformed). snapshot_import_write
 * writes the trace through w, the same records each time it is called (with a fresh writer):
 * 0, or -1 with the writer's message. The trace's strings, frames and stacks are w's ids. */
typedef struct snapshot_import snapshot_import;
snapshot_import *snapshot_import_open(const char *pickle_path, snapshot_facts *facts, char *err,
                                      size_t errlen);
int snapshot_import_write(snapshot_import *imp, trace_writer *w, char *err, size_t errlen);
void snapshot_import_close(snapshot_import *imp);
/* snapshot_import_write through a sink writer (trace_writer_open_sink): the records a reader of
 * the trace file would yield, handed to sink. `imp` is a snapshot_import (void: the shape of
 * replay.h's replay_source). 0 or -1 with a message. */
int snapshot_import_source(void *imp, trace_record_sink sink, void *sink_ctx, char *err,
                           size_t errlen);

/* Reads the pickle at `pickle_path` and writes a trace to `trace_path`; fills *facts (may be
 * NULL). 0, or -1 with a one-line message (unreadable, hostile or malformed). */
int snapshot_import_file_facts(const char *pickle_path, const char *trace_path,
                               snapshot_facts *facts, char *err, size_t errlen);

/* snapshot_import_file_facts without the facts. */
int snapshot_import_file(const char *pickle_path, const char *trace_path, char *err, size_t errlen);

#endif
