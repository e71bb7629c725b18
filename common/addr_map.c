/* addr_map.c — see addr_map.h. */
#include "addr_map.h"
#include "gmt_hash.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(const addr_map *m, uint64_t space, uint64_t addr) {
    return (size_t)gmt_hash_mix64(addr ^ gmt_hash_fib(space, 64)) & m->mask;
}

uint32_t *addr_map_get(const addr_map *m, uint64_t space, uint64_t addr) {
    if (!m->slots)
        return NULL;
    for (size_t i = slot_of(m, space, addr);; i = (i + 1) & m->mask) {
        addr_map_slot *s = &m->slots[i];
        if (!s->used)
            return NULL;
        if (s->addr == addr && s->space == space)
            return &s->value;
    }
}

static int grow(addr_map *m) {
    size_t cap = m->slots ? (m->mask + 1) * 2 : 4096;
    addr_map_slot *old = m->slots;
    size_t old_cap = old ? m->mask + 1 : 0;
    m->slots = calloc(cap, sizeof *m->slots);
    if (!m->slots) {
        m->slots = old;
        return -1;
    }
    m->mask = cap - 1;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].used)
            continue;
        size_t j = slot_of(m, old[i].space, old[i].addr);
        while (m->slots[j].used)
            j = (j + 1) & m->mask;
        m->slots[j] = old[i];
    }
    free(old);
    return 0;
}

int addr_map_put(addr_map *m, uint64_t space, uint64_t addr, uint32_t value) {
    uint32_t *v = addr_map_get(m, space, addr);
    if (v) {
        *v = value;
        return 0;
    }
    if ((!m->slots || (m->count + 1) * 4 > (m->mask + 1) * 3) && grow(m) != 0)
        return -1;
    size_t i = slot_of(m, space, addr);
    while (m->slots[i].used)
        i = (i + 1) & m->mask;
    m->slots[i] = (addr_map_slot){space, addr, value, 1};
    m->count++;
    return 0;
}

int addr_map_remove(addr_map *m, uint64_t space, uint64_t addr) {
    if (!m->slots)
        return 0;
    size_t i = slot_of(m, space, addr);
    for (;; i = (i + 1) & m->mask) {
        if (!m->slots[i].used)
            return 0;
        if (m->slots[i].addr == addr && m->slots[i].space == space)
            break;
    }
    /* Backward-shift: pull later members of the probe run into the hole. */
    size_t hole = i;
    for (size_t j = (i + 1) & m->mask; m->slots[j].used; j = (j + 1) & m->mask) {
        size_t home = slot_of(m, m->slots[j].space, m->slots[j].addr);
        /* j may move to the hole when its home is not in (hole, j]. */
        if (((j - home) & m->mask) >= ((j - hole) & m->mask)) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    memset(&m->slots[hole], 0, sizeof m->slots[hole]);
    m->count--;
    return 1;
}

void addr_map_free(addr_map *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}
