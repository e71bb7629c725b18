/* fuzz_pickle.c — libFuzzer target for the pickle reader and the snapshot
 * conversion.
 *
 * The input bytes are parsed as a pickle (from an exact-size copy, so any
 * read past the end is an ASan report); a value is then walked the way a
 * consumer would — every string's bytes, every container's items, with a
 * visit budget since memo sharing makes the tree a DAG that a naive walk
 * could expand exponentially — and converted as a PyTorch snapshot. Any
 * crash, hang, leak or sanitizer report is a bug in analyzer/. A good seed
 * corpus: the pickles in ../shared/data/pytorch and tests/make_pickles.py --out. */
#include "pickle.h"
#include "snapshot.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t walk(pickle_value v, unsigned depth, size_t *budget) {
    if (*budget == 0 || depth > PICKLE_DEFAULT_MAX_DEPTH + 1)
        return 0;
    (*budget)--;
    uint64_t sum = (uint64_t)pickle_typeof(v);
    size_t n;
    const char *s = pickle_get_str(v, &n);
    for (size_t i = 0; s && i < n; i++)
        sum += (uint8_t)s[i];
    int64_t i64;
    uint64_t u64;
    double f;
    int b;
    sum += pickle_get_i64(v, &i64) ? (uint64_t)i64 : 0;
    sum += pickle_get_u64(v, &u64) ? u64 : 0;
    sum += pickle_get_f64(v, &f) ? (f == f) : 0;
    sum += pickle_get_bool(v, &b) ? (uint64_t)b : 0;
    const pickle_value *items = pickle_items(v, &n);
    for (size_t i = 0; items && i < n; i++)
        sum += walk(items[i], depth + 1, budget);
    if (pickle_typeof(v) == PICKLE_DICT)
        sum += pickle_dict_i64(v, "size", 0) + pickle_len(pickle_dict_get(v, "frames"));
    return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    char err[256];
    pickle_doc *doc = pickle_parse(copy, size, NULL, err, sizeof err);
    if (doc) {
        size_t budget = 100000;
        volatile uint64_t sink = walk(pickle_root(doc), 0, &budget);
        snapshot *s = snapshot_from_pickle(doc, err, sizeof err);
        if (s) {
            for (size_t d = 0; d < s->device_count; d++)
                for (size_t i = 0; i < s->devices[d].entry_count; i++) {
                    size_t depth;
                    const uint32_t *fr =
                        snapshot_stack_frames(s, s->devices[d].entries[i].stack, &depth);
                    for (size_t k = 0; k < depth; k++)
                        sink += (uint64_t)s->frames[fr[k]].line + (uint8_t)s->frames[fr[k]].name[0];
                }
            for (size_t g = 0; g < s->segment_count; g++)
                for (size_t j = 0; j < s->segments[g].block_count; j++)
                    sink += s->segments[g].blocks[j].address;
            snapshot_free(s);
        }
        (void)sink;
        pickle_free(doc);
    }
    free(copy);
    return 0;
}
