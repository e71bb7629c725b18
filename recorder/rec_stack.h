/* rec_stack.h — native stack capture and the process-wide stack trie.
 *
 * Application threads capture with libunwind and intern lock-free: a stack
 * seen before costs one hash over its ips and one table probe; a new one
 * inserts its missing trie nodes with compare-and-swap. The writer reads
 * nodes back (parent, ip) to write FRAME and STACK records, translating the
 * recorder's node ids into the trace's stack ids. Tables are fixed-size
 * anonymous mappings touched lazily; when full, stacks come back as 0 and
 * are counted, never an error. */
#ifndef GMT_REC_STACK_H
#define GMT_REC_STACK_H

#include <stdint.h>

#define REC_STACK_MAX_DEPTH 256

/* Frames that are not native ips — Python frames, frames PyTorch reported —
 * enter the same trie as tokens: REC_FRAME_SYMBOLIC set, the owner's id in
 * bits 56..62, the owner's own value in bits 0..55. The owner registers a
 * resolver that the writer thread calls once per distinct token to learn
 * the frame's names (so the program's threads never format strings). */
#define REC_FRAME_SYMBOLIC (1ull << 63)
#define REC_FRAME_OWNER_SHIFT 56
#define REC_FRAME_VALUE_MASK ((1ull << REC_FRAME_OWNER_SHIFT) - 1)

typedef struct rec_symbolic_frame {
    const char *function, *file; /* valid until the resolver is called again */
    uint32_t line;
    uint8_t kind; /* TRACE_FRAME_PYTHON or TRACE_FRAME_OTHER */
} rec_symbolic_frame;

/* Returns 0 and fills *out, or -1 for an unknown value. Called on the
 * writer thread only. */
typedef int (*rec_symbolic_resolver)(uint64_t value, rec_symbolic_frame *out);

/* Registers an owner of symbolic frames; returns its token prefix
 * (REC_FRAME_SYMBOLIC | id << REC_FRAME_OWNER_SHIFT), or 0 when all 127
 * owner ids are taken. Registering the same resolver twice returns the
 * same prefix. */
uint64_t rec_stack_register_symbolic(rec_symbolic_resolver resolver);

/* A splicer rewrites a captured native stack (innermost first) before it is
 * interned, e.g. putting the calling thread's Python frames in place of the
 * interpreter's eval frames. Writes at most `cap` tokens to `out` and
 * returns how many. Runs on the program's thread inside rec_stack_here:
 * no locks, no allocation, never the GIL. */
typedef unsigned (*rec_stack_splicer)(const uint64_t *native, unsigned n, uint64_t *out,
                                      unsigned cap);

/* Installs the splicer (NULL removes it). */
void rec_stack_set_splicer(rec_stack_splicer splicer);

/* The resolver for a token (NULL when its owner is unknown). Writer side. */
rec_symbolic_resolver rec_stack_symbolic_resolver(uint64_t token);

/* Which frames a stack holds in CPython (rec_config.stacks, REC_STACKS_*):
 * with REC_STACKS_PYTHON and a splicer installed, rec_stack_here does not
 * unwind at all and lets the splicer build the stack from Python frames. */
void rec_stack_set_mode(int mode);
int rec_stack_mode(void);

/* Maps the tables (idempotent). Returns 0, -1 when the mappings fail. */
int rec_stack_table_init(void);

/* Sets how many frames rec_stack_here keeps (0 turns stacks off). */
void rec_stack_set_depth(unsigned depth);

/* Reads node `id` (1-based): its parent node (0 = root) and ip. Returns 0,
 * or -1 for an id that was never published. Writer side. */
int rec_stack_node(uint32_t id, uint32_t *parent, uint64_t *ip);

/* Distinct nodes so far. */
uint32_t rec_stack_node_count(void);

#endif
