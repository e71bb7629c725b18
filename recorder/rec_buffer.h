/* rec_buffer.h — per-thread record buffers between the program's threads
 * and the writer thread.
 *
 * Each thread that emits gets one single-producer/single-consumer byte ring
 * (created on its first emit, the only allocation on its path). Items are
 * 16-byte aligned, never wrap (a pad item fills the end of the ring), and
 * carry a timestamp so the writer can merge the threads' rings in time order.
 * When a ring is full the item is dropped and counted: an application thread
 * never waits for the writer. */
#ifndef GMT_REC_BUFFER_H
#define GMT_REC_BUFFER_H

#include <stddef.h>
#include <stdint.h>

typedef enum rec_item_type {
    REC_ITEM_PAD = 0, /* filler up to the end of the ring */
    REC_ITEM_EVENT,   /* trace_event */
    REC_ITEM_MARKER,  /* rec_marker_item + domain + name bytes */
    REC_ITEM_COUNTER, /* trace_counter */
    REC_ITEM_DEVICE,  /* rec_device_item + name bytes */
} rec_item_type;

typedef struct rec_item {
    uint32_t size; /* whole item, header included, multiple of 16 */
    uint32_t type; /* rec_item_type */
    uint64_t ts_ns;
} rec_item;

typedef struct rec_buffer rec_buffer;

/* Sets the capacity (bytes, rounded up to a power of two) of rings created
 * from now on. */
void rec_buffer_set_capacity(size_t bytes);

/* The calling thread's ring, created and registered on first use; NULL when
 * it cannot be created (the caller counts a drop). */
rec_buffer *rec_buffer_for_thread(void);

/* A ring not bound to a thread (the late lane): registered like the
 * others, never freed before the process ends. Its producers must hold a
 * lock of their own. NULL when it cannot be allocated. */
rec_buffer *rec_buffer_new_shared(size_t capacity, uint32_t tid);

/* The calling thread's ring if it has one (never creates one). */
rec_buffer *rec_buffer_current(void);

/* A call in progress on the ring's thread whose record will carry the
 * call's start time (a free stamped at its entry): the writer holds back
 * records newer than `since_ns` until it is closed, so the free is not
 * written after another thread's reuse of the same address. 0 closes. */
void rec_buffer_set_open_call(rec_buffer *b, uint64_t since_ns);

/* The oldest open call over all rings; UINT64_MAX when none. Writer side. */
uint64_t rec_buffers_oldest_open_call(void);

/* Reserves an item with `payload` bytes after the header and returns a
 * pointer to the payload, or NULL when the ring is full (the drop is
 * counted). Nothing is visible to the writer until rec_buffer_commit. */
void *rec_buffer_reserve(rec_buffer *b, size_t payload, rec_item_type type, uint64_t ts_ns);
/* Publishes the reserved item. Returns 1 when the ring just passed half
 * full (the caller wakes the writer), else 0. */
int rec_buffer_commit(rec_buffer *b);

/* Counts a record the thread could not buffer (no ring, session stopped). */
void rec_buffer_count_drop(rec_buffer *b);

/* ---- writer side ---- */

/* One ring's committed-but-unwritten items, as seen at one instant. */
typedef struct rec_buffer_view {
    rec_buffer *buffer;
    const rec_item *next; /* NULL when this view is exhausted */
    uint64_t pos, end;    /* ring positions */
    uint32_t tid;
} rec_buffer_view;

/* Takes a view of up to `max` registered rings that hold items. Returns the
 * number of views filled. Frees rings whose thread ended and that are
 * empty. */
size_t rec_buffers_snapshot(rec_buffer_view *views, size_t max);

/* Advances a view to its next item (skipping pads); sets next = NULL at end. */
void rec_buffer_view_advance(rec_buffer_view *v);

/* Gives the bytes of every item seen in the views back to their rings. */
void rec_buffers_release(rec_buffer_view *views, size_t n);

/* Thread names of rings that hold records and were not announced in this
 * session yet: calls fn for each, once. */
void rec_buffers_new_threads(void (*fn)(void *ctx, uint32_t tid, const char *name), void *ctx);

/* Sum of drops over all rings (and rings already freed). */
uint64_t rec_buffers_dropped(void);
/* Sum of items committed over all rings. */
uint64_t rec_buffers_committed(void);

/* Number of registered rings (for the writer's view array). */
size_t rec_buffers_count(void);

/* Forgets every ring without touching locks: for the child after fork. */
void rec_buffers_abandon_after_fork(void);

/* Discards what the rings hold and zeroes their counters (at session end,
 * after the writer stopped; rings of live threads stay allocated). */
void rec_buffers_reset(void);

#endif
