/* rec_cupti_log.h — the raw CUPTI callback log (MEMREC_CALLBACK_LOG): a
 * fixture recorder beside the handler (rec_cupti.h).
 *
 * With MEMREC_CALLBACK_LOG=PATH in the environment at attach, the callback
 * appends one text line per handled callback to PATH: exactly the
 * rec_cupti_call it hands rec_cupti_handle, params fields included, so a
 * stream saved on a GPU machine replays through the handler without one
 * (tests/fixtures/cupti/README.md has the format). Unset, it costs one
 * branch per callback. A debugging and fixture path: it formats text. */
#ifndef GMT_REC_CUPTI_LOG_H
#define GMT_REC_CUPTI_LOG_H

#include "rec_cupti.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* How a params field is written: 8-byte values as decimal (sizes) or hex
 * (addresses, handles, streams, pools, flags); unsigned int and int
 * (CUdevice) in decimal; a pointer to an 8-byte output (its value at a
 * successful exit, "-" before, "null" when the pointer is NULL); a pointer
 * to a struct as the members of it the handler reads, comma-separated (or
 * "null"): allocation or pool properties as "type,location type,location
 * id", a graph memory allocation node's as "bytesize,dptr" (dptr is the
 * driver's output: written as an 8-byte output is), a multicast object's
 * as "size", generic graph node parameters as "type", "type,bytesize,dptr"
 * for a memory allocation node, "type,dptr" for a memory free node. The
 * last two exist in CUDA 12.1 and 12.2 headers on: built against older
 * ones, no layout uses them. */
typedef enum rec_cupti_field_type {
    REC_FIELD_SIZE,
    REC_FIELD_HEX,
    REC_FIELD_UINT,
    REC_FIELD_INT,
    REC_FIELD_OUT,
    REC_FIELD_ALLOC_PROP,     /* const CUmemAllocationProp * */
    REC_FIELD_POOL_PROPS,     /* const CUmemPoolProps * */
    REC_FIELD_MEM_ALLOC_NODE, /* CUDA_MEM_ALLOC_NODE_PARAMS * */
    REC_FIELD_MULTICAST_PROP, /* const CUmulticastObjectProp * (CUDA 12.1) */
    REC_FIELD_GRAPH_NODE,     /* CUgraphNodeParams * (CUDA 12.2) */
} rec_cupti_field_type;

typedef struct rec_cupti_field {
    const char *name; /* the params struct member; NULL ends a list */
    size_t offset;
    rec_cupti_field_type type;
} rec_cupti_field;

/* A handled cbid's params struct as the log writes it: the fields the
 * handler reads, in struct order. */
typedef struct rec_cupti_layout {
    CUpti_CallbackId cbid;
    const char *name; /* the driver function, e.g. "cuMemAlloc_v2" */
    size_t params_size;
    const rec_cupti_field *fields;
} rec_cupti_layout;

/* The layout of a handled cbid, or of a driver function by name; NULL when
 * not handled. */
const rec_cupti_layout *rec_cupti_layout_of(CUpti_CallbackId cbid);
const rec_cupti_layout *rec_cupti_layout_named(const char *name);

/* Every layout (for tests: each one a handled cbid, each handled cbid one). */
size_t rec_cupti_layouts(const rec_cupti_layout **out);

/* Formats `call`, made on thread `tid`, as one log line ending in '\n'.
 * Returns its length, or -1 for an unhandled cbid or a line too long. */
int rec_cupti_log_format(const rec_cupti_call *call, uint32_t tid, char *out, size_t len);

/* Starts appending the log to `path` (created 0644, a "#" header line
 * naming the pid), or stops it with NULL. Attach calls it once with
 * MEMREC_CALLBACK_LOG; tests call it directly. Returns 0, -1 when the file
 * cannot be opened (nothing is logged then). */
int rec_cupti_log_open(const char *path);

/* Attach: starts the log when MEMREC_CALLBACK_LOG names a file (looked at
 * once per process; one warning when it cannot be opened). */
void rec_cupti_log_from_env(void);

/* The callback's part: one relaxed load and a branch while the log is off. */
extern atomic_int rec_cupti_log_fd; /* -1: off */
void rec_cupti_log_write(int fd, const rec_cupti_call *call);
static inline void rec_cupti_log_call(const rec_cupti_call *call) {
    int fd = atomic_load_explicit(&rec_cupti_log_fd, memory_order_relaxed);
    if (fd >= 0)
        rec_cupti_log_write(fd, call);
}

#endif
