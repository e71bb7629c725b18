/* snapshot_import.h — a PyTorch memory snapshot pickle becomes a trace.
 *
 * The snapshot's history is a ring buffer: what was live before its first
 * entry must be seeded from its final `segments`, by walking the history
 * backwards (as PyTorch's own viewer does). The importer writes that seed
 * as memory events followed by a seed_end marker, then the history as
 * events, the external annotations as markers and the frames as stacks —
 * so the analyzer replays a snapshot exactly like a recording. */
#ifndef GMT_SNAPSHOT_IMPORT_H
#define GMT_SNAPSHOT_IMPORT_H

#include <stddef.h>

/* Reads the pickle at `pickle_path` and writes a trace to `trace_path`.
 * 0, or -1 with a one-line message (unreadable, hostile or malformed). */
int snapshot_import_file(const char *pickle_path, const char *trace_path, char *err, size_t errlen);

#endif
