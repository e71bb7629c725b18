/* rec_modules.h — the loaded-module map the writer needs to turn an ip into
 * (module, ip) for offline symbolization: path, load bias, extent and GNU
 * build-id of every ELF object in the process, from dl_iterate_phdr.
 *
 * Modules loaded later (dlopen: libtorch_cuda.so, CUDA's own libraries) are
 * found by rescanning when an ip falls outside every known module and the
 * loader's add counter moved, so no dlopen interposition is needed. Owned and
 * used by the writer thread only. */
#ifndef GMT_REC_MODULES_H
#define GMT_REC_MODULES_H

#include "trace_format.h"

typedef struct rec_modules rec_modules;

rec_modules *rec_modules_new(void);
void rec_modules_free(rec_modules *m);

/* Rescans the loaded objects and writes a MODULE record for each new one.
 * Returns 0, -1 on a writer error. */
int rec_modules_refresh(rec_modules *m, trace_writer *w);

/* The module id holding `ip` (rescanning once if the loader changed), 0 when
 * none does. */
uint32_t rec_modules_find(rec_modules *m, trace_writer *w, uint64_t ip);

#endif
