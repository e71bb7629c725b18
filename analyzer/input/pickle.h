/* pickle.h — a safe reader for Python pickles that hold plain data.
 *
 * PyTorch writes its memory snapshots as pickles. Unpickling in Python can
 * run code (GLOBAL + REDUCE call any function), so this reader accepts only
 * the opcodes that build data — dicts, lists, tuples, sets, str, bytes, ints
 * in [-2^63, 2^64-1], floats, bools, None — plus the memo and framing, and
 * refuses every other opcode with its name and byte offset. Protocols 2–5
 * (and the binary protocol-1 opcodes they reuse) are read; protocol-0 text
 * opcodes (INT, STRING, PUT, GET, …) and Python 2 strings are refused.
 *
 * Ownership: a pickle_doc owns every node (one arena, freed at once by
 * pickle_free). Strings and bytes are NOT copied: they point into the input
 * buffer, which the caller keeps alive and unchanged until pickle_free
 * (pickle_parse_file maps the file and owns the mapping itself; the file
 * must not be truncated while the document lives, or reading a string
 * raises SIGBUS, as with any mapping). An object reached twice through the
 * memo is one node: values are 8-byte handles passed by value, and two
 * handles to the same container are equal.
 *
 * Hostile input is harmless: lengths past the end of the input, memo indices
 * out of range, nesting deeper than max_depth, more open MARKs than
 * max_depth, and more memory than max_memory (default 16 bytes per input
 * byte + 64 MiB, everything counted) are all refused with one line. Nothing
 * recurses on the C stack. Cycles (a container mutated after it was stored
 * in another, which Python's pickler only writes for self-referencing data)
 * are refused, so every tree can be walked recursively up to max_depth. */
#ifndef GMT_PICKLE_H
#define GMT_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pickle_doc pickle_doc;

/* A value: an 8-byte handle into its document (immediate for None, bools
 * and ints that fit 63 bits). The zero handle is PICKLE_MISSING. */
typedef struct pickle_value {
    uint64_t bits;
} pickle_value;

typedef enum pickle_type {
    PICKLE_MISSING = 0, /* "no value": an absent dict key, an index out of range */
    PICKLE_NONE,
    PICKLE_BOOL,
    PICKLE_INT,
    PICKLE_FLOAT,
    PICKLE_STR,   /* UTF-8 bytes as written (not validated), not NUL-terminated */
    PICKLE_BYTES, /* bytes and bytearray */
    PICKLE_TUPLE,
    PICKLE_LIST,
    PICKLE_DICT, /* insertion order kept; a repeated key is kept twice, lookups find the last */
    PICKLE_SET,  /* set and frozenset; elements are not de-duplicated */
    PICKLE_FROZENSET,
    PICKLE_RECORD, /* a dict the record hook took (pickle_options.record_hook) */
} pickle_type;

#define PICKLE_DEFAULT_MAX_DEPTH 1000u
#define PICKLE_DEFAULT_MEMORY_FACTOR 16u
#define PICKLE_DEFAULT_MEMORY_BASE (64u << 20)

/* A reader that knows what some dicts are may take them as they are built, so that the
 * document never holds them: PyTorch's snapshot is a million trace-entry dicts, most of the
 * tree's memory. The hook is called when SETITEMS (or SETITEM) fills an empty dict, the way
 * Python's pickler writes every dict of fewer than 1,000 keys, with its pairs (k0, v0, k1, v1,
 * ...; the values stay valid as long as the document). It returns 1 to take the dict, storing
 * its own number for it in *index (< 2^59): the dict is then a PICKLE_RECORD carrying that
 * number (pickle_get_record), and a later change or a second use of it through the memo is
 * refused, as is its use as a dict key or set element (a dict is unhashable). So a dict that
 * is filled by two batches (which Python's pickler, batching 1,000 pairs, never writes for a
 * small dict) or reached twice is refused when taken, read when not. 0 leaves the dict as it is; -1
 * stops the parse (the hook's message, if any, in its own state). */
typedef int (*pickle_record_hook)(void *ctx, const pickle_value *pairs, size_t n, uint64_t *index);

/* Limits; a zero field takes its default. */
typedef struct pickle_options {
    unsigned max_depth;             /* container nesting and open MARKs (at most 60000) */
    size_t max_memory;              /* bytes for nodes, stack and memo */
    pickle_record_hook record_hook; /* NULL: every dict is kept */
    void *record_ctx;
} pickle_options;

/* Parses the pickle in data[0, len) (bytes after its STOP are ignored).
 * Returns NULL with a one-line message in err ("pickle: ... at offset N"). */
pickle_doc *pickle_parse(const void *data, size_t len, const pickle_options *opt, char *err,
                         size_t errlen);
/* Maps the file read-only and parses it; the document owns the mapping. */
pickle_doc *pickle_parse_file(const char *path, const pickle_options *opt, char *err,
                              size_t errlen);
void pickle_free(pickle_doc *doc);

pickle_value pickle_root(const pickle_doc *doc);
size_t pickle_memory_used(const pickle_doc *doc); /* bytes allocated for the tree */
size_t pickle_input_size(const pickle_doc *doc);  /* bytes of pickle it was parsed from */

pickle_type pickle_typeof(pickle_value v);
const char *pickle_type_name(pickle_type t); /* "dict", "int", ... */
static inline int pickle_is_missing(pickle_value v) { return v.bits == 0; }
/* The node behind a container, str, bytes or boxed number, for identity
 * (the same memo object gives the same pointer); NULL for immediates. */
const void *pickle_identity(pickle_value v);

/* Scalars: each returns 1 and stores the value when v has that type and the
 * value fits, 0 otherwise (out untouched). An int in (INT64_MAX, 2^64) fits
 * only pickle_get_u64; a negative int fits only pickle_get_i64. Bools are
 * not ints here. pickle_get_f64 also takes ints. */
int pickle_get_bool(pickle_value v, int *out);
int pickle_get_i64(pickle_value v, int64_t *out);
int pickle_get_u64(pickle_value v, uint64_t *out);
int pickle_get_f64(pickle_value v, double *out);
/* A record's number (what the record hook gave it): 1, or 0 when v is not a record. */
int pickle_get_record(pickle_value v, uint64_t *index);
/* str or bytes: the bytes (inside the input buffer, no NUL) and their count;
 * NULL for other types. */
const char *pickle_get_str(pickle_value v, size_t *len);
/* 1 when v is a str equal to the NUL-terminated s. */
int pickle_str_eq(pickle_value v, const char *s);

/* Containers: items of a tuple, list or set; pairs of a dict. */
size_t pickle_len(pickle_value v);
pickle_value pickle_item(pickle_value v, size_t i); /* tuple, list, set */
pickle_value pickle_dict_key(pickle_value dict, size_t i);
pickle_value pickle_dict_value(pickle_value dict, size_t i);
/* All items at once: a tuple's, list's or set's, or a dict's keys and values
 * interleaved (k0, v0, k1, v1, ...); *n gets the count of values (2 per dict
 * pair). NULL when empty or not a container. The array lives as long as the
 * document. Lists with equal first batches share one array, so equal
 * pointers mean equal items (never the converse): a cheap cache key. */
const pickle_value *pickle_items(pickle_value v, size_t *n);
/* The value under the str key (the last one when repeated); MISSING when v
 * is not a dict or has no such key. A linear scan: snapshot dicts are small. */
pickle_value pickle_dict_get(pickle_value dict, const char *key);

/* Typed lookups with a default for a missing key or a value of another type. */
int64_t pickle_dict_i64(pickle_value dict, const char *key, int64_t dflt);
uint64_t pickle_dict_u64(pickle_value dict, const char *key, uint64_t dflt);
double pickle_dict_f64(pickle_value dict, const char *key, double dflt);
int pickle_dict_bool(pickle_value dict, const char *key, int dflt);
/* The str under key, or NULL (then *len is 0). */
const char *pickle_dict_str(pickle_value dict, const char *key, size_t *len);

#ifdef __cplusplus
}
#endif

#endif
