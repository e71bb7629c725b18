/* trace_symbolize_dw.h — the libdw side of the symbolizer (internal to
 * schema/trace_symbolize.c): one ELF module opened at its recorded load
 * bias, and the inline chain at an address inside it.
 *
 * Kept apart from trace_symbolize.c so the trace plumbing (scan, copy,
 * rename) reads without DWARF details in the way, and the DWARF walk can be
 * read on its own. */
#ifndef GMT_TRACE_SYMBOLIZE_DW_H
#define GMT_TRACE_SYMBOLIZE_DW_H

#include "trace_format.h"

#include <stddef.h>
#include <stdint.h>

typedef struct dw_module dw_module;

/* One level of the inline chain. Strings belong to the dw_module and stay
 * valid until its next dw_module_symbolize call. NULL = unknown. */
typedef struct dw_symbol_entry {
    const char *function, *file;
    uint32_t line;
} dw_symbol_entry;

/* Innermost (inlined callee) first, the function that holds the address
 * last. count 0: nothing known at that address. */
typedef struct dw_symbol {
    unsigned count;
    dw_symbol_entry entries[TRACE_SYMBOL_MAX_INLINE];
} dw_symbol;

/* Opens the ELF file at `path` as loaded with load bias `bias` (the
 * module record's base). When `build_id` is given, the file's GNU build-id
 * must match it (the raw id, or the whole note). Returns NULL with a
 * one-line reason in `why` ("module /x is not on disk", "... build-id
 * differs") when the file cannot be used. */
dw_module *dw_module_open(const char *path, uint64_t bias, const uint8_t *build_id,
                          uint32_t build_id_len, char *why, size_t whylen);

/* Resolves the absolute address `addr` (already moved back into the call
 * instruction for return addresses). DWARF first (function, file, line,
 * inline chain); the ELF symbol table when there is no DWARF. Returns 0, -1
 * when out of memory. */
int dw_module_symbolize(dw_module *m, uint64_t addr, dw_symbol *out);

void dw_module_close(dw_module *m);

#endif
