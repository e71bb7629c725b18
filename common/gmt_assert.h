/* gmt_assert.h — invariants written as code: GMT_NEVER(X) and GMT_ALWAYS(X).
 *
 * Where code relies on something its own construction guarantees (a chunk holds what was
 * reserved for it, a tag names a live entry, a self-check passes), the condition is written
 * once, where the code would otherwise only say so in a comment, and the code still handles
 * the case:
 *
 *     if (GMT_NEVER(gap == 0)) // has_room saw more
 *         return AM_ERR_OOM;
 *     if (GMT_ALWAYS(tag <= len)) use(entries[tag - 1]);
 *
 * SQLite's NEVER() and ALWAYS() are the model. In a debug or sanitizer build (NDEBUG not
 * defined, or AddressSanitizer on) a broken invariant aborts on the spot, naming its file,
 * line and condition, so a test or fuzzer that breaks one fails there and not at some later
 * symptom. In a release build each is its condition, evaluated as the handling needs it:
 * nothing more. Never for what an input can do (a damaged trace, a hostile pickle: those are
 * errors or warnings), and never with a side effect in X. */
#ifndef GMT_ASSERT_H
#define GMT_ASSERT_H

#include <stdio.h>
#include <stdlib.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GMT_INVARIANTS_ABORT 1
#endif
#endif
#if !defined(GMT_INVARIANTS_ABORT) && (!defined(NDEBUG) || defined(__SANITIZE_ADDRESS__))
#define GMT_INVARIANTS_ABORT 1
#endif

#ifdef GMT_INVARIANTS_ABORT
__attribute__((noreturn, cold)) static inline void
gmt_invariant_broken(const char *what, const char *file, int line) {
    fprintf(stderr, "%s:%d: invariant broken: %s\n", file, line, what);
    abort();
}
#define GMT_NEVER(X) ((X) ? (gmt_invariant_broken("never " #X, __FILE__, __LINE__), 1) : 0)
#define GMT_ALWAYS(X) ((X) ? 1 : (gmt_invariant_broken("always " #X, __FILE__, __LINE__), 0))
#else
#define GMT_NEVER(X) (!!(X))
#define GMT_ALWAYS(X) (!!(X))
#endif

#endif
