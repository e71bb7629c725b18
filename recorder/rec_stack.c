/* rec_stack.c — capture (libunwind) and lock-free interning of native
 * stacks (see rec_stack.h).
 *
 * libunwind is loaded with dlopen(RTLD_LOCAL), not linked: linked, it
 * joins the global scope of the process whenever libmemrec.so does, and its
 * unversioned _Unwind_RaiseException & co. (and a weak backtrace()) then
 * take over the program's C++ exceptions from libgcc's unwinder (a throw
 * measured 14x slower, and mixed unwinders are a known way to crash).
 * Loaded locally only our lookups see it. Without it stacks are empty.
 *
 * Two tables, both insert-only so readers never need a lock:
 *  - the trie: node = (parent node, ip); a hash table of node ids keyed by
 *    that pair finds a node's child. A stack is inserted outermost frame
 *    first, so all stacks below `main` share their prefix, and the id of
 *    the innermost node names the whole stack.
 *  - the whole-stack cache: (two 64-bit hashes of the ip array) -> node id,
 *    so a stack seen before costs one hash pass and one probe instead of a
 *    probe per frame. A 128-bit key makes a wrong hit practically
 *    impossible; a lost race only falls back to the trie, which is exact.
 * Node ids come from an atomic counter; a node loses a CAS race is kept as
 * the thread's spare for its next insertion. */
#define UNW_LOCAL_ONLY
#include "rec_stack.h"
#include "gmt_hash.h"
#include "rec_core.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#define NODE_CAPACITY (1u << 22) /* 4 M nodes: 48 MiB of address space */
#define NODE_SLOTS (1u << 23)
#define CACHE_SLOTS (1u << 20)

typedef struct cache_slot {
    _Atomic uint64_t key1; /* 0 = empty; claimed by CAS */
    uint64_t key2;
    _Atomic uint32_t node; /* 0 until the entry is complete */
    uint32_t depth;
} cache_slot;

static uint32_t *node_parent;
static uint64_t *node_ip;
static _Atomic uint32_t *node_slots;
static cache_slot *cache;
static _Atomic uint32_t node_count;
static _Atomic int tables_ready;
static unsigned stack_depth = 64;
static __thread uint32_t spare_node;
static _Atomic(rec_symbolic_resolver) symbolic_owners[128]; /* [0] unused */
static _Atomic(rec_stack_splicer) stack_splicer;
static atomic_int stack_mode; /* REC_STACKS_* */

void rec_stack_set_mode(int mode) { atomic_store(&stack_mode, mode); }
int rec_stack_mode(void) { return atomic_load_explicit(&stack_mode, memory_order_relaxed); }

void rec_stack_set_splicer(rec_stack_splicer splicer) { atomic_store(&stack_splicer, splicer); }

/* libunwind's local-only entry points, from dlsym (the names behind the
 * header's macros: _ULx86_64_set_caching_policy on x86-64). */
#define NAME_OF_(x) #x
#define NAME_OF(x) NAME_OF_(x)
static int (*unwind_backtrace)(void **, int);
static int unwind_loaded; /* 1: tried (under tables_ready's once) */

static void load_unwind(void) {
    if (unwind_loaded)
        return;
    unwind_loaded = 1;
    void *lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        lib = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        static int warned;
        rec_warn_once(&warned, "libunwind cannot be loaded: events have no native stacks");
        return;
    }
    void *backtrace = dlsym(lib, "unw_backtrace");
    void *policy = dlsym(lib, NAME_OF(unw_set_caching_policy));
    void *space = dlsym(lib, NAME_OF(unw_local_addr_space));
    if (policy && space) {
        int (*set_policy)(unw_addr_space_t, unw_caching_policy_t);
        memcpy(&set_policy, &policy, sizeof policy);
        set_policy(*(unw_addr_space_t *)space, UNW_CACHE_PER_THREAD);
    }
    memcpy(&unwind_backtrace, &backtrace, sizeof backtrace);
}

static void *map_zeroed(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int rec_stack_table_init(void) {
    if (atomic_load(&tables_ready))
        return 0;
    node_parent = map_zeroed((size_t)(NODE_CAPACITY + 1) * sizeof *node_parent);
    node_ip = map_zeroed((size_t)(NODE_CAPACITY + 1) * sizeof *node_ip);
    node_slots = map_zeroed((size_t)NODE_SLOTS * sizeof *node_slots);
    cache = map_zeroed((size_t)CACHE_SLOTS * sizeof *cache);
    if (!node_parent || !node_ip || !node_slots || !cache)
        return -1;
    load_unwind();
    atomic_store(&tables_ready, 1);
    return 0;
}

void rec_stack_set_depth(unsigned depth) {
    stack_depth = depth > REC_STACK_MAX_DEPTH ? REC_STACK_MAX_DEPTH : depth;
}

/* Finds or inserts the child (parent, ip). 0 when the trie is full. */
static uint32_t trie_child(uint32_t parent, uint64_t ip) {
    uint64_t h = gmt_hash_mix64(ip ^ ((uint64_t)parent << 40) ^ parent);
    for (uint32_t probe = 0; probe < NODE_SLOTS; probe++) {
        _Atomic uint32_t *slot = &node_slots[(h + probe) & (NODE_SLOTS - 1)];
        uint32_t id = atomic_load_explicit(slot, memory_order_acquire);
        if (id == 0) {
            uint32_t fresh = spare_node;
            if (!fresh) {
                /* Full stays full: the counter never moves past the end
                 * (a wrap would hand out ids of published nodes). */
                if (atomic_load_explicit(&node_count, memory_order_relaxed) >= NODE_CAPACITY)
                    return 0;
                fresh = atomic_fetch_add_explicit(&node_count, 1, memory_order_relaxed) + 1;
                if (fresh > NODE_CAPACITY)
                    return 0;
            }
            node_parent[fresh] = parent;
            node_ip[fresh] = ip;
            if (atomic_compare_exchange_strong_explicit(slot, &id, fresh, memory_order_release,
                                                        memory_order_acquire)) {
                spare_node = 0;
                return fresh;
            }
            spare_node = fresh; /* lost the race: `id` now holds the winner */
        }
        if (node_parent[id] == parent && node_ip[id] == ip)
            return id;
    }
    return 0;
}

uint32_t rec_stack_intern(const uint64_t *ips, unsigned n) {
    if (n == 0 || !atomic_load_explicit(&tables_ready, memory_order_acquire))
        return 0;
    uint64_t h1 = 0x9e3779b97f4a7c15ULL ^ n, h2 = 0x632be59bd9b4e019ULL + n;
    for (unsigned i = 0; i < n; i++) {
        h1 = gmt_hash_mix64(h1 ^ ips[i]);
        h2 = (h2 ^ ips[i]) * 0x100000001b3ULL + (h2 >> 29);
    }
    h1 |= 1; /* 0 marks an empty slot */
    cache_slot *slot = NULL;
    for (uint32_t probe = 0; probe < 16; probe++) {
        cache_slot *s = &cache[(h1 + probe) & (CACHE_SLOTS - 1)];
        uint64_t k = atomic_load_explicit(&s->key1, memory_order_acquire);
        if (k == h1) {
            uint32_t node = atomic_load_explicit(&s->node, memory_order_acquire);
            if (node && s->key2 == h2 && s->depth == n)
                return node;
            continue; /* another stack with the same key1, or being filled */
        }
        if (k == 0) {
            uint64_t expected = 0;
            if (atomic_compare_exchange_strong_explicit(&s->key1, &expected, h1,
                                                        memory_order_acq_rel, memory_order_acquire))
                slot = s;
            break;
        }
    }
    uint32_t node = 0;
    for (unsigned i = n; i-- > 0;) {
        node = trie_child(node, ips[i]);
        if (!node)
            return 0; /* the trie is full; a claimed cache slot stays incomplete: harmless */
    }
    if (slot) {
        slot->key2 = h2;
        slot->depth = n;
        atomic_store_explicit(&slot->node, node, memory_order_release);
    }
    return node;
}

uint32_t rec_stack_here(unsigned skip) {
    unsigned depth = stack_depth;
    if (depth == 0 || !atomic_load_explicit(&tables_ready, memory_order_acquire))
        return 0;
    rec_stack_splicer splice = atomic_load_explicit(&stack_splicer, memory_order_acquire);
    if (splice && rec_stack_mode() == REC_STACKS_PYTHON) { /* MEMREC_STACKS=python: no unwinding */
        uint64_t python[REC_STACK_MAX_DEPTH];
        return rec_stack_intern(python, splice(NULL, 0, python, depth));
    }
    void *raw[REC_STACK_MAX_DEPTH + 32];
    unsigned want = depth + skip + 1;
    if (want > sizeof raw / sizeof raw[0])
        want = sizeof raw / sizeof raw[0];
    int got = unwind_backtrace ? unwind_backtrace(raw, (int)want) : 0;
    unsigned first = skip + 1; /* + this function */
    if (got <= (int)first)
        return 0;
    unsigned n = (unsigned)got - first;
    if (n > depth)
        n = depth;
    uint64_t ips[REC_STACK_MAX_DEPTH];
    for (unsigned i = 0; i < n; i++)
        ips[i] = (uint64_t)(uintptr_t)raw[first + i];
    if (splice) {
        uint64_t spliced[REC_STACK_MAX_DEPTH];
        unsigned m = splice(ips, n, spliced, depth);
        return rec_stack_intern(spliced, m);
    }
    return rec_stack_intern(ips, n);
}

int rec_stack_node(uint32_t id, uint32_t *parent, uint64_t *ip) {
    if (id == 0 || id > NODE_CAPACITY || id > atomic_load(&node_count))
        return -1;
    *parent = node_parent[id];
    *ip = node_ip[id];
    return 0;
}

uint32_t rec_stack_node_count(void) {
    uint32_t n = atomic_load(&node_count);
    return n > NODE_CAPACITY ? NODE_CAPACITY : n;
}

uint64_t rec_stack_register_symbolic(rec_symbolic_resolver resolver) {
    for (uint64_t id = 1; id < 128; id++) {
        rec_symbolic_resolver expected = NULL;
        if (atomic_load(&symbolic_owners[id]) == resolver ||
            atomic_compare_exchange_strong(&symbolic_owners[id], &expected, resolver))
            return REC_FRAME_SYMBOLIC | id << REC_FRAME_OWNER_SHIFT;
    }
    return 0;
}

rec_symbolic_resolver rec_stack_symbolic_resolver(uint64_t token) {
    if (!(token & REC_FRAME_SYMBOLIC))
        return NULL;
    return atomic_load(&symbolic_owners[(token >> REC_FRAME_OWNER_SHIFT) & 127]);
}
