/* rec_window.c — the live set kept before a recording window opens (see
 * rec_window.h).
 *
 * Entries live in an array in the order they were made (so segments come
 * before the blocks inside them and a physical allocation before its map
 * when they are replayed as the seed); an open-addressing index finds the
 * entry an end event (free, unmap, release) removes. A removed entry is
 * marked dead and skipped; the array is compacted when half of it is dead,
 * so memory follows what is live, not how long the warm-up ran. */
#include "rec_window.h"
#include "gmt_hash.h"
#include "step_rule.h"

#include <stdlib.h>
#include <string.h>

/* What kind of lifetime an op begins or ends: its begin and end share one. */
enum { LIFE_ALLOC, LIFE_MAP, LIFE_PHYS, LIFE_VA, LIFE_NONE };

typedef struct live_entry {
    trace_event ev;
    int dead;
} live_entry;

struct rec_window {
    int64_t start_step;
    int open;
    live_entry *entries;
    size_t count, cap, dead;
    uint32_t *index; /* entry position + 1; 0 = empty */
    size_t index_cap;
};

rec_window *rec_window_new(int64_t start_step) {
    rec_window *w = calloc(1, sizeof *w);
    if (w)
        w->start_step = start_step;
    return w;
}

void rec_window_free(rec_window *w) {
    if (!w)
        return;
    free(w->entries);
    free(w->index);
    free(w);
}

static int life_of(uint8_t op, int *begins) {
    *begins = 1;
    switch (op) {
    case TRACE_OP_ALLOC:
        return LIFE_ALLOC;
    case TRACE_OP_MAP:
        return LIFE_MAP;
    case TRACE_OP_PHYS_CREATE:
        return LIFE_PHYS;
    case TRACE_OP_VA_RESERVE:
        return LIFE_VA;
    default:
        break;
    }
    *begins = 0;
    switch (op) {
    case TRACE_OP_FREE:
        return LIFE_ALLOC;
    case TRACE_OP_UNMAP:
        return LIFE_MAP;
    case TRACE_OP_PHYS_RELEASE:
        return LIFE_PHYS;
    case TRACE_OP_VA_FREE:
        return LIFE_VA;
    default:
        return LIFE_NONE; /* free_requested, trims, failures: no lifetime */
    }
}

static uint64_t key_hash(const trace_event *ev, int life) {
    uint64_t h = ev->addr ^ ((uint64_t)ev->device << 48) ^ ((uint64_t)ev->level << 56) ^
                 ((uint64_t)life << 60) ^ ((uint64_t)ev->kind << 62) ^ ((uint64_t)ev->source << 40);
    return gmt_hash_mix64(h);
}

static int same_key(const trace_event *a, const trace_event *b, int life) {
    int begins;
    /* The source is part of the key: CUPTI's cuMemAlloc and PyTorch's
     * segment_alloc of the same memory are two reports the analyzer joins,
     * each ended by its own free. */
    return a->addr == b->addr && a->device == b->device && a->level == b->level &&
           a->kind == b->kind && a->source == b->source && life_of(a->op, &begins) == life;
}

/* The slot of the live entry matching ev's key, or the empty slot where it
 * would go. */
static uint32_t *index_slot(rec_window *w, const trace_event *ev, int life) {
    size_t mask = w->index_cap - 1;
    for (size_t i = key_hash(ev, life) & mask;; i = (i + 1) & mask) {
        uint32_t *slot = &w->index[i];
        if (*slot == 0 || same_key(&w->entries[*slot - 1].ev, ev, life))
            return slot;
    }
}

/* Rebuilds the index over the live entries (after compaction or growth). */
static int reindex(rec_window *w, size_t cap) {
    uint32_t *index = calloc(cap, sizeof *index);
    if (!index)
        return -1;
    free(w->index);
    w->index = index;
    w->index_cap = cap;
    for (size_t i = 0; i < w->count; i++) {
        int begins;
        *index_slot(w, &w->entries[i].ev, life_of(w->entries[i].ev.op, &begins)) = (uint32_t)i + 1;
    }
    return 0;
}

static void compact(rec_window *w) {
    size_t out = 0;
    for (size_t i = 0; i < w->count; i++)
        if (!w->entries[i].dead)
            w->entries[out++] = w->entries[i];
    w->count = out;
    w->dead = 0;
}

/* Backward-shift deletion is awkward with positions stored in the index, so
 * a removal marks the entry dead and leaves its slot; reindexing after a
 * compaction drops those slots. Lookups skip dead entries by key mismatch:
 * a dead entry's key is cleared. */
static void remove_entry(rec_window *w, uint32_t *slot) {
    live_entry *e = &w->entries[*slot - 1];
    e->dead = 1;
    e->ev.addr = ~(uint64_t)0; /* never matches a real key again */
    e->ev.op = TRACE_OP_COUNT;
    w->dead++;
}

int rec_window_absorb(rec_window *w, const trace_event *ev) {
    int begins, life = life_of(ev->op, &begins);
    if (life == LIFE_NONE)
        return 0;
    if (!begins) {
        if (w->index_cap) {
            uint32_t *slot = index_slot(w, ev, life);
            if (*slot)
                remove_entry(w, slot);
        }
        if (w->dead > 1024 && w->dead * 2 > w->count) {
            compact(w);
            return reindex(w, w->index_cap);
        }
        return 0;
    }
    if (w->count == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 1024;
        if (cap > UINT32_MAX / 2)
            return -1;
        live_entry *e = realloc(w->entries, cap * sizeof *e);
        if (!e)
            return -1;
        w->entries = e;
        w->cap = cap;
    }
    if ((w->count + 1) * 2 > w->index_cap && reindex(w, w->index_cap ? w->index_cap * 2 : 2048))
        return -1;
    uint32_t *slot = index_slot(w, ev, life);
    if (*slot) /* a second begin at a live key: the newer one wins, as in the replay */
        remove_entry(w, slot);
    w->entries[w->count] = (live_entry){*ev, 0};
    *slot = (uint32_t)++w->count;
    return 0;
}

int rec_window_opens(rec_window *w, trace_marker_kind kind, const char *name, size_t name_len,
                     int64_t value) {
    if (w->open)
        return 0;
    if (kind == TRACE_MARK_STEP_BEGIN)
        return value >= w->start_step;
    if (kind != TRACE_MARK_RANGE_PUSH && kind != TRACE_MARK_RANGE_START && kind != TRACE_MARK_MARK)
        return 0;
    char text[256];
    size_t n = name_len < sizeof text - 1 ? name_len : sizeof text - 1;
    memcpy(text, name, n);
    text[n] = 0;
    int64_t step;
    return step_rule_match(text, NULL, &step) && step >= w->start_step;
}

void rec_window_seed(rec_window *w, void (*emit)(void *ctx, const trace_event *ev), void *ctx) {
    for (size_t i = 0; i < w->count; i++)
        if (!w->entries[i].dead)
            emit(ctx, &w->entries[i].ev);
    free(w->entries);
    free(w->index);
    w->entries = NULL;
    w->index = NULL;
    w->count = w->cap = w->dead = w->index_cap = 0;
    w->open = 1;
}
