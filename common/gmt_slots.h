/* gmt_slots.h — a table of records reused by index: what a pass over events keeps for each
 * thing live (an allocation until its free), with an addr_map from the thing's id to its slot.
 *
 * A freed slot goes on a free list (kept beside the records, so a freed record is left as it
 * was), and the next take reuses it: the table is as large as the most things ever live at
 * once, not as the number seen. Header-only, like gmt_grow.h: it sits on per-event paths. */
#ifndef GMT_SLOTS_H
#define GMT_SLOTS_H

#include "gmt_grow.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct gmt_slots {
    void *items;    /* `item` bytes each */
    uint32_t *next; /* per slot on the free list: the next free slot + 1 */
    size_t item, len, cap, cap_next;
    uint32_t free_head; /* a free slot + 1; 0: none */
} gmt_slots;

#define GMT_SLOTS_INIT(type)                                                                       \
    { NULL, NULL, sizeof(type), 0, 0, 0, 0 }

static inline void *gmt_slot_at(const gmt_slots *s, uint32_t i) {
    return (char *)s->items + (size_t)i * s->item;
}

/* A slot to fill: its index, or -1 when out of memory (or past 2^32 slots). */
static inline int64_t gmt_slot_take(gmt_slots *s) {
    if (s->free_head) {
        uint32_t i = s->free_head - 1;
        s->free_head = s->next[i];
        return i;
    }
    if (s->len >= UINT32_MAX || gmt_grow(&s->items, &s->cap, s->len, s->item) != 0 ||
        gmt_grow((void **)&s->next, &s->cap_next, s->len, sizeof *s->next) != 0)
        return -1;
    return (int64_t)s->len++;
}

/* Slot i is free again. */
static inline void gmt_slot_give(gmt_slots *s, uint32_t i) {
    s->next[i] = s->free_head;
    s->free_head = i + 1;
}

static inline void gmt_slots_free(gmt_slots *s) {
    free(s->items);
    free(s->next);
    s->items = NULL;
    s->next = NULL;
    s->len = s->cap = s->cap_next = 0;
    s->free_head = 0;
}

#endif
