/* prefault.h — the pages of an array being filled, faulted in ahead of it on another core.
 *
 * Reading a large snapshot is one thread, and much of its time on a virtual machine is the
 * kernel zeroing fresh pages for the arrays it fills (a million trace entries are 32 MB, the
 * pickle's tree 20 MB, its memo 11 MB): the other core is idle meanwhile. A prefault is a helper
 * thread that asks the kernel for the pages of [base, base + len) a little ahead of how far the
 * owner has filled it (MADV_POPULATE_WRITE, which writes nothing, so it never races what the owner
 * stores), so that the owner mostly finds them ready. Where the kernel does not know the call
 * (before Linux 5.14) or no thread can be made, nothing happens: the owner's pages fault as before.
 *
 * Ownership: the owner keeps the region mapped, and unchanged in place, from prefault_start
 * until prefault_stop returns (stop before a realloc that may move it). */
#ifndef GMT_PREFAULT_H
#define GMT_PREFAULT_H

#include <stddef.h>

typedef struct prefault prefault;

/* Starts the helper on [base, base + len), `lead` bytes ahead of the owner; NULL when the
 * region is too small to be worth a thread (under 2 MiB), or none could be made (which is no
 * error). */
prefault *prefault_start(void *base, size_t len, size_t lead);
/* The owner has filled the region's first `filled` bytes (cheap: call it now and then). */
void prefault_progress(prefault *pf, size_t filled);
/* Stops the helper and frees it; NULL is a no-op. */
void prefault_stop(prefault *pf);

#endif
