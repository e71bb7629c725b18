/* block_detail.h — one allocation, everything the database knows of it: its size and request,
 * where and on which stream it lived, when it was made and freed (event, time, step), its
 * category and the name the program gave it, its alloc and free stacks (ids: stack_names.h
 * gives the frames). The viewer's /api/block asks it when a block is clicked.
 *
 * An allocation is a row of the `allocations` view (a block, or a whole-block segment: a
 * plain cudaMalloc); its id is the event id of its alloc, negative for one seeded (live before
 * the recording began). One point lookup through the event store's alloc_event_id index. */
#ifndef GMT_BLOCK_DETAIL_H
#define GMT_BLOCK_DETAIL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct block_detail {
    int64_t alloc_id;
    int device;
    char kind[16]; /* device, managed, pinned_host */
    uint64_t addr;
    int64_t size;      /* as the allocator accounts it */
    int64_t requested; /* -1: not reported */
    int have_stream;
    uint64_t stream;
    int64_t segment_id; /* 0: unknown */
    int64_t alloc_ts_ns;
    int64_t free_event_id;                 /* 0: live at the end */
    int64_t free_ts_ns;                    /* -1: live at the end */
    int64_t free_requested_ts_ns;          /* -1: no free_requested event */
    int64_t alloc_step, free_step;         /* -1: outside every step (or not freed) */
    int64_t alloc_stack_id, free_stack_id; /* 0: none recorded */
    char category[32];                     /* "" when the database has not computed categories */
    char tensor_name[512];                 /* "" when the program named none */
} block_detail;

/* The allocation `alloc_id` into *out: 0; 1 when there is none of that id; -1 with SQLite's
 * message in err. */
int block_detail_read(sqlite3 *db, int64_t alloc_id, block_detail *out, char *err, size_t errlen);

#endif
