/* categories.h — what each block's memory is (DESIGN.md "category"): parameter, gradient,
 * optimizer_state, activation, temporary, input, other or unknown, decided in this order:
 *
 *   1. the name the program gave the block (tensor_names with a category: memrec's walk of the
 *      model and its optimizers, or a snapshot's annotation);
 *   2. the phase the block was made in and the one it ended in (phase_timeline.h). The phase
 *      it was made in is its stack's when the stack decides one, else the phase at its time:
 *        setup     freed in the setup: temporary; never freed: parameter
 *        prelude   freed in that prelude: temporary; later in the iteration or in the next
 *                  one: input (a batch copied in); kept longer, or never freed: other
 *        forward   freed in forward: temporary; later in the iteration or in the next one:
 *                  activation (saved for backward, or the loss held until the next step)
 *        backward  freed in backward: temporary; kept past it: gradient
 *        optimizer freed in the iteration: temporary; kept past it: optimizer_state
 *      A forward's block still live when a recording stops inside the iteration that made it
 *      (its step still open) is an activation: backward never came.
 *      A block made before the recording began (a snapshot's ring lost its alloc) is known by
 *      its end: freed inside a zero_grad (its free's own stack), a gradient; in backward, an
 *      activation; in an optimizer step, optimizer state (the state it replaces); by a
 *      forward's unwinding after an OOM, an activation; never, a parameter; else other.
 *      An OOM's unwinding is no end: the frees from an OOM to the device's next allocation
 *      (or to the end, when none comes) are the exception freeing what the failed phase held.
 *      Such a block is judged as if the run had gone on: as one live when a recording stops
 *      inside the iteration that made it (a forward's block an activation, not a temporary).
 *      A block kept past its iteration is a gradient or optimizer state only when its own
 *      stack says backward or optimizer: what a loop makes after its optimizer step and keeps
 *      (a cache, a leak) is no optimizer state. Anything else is other;
 *      A device whose history holds one moment (a snapshot's segments without a trace, or a
 *      one-entry history: categories_no_history) has no phases: its blocks are unknown;
 *   3. the user's rules (category_rules.h), for what is left as other or unknown.
 *
 * A sweep visits every device-memory block of a device (its blocks, and segments that are one
 * block) when it ends, or at the end of the trace for those still live, with its category.
 * It holds the live blocks only: memory is bounded by the live state, not the trace. */
#ifndef GMT_CATEGORIES_H
#define GMT_CATEGORIES_H

#include "category_rules.h"
#include "gmt_vocab.h"

#include <sqlite3.h>
#include <stdint.h>

typedef struct classified_block {
    int64_t device;
    int64_t alloc_id;      /* allocations.alloc_id (<= 0: seeded) */
    int64_t free_event_id; /* the free's event_id; INT64_MAX: live at the end */
    int64_t size, stack_id;
    gmt_category category;
    int has_name; /* the program named it (a tensor_names row) */
} classified_block;

/* Called once per block; a non-zero return stops the sweep and is returned by it. */
typedef int (*category_visit)(void *ctx, const classified_block *block);

typedef struct categorizer categorizer;

/* A categorizer of db; the first sweep reads what every sweep shares (the stacks' phases, the
 * names), each device's sweep its phase timeline, so one made and never swept costs nothing.
 * rules may be NULL; it stays the caller's. NULL (out of memory) with a message in err. */
categorizer *categorizer_new(sqlite3 *db, const category_rules *rules, char *err, size_t errlen);

/* Visits every block of `device`. 0, a visitor's non-zero return, or -1 with err set. */
int categorizer_sweep(categorizer *c, int64_t device, category_visit visit, void *ctx, char *err,
                      size_t errlen);

/* Every device's blocks (the devices table) in one pass over the events. 0, a visitor's
 * return, or -1 with err set. */
int categorizer_sweep_all(categorizer *c, category_visit visit, void *ctx, char *err,
                          size_t errlen);

void categorizer_free(categorizer *c);

/* Whether device's history is one moment (at most one recorded block alloc or free): no phases,
 * its blocks unknown. */
int categories_no_history(sqlite3 *db, int64_t device);

/* Whether it applies user rules (then what a database stored without them does not hold). */
int categorizer_has_rules(const categorizer *c);

/* The bytes of each category live right after event_id on device (a sweep). 0 or -1. */
int categories_at_event(categorizer *c, int64_t device, int64_t event_id,
                        int64_t bytes[BLOCK_CATEGORY_COUNT], char *err, size_t errlen);

/* The bytes of each category live right after each of n event ids (sorted, ascending), in
 * bytes[category * n + i] (a sweep). 0 or -1. */
int categories_live_at(categorizer *c, int64_t device, const int64_t *event_ids, size_t n,
                       int64_t *bytes, char *err, size_t errlen);

#endif
