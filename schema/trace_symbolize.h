/* trace_symbolize.h — offline symbolization of a trace's native frames.
 *
 * The recorder stores native frames as (ip, module) only: resolving names
 * inside a CUDA callback would be far too slow. After the run, on the host
 * that recorded it (where libtorch_cuda.so and friends exist), this module
 * reads the trace, resolves every native frame that has no SYMBOL record yet
 * with libdw (function, file, line, and the inline chain), and adds the
 * SYMBOL records to the trace, which is then self-contained.
 *
 * Safety: the recorded trace is never modified in place. The symbolizer
 * writes a copy with the new records appended (PATH.symbolize-XXXXXX beside
 * it), syncs it and renames it over PATH; a symbolization killed at any
 * moment leaves the original trace untouched. A trace with nothing left to
 * symbolize is not rewritten at all, so running it twice is harmless.
 *
 * Its own library (gmt_symbolize) so the codec, linked into libmemrec.so,
 * stays free of libdw. Errors are returned; warnings (a module missing on
 * disk, a build-id that does not match) go to the caller's callback. */
#ifndef GMT_TRACE_SYMBOLIZE_H
#define GMT_TRACE_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What one run found and did. */
typedef struct trace_symbolize_result {
    uint64_t events;             /* memory events in the trace */
    uint64_t native_frames;      /* native frames in the trace */
    uint64_t already_symbolized; /* ... that had a SYMBOL record before this run */
    uint64_t symbolized;         /* ... that got one now */
    uint64_t unresolved;         /* ... left without one (module missing, no symbol) */
    uint64_t file_bytes;         /* size of the trace afterwards */
    int rewritten;               /* 1: the trace file was replaced */
    int clean_end;               /* 1: the writer closed the trace (an END record, clean) */
} trace_symbolize_result;

/* Called once per problem worth a line to the user ("module /x/libfoo.so is
 * not on disk: its 12 frames stay unsymbolized"); may be NULL. */
typedef void (*trace_symbolize_warn_fn)(void *ctx, const char *message);

/* Symbolizes the trace at `path` in place (see above). Returns 0 (also when
 * nothing needed symbolizing), or -1 with err filled when the trace cannot
 * be read or the new file cannot be written; the trace is unchanged then.
 * `res` may be NULL. */
int trace_symbolize_file(const char *path, trace_symbolize_result *res,
                         trace_symbolize_warn_fn warn, void *warn_ctx, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
