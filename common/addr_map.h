/* addr_map.h — a hash map from a (space, address) pair to a 32-bit value,
 * with deletion. The replay uses it to find the live allocation an event
 * refers to: space = device and level, value = an index into its own array.
 * Open addressing, linear probing, backward-shift deletion (no tombstones,
 * so a long replay of allocs and frees never degrades). */
#ifndef GMT_ADDR_MAP_H
#define GMT_ADDR_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct addr_map_slot {
    uint64_t space, addr;
    uint32_t value;
    uint32_t used;
} addr_map_slot;

typedef struct addr_map {
    addr_map_slot *slots;
    size_t mask, count;
} addr_map;

/* Returns a pointer to the value of (space, addr), or NULL. */
uint32_t *addr_map_get(const addr_map *m, uint64_t space, uint64_t addr);
/* Sets (space, addr) to value (replacing). 0, or -1 when out of memory. */
int addr_map_put(addr_map *m, uint64_t space, uint64_t addr, uint32_t value);
/* Removes (space, addr); returns 1 when it was there. */
int addr_map_remove(addr_map *m, uint64_t space, uint64_t addr);
void addr_map_free(addr_map *m);

#endif
