/* rec_nvtx.c — the NVTX core and domain callbacks: ranges, marks, domains
 * and registered strings become markers (see rec_nvtx.h).
 *
 * NVTX calls sit on the training loop's hot path (a push and a pop per
 * layer in some programs), so a handler does what rec_emit_marker needs and
 * nothing else: ASCII names go straight through, wide names are converted
 * into a stack buffer, registered strings and domains are pointers to
 * entries interned once at registration. No handler allocates or locks; only
 * nvtxDomainCreate and nvtxDomainRegisterString take a mutex and may
 * allocate, once per distinct name (they are registration calls). Interned
 * entries live as long as the process, because the program keeps the
 * handles; their number and size are capped.
 *
 * Return values follow NVTX: push/pop return the thread's nesting level in
 * the domain (tracked even while nothing records, so a program that checks
 * them sees consistent numbers), start returns a process-unique range id. */
#include "rec_nvtx.h"

#include "rec_core.h"

#include "gmt_hash.h"

#define NVTX_NO_IMPL /* the types only: the implementation is the program's */
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- wide strings ------------------------------------------------------- */

size_t rec_nvtx_wide_to_utf8(const wchar_t *in, char *out, size_t out_size) {
    if (!out || out_size == 0)
        return 0;
    size_t n = 0;
    for (; in && *in; in++) {
        uint32_t c = (uint32_t)*in;
        if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            c = 0xFFFD;
        size_t len = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (n + len + 1 > out_size)
            break;
        if (len == 1) {
            out[n++] = (char)c;
            continue;
        }
        static const unsigned char lead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
        for (size_t i = len; i-- > 1;) {
            out[n + i] = (char)(0x80 | (c & 0x3F));
            c >>= 6;
        }
        out[n] = (char)(lead[len] | c);
        n += len;
    }
    out[n] = '\0';
    return n;
}

/* ---- interned names: domains and registered strings --------------------- */

#define NAME_BUCKETS 1024u
#define NAME_MAX_ENTRIES 65536u /* per pool; later registrations get a shared entry */
#define DEPTH_SLOTS 32u         /* push depth kept per domain: default + 31 domains */

typedef struct name_entry {
    struct name_entry *next;
    uint32_t hash;
    uint32_t index;   /* 1-based creation order (domains: their depth slot) */
    const char *text; /* stored just after the entry, same allocation */
} name_entry;

typedef struct name_pool {
    pthread_mutex_t lock;
    name_entry *buckets[NAME_BUCKETS];
    uint32_t count;
    int warned_full;
} name_pool;

static name_pool domains = {.lock = PTHREAD_MUTEX_INITIALIZER};
static name_pool strings = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Made anew in a forked child (rec_core.h). */
__attribute__((constructor)) static void register_pool_locks(void) {
    rec_reset_after_fork(&domains.lock);
    rec_reset_after_fork(&strings.lock);
}

/* Handed out when a pool is full or malloc fails: still a valid handle. */
static const name_entry overflow_name = {NULL, 0, DEPTH_SLOTS - 1, "(nvtx name table full)"};

static size_t utf8_cut(const char *s, size_t len, size_t max) {
    if (len <= max)
        return len;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--; /* do not split a multi-byte character */
    return max;
}

/* Returns the pool's entry equal to `text` (cut to REC_NVTX_NAME_MAX), made
 * on first use; never NULL. */
static const name_entry *intern(name_pool *pool, const char *text) {
    if (!text)
        text = "";
    size_t len = utf8_cut(text, strlen(text), REC_NVTX_NAME_MAX);
    uint32_t hash = (uint32_t)gmt_hash_bytes(GMT_HASH_SEED, text, len);
    const name_entry *found = &overflow_name;
    pthread_mutex_lock(&pool->lock);
    name_entry **bucket = &pool->buckets[hash % NAME_BUCKETS];
    for (name_entry *e = *bucket; e; e = e->next) {
        if (e->hash == hash && strncmp(e->text, text, len) == 0 && e->text[len] == '\0') {
            found = e;
            goto done;
        }
    }
    name_entry *e = pool->count < NAME_MAX_ENTRIES ? malloc(sizeof *e + len + 1) : NULL;
    if (!e) {
        pthread_mutex_unlock(&pool->lock);
        rec_warn_once(&pool->warned_full, "too many NVTX domains or registered strings: later "
                                          "ones are recorded as \"(nvtx name table full)\"");
        return found;
    }
    e->hash = hash;
    e->index = ++pool->count;
    char *copy = (char *)(e + 1);
    memcpy(copy, text, len);
    copy[len] = '\0';
    e->text = copy;
    e->next = *bucket;
    *bucket = e;
    found = e;
done:
    pthread_mutex_unlock(&pool->lock);
    return found;
}

static const char *domain_name(nvtxDomainHandle_t domain) {
    return domain ? ((const name_entry *)(const void *)domain)->text : NULL;
}

static unsigned depth_slot(nvtxDomainHandle_t domain) {
    if (!domain)
        return 0;
    uint32_t index = ((const name_entry *)(const void *)domain)->index;
    return index < DEPTH_SLOTS ? index : DEPTH_SLOTS - 1;
}

/* ---- messages and attributes -------------------------------------------- */

typedef char name_buffer[REC_NVTX_NAME_MAX + 1];

static const char *message_text(int32_t type, nvtxMessageValue_t message, name_buffer buf) {
    switch (type) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return message.ascii;
    case NVTX_MESSAGE_TYPE_UNICODE:
        if (!message.unicode)
            return NULL;
        rec_nvtx_wide_to_utf8(message.unicode, buf, sizeof(name_buffer));
        return buf;
    case NVTX_MESSAGE_TYPE_REGISTERED:
        return message.registered ? ((const name_entry *)(const void *)message.registered)->text
                                  : NULL;
    default:
        return NULL;
    }
}

/* An attribute struct too short to hold a message (or NULL) has none. */
static int has_message(const nvtxEventAttributes_t *attr) {
    return attr && attr->size >= offsetof(nvtxEventAttributes_t, message) + sizeof attr->message;
}

static const char *attr_name(const nvtxEventAttributes_t *attr, name_buffer buf) {
    return has_message(attr) ? message_text(attr->messageType, attr->message, buf) : NULL;
}

/* Integer payloads become the marker's value; other payloads are dropped. */
static int64_t attr_value(const nvtxEventAttributes_t *attr) {
    if (!has_message(attr))
        return 0;
    switch (attr->payloadType) {
    case NVTX_PAYLOAD_TYPE_INT64:
        return attr->payload.llValue;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
        return (int64_t)attr->payload.ullValue;
    case NVTX_PAYLOAD_TYPE_INT32:
        return attr->payload.iValue;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
        return attr->payload.uiValue;
    default:
        return 0;
    }
}

/* ---- ranges and marks ---------------------------------------------------- */

static atomic_uint_fast64_t last_range_id;
static _Thread_local int push_depth[DEPTH_SLOTS];

static void emit_mark(nvtxDomainHandle_t domain, const char *name, int64_t value) {
    if (rec_enabled())
        rec_emit_marker(TRACE_MARK_MARK, domain_name(domain), name, 0, value);
}

static nvtxRangeId_t emit_start(nvtxDomainHandle_t domain, const char *name, int64_t value) {
    nvtxRangeId_t id = atomic_fetch_add_explicit(&last_range_id, 1, memory_order_relaxed) + 1;
    if (rec_enabled())
        rec_emit_marker(TRACE_MARK_RANGE_START, domain_name(domain), name, id, value);
    return id;
}

static void emit_end(nvtxDomainHandle_t domain, nvtxRangeId_t id) {
    if (rec_enabled())
        rec_emit_marker(TRACE_MARK_RANGE_END, domain_name(domain), NULL, id, 0);
}

static int emit_push(nvtxDomainHandle_t domain, const char *name, int64_t value) {
    if (rec_enabled())
        rec_emit_marker(TRACE_MARK_RANGE_PUSH, domain_name(domain), name, 0, value);
    return push_depth[depth_slot(domain)]++;
}

static int emit_pop(nvtxDomainHandle_t domain) {
    if (rec_enabled())
        rec_emit_marker(TRACE_MARK_RANGE_POP, domain_name(domain), NULL, 0, 0);
    int *depth = &push_depth[depth_slot(domain)];
    return *depth > 0 ? --*depth : -1;
}

/* Handlers whose names do not matter on the hot path take the buffer only
 * when the message needs converting (wide strings). */

static void mark_ex(const nvtxEventAttributes_t *attr) {
    name_buffer buf;
    emit_mark(NULL, attr_name(attr, buf), attr_value(attr));
}

static void mark_a(const char *message) { emit_mark(NULL, message, 0); }

static void mark_w(const wchar_t *message) {
    if (!rec_enabled())
        return;
    name_buffer buf;
    rec_nvtx_wide_to_utf8(message, buf, sizeof buf);
    emit_mark(NULL, message ? buf : NULL, 0);
}

static nvtxRangeId_t range_start_ex(const nvtxEventAttributes_t *attr) {
    name_buffer buf;
    return emit_start(NULL, attr_name(attr, buf), attr_value(attr));
}

static nvtxRangeId_t range_start_a(const char *message) { return emit_start(NULL, message, 0); }

static nvtxRangeId_t range_start_w(const wchar_t *message) {
    name_buffer buf;
    rec_nvtx_wide_to_utf8(message, buf, sizeof buf);
    return emit_start(NULL, message ? buf : NULL, 0);
}

static void range_end(nvtxRangeId_t id) { emit_end(NULL, id); }

static int range_push_ex(const nvtxEventAttributes_t *attr) {
    name_buffer buf;
    return emit_push(NULL, attr_name(attr, buf), attr_value(attr));
}

static int range_push_a(const char *message) { return emit_push(NULL, message, 0); }

static int range_push_w(const wchar_t *message) {
    name_buffer buf;
    rec_nvtx_wide_to_utf8(message, buf, sizeof buf);
    return emit_push(NULL, message ? buf : NULL, 0);
}

static int range_pop(void) { return emit_pop(NULL); }

static void domain_mark_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr) {
    name_buffer buf;
    emit_mark(domain, attr_name(attr, buf), attr_value(attr));
}

static nvtxRangeId_t domain_range_start_ex(nvtxDomainHandle_t domain,
                                           const nvtxEventAttributes_t *attr) {
    name_buffer buf;
    return emit_start(domain, attr_name(attr, buf), attr_value(attr));
}

static void domain_range_end(nvtxDomainHandle_t domain, nvtxRangeId_t id) { emit_end(domain, id); }

static int domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr) {
    name_buffer buf;
    return emit_push(domain, attr_name(attr, buf), attr_value(attr));
}

static int domain_range_pop(nvtxDomainHandle_t domain) { return emit_pop(domain); }

/* ---- registration -------------------------------------------------------- */

static nvtxStringHandle_t register_string_a(nvtxDomainHandle_t domain, const char *text) {
    (void)domain; /* one pool: equal text, equal handle, whatever the domain */
    return (nvtxStringHandle_t)(void *)intern(&strings, text);
}

static nvtxStringHandle_t register_string_w(nvtxDomainHandle_t domain, const wchar_t *text) {
    name_buffer buf;
    rec_nvtx_wide_to_utf8(text, buf, sizeof buf);
    return register_string_a(domain, buf);
}

static nvtxDomainHandle_t domain_create_a(const char *name) {
    return (nvtxDomainHandle_t)(void *)intern(&domains, name);
}

static nvtxDomainHandle_t domain_create_w(const wchar_t *name) {
    name_buffer buf;
    rec_nvtx_wide_to_utf8(name, buf, sizeof buf);
    return domain_create_a(buf);
}

static void domain_destroy(nvtxDomainHandle_t domain) {
    (void)domain; /* the entry stays: markers already buffered may point at its name */
}

/* ---- attaching to one NVTX copy ------------------------------------------ */

typedef struct slot_fill {
    unsigned cbid;
    NvtxFunctionPointer handler;
} slot_fill;

#define FILL(id, fn)                                                                               \
    { id, (NvtxFunctionPointer)(fn) }

static const slot_fill core_fills[] = {
    FILL(NVTX_CBID_CORE_MarkEx, mark_ex),
    FILL(NVTX_CBID_CORE_MarkA, mark_a),
    FILL(NVTX_CBID_CORE_MarkW, mark_w),
    FILL(NVTX_CBID_CORE_RangeStartEx, range_start_ex),
    FILL(NVTX_CBID_CORE_RangeStartA, range_start_a),
    FILL(NVTX_CBID_CORE_RangeStartW, range_start_w),
    FILL(NVTX_CBID_CORE_RangeEnd, range_end),
    FILL(NVTX_CBID_CORE_RangePushEx, range_push_ex),
    FILL(NVTX_CBID_CORE_RangePushA, range_push_a),
    FILL(NVTX_CBID_CORE_RangePushW, range_push_w),
    FILL(NVTX_CBID_CORE_RangePop, range_pop),
};

static const slot_fill core2_fills[] = {
    FILL(NVTX_CBID_CORE2_DomainMarkEx, domain_mark_ex),
    FILL(NVTX_CBID_CORE2_DomainRangeStartEx, domain_range_start_ex),
    FILL(NVTX_CBID_CORE2_DomainRangeEnd, domain_range_end),
    FILL(NVTX_CBID_CORE2_DomainRangePushEx, domain_range_push_ex),
    FILL(NVTX_CBID_CORE2_DomainRangePop, domain_range_pop),
    FILL(NVTX_CBID_CORE2_DomainRegisterStringA, register_string_a),
    FILL(NVTX_CBID_CORE2_DomainRegisterStringW, register_string_w),
    FILL(NVTX_CBID_CORE2_DomainCreateA, domain_create_a),
    FILL(NVTX_CBID_CORE2_DomainCreateW, domain_create_w),
    FILL(NVTX_CBID_CORE2_DomainDestroy, domain_destroy),
};

/* Writes the handlers into one module's slots; returns how many it set. */
static unsigned fill_module(const NvtxExportTableCallbacks *callbacks, NvtxCallbackModule module,
                            const slot_fill *fills, size_t count) {
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!callbacks->GetModuleFunctionTable(module, &table, &size) || !table)
        return 0;
    unsigned set = 0;
    for (size_t i = 0; i < count; i++) {
        /* valid ids are 1 .. size-1: slot 0 and slot `size` are NULL guards */
        if (fills[i].cbid == 0 || fills[i].cbid >= size || !table[fills[i].cbid])
            continue;
        *table[fills[i].cbid] = fills[i].handler;
        set++;
    }
    return set;
}

int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t table_id)) {
    if (!get_export_table)
        return 0;
    const NvtxExportTableCallbacks *callbacks = get_export_table(NVTX_ETID_CALLBACKS);
    if (!callbacks || callbacks->struct_size < sizeof *callbacks ||
        !callbacks->GetModuleFunctionTable)
        return 0;
    const NvtxExportTableVersionInfo *version = get_export_table(NVTX_ETID_VERSIONINFO);
    if (version && version->struct_size >= sizeof *version && version->SetInjectionNvtxVersion)
        version->SetInjectionNvtxVersion(NVTX_VERSION);
    unsigned set = fill_module(callbacks, NVTX_CB_MODULE_CORE, core_fills,
                               sizeof core_fills / sizeof core_fills[0]);
    set += fill_module(callbacks, NVTX_CB_MODULE_CORE2, core2_fills,
                       sizeof core2_fills / sizeof core2_fills[0]);
    return set > 0;
}
