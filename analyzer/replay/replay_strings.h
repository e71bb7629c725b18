/* replay_strings.h — the trace's strings by id, in memory bounded however many there are.
 *
 * A trace defines each string once (TRACE_REC_STRING) and refers to it by id from then on, at
 * any later point. A training loop names every step anew ("step 41207"), so a replay that kept
 * every string grew with the steps: ~40 bytes a step with a malloc each, ~20 in one buffer,
 * 10 MB at half a million steps. Here the text stays in a window of the most recent strings
 * (where nearly every lookup falls: a string is defined right before its first use), and older
 * windows go to a temporary file, read back on the rare lookup of an old id; the index of
 * where each id's text is (8 bytes an id) is paged the same way, its recent pages in memory.
 * Memory is the two windows, whatever the number of strings.
 *
 * A pointer from replay_strings_get holds until the next put, or REPLAY_STRINGS_HELD more gets
 * (old strings are read into a small ring of buffers, which also serves the ones read lately
 * again: a stage's name comes back every step): enough for one record's names. */
#ifndef GMT_REPLAY_STRINGS_H
#define GMT_REPLAY_STRINGS_H

#include <stddef.h>
#include <stdint.h>

#define REPLAY_STRINGS_HELD 8

typedef struct replay_strings replay_strings;

/* window: bytes of recent strings kept in memory (0: 1 MiB); index_pages: pages of 4096 ids'
 * offsets kept in memory (0: 32, 1 MiB). A test makes them small. NULL when out of memory. */
replay_strings *replay_strings_new(size_t window, size_t index_pages);
/* Defines (or redefines) id as the NUL-terminated text. 0, or -1 (out of memory, or the
 * temporary file could not be written). */
int replay_strings_put(replay_strings *s, uint32_t id, const char *text);
/* The text of id, or NULL when it was never defined. An old string (or an old page of the
 * index) that cannot be read back from its file gives "" and makes replay_strings_failed
 * true. */
const char *replay_strings_get(replay_strings *s, uint32_t id);
int replay_strings_failed(const replay_strings *s);
void replay_strings_free(replay_strings *s);

#endif
