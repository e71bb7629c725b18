/* tree_write.h — a tree of dicts, lists and scalars streamed to a FILE either as a pickle
 * (pickle_write.h: EMPTY_LIST/EMPTY_DICT, then MARK items APPENDS/SETITEMS per batch of
 * PICKLE_WRITE_BATCH, as Python's pickler writes them) or as JSON (what json.dump of the same
 * dicts and lists writes, without spaces). One printer, two formats: `export --to pytorch` writes
 * the snapshot torch.cuda.memory._dump_snapshot pickles, or the same structure as JSON
 * (MemoryViz.js's unpickle tries JSON.parse first).
 *
 * A container is opened as a value (tree_dict, tree_list) and ended by tree_close; inside a dict
 * each value follows its tree_key. Nothing is written between a value's end and the next call,
 * so tree_memoize right after a value memoizes it (a pickle's MEMOIZE; JSON has no memo: 0).
 * Write errors are the FILE's: the caller checks ferror/fflush at the end. */
#ifndef GMT_TREE_WRITE_H
#define GMT_TREE_WRITE_H

#include "pickle_write.h"

#include <stdint.h>
#include <stdio.h>

#define TREE_MAX_DEPTH 16

typedef struct tree_writer {
    FILE *f;
    int json;
    pickle_writer p;
    int depth; /* open containers */
    struct tree_level {
        uint8_t dict;   /* a dict (1) or a list (0) */
        uint32_t items; /* pickle: items in the open batch; JSON: items so far */
    } lv[TREE_MAX_DEPTH];
} tree_writer;

void tree_begin(tree_writer *t, FILE *f, int json); /* pickle: PROTO 4 */
void tree_end(tree_writer *t);                      /* pickle: STOP; JSON: a newline */
void tree_dict(tree_writer *t);
void tree_list(tree_writer *t);
void tree_close(tree_writer *t); /* ends the innermost open dict or list */
void tree_key(tree_writer *t, const char *key);
void tree_str(tree_writer *t, const char *s); /* UTF-8 as it is */
void tree_int(tree_writer *t, int64_t v);
void tree_uint(tree_writer *t, uint64_t v);
void tree_bool(tree_writer *t, int v);
void tree_none(tree_writer *t);
void tree_float(tree_writer *t, double v); /* JSON: a non-finite value as null */
/* A pair of integers: pickle's tuple (TUPLE2, as PyTorch writes segment_pool_id); JSON: [a, b]. */
void tree_int_pair(tree_writer *t, int64_t a, int64_t b);
/* Memoizes the value just written: 1 + its memo index, or 0 (JSON: write it again instead). */
uint32_t tree_memoize(tree_writer *t);
/* The value memoized as 1 + index (tree_memoize's answer), written again from the memo. */
void tree_get(tree_writer *t, uint32_t memo);

#endif
