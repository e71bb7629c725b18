/* stack_phases.h — the training phase (phases.h) of every stack of a database at once.
 *
 * A category sweep asks for the phase of millions of events' stacks; stack_names reads one
 * stack per query, which is right for a report's top sites and far too slow for that. The
 * stack trie answers it node by node instead: a node's phase bits are its parent's plus its own
 * frame's (phase_frame_flags), so the frames and stacks tables are read once, in two plain
 * scans, and every lookup after is a hash probe. Inline chains are nodes of the trie too
 * (schema.sql, stacks), so an inlined autograd frame counts as in stack_frames. */
#ifndef GMT_STACK_PHASES_H
#define GMT_STACK_PHASES_H

#include "phases.h"

#include <sqlite3.h>
#include <stdint.h>

typedef struct stack_phases stack_phases;

/* Reads frames and stacks; NULL when out of memory or on a query error. */
stack_phases *stack_phases_load(sqlite3 *db);
/* The phase of stack_id: PHASE_UNKNOWN for 0 and ids without a row. */
phase stack_phases_get(stack_phases *p, int64_t stack_id);
/* The PHASE_FLAG_* bits of all of stack_id's frames (0 for 0 and ids without a row): what
 * the phase folds away, such as a zero_grad frame. */
unsigned stack_phases_bits(stack_phases *p, int64_t stack_id);
void stack_phases_free(stack_phases *p);

#endif
