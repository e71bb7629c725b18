/* trace_intern.h — the writer's interning tables (internal to schema/).
 *
 * A trace stores every string, frame and stack once and refers to it by id.
 * These two hash tables map a value to the id it got when first written:
 *   - key_table: values that pack into two 64-bit words (frames, trie nodes);
 *   - string_table: byte strings, kept in an arena the table owns.
 * Open addressing with linear probing, power-of-two sizes, grown at 50 %
 * load: lookups are one or two cache lines on the writer's hot path. */
#ifndef GMT_TRACE_INTERN_H
#define GMT_TRACE_INTERN_H

#include <stddef.h>
#include <stdint.h>

typedef struct key_slot {
    uint64_t a, b;
    uint32_t id; /* 0 = empty slot */
} key_slot;

typedef struct key_table {
    key_slot *slots;
    size_t mask, count;
} key_table;

/* Returns the id stored for (a, b), or stores `new_id` and returns it.
 * Returns 0 when memory runs out. */
uint32_t key_table_intern(key_table *t, uint64_t a, uint64_t b, uint32_t new_id);
void key_table_free(key_table *t);

typedef struct string_slot {
    uint64_t hash;
    uint32_t id;
} string_slot;

typedef struct string_table {
    string_slot *slots;
    size_t mask, count;
    char *arena; /* the bytes of every interned string, back to back */
    size_t arena_len, arena_cap;
    uint64_t *spans; /* per id: offset << 24 | length (strings are < 16 MiB) */
    size_t spans_cap;
} string_table;

/* Returns the id of an equal string, or stores a copy under `new_id`. Sets
 * *added to 1 when the string is new. Returns 0 when memory runs out. */
uint32_t string_table_intern(string_table *t, const char *s, size_t len, uint32_t new_id,
                             int *added);
void string_table_free(string_table *t);

#endif
