/* pickle_write.h — a pickle (protocol 4) written opcode by opcode to a FILE, with only the
 * opcodes PyTorch's own JavaScript unpickler (MemoryViz) reads: PROTO, EMPTY_DICT, EMPTY_LIST,
 * TUPLE2 (segment_pool_id, in every real snapshot), MARK, SETITEMS, APPENDS,
 * SHORT_BINUNICODE/BINUNICODE, BININT (LONG1 for integers outside int32), BINFLOAT,
 * NEWTRUE/NEWFALSE, NONE, MEMOIZE, BINGET/LONG_BINGET, STOP — a subset of what every pickle
 * torch.cuda.memory._dump_snapshot writes holds (its allocator_settings'
 * garbage_collection_threshold is a BINFLOAT, its memo past 256 entries LONG_BINGETs), so of what
 * MemoryViz reads. Nothing that names a class or calls anything. The caller builds containers as
 * pickle does: EMPTY_LIST, MARK, the items, APPENDS (pickle_write_end_list: one APPENDS per batch
 * of items). Write errors are the FILE's: the caller checks ferror/fflush once at the end. */
#ifndef GMT_PICKLE_WRITE_H
#define GMT_PICKLE_WRITE_H

#include <stdint.h>
#include <stdio.h>

typedef struct pickle_writer {
    FILE *f;
    uint32_t memo_next; /* the memo index the next MEMOIZE takes */
} pickle_writer;

/* Items pickle puts under one MARK before APPENDS/SETITEMS (what Python's pickler does). */
#define PICKLE_WRITE_BATCH 1000

void pickle_write_begin(pickle_writer *w, FILE *f); /* PROTO 4 */
void pickle_write_stop(pickle_writer *w);           /* STOP */
void pickle_write_empty_dict(pickle_writer *w);
void pickle_write_empty_list(pickle_writer *w);
void pickle_write_mark(pickle_writer *w);
void pickle_write_setitems(pickle_writer *w);
void pickle_write_appends(pickle_writer *w);
void pickle_write_str(pickle_writer *w, const char *s); /* UTF-8 text as it is */
void pickle_write_int(pickle_writer *w, int64_t v);
void pickle_write_uint(pickle_writer *w, uint64_t v);
void pickle_write_bool(pickle_writer *w, int v);
void pickle_write_none(pickle_writer *w);
void pickle_write_tuple2(pickle_writer *w); /* TUPLE2: the two values on top as a tuple */
/* MEMOIZE the top of the stack: returns its memo index. */
uint32_t pickle_write_memoize(pickle_writer *w);
void pickle_write_float(pickle_writer *w, double v); /* BINFLOAT */
/* BINGET, or LONG_BINGET for an index of 256 or more. */
void pickle_write_get(pickle_writer *w, uint32_t index);

#endif
