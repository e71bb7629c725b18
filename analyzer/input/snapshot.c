/* snapshot.c — a parsed PyTorch memory snapshot turned into snapshot.h's
 * structs.
 *
 * Shaped for a million trace entries whose dicts share their key strings
 * and whose frames lists share frame dicts (and often whole arrays) through
 * the pickle memo. So every interning step first asks "have I seen this very
 * object?" — a pointer lookup — and only on a miss looks at content:
 *   - dict keys are classified once per key string object (a tiny cache by
 *     node), so reading a record is one pass over its items;
 *   - a frames list is looked up by its items array (equal lists share one
 *     in the pickle document), then each frame dict by its node, then by
 *     content (name, filename, line), and the stack by its frame ids;
 *   - strings are interned by node, then by bytes, and copied once.
 * Errors name the record by its path in the snapshot and the key, and are
 * formatted only when they happen. */
#include "snapshot.h"
#include "gmt_grow.h"
#include "gmt_hash.h"
#include "prefault.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- owned memory ------------------------------------------------------- */

typedef struct char_chunk {
    struct char_chunk *next;
    size_t size, used;
    char data[];
} char_chunk;

struct snapshot_store {
    char_chunk *chars;
    snapshot_block *blocks; /* every segment's blocks, one array */
    /* snapshot_load's trace entries, read while the pickle was parsed (take_entry); a device
     * whose list is a run of them in order borrows that run (borrowed[d]) */
    snapshot_entry *claimed;
    uint8_t *borrowed;
};

/* ---- hash tables -------------------------------------------------------- */

/* Pointer -> id. Keys are never NULL (NULL marks a free slot). */
typedef struct ptrmap {
    const void **keys;
    uint32_t *vals;
    size_t cap, len;
} ptrmap;

static int ptrmap_get(const ptrmap *m, const void *key, uint32_t *val) {
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)gmt_hash_mix64((uintptr_t)key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == key) {
            *val = m->vals[i];
            return 1;
        }
        if (!m->keys[i])
            return 0;
    }
}

static int ptrmap_put(ptrmap *m, const void *key, uint32_t val) {
    if ((m->len + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        const void **keys = calloc(cap, sizeof *keys);
        uint32_t *vals = malloc(cap * sizeof *vals);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return -1;
        }
        for (size_t j = 0; j < m->cap; j++) {
            if (!m->keys[j])
                continue;
            size_t i = (size_t)gmt_hash_mix64((uintptr_t)m->keys[j]) & (cap - 1);
            while (keys[i])
                i = (i + 1) & (cap - 1);
            keys[i] = m->keys[j];
            vals[i] = m->vals[j];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t mask = m->cap - 1;
    size_t i = (size_t)gmt_hash_mix64((uintptr_t)key) & mask;
    while (m->keys[i])
        i = (i + 1) & mask;
    m->keys[i] = key;
    m->vals[i] = val;
    m->len++;
    return 0;
}

static void ptrmap_free(ptrmap *m) {
    free(m->keys);
    free(m->vals);
}

/* A set of ids interned by content: the caller hashes the content and
 * compares it with a candidate id. Slots hold id + 1 (0 is free). */
typedef struct idset {
    uint32_t *slots;
    uint64_t *hashes;
    size_t cap, len;
} idset;

static int idset_grow(idset *s) {
    size_t cap = s->cap ? s->cap * 2 : 256;
    uint32_t *slots = calloc(cap, sizeof *slots);
    uint64_t *hashes = malloc(cap * sizeof *hashes);
    if (!slots || !hashes) {
        free(slots);
        free(hashes);
        return -1;
    }
    for (size_t j = 0; j < s->cap; j++) {
        if (!s->slots[j])
            continue;
        size_t i = (size_t)s->hashes[j] & (cap - 1);
        while (slots[i])
            i = (i + 1) & (cap - 1);
        slots[i] = s->slots[j];
        hashes[i] = s->hashes[j];
    }
    free(s->slots);
    free(s->hashes);
    s->slots = slots;
    s->hashes = hashes;
    s->cap = cap;
    return 0;
}

static void idset_free(idset *s) {
    free(s->slots);
    free(s->hashes);
}

/* ---- the conversion ----------------------------------------------------- */

/* Where a record is, for error messages. */
enum { AT_ROOT, AT_SEGMENT, AT_BLOCK, AT_HISTORY, AT_ENTRY, AT_ANNOTATION };
typedef struct loc {
    int at;
    size_t a, b;
    size_t frame; /* SIZE_MAX: not inside a frames list */
} loc;

/* Which field a dict key names: classified once per key string object. */
#define KEY_CACHE 32
typedef struct keyset {
    const char *const *names;
    int count;
    const void *node[KEY_CACHE];
    int8_t field[KEY_CACHE];
} keyset;

enum { F_NAME, F_FILENAME, F_LINE, F_FRAME_COUNT };
static const char *const frame_keys[] = {"name", "filename", "line"};
enum {
    E_ACTION,
    E_ADDR,
    E_SIZE,
    E_STREAM,
    E_TIME_US,
    E_FRAMES,
    E_DEVICE_FREE,
    E_COMPILE_CONTEXT,
    E_USER_METADATA,
    E_COUNT
};
static const char *const entry_keys[] = {"action",       "addr",   "size",        "stream",
                                         "time_us",      "frames", "device_free", "compile_context",
                                         "user_metadata"};
enum {
    S_DEVICE,
    S_ADDRESS,
    S_TOTAL_SIZE,
    S_ALLOCATED_SIZE,
    S_ACTIVE_SIZE,
    S_REQUESTED_SIZE,
    S_STREAM,
    S_SEGMENT_TYPE,
    S_SEGMENT_POOL_ID,
    S_IS_EXPANDABLE,
    S_FRAMES,
    S_BLOCKS,
    S_COUNT
};
static const char *const segment_keys[] = {
    "device", "address",      "total_size",      "allocated_size", "active_size", "requested_size",
    "stream", "segment_type", "segment_pool_id", "is_expandable",  "frames",      "blocks"};
enum {
    B_ADDRESS,
    B_SIZE,
    B_REQUESTED_SIZE,
    B_STATE,
    B_FRAMES,
    B_HISTORY,
    B_USER_METADATA,
    B_COUNT
};
static const char *const block_keys[] = {"address", "size",    "requested_size", "state",
                                         "frames",  "history", "user_metadata"};
enum { A_DEVICE, A_STAGE, A_NAME, A_TIME_US, A_COUNT };
static const char *const annotation_keys[] = {"device", "stage", "name", "time_us"};

/* Action strings by node: a handful of memo-shared objects. */
#define ACTION_CACHE 16
typedef struct action_slot {
    const void *node;
    uint8_t action;
    uint32_t string;
} action_slot;

typedef struct conv {
    snapshot *s;
    char *err;
    size_t errlen;
    size_t budget; /* bytes left for records (segments, blocks, entries, annotations) */

    keyset frame_ks, entry_ks, segment_ks, block_ks, annotation_ks;
    action_slot actions[ACTION_CACHE];

    /* strings */
    size_t strings_cap, lens_cap;
    size_t *string_lens;
    ptrmap string_by_node;
    idset string_set;
    /* frames and stacks */
    size_t frames_cap, stacks_cap, stack_frames_len, stack_frames_cap;
    ptrmap frame_by_node, stack_by_items;
    idset frame_set, stack_set;
    uint32_t *scratch; /* frame ids of the stack being read */
    size_t scratch_cap;
    /* entry kinds */
    size_t kinds_cap;
    idset kind_set;
    /* trace entries taken during the parse (snapshot_load), in the order they were built */
    snapshot_entry *claimed;
    size_t claimed_len, claimed_cap;
    prefault *claimed_pages; /* their pages, faulted in ahead on the other core (prefault.h) */
    size_t input_size;       /* bytes of pickle */
} conv;

static void loc_text(const loc *l, char *buf, size_t n) {
    int k = 0;
    switch (l->at) {
    case AT_SEGMENT:
        k = snprintf(buf, n, "segments[%zu]", l->a);
        break;
    case AT_BLOCK:
        k = snprintf(buf, n, "segments[%zu].blocks[%zu]", l->a, l->b);
        break;
    case AT_HISTORY:
        k = snprintf(buf, n, "segments[%zu].blocks[%zu].history[0]", l->a, l->b);
        break;
    case AT_ENTRY:
        k = snprintf(buf, n, "device_traces[%zu][%zu]", l->a, l->b);
        break;
    case AT_ANNOTATION:
        k = snprintf(buf, n, "external_annotations[%zu]", l->a);
        break;
    default:
        buf[0] = '\0';
    }
    if (k >= 0 && (size_t)k < n && l->frame != SIZE_MAX)
        snprintf(buf + k, n - (size_t)k, "%sframes[%zu]", k ? "." : "", l->frame);
}

/* "snapshot: <where>: <what>" */
static int fail(conv *c, const loc *l, const char *fmt, ...) {
    char where[128], what[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    loc_text(l, where, sizeof where);
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "snapshot: %s%s%s", where, where[0] ? ": " : "", what);
    return -1;
}

static int oom(conv *c) {
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "snapshot: out of memory");
    return -1;
}

/* Counts n records of `size` bytes against the budget. */
static int charge(conv *c, size_t n, size_t size) {
    if (n > c->budget / size) {
        if (c->err && c->errlen)
            snprintf(c->err, c->errlen,
                     "snapshot: its records need more memory than %u bytes per pickle byte "
                     "(records shared many times?)",
                     SNAPSHOT_MEMORY_FACTOR);
        return -1;
    }
    c->budget -= n * size;
    return 0;
}

static const char *a_type(pickle_value v) {
    switch (pickle_typeof(v)) {
    case PICKLE_NONE:
        return "None";
    case PICKLE_INT:
        return "an int";
    default: {
        static const char *const names[] = {"",
                                            "",
                                            "a bool",
                                            "",
                                            "a float",
                                            "a str",
                                            "bytes",
                                            "a tuple",
                                            "a list",
                                            "a dict",
                                            "a set",
                                            "a frozenset",
                                            "a trace entry"}; /* PICKLE_RECORD: take_entry's */
        pickle_type t = pickle_typeof(v);
        return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
    }
    }
}

static int missing(conv *c, const loc *l, const char *key) {
    return fail(c, l, "'%s' missing", key);
}

static int wrong_type(conv *c, const loc *l, const char *key, pickle_value v,
                      const char *expected) {
    return fail(c, l, "'%s' is %s, expected %s", key, a_type(v), expected);
}

/* Any int in [-2^63, 2^64), as 64 bits (negatives in two's complement). */
static inline int int_bits(pickle_value v, uint64_t *out) {
    int64_t i;
    if (pickle_get_i64(v, &i)) {
        *out = (uint64_t)i;
        return 1;
    }
    return pickle_get_u64(v, out);
}

static int get_u64(conv *c, const loc *l, const char *key, pickle_value v, int required,
                   uint64_t *out) {
    if (pickle_is_missing(v))
        return required ? missing(c, l, key) : 0;
    if (!int_bits(v, out))
        return wrong_type(c, l, key, v, "an int");
    return 1;
}

static int get_i64(conv *c, const loc *l, const char *key, pickle_value v, int required,
                   int64_t *out) {
    uint64_t u;
    int rc = get_u64(c, l, key, v, required, &u);
    if (rc == 1)
        *out = u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
    return rc;
}

static int classify(keyset *ks, pickle_value key) {
    const void *id = pickle_identity(key);
    if (!id)
        return -1;
    size_t h = (size_t)(((uintptr_t)id >> 3) & (KEY_CACHE - 1));
    if (ks->node[h] == id)
        return ks->field[h];
    int field = -1;
    size_t len;
    const char *str = pickle_typeof(key) == PICKLE_STR ? pickle_get_str(key, &len) : NULL;
    for (int f = 0; str && f < ks->count; f++)
        if (strlen(ks->names[f]) == len && memcmp(ks->names[f], str, len) == 0) {
            field = f;
            break;
        }
    ks->node[h] = id;
    ks->field[h] = (int8_t)field;
    return field;
}

/* A record's known keys, from its items (k0, v0, k1, v1, ...), into out[] (MISSING where
 * absent; a repeated key: the last one, as in Python). -2: too many keys for a record. */
static int gather_items(keyset *ks, const pickle_value *items, size_t n, pickle_value *out) {
    memset(out, 0, (size_t)ks->count * sizeof *out);
    if (n > 2 * SNAPSHOT_MAX_RECORD_KEYS)
        return -2;
    for (size_t i = 0; i + 1 < n; i += 2) {
        int f = classify(ks, items[i]);
        if (f >= 0)
            out[f] = items[i + 1];
    }
    return 0;
}

/* The same from a dict; -1 when v is not a dict. */
static int gather(keyset *ks, pickle_value v, pickle_value *out) {
    if (pickle_typeof(v) != PICKLE_DICT) {
        memset(out, 0, (size_t)ks->count * sizeof *out);
        return -1;
    }
    size_t n;
    const pickle_value *items = pickle_items(v, &n);
    return gather_items(ks, items, n, out);
}

/* gather() plus its error: not a dict, or too big to be a record. */
static int read_record(conv *c, const loc *l, keyset *ks, pickle_value v, pickle_value *out) {
    int rc = gather(ks, v, out);
    if (rc == -1)
        return fail(c, l, "is %s, expected a dict", a_type(v));
    if (rc == -2)
        return fail(c, l, "has %zu keys, more than a snapshot record has (%u)", pickle_len(v),
                    SNAPSHOT_MAX_RECORD_KEYS);
    return 0;
}

/* ---- strings ------------------------------------------------------------ */

static char *store_chars(conv *c, const char *p, size_t len) {
    struct snapshot_store *st = c->s->store;
    char_chunk *ch = st->chars;
    if (!ch || ch->size - ch->used < len + 1) {
        size_t size = len + 1 > 65536 ? len + 1 : 65536;
        ch = malloc(sizeof *ch + size);
        if (!ch)
            return NULL;
        ch->size = size;
        ch->used = 0;
        ch->next = st->chars;
        st->chars = ch;
    }
    char *out = ch->data + ch->used;
    memcpy(out, p, len);
    out[len] = '\0';
    ch->used += len + 1;
    return out;
}

/* Interns a str value; *id gets its string id (never 0). */
static int intern_string(conv *c, pickle_value v, uint32_t *id) {
    const void *node = pickle_identity(v);
    if (ptrmap_get(&c->string_by_node, node, id))
        return 0;
    size_t len;
    const char *p = pickle_get_str(v, &len);
    uint64_t h = gmt_hash_mix64(gmt_hash_bytes(GMT_HASH_SEED, p, len));
    snapshot *s = c->s;
    idset *set = &c->string_set;
    if ((set->len + 1) * 2 > set->cap && idset_grow(set) < 0)
        return oom(c);
    size_t mask = set->cap - 1, i = (size_t)h & mask;
    for (; set->slots[i]; i = (i + 1) & mask) {
        uint32_t cand = set->slots[i] - 1;
        if (set->hashes[i] == h && c->string_lens[cand] == len &&
            memcmp(s->strings[cand], p, len) == 0) {
            *id = cand;
            return ptrmap_put(&c->string_by_node, node, cand) < 0 ? oom(c) : 0;
        }
    }
    if (gmt_grow((void **)&s->strings, &c->strings_cap, s->string_count, sizeof *s->strings) ||
        gmt_grow((void **)&c->string_lens, &c->lens_cap, s->string_count, sizeof *c->string_lens))
        return oom(c);
    char *copy = store_chars(c, p, len);
    if (!copy)
        return oom(c);
    *id = (uint32_t)s->string_count;
    s->strings[s->string_count] = copy;
    c->string_lens[s->string_count++] = len;
    set->slots[i] = *id + 1;
    set->hashes[i] = h;
    set->len++;
    return ptrmap_put(&c->string_by_node, node, *id) < 0 ? oom(c) : 0;
}

static int get_string(conv *c, const loc *l, const char *key, pickle_value v, int required,
                      uint32_t *id) {
    if (pickle_is_missing(v))
        return required ? missing(c, l, key) : 0;
    if (pickle_typeof(v) != PICKLE_STR)
        return wrong_type(c, l, key, v, "a str");
    return intern_string(c, v, id) < 0 ? -1 : 1;
}

/* A name the program gave (user_metadata): a non-empty str, else absent (*id stays 0). PyTorch
 * writes "" when the program set none; a value of another type is ignored, not refused: the
 * name says what memory holds, never how much. */
static int get_name(conv *c, pickle_value v, uint32_t *id) {
    size_t len;
    if (pickle_typeof(v) != PICKLE_STR || !pickle_get_str(v, &len) || len == 0)
        return 0;
    return intern_string(c, v, id);
}

/* ---- frames and stacks -------------------------------------------------- */

static int intern_frame(conv *c, const loc *l, pickle_value fv, uint32_t *id) {
    const void *node = pickle_identity(fv);
    if (node && ptrmap_get(&c->frame_by_node, node, id))
        return 0;
    pickle_value f[F_FRAME_COUNT];
    if (read_record(c, l, &c->frame_ks, fv, f) < 0)
        return -1;
    uint32_t name = 0, file = 0;
    int64_t line = 0;
    if (get_string(c, l, "name", f[F_NAME], 1, &name) < 0 ||
        get_string(c, l, "filename", f[F_FILENAME], 1, &file) < 0 ||
        get_i64(c, l, "line", f[F_LINE], 1, &line) < 0)
        return -1;
    snapshot *s = c->s;
    const char *np = s->strings[name], *fp = s->strings[file];
    uint64_t h = gmt_hash_mix64(((uint64_t)name << 32 | file) ^ gmt_hash_mix64((uint64_t)line));
    idset *set = &c->frame_set;
    if ((set->len + 1) * 2 > set->cap && idset_grow(set) < 0)
        return oom(c);
    size_t mask = set->cap - 1, i = (size_t)h & mask;
    for (; set->slots[i]; i = (i + 1) & mask) {
        const snapshot_frame *cand = &s->frames[set->slots[i] - 1];
        if (set->hashes[i] == h && cand->name == np && cand->filename == fp && cand->line == line) {
            *id = set->slots[i] - 1;
            return ptrmap_put(&c->frame_by_node, node, *id) < 0 ? oom(c) : 0;
        }
    }
    if (gmt_grow((void **)&s->frames, &c->frames_cap, s->frame_count, sizeof *s->frames))
        return oom(c);
    *id = (uint32_t)s->frame_count;
    s->frames[s->frame_count++] = (snapshot_frame){np, fp, line};
    set->slots[i] = *id + 1;
    set->hashes[i] = h;
    set->len++;
    return ptrmap_put(&c->frame_by_node, node, *id) < 0 ? oom(c) : 0;
}

/* Reads a frames value (a list of frame dicts) into a stack id. */
static int read_stack(conv *c, loc *l, const char *key, pickle_value v, uint32_t *stack) {
    *stack = 0;
    pickle_type t = pickle_typeof(v);
    if (t != PICKLE_LIST && t != PICKLE_TUPLE)
        return wrong_type(c, l, key, v, "a list");
    size_t n;
    const pickle_value *items = pickle_items(v, &n);
    if (n == 0)
        return 0;
    if (ptrmap_get(&c->stack_by_items, items, stack))
        return 0;
    if (gmt_grow((void **)&c->scratch, &c->scratch_cap, n - 1, sizeof *c->scratch))
        return oom(c);
    uint64_t h = gmt_hash_mix64(n);
    for (size_t i = 0; i < n; i++) {
        l->frame = i;
        if (intern_frame(c, l, items[i], &c->scratch[i]) < 0)
            return -1;
        h = gmt_hash_mix64(h ^ c->scratch[i]);
    }
    l->frame = SIZE_MAX;
    snapshot *s = c->s;
    idset *set = &c->stack_set;
    if ((set->len + 1) * 2 > set->cap && idset_grow(set) < 0)
        return oom(c);
    size_t mask = set->cap - 1, i = (size_t)h & mask;
    for (; set->slots[i]; i = (i + 1) & mask) {
        const snapshot_stack *cand = &s->stacks[set->slots[i] - 1];
        if (set->hashes[i] == h && cand->depth == n &&
            memcmp(s->stack_frames + cand->first, c->scratch, n * sizeof *c->scratch) == 0) {
            *stack = set->slots[i] - 1;
            return ptrmap_put(&c->stack_by_items, items, *stack) < 0 ? oom(c) : 0;
        }
    }
    if (c->stack_frames_len + n > UINT32_MAX || s->stack_count >= UINT32_MAX)
        return fail(c, l, "too many stack frames");
    if (gmt_grow((void **)&s->stack_frames, &c->stack_frames_cap, c->stack_frames_len + n - 1,
                 sizeof *s->stack_frames) ||
        gmt_grow((void **)&s->stacks, &c->stacks_cap, s->stack_count, sizeof *s->stacks))
        return oom(c);
    memcpy(s->stack_frames + c->stack_frames_len, c->scratch, n * sizeof *c->scratch);
    *stack = (uint32_t)s->stack_count;
    s->stacks[s->stack_count++] = (snapshot_stack){(uint32_t)c->stack_frames_len, (uint32_t)n};
    c->stack_frames_len += n;
    set->slots[i] = *stack + 1;
    set->hashes[i] = h;
    set->len++;
    return ptrmap_put(&c->stack_by_items, items, *stack) < 0 ? oom(c) : 0;
}

/* ---- records ------------------------------------------------------------ */

static int read_action(conv *c, const loc *l, pickle_value v, uint8_t *action, uint32_t *str) {
    const void *node = pickle_identity(v);
    size_t h = (size_t)(((uintptr_t)node >> 3) & (ACTION_CACHE - 1));
    if (node && c->actions[h].node == node) {
        *action = c->actions[h].action;
        *str = c->actions[h].string;
        return 0;
    }
    if (get_string(c, l, "action", v, 1, str) < 0)
        return -1;
    int a = gmt_torch_action_named(c->s->strings[*str]);
    *action = a < 0 ? SNAPSHOT_ACTION_OTHER : (uint8_t)a;
    c->actions[h] = (action_slot){node, *action, *str};
    return 0;
}

static int same_kind(const snapshot_entry_kind *a, const snapshot_entry_kind *b) {
    return a->stream == b->stream && a->device_free == b->device_free &&
           a->action_name == b->action_name && a->compile_context == b->compile_context &&
           a->user_metadata == b->user_metadata && a->action == b->action && a->flags == b->flags;
}

/* The id of an entry kind: each distinct one is stored once (snapshot.h says why). */
static int intern_kind(conv *c, const loc *l, const snapshot_entry_kind *k, uint32_t *id) {
    snapshot *s = c->s;
    uint64_t h =
        gmt_hash_mix64(k->stream ^ gmt_hash_mix64(k->device_free)) ^
        gmt_hash_mix64((uint64_t)k->action_name << 32 ^ k->compile_context) ^
        gmt_hash_mix64((uint64_t)k->user_metadata << 16 ^ (uint64_t)k->action << 8 ^ k->flags);
    idset *set = &c->kind_set;
    if ((set->len + 1) * 2 > set->cap && idset_grow(set) < 0)
        return oom(c);
    size_t mask = set->cap - 1, i = (size_t)h & mask;
    for (; set->slots[i]; i = (i + 1) & mask)
        if (set->hashes[i] == h && same_kind(&s->entry_kinds[set->slots[i] - 1], k)) {
            *id = set->slots[i] - 1;
            return 0;
        }
    if (s->entry_kind_count >= UINT32_MAX - 1)
        return fail(c, l, "too many kinds of trace entry");
    if (charge(c, 1, sizeof *k) < 0)
        return -1;
    if (gmt_grow_uninit((void **)&s->entry_kinds, &c->kinds_cap, s->entry_kind_count, sizeof *k,
                        16))
        return oom(c);
    *id = (uint32_t)s->entry_kind_count;
    s->entry_kinds[s->entry_kind_count++] = *k;
    set->slots[i] = *id + 1;
    set->hashes[i] = h;
    set->len++;
    return 0;
}

/* A trace entry from its known keys (gather's out[]). */
static int read_entry_fields(conv *c, loc *l, const pickle_value *f, snapshot_entry *e) {
    snapshot_entry_kind k = {0};
    memset(e, 0, sizeof *e);
    if (read_action(c, l, f[E_ACTION], &k.action, &k.action_name) < 0)
        return -1;
    int is_oom = k.action == GMT_TORCH_OOM;
    int rc;
    if (get_u64(c, l, "addr", f[E_ADDR], !is_oom, &e->addr) < 0 ||
        get_u64(c, l, "device_free", f[E_DEVICE_FREE], is_oom, &k.device_free) < 0 ||
        get_u64(c, l, "size", f[E_SIZE], 1, &e->size) < 0 ||
        get_u64(c, l, "stream", f[E_STREAM], 1, &k.stream) < 0)
        return -1;
    if ((rc = get_i64(c, l, "time_us", f[E_TIME_US], 0, &e->time_us)) < 0)
        return -1;
    if (rc)
        k.flags |= SNAPSHOT_HAS_TIME;
    if (!pickle_is_missing(f[E_FRAMES])) {
        if (read_stack(c, l, "frames", f[E_FRAMES], &e->stack) < 0)
            return -1;
        k.flags |= SNAPSHOT_HAS_FRAMES;
    }
    /* None means "no context" in some versions. */
    if (pickle_typeof(f[E_COMPILE_CONTEXT]) != PICKLE_NONE &&
        get_string(c, l, "compile_context", f[E_COMPILE_CONTEXT], 0, &k.compile_context) < 0)
        return -1;
    if (get_name(c, f[E_USER_METADATA], &k.user_metadata) < 0)
        return -1;
    return intern_kind(c, l, &k, &e->kind);
}

static int read_entry(conv *c, loc *l, pickle_value v, snapshot_entry *e) {
    pickle_value f[E_COUNT];
    if (read_record(c, l, &c->entry_ks, v, f) < 0)
        return -1;
    return read_entry_fields(c, l, f, e);
}

/* The pickle parser's record hook (snapshot_load): a dict with a str under "action" is a trace
 * entry (no other record of a snapshot has that key), read into a snapshot_entry while the
 * parser still holds its pairs, so the document never stores a million dicts. Anything wrong
 * with it leaves the dict to the usual reading after the parse, whose message names it by its
 * place (device_traces[d][i]), not by its order of parsing. Taken anywhere, it is a trace entry
 * everywhere: found where another record belongs (a hostile file), it is refused as "a trace
 * entry" where the tree's reading would have complained of a missing key. */
/* Room for an entry per 64 pickle bytes at first (what PyTorch writes takes more): the pages
 * beyond the last entry are reserved, not touched. */
#define CLAIMED_FIRST(c) ((c)->input_size / 64 + 1)
/* How far ahead of the last entry their pages are faulted in (snapshot_load). */
#define CLAIMED_LEAD ((size_t)8 << 20)

static int take_entry(void *ctx, const pickle_value *pairs, size_t n, uint64_t *index) {
    conv *c = ctx;
    pickle_value f[E_COUNT];
    if (gather_items(&c->entry_ks, pairs, n, f) != 0 || pickle_typeof(f[E_ACTION]) != PICKLE_STR)
        return 0;
    char *err = c->err; /* a refusal here is not the snapshot's error */
    c->err = NULL;
    loc l = {AT_ENTRY, 0, c->claimed_len, SIZE_MAX};
    snapshot_entry e;
    int ok = read_entry_fields(c, &l, f, &e) == 0 && charge(c, 1, sizeof e) == 0;
    if (ok && c->claimed_len == c->claimed_cap) { /* past the estimate: the array may move */
        prefault_stop(c->claimed_pages);
        c->claimed_pages = NULL;
        ok = !gmt_grow_uninit((void **)&c->claimed, &c->claimed_cap, c->claimed_len, sizeof e,
                              CLAIMED_FIRST(c));
    }
    c->err = err;
    if (!ok)
        return 0;
    c->claimed[c->claimed_len] = e;
    *index = c->claimed_len++;
    if ((c->claimed_len & 4095) == 0)
        prefault_progress(c->claimed_pages, c->claimed_len * sizeof e);
    return 1;
}

static int read_block(conv *c, loc *l, pickle_value v, uint64_t *next_addr, snapshot_block *b) {
    pickle_value f[B_COUNT];
    if (read_record(c, l, &c->block_ks, v, f) < 0)
        return -1;
    memset(b, 0, sizeof *b);
    int rc;
    if (get_u64(c, l, "size", f[B_SIZE], 1, &b->size) < 0)
        return -1;
    if ((rc = get_u64(c, l, "address", f[B_ADDRESS], 0, &b->address)) < 0)
        return -1;
    if (!rc) {
        b->address = *next_addr;
        b->flags |= SNAPSHOT_BLOCK_ADDRESS_COMPUTED;
    }
    *next_addr = b->address + b->size;

    uint32_t state;
    if (get_string(c, l, "state", f[B_STATE], 1, &state) < 0 ||
        get_name(c, f[B_USER_METADATA], &b->user_metadata) < 0)
        return -1;
    const char *st = c->s->strings[state];
    b->state = !strcmp(st, "active_allocated") ? SNAPSHOT_BLOCK_ACTIVE_ALLOCATED
               : !strcmp(st, "active_pending_free") || !strcmp(st, "active_awaiting_free")
                   ? SNAPSHOT_BLOCK_ACTIVE_PENDING_FREE
               : !strcmp(st, "inactive") ? SNAPSHOT_BLOCK_INACTIVE
                                         : SNAPSHOT_BLOCK_OTHER;

    pickle_value frames = f[B_FRAMES];
    pickle_value requested = f[B_REQUESTED_SIZE];
    const char *requested_key = "requested_size";
    loc hl = *l;
    if (pickle_is_missing(frames) && !pickle_is_missing(f[B_HISTORY])) {
        /* PyTorch 2.0: the allocation's frames and size are in history[0]. */
        pickle_value hist = f[B_HISTORY];
        if (pickle_typeof(hist) != PICKLE_LIST)
            return wrong_type(c, l, "history", hist, "a list");
        if (pickle_len(hist)) {
            pickle_value h0 = pickle_item(hist, 0);
            hl.at = AT_HISTORY;
            if (pickle_typeof(h0) != PICKLE_DICT)
                return fail(c, &hl, "is %s, expected a dict", a_type(h0));
            frames = pickle_dict_get(h0, "frames");
            if (pickle_is_missing(requested)) {
                requested = pickle_dict_get(h0, "real_size");
                requested_key = "real_size";
            }
        }
    }
    if ((rc = get_u64(c, &hl, requested_key, requested, 0, &b->requested_size)) < 0)
        return -1;
    if (rc)
        b->flags |= SNAPSHOT_BLOCK_HAS_REQUESTED;
    else
        b->requested_size = b->size;
    if (!pickle_is_missing(frames)) {
        if (read_stack(c, &hl, "frames", frames, &b->stack) < 0)
            return -1;
        b->flags |= SNAPSHOT_BLOCK_HAS_FRAMES;
    }
    return 0;
}

static int read_segment(conv *c, size_t index, pickle_value v, snapshot_segment *g,
                        snapshot_block *blocks) {
    loc l = {AT_SEGMENT, index, 0, SIZE_MAX};
    pickle_value f[S_COUNT];
    if (read_record(c, &l, &c->segment_ks, v, f) < 0)
        return -1;
    memset(g, 0, sizeof *g);
    g->is_expandable = -1;
    int rc;
    if (get_i64(c, &l, "device", f[S_DEVICE], 1, &g->device) < 0 ||
        get_u64(c, &l, "address", f[S_ADDRESS], 1, &g->address) < 0 ||
        get_u64(c, &l, "total_size", f[S_TOTAL_SIZE], 1, &g->total_size) < 0 ||
        get_u64(c, &l, "allocated_size", f[S_ALLOCATED_SIZE], 1, &g->allocated_size) < 0 ||
        get_u64(c, &l, "active_size", f[S_ACTIVE_SIZE], 1, &g->active_size) < 0 ||
        get_u64(c, &l, "stream", f[S_STREAM], 1, &g->stream) < 0)
        return -1;
    if ((rc = get_u64(c, &l, "requested_size", f[S_REQUESTED_SIZE], 0, &g->requested_size)) < 0)
        return -1;
    if (rc)
        g->flags |= SNAPSHOT_SEGMENT_HAS_REQUESTED;
    uint32_t type;
    if (get_string(c, &l, "segment_type", f[S_SEGMENT_TYPE], 1, &type) < 0)
        return -1;
    const char *ts = c->s->strings[type];
    g->pool = !strcmp(ts, "large")   ? SNAPSHOT_POOL_LARGE
              : !strcmp(ts, "small") ? SNAPSHOT_POOL_SMALL
                                     : SNAPSHOT_POOL_OTHER;
    pickle_value pool = f[S_SEGMENT_POOL_ID];
    if (!pickle_is_missing(pool)) {
        uint64_t a, b;
        if ((pickle_typeof(pool) != PICKLE_TUPLE && pickle_typeof(pool) != PICKLE_LIST) ||
            pickle_len(pool) != 2 || !int_bits(pickle_item(pool, 0), &a) ||
            !int_bits(pickle_item(pool, 1), &b))
            return wrong_type(c, &l, "segment_pool_id", pool, "a pair of ints");
        g->pool_id[0] = (int64_t)a;
        g->pool_id[1] = (int64_t)b;
        g->flags |= SNAPSHOT_SEGMENT_HAS_POOL_ID;
    }
    pickle_value ex = f[S_IS_EXPANDABLE];
    if (!pickle_is_missing(ex)) {
        int b;
        if (!pickle_get_bool(ex, &b))
            return wrong_type(c, &l, "is_expandable", ex, "a bool");
        g->is_expandable = (int8_t)b;
    }
    if (!pickle_is_missing(f[S_FRAMES])) {
        if (read_stack(c, &l, "frames", f[S_FRAMES], &g->stack) < 0)
            return -1;
        g->flags |= SNAPSHOT_SEGMENT_HAS_FRAMES;
    }
    pickle_value bl = f[S_BLOCKS];
    if (pickle_is_missing(bl))
        return missing(c, &l, "blocks");
    if (pickle_typeof(bl) != PICKLE_LIST)
        return wrong_type(c, &l, "blocks", bl, "a list");
    size_t n;
    const pickle_value *items = pickle_items(bl, &n);
    g->blocks = blocks;
    g->block_count = n;
    uint64_t next_addr = g->address;
    loc bloc = {AT_BLOCK, index, 0, SIZE_MAX};
    for (size_t j = 0; j < n; j++) {
        bloc.b = j;
        if (read_block(c, &bloc, items[j], &next_addr, &blocks[j]) < 0)
            return -1;
    }
    return 0;
}

static int read_segments(conv *c, pickle_value list) {
    snapshot *s = c->s;
    size_t n;
    const pickle_value *items = pickle_items(list, &n);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (pickle_len(items[i]) > SNAPSHOT_MAX_RECORD_KEYS)
            continue; /* refused below */
        pickle_value bl = pickle_dict_get(items[i], "blocks");
        if (pickle_typeof(bl) == PICKLE_LIST)
            total += pickle_len(bl);
    }
    if (charge(c, n, sizeof *s->segments) < 0 || charge(c, total, sizeof *s->store->blocks) < 0)
        return -1;
    s->segments = calloc(n ? n : 1, sizeof *s->segments);
    s->store->blocks = calloc(total ? total : 1, sizeof *s->store->blocks);
    if (!s->segments || !s->store->blocks)
        return oom(c);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (read_segment(c, i, items[i], &s->segments[i], s->store->blocks + used) < 0)
            return -1;
        s->segment_count++;
        used += s->segments[i].block_count;
    }
    return 0;
}

/* Whether a device's items are entries take_entry read, one run of them in order (what every
 * pickle Python writes gives): then *entries is that run. */
static int taken_run(const conv *c, const pickle_value *items, size_t n, snapshot_entry **entries) {
    uint64_t first, k;
    if (!n || !pickle_get_record(items[0], &first) || first > c->claimed_len ||
        n > c->claimed_len - first)
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!pickle_get_record(items[i], &k) || k != first + i)
            return 0;
    *entries = c->claimed + first;
    return 1;
}

static int read_traces(conv *c, pickle_value list) {
    snapshot *s = c->s;
    loc l = {AT_ROOT, 0, 0, SIZE_MAX};
    if (pickle_typeof(list) != PICKLE_LIST)
        return wrong_type(c, &l, "device_traces", list, "a list");
    size_t nd;
    const pickle_value *devs = pickle_items(list, &nd);
    if (charge(c, nd, sizeof *s->devices) < 0)
        return -1;
    s->devices = calloc(nd ? nd : 1, sizeof *s->devices);
    s->store->borrowed = calloc(nd ? nd : 1, 1);
    if (!s->devices || !s->store->borrowed)
        return oom(c);
    s->device_count = nd;
    for (size_t d = 0; d < nd; d++) {
        if (pickle_typeof(devs[d]) != PICKLE_LIST)
            return fail(c, &l, "device_traces[%zu] is %s, expected a list", d, a_type(devs[d]));
        size_t n;
        const pickle_value *items = pickle_items(devs[d], &n);
        snapshot_device *dev = &s->devices[d];
        if (taken_run(c, items, n, &dev->entries)) { /* read while parsing: borrowed */
            dev->entry_count = n;
            s->store->borrowed[d] = 1;
            continue;
        }
        if (charge(c, n, sizeof *dev->entries) < 0)
            return -1;
        dev->entries = malloc((n ? n : 1) * sizeof *dev->entries);
        if (!dev->entries)
            return oom(c);
        loc el = {AT_ENTRY, d, 0, SIZE_MAX};
        for (size_t i = 0; i < n; i++) {
            el.b = i;
            uint64_t k;
            if (pickle_get_record(items[i], &k) && k < c->claimed_len) /* taken, out of line */
                dev->entries[i] = c->claimed[k];
            else if (read_entry(c, &el, items[i], &dev->entries[i]) < 0)
                return -1;
            dev->entry_count++;
        }
    }
    return 0;
}

static int read_annotations(conv *c, pickle_value list) {
    snapshot *s = c->s;
    loc l = {AT_ROOT, 0, 0, SIZE_MAX};
    if (pickle_typeof(list) != PICKLE_LIST)
        return wrong_type(c, &l, "external_annotations", list, "a list");
    size_t n;
    const pickle_value *items = pickle_items(list, &n);
    if (charge(c, n, sizeof *s->annotations) < 0)
        return -1;
    s->annotations = calloc(n ? n : 1, sizeof *s->annotations);
    if (!s->annotations)
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        loc al = {AT_ANNOTATION, i, 0, SIZE_MAX};
        pickle_value f[A_COUNT];
        if (read_record(c, &al, &c->annotation_ks, items[i], f) < 0)
            return -1;
        snapshot_annotation *a = &s->annotations[i];
        a->device = -1;
        uint32_t stage = 0, name = 0;
        if (get_i64(c, &al, "device", f[A_DEVICE], 0, &a->device) < 0 ||
            get_string(c, &al, "stage", f[A_STAGE], 1, &stage) < 0 ||
            get_string(c, &al, "name", f[A_NAME], 1, &name) < 0 ||
            get_i64(c, &al, "time_us", f[A_TIME_US], 1, &a->time_us) < 0)
            return -1;
        a->stage_name = s->strings[stage];
        a->name = s->strings[name];
        a->stage = !strcmp(a->stage_name, "START") ? SNAPSHOT_STAGE_START
                   : !strcmp(a->stage_name, "END") ? SNAPSHOT_STAGE_END
                                                   : SNAPSHOT_STAGE_OTHER;
        s->annotation_count++;
    }
    return 0;
}

/* allocator_settings is informational: values of an unexpected type are
 * skipped rather than refused. */
static int read_settings(conv *c, pickle_value d) {
    snapshot_settings *st = &c->s->settings;
    if (pickle_typeof(d) != PICKLE_DICT)
        return 0;
    st->present = 1;
    uint32_t id;
    pickle_value conf = pickle_dict_get(d, "PYTORCH_CUDA_ALLOC_CONF");
    if (pickle_typeof(conf) == PICKLE_STR) {
        if (intern_string(c, conf, &id) < 0)
            return -1;
        st->alloc_conf = c->s->strings[id];
    }
    st->max_split_size = pickle_dict_i64(d, "max_split_size", -1);
    int64_t i64;
    double f64;
    st->has_max_split_size = pickle_get_i64(pickle_dict_get(d, "max_split_size"), &i64);
    st->garbage_collection_threshold = pickle_dict_f64(d, "garbage_collection_threshold", 0);
    st->has_garbage_collection_threshold =
        pickle_get_f64(pickle_dict_get(d, "garbage_collection_threshold"), &f64);
    st->expandable_segments = pickle_dict_bool(d, "expandable_segments", -1);
    st->release_lock_on_cudamalloc = pickle_dict_bool(d, "release_lock_on_cudamalloc", -1);
    st->pinned_use_cuda_host_register = pickle_dict_bool(d, "pinned_use_cuda_host_register", -1);
    st->pinned_num_register_threads = pickle_dict_i64(d, "pinned_num_register_threads", -1);
    st->graph_capture_record_stream_reuse =
        pickle_dict_bool(d, "graph_capture_record_stream_reuse", -1);
    pickle_value r = pickle_dict_get(d, "roundup_power2_divisions");
    size_t n = pickle_typeof(r) == PICKLE_DICT ? pickle_len(r) : 0;
    if (n) {
        st->roundup = calloc(n, sizeof *st->roundup);
        if (!st->roundup)
            return oom(c);
    }
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *k = pickle_get_str(pickle_dict_key(r, i), &len);
        int64_t div;
        if (!k || !pickle_get_i64(pickle_dict_value(r, i), &div))
            continue;
        uint64_t size = 0;
        int digits = len > 0 && len < 20;
        for (size_t j = 0; digits && j < len; j++) {
            if (k[j] < '0' || k[j] > '9')
                digits = 0;
            else
                size = size * 10 + (uint64_t)(k[j] - '0');
        }
        st->roundup[st->roundup_count].size = digits ? size : UINT64_MAX; /* ">": the rest */
        st->roundup[st->roundup_count++].divisions = div;
    }
    return 0;
}

static int convert(conv *c, pickle_value root) {
    snapshot *s = c->s;
    loc l = {AT_ROOT, 0, 0, SIZE_MAX};
    pickle_value segs;
    if (pickle_typeof(root) == PICKLE_LIST) {
        segs = root; /* torch.cuda.memory_snapshot(): the segments alone */
    } else if (pickle_typeof(root) == PICKLE_DICT) {
        segs = pickle_dict_get(root, "segments");
        if (pickle_is_missing(segs))
            return missing(c, &l, "segments");
    } else {
        return fail(c, &l, "the pickle holds %s, expected a dict", a_type(root));
    }
    if (pickle_typeof(segs) != PICKLE_LIST)
        return wrong_type(c, &l, "segments", segs, "a list");
    if (read_segments(c, segs) < 0)
        return -1;
    if (pickle_typeof(root) != PICKLE_DICT)
        return 0;
    pickle_value traces = pickle_dict_get(root, "device_traces");
    if (!pickle_is_missing(traces)) {
        s->has_device_traces = 1;
        if (read_traces(c, traces) < 0)
            return -1;
    }
    pickle_value ann = pickle_dict_get(root, "external_annotations");
    if (!pickle_is_missing(ann)) {
        s->has_annotations = 1;
        if (read_annotations(c, ann) < 0)
            return -1;
    }
    return read_settings(c, pickle_dict_get(root, "allocator_settings"));
}

/* A conversion's state, for a pickle of input_size bytes. -1 (out of memory) with c->s NULL. */
static int conv_init(conv *c, size_t input_size, char *err, size_t errlen) {
    if (err && errlen)
        err[0] = '\0';
    memset(c, 0, sizeof *c);
    c->err = err;
    c->errlen = errlen;
    c->input_size = input_size;
    c->budget = input_size > (SIZE_MAX - SNAPSHOT_MEMORY_BASE) / SNAPSHOT_MEMORY_FACTOR
                    ? SIZE_MAX
                    : input_size * SNAPSHOT_MEMORY_FACTOR + SNAPSHOT_MEMORY_BASE;
    c->frame_ks = (keyset){frame_keys, F_FRAME_COUNT, {0}, {0}};
    c->entry_ks = (keyset){entry_keys, E_COUNT, {0}, {0}};
    c->segment_ks = (keyset){segment_keys, S_COUNT, {0}, {0}};
    c->block_ks = (keyset){block_keys, B_COUNT, {0}, {0}};
    c->annotation_ks = (keyset){annotation_keys, A_COUNT, {0}, {0}};
    snapshot *s = calloc(1, sizeof *s);
    c->s = s;
    if (!s || !(s->store = calloc(1, sizeof *s->store)) ||
        gmt_grow((void **)&s->strings, &c->strings_cap, 0, sizeof *s->strings) ||
        gmt_grow((void **)&c->string_lens, &c->lens_cap, 0, sizeof *c->string_lens) ||
        gmt_grow((void **)&s->stacks, &c->stacks_cap, 0, sizeof *s->stacks))
        return oom(c);
    s->strings[0] = NULL;
    c->string_lens[0] = 0;
    s->string_count = 1;
    s->stacks[0] = (snapshot_stack){0, 0};
    s->stack_count = 1;
    s->settings = (snapshot_settings){.max_split_size = -1,
                                      .expandable_segments = -1,
                                      .release_lock_on_cudamalloc = -1,
                                      .pinned_use_cuda_host_register = -1,
                                      .pinned_num_register_threads = -1,
                                      .graph_capture_record_stream_reuse = -1};
    return 0;
}

/* Frees the conversion's scratch; the snapshot when rc is 0, else NULL (and it is freed). */
static snapshot *conv_done(conv *c, int rc) {
    ptrmap_free(&c->string_by_node);
    ptrmap_free(&c->frame_by_node);
    ptrmap_free(&c->stack_by_items);
    idset_free(&c->string_set);
    idset_free(&c->frame_set);
    idset_free(&c->stack_set);
    idset_free(&c->kind_set);
    free(c->string_lens);
    free(c->scratch);
    if (c->s && c->s->store)
        c->s->store->claimed = c->claimed; /* the snapshot owns them: devices borrow runs */
    else
        free(c->claimed);
    if (rc < 0) {
        snapshot_free(c->s);
        return NULL;
    }
    return c->s;
}

snapshot *snapshot_from_pickle(const pickle_doc *doc, char *err, size_t errlen) {
    conv c;
    int rc = conv_init(&c, pickle_input_size(doc), err, errlen);
    if (rc == 0)
        rc = convert(&c, pickle_root(doc));
    return conv_done(&c, rc);
}

snapshot *snapshot_load(const char *path, char *err, size_t errlen) {
    struct stat st;
    conv c;
    int rc = conv_init(&c, stat(path, &st) == 0 ? (size_t)st.st_size : 0, err, errlen);
    pickle_options opt = {.record_hook = take_entry, .record_ctx = &c};
    /* the entries' array for the estimate, its pages made ready while the pickle parses */
    if (rc == 0 && gmt_grow_uninit((void **)&c.claimed, &c.claimed_cap, 0, sizeof *c.claimed,
                                   CLAIMED_FIRST(&c)) == 0)
        c.claimed_pages =
            prefault_start(c.claimed, c.claimed_cap * sizeof *c.claimed, CLAIMED_LEAD);
    pickle_doc *doc = rc == 0 ? pickle_parse_file(path, &opt, err, errlen) : NULL;
    prefault_stop(c.claimed_pages);
    c.claimed_pages = NULL;
    if (rc == 0 && !doc)
        rc = -1; /* the parser's message is in err */
    if (rc == 0)
        rc = convert(&c, pickle_root(doc));
    pickle_free(doc);
    return conv_done(&c, rc);
}

void snapshot_free(snapshot *s) {
    if (!s)
        return;
    for (size_t d = 0; d < s->device_count; d++)
        if (!s->store || !s->store->borrowed || !s->store->borrowed[d])
            free(s->devices[d].entries);
    free(s->devices);
    free(s->segments);
    free(s->annotations);
    free(s->entry_kinds);
    free(s->settings.roundup);
    free(s->frames);
    free(s->stacks);
    free(s->stack_frames);
    free(s->strings);
    if (s->store) {
        for (char_chunk *ch = s->store->chars; ch;) {
            char_chunk *next = ch->next;
            free(ch);
            ch = next;
        }
        free(s->store->blocks);
        free(s->store->claimed);
        free(s->store->borrowed);
        free(s->store);
    }
    free(s);
}

const uint32_t *snapshot_stack_frames(const snapshot *s, uint32_t stack, size_t *depth) {
    if (!s || stack >= s->stack_count) {
        *depth = 0;
        return NULL;
    }
    *depth = s->stacks[stack].depth;
    return s->stack_frames ? s->stack_frames + s->stacks[stack].first : NULL;
}
