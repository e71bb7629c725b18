/* trace_intern.c — hash tables behind trace_writer_string/_frame/_stack.
 *
 * Ids are handed out by the writer in order (1, 2, 3, ...), so the string
 * table can keep its spans in a plain array indexed by id; the tables only
 * answer "seen before, and under which id?". */
#include "trace_intern.h"
#include "gmt_hash.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const char *s, size_t len) {
    return gmt_hash_mix64(gmt_hash_bytes(GMT_HASH_SEED, s, len) ^ len);
}

static int key_table_grow(key_table *t) {
    size_t cap = t->slots ? (t->mask + 1) * 2 : 1024;
    key_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; t->slots && i <= t->mask; i++) {
        key_slot *s = &t->slots[i];
        if (!s->id)
            continue;
        size_t j = gmt_hash_mix64(s->a ^ gmt_hash_mix64(s->b)) & (cap - 1);
        while (slots[j].id)
            j = (j + 1) & (cap - 1);
        slots[j] = *s;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = cap - 1;
    return 0;
}

uint32_t key_table_intern(key_table *t, uint64_t a, uint64_t b, uint32_t new_id) {
    if ((!t->slots || (t->count + 1) * 2 > t->mask + 1) && key_table_grow(t) != 0)
        return 0;
    size_t j = gmt_hash_mix64(a ^ gmt_hash_mix64(b)) & t->mask;
    for (;; j = (j + 1) & t->mask) {
        key_slot *s = &t->slots[j];
        if (!s->id) {
            s->a = a;
            s->b = b;
            s->id = new_id;
            t->count++;
            return new_id;
        }
        if (s->a == a && s->b == b)
            return s->id;
    }
}

void key_table_free(key_table *t) {
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static int string_table_grow(string_table *t) {
    size_t cap = t->slots ? (t->mask + 1) * 2 : 1024;
    string_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; t->slots && i <= t->mask; i++) {
        if (!t->slots[i].id)
            continue;
        size_t j = t->slots[i].hash & (cap - 1);
        while (slots[j].id)
            j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->mask = cap - 1;
    return 0;
}

static int string_table_store(string_table *t, const char *s, size_t len, uint32_t id) {
    if (t->arena_len + len > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 65536;
        while (cap < t->arena_len + len)
            cap *= 2;
        char *arena = realloc(t->arena, cap);
        if (!arena)
            return -1;
        t->arena = arena;
        t->arena_cap = cap;
    }
    if (id >= t->spans_cap) {
        size_t cap = t->spans_cap ? t->spans_cap * 2 : 1024;
        while (cap <= id)
            cap *= 2;
        uint64_t *spans = realloc(t->spans, cap * sizeof *spans);
        if (!spans)
            return -1;
        t->spans = spans;
        t->spans_cap = cap;
    }
    memcpy(t->arena + t->arena_len, s, len);
    t->spans[id] = (uint64_t)t->arena_len << 24 | len;
    t->arena_len += len;
    return 0;
}

uint32_t string_table_intern(string_table *t, const char *s, size_t len, uint32_t new_id,
                             int *added) {
    *added = 0;
    if ((!t->slots || (t->count + 1) * 2 > t->mask + 1) && string_table_grow(t) != 0)
        return 0;
    uint64_t h = hash_bytes(s, len);
    size_t j = h & t->mask;
    for (;; j = (j + 1) & t->mask) {
        string_slot *slot = &t->slots[j];
        if (!slot->id)
            break;
        if (slot->hash != h)
            continue;
        uint64_t span = t->spans[slot->id];
        if ((span & 0xffffff) == len && memcmp(t->arena + (span >> 24), s, len) == 0)
            return slot->id;
    }
    if (string_table_store(t, s, len, new_id) != 0)
        return 0;
    t->slots[j].hash = h;
    t->slots[j].id = new_id;
    t->count++;
    *added = 1;
    return new_id;
}

void string_table_free(string_table *t) {
    free(t->slots);
    free(t->arena);
    free(t->spans);
    memset(t, 0, sizeof *t);
}
