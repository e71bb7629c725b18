/* rec_nvtx.h — libmemrec.so as an NVTX injection library.
 *
 * Every copy of the NVTX headers compiled into the program (the program's
 * own, libtorch's, libcudart's ...) finds the injection library through
 * NVTX_INJECTION64_PATH at its first NVTX call and calls these entry points
 * with its own export table; each call fills that copy's function slots with
 * the recorder's handlers, which turn ranges and marks into markers
 * (rec_emit_marker) and memory-extension regions into block-level events
 * (rec_api.h). The entry points keep no per-copy state, so any
 * number of copies may attach.
 *
 * The types are spelled without the NVTX headers so that this header can be
 * included before or after them; they are the same types (NVTX_API is
 * empty on Linux). Both symbols are exported from libmemrec.so. */
#ifndef GMT_REC_NVTX_H
#define GMT_REC_NVTX_H

#include <stddef.h>
#include <stdint.h>

#define REC_NVTX_EXPORT __attribute__((visibility("default")))

/* NvtxInitializeInjectionNvtxFunc_t: fills the CORE and CORE2 modules of the
 * calling NVTX copy. Returns 1 (attached), 0 when the export table is not
 * usable (NVTX then turns every call into a no-op). */
REC_NVTX_EXPORT int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t table_id));

/* NvtxExtInitializeInjectionFunc_t: fills the memory extension's slots
 * (heap and region registration); other extensions stay no-ops. */
struct nvtxExtModuleInfo_t;
REC_NVTX_EXPORT int InitializeInjectionNvtxExtension(struct nvtxExtModuleInfo_t *module_info);

/* Longest marker name kept, in bytes (rec_emit_marker cuts at 255 too);
 * wide strings are converted to UTF-8 up to this length. */
#define REC_NVTX_NAME_MAX 255

/* Converts a wchar_t (UTF-32 on Linux) string to UTF-8 into out (NUL
 * terminated, cut at a character boundary to fit). Invalid code points
 * become U+FFFD. Returns the bytes written, without the NUL. */
size_t rec_nvtx_wide_to_utf8(const wchar_t *in, char *out, size_t out_size);

#endif
