/* rec_buffer.c — per-thread SPSC rings and their registry (see rec_buffer.h).
 *
 * Positions are free-running 64-bit byte counters: `tail` is written only by
 * the owning thread (release), `head` only by the writer (release), so each
 * side reads the other's with acquire and no lock is ever taken on the
 * per-event path. The registry (a linked list) takes a mutex only when a
 * thread registers, when the writer takes a snapshot, and when a ring is
 * freed. A thread's ring outlives the thread until the writer has drained
 * it (a pthread key destructor marks it done). */
#include "rec_buffer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

struct rec_buffer {
    _Atomic uint64_t tail; /* producer: next free byte (committed items end here) */
    uint64_t reserved_end; /* producer only: end of the reserved item */
    char pad0[48];
    _Atomic uint64_t head; /* writer: first byte not yet written out */
    char pad1[56];
    _Atomic uint64_t dropped;
    _Atomic uint64_t committed;
    _Atomic int thread_done;
    _Atomic uint64_t open_call_since; /* 0: no call open (rec_buffer_set_open_call) */
    int announced;                    /* writer only: thread record written */
    uint32_t tid;
    char name[16];
    size_t capacity; /* power of two */
    struct rec_buffer *next;
    unsigned char *data;
};

static size_t ring_capacity = 4u << 20;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static rec_buffer *registry;
static size_t registry_count;
static _Atomic uint64_t freed_dropped, freed_committed, orphan_drops;
static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;
static __thread rec_buffer *thread_buffer;

/* Item sizes are 32-bit: a ring is at most 1 GiB. */
#define RING_MAX ((size_t)1 << 30)

void rec_buffer_set_capacity(size_t bytes) {
    size_t cap = 4096;
    while (cap < bytes && cap < RING_MAX)
        cap <<= 1;
    ring_capacity = cap;
}

static void thread_ended(void *arg) {
    rec_buffer *b = arg;
    atomic_store_explicit(&b->thread_done, 1, memory_order_release);
    thread_buffer = NULL;
}

static void make_thread_key(void) { pthread_key_create(&thread_key, thread_ended); }

static rec_buffer *ring_new(size_t capacity, uint32_t tid) {
    rec_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->capacity = capacity;
    b->data = aligned_alloc(64, b->capacity);
    if (!b->data) {
        free(b);
        return NULL;
    }
    b->tid = tid;
    pthread_mutex_lock(&registry_lock);
    b->next = registry;
    registry = b;
    registry_count++;
    pthread_mutex_unlock(&registry_lock);
    return b;
}

rec_buffer *rec_buffer_new_shared(size_t capacity, uint32_t tid) {
    size_t cap = 4096;
    while (cap < capacity && cap < RING_MAX)
        cap <<= 1;
    rec_buffer *b = ring_new(cap, tid);
    if (b)
        snprintf(b->name, sizeof b->name, "late lane");
    return b;
}

rec_buffer *rec_buffer_for_thread(void) {
    rec_buffer *b = thread_buffer;
    if (b)
        return b;
    pthread_once(&thread_key_once, make_thread_key);
    char name[16] = "";
    prctl(PR_GET_NAME, name, 0, 0, 0);
    b = ring_new(ring_capacity, (uint32_t)syscall(SYS_gettid));
    if (!b)
        return NULL;
    memcpy(b->name, name, sizeof name);
    b->name[sizeof b->name - 1] = 0;
    thread_buffer = b;
    pthread_setspecific(thread_key, b);
    return b;
}

rec_buffer *rec_buffer_current(void) { return thread_buffer; }

void rec_buffer_set_open_call(rec_buffer *b, uint64_t since_ns) {
    atomic_store_explicit(&b->open_call_since, since_ns, memory_order_release);
}

uint64_t rec_buffers_oldest_open_call(void) {
    uint64_t oldest = UINT64_MAX;
    pthread_mutex_lock(&registry_lock);
    for (rec_buffer *b = registry; b; b = b->next) {
        uint64_t since = atomic_load_explicit(&b->open_call_since, memory_order_acquire);
        if (since && since < oldest)
            oldest = since;
    }
    pthread_mutex_unlock(&registry_lock);
    return oldest;
}

void rec_buffer_count_drop(rec_buffer *b) {
    if (b)
        atomic_fetch_add_explicit(&b->dropped, 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&orphan_drops, 1, memory_order_relaxed);
}

void *rec_buffer_reserve(rec_buffer *b, size_t payload, rec_item_type type, uint64_t ts_ns) {
    size_t need = (sizeof(rec_item) + payload + 15) & ~(size_t)15;
    uint64_t tail = atomic_load_explicit(&b->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&b->head, memory_order_acquire);
    size_t offset = (size_t)(tail & (b->capacity - 1));
    size_t contiguous = b->capacity - offset;
    size_t pad = need > contiguous ? contiguous : 0;
    if (tail + pad + need - head > b->capacity) {
        atomic_fetch_add_explicit(&b->dropped, 1, memory_order_relaxed);
        return NULL;
    }
    if (pad) {
        rec_item *filler = (rec_item *)(b->data + offset);
        filler->size = (uint32_t)pad;
        filler->type = REC_ITEM_PAD;
        filler->ts_ns = 0;
        tail += pad;
        offset = 0;
        /* The pad is published with the item that follows it. */
    }
    rec_item *item = (rec_item *)(b->data + offset);
    item->size = (uint32_t)need;
    item->type = (uint32_t)type;
    item->ts_ns = ts_ns;
    b->reserved_end = tail + need;
    return item + 1;
}

int rec_buffer_commit(rec_buffer *b) {
    uint64_t old_tail = atomic_load_explicit(&b->tail, memory_order_relaxed);
    atomic_store_explicit(&b->tail, b->reserved_end, memory_order_release);
    atomic_fetch_add_explicit(&b->committed, 1, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&b->head, memory_order_relaxed);
    uint64_t half = b->capacity / 2;
    return old_tail - head < half && b->reserved_end - head >= half;
}

static const rec_item *item_at(const rec_buffer *b, uint64_t pos) {
    return (const rec_item *)(b->data + (pos & (b->capacity - 1)));
}

static void view_settle(rec_buffer_view *v) {
    while (v->pos < v->end) {
        const rec_item *it = item_at(v->buffer, v->pos);
        if (it->type != REC_ITEM_PAD) {
            v->next = it;
            return;
        }
        v->pos += it->size;
    }
    v->next = NULL;
}

void rec_buffer_view_advance(rec_buffer_view *v) {
    if (!v->next)
        return;
    v->pos += v->next->size;
    view_settle(v);
}

static void ring_free(rec_buffer *b) {
    atomic_fetch_add(&freed_dropped, atomic_load(&b->dropped));
    atomic_fetch_add(&freed_committed, atomic_load(&b->committed));
    free(b->data);
    free(b);
}

size_t rec_buffers_snapshot(rec_buffer_view *views, size_t max) {
    size_t n = 0;
    pthread_mutex_lock(&registry_lock);
    for (rec_buffer **link = &registry; *link;) {
        rec_buffer *b = *link;
        int done = atomic_load_explicit(&b->thread_done, memory_order_acquire);
        uint64_t head = atomic_load_explicit(&b->head, memory_order_relaxed);
        uint64_t tail = atomic_load_explicit(&b->tail, memory_order_acquire);
        if (tail != head && n < max) {
            rec_buffer_view *v = &views[n++];
            v->buffer = b;
            v->pos = head;
            v->end = tail;
            v->tid = b->tid;
            view_settle(v);
        } else if (tail == head && done &&
                   (b->announced || !atomic_load_explicit(&b->committed, memory_order_relaxed))) {
            *link = b->next;
            registry_count--;
            ring_free(b);
            continue;
        }
        link = &b->next;
    }
    pthread_mutex_unlock(&registry_lock);
    return n;
}

void rec_buffers_release(rec_buffer_view *views, size_t n) {
    for (size_t i = 0; i < n; i++)
        atomic_store_explicit(&views[i].buffer->head, views[i].pos, memory_order_release);
}

void rec_buffers_new_threads(void (*fn)(void *ctx, uint32_t tid, const char *name), void *ctx) {
    pthread_mutex_lock(&registry_lock);
    for (rec_buffer *b = registry; b; b = b->next) {
        if (!b->announced && atomic_load_explicit(&b->committed, memory_order_relaxed)) {
            b->announced = 1;
            if (b->tid) /* the late lane is no thread */
                fn(ctx, b->tid, b->name);
        }
    }
    pthread_mutex_unlock(&registry_lock);
}

uint64_t rec_buffers_dropped(void) {
    uint64_t sum = atomic_load(&freed_dropped) + atomic_load(&orphan_drops);
    pthread_mutex_lock(&registry_lock);
    for (rec_buffer *b = registry; b; b = b->next)
        sum += atomic_load_explicit(&b->dropped, memory_order_relaxed);
    pthread_mutex_unlock(&registry_lock);
    return sum;
}

uint64_t rec_buffers_committed(void) {
    uint64_t sum = atomic_load(&freed_committed);
    pthread_mutex_lock(&registry_lock);
    for (rec_buffer *b = registry; b; b = b->next)
        sum += atomic_load_explicit(&b->committed, memory_order_relaxed);
    pthread_mutex_unlock(&registry_lock);
    return sum;
}

size_t rec_buffers_count(void) {
    pthread_mutex_lock(&registry_lock);
    size_t n = registry_count;
    pthread_mutex_unlock(&registry_lock);
    return n;
}

void rec_buffers_abandon_after_fork(void) {
    /* Another thread may have held registry_lock at fork: never take it
     * here. The child is single-threaded now: the rings' items are the
     * parent's (never the child's to write), and their threads do not exist
     * here, so each ring is emptied and handed to a writer to free. The
     * rings stay listed, so leak checkers still see them. */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    registry_lock = fresh;
    for (rec_buffer *b = registry; b; b = b->next) {
        atomic_store(&b->head, atomic_load(&b->tail));
        atomic_store(&b->thread_done, 1);
        atomic_store(&b->open_call_since, 0);
        b->announced = 1;
    }
    thread_buffer = NULL;
}

void rec_buffers_reset(void) {
    /* Rings of live threads are never freed here: another thread may be
     * inside an emit with its ring in hand. Their contents are discarded
     * and their counters start again, for the next session. */
    pthread_mutex_lock(&registry_lock);
    for (rec_buffer *b = registry; b; b = b->next) {
        atomic_store(&b->head, atomic_load(&b->tail));
        atomic_store(&b->dropped, 0);
        atomic_store(&b->committed, 0);
        b->announced = 0;
    }
    atomic_store(&freed_dropped, 0);
    atomic_store(&freed_committed, 0);
    atomic_store(&orphan_drops, 0);
    pthread_mutex_unlock(&registry_lock);
}
