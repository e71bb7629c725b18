/* test_torch_export.c — `export --to pytorch`'s two halves (issue 30): query/torch_export.h's
 * entries of a driver-only trace (plain cudaMalloc/cudaFree, no PyTorch allocator: each
 * segment is also its own block, so segment_alloc then alloc, free_completed then segment_free;
 * a failed driver allocation, which a history has no action for, left out), and
 * base/pickle_write.h's values read back by the project's safe reader (ints at every width
 * LONG1 takes over from BININT, 2^64 - 1, negatives, floats, long strings, a memo reference
 * past 256 entries), and base/tree_write.h's one tree written both ways: the pickle read back
 * (a list of 2500, written in batches, a dict, a memoized list fetched again), the JSON byte for
 * byte (escapes, floats as Python's json writes them, the extreme integers, empty containers). */
#include "check.h"
#include "pickle.h"
#include "pickle_write.h"
#include "torch_export.h"
#include "trace_build.h"
#include "tree_write.h"

#include <string.h>

typedef struct seen {
    char actions[16][24];
    uint64_t addr[16], size[16];
    size_t n;
} seen;

static int collect(void *ctx, const torch_event *e) {
    seen *s = ctx;
    if (s->n < 16) {
        snprintf(s->actions[s->n], sizeof s->actions[0], "%s", e->action);
        s->addr[s->n] = e->addr;
        s->size[s->n] = e->size;
    }
    s->n++;
    return 0;
}

static void test_driver_only(void) {
    begin();
    cupti_segment(TRACE_OP_ALLOC, 0x20000000, 6 * MiB);
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 4 * MiB);
    cupti_segment(TRACE_OP_FREE, 0x20000000, 0);
    ev(TRACE_OP_ALLOC_FAILED, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, 0, 64 * MiB, 0, 0);
    replay_it(db_path, DB_READ_ONLY);
    CHECK_EQ_U64(torch_export_device_count(db), 1);
    CHECK_EQ_U64(torch_export_last_event(db), 4);
    CHECK(torch_export_timed(db));
    CHECK_EQ_U64(q("SELECT count(*) FROM segments WHERE whole_block = 1"), 2);
    seen s = {0};
    char err[256];
    CHECK(torch_export_events(db, 0, collect, &s, err, sizeof err) == 0);
    static const char *want[] = {"segment_alloc", "alloc",          "segment_alloc",
                                 "alloc",         "free_completed", "segment_free"};
    CHECK_EQ_U64(s.n, 6); /* the failed allocation has no action */
    for (size_t i = 0; i < 6 && i < s.n; i++)
        CHECK(!strcmp(s.actions[i], want[i]));
    CHECK_EQ_U64(s.addr[1], 0x20000000);
    CHECK_EQ_U64(s.size[1], 6 * MiB);
    CHECK_EQ_U64(s.addr[4], 0x20000000);
    CHECK_EQ_U64(s.size[5], 6 * MiB);
    /* another device: nothing */
    seen none = {0};
    CHECK(torch_export_events(db, 1, collect, &none, err, sizeof err) == 0 && none.n == 0);
    torch_value v;
    CHECK(torch_export_settings(db, &v) == 0 && v.type == TORCH_VALUE_DICT && v.n == 0);
    torch_value_free(&v);
}

static void test_writer(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    if (!f)
        return;
    pickle_writer pw;
    pickle_write_begin(&pw, f);
    static const int64_t ints[] = {0,          1,           -1,        INT32_MAX, INT32_MIN,
                                   2147483648, -2147483649, INT64_MAX, INT64_MIN, 1LL << 40};
    size_t nints = sizeof ints / sizeof ints[0];
    char big[300];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    pickle_write_empty_list(&pw);
    pickle_write_mark(&pw);
    for (size_t i = 0; i < nints; i++)
        pickle_write_int(&pw, ints[i]);
    pickle_write_uint(&pw, UINT64_MAX);
    pickle_write_float(&pw, 0.6);
    pickle_write_str(&pw, big);
    pickle_write_bool(&pw, 1);
    pickle_write_none(&pw);
    for (int i = 0; i < 300; i++) { /* 300 memoized lists, the last fetched by LONG_BINGET */
        pickle_write_empty_list(&pw);
        pickle_write_memoize(&pw);
    }
    pickle_write_get(&pw, 299);
    pickle_write_get(&pw, 3);
    pickle_write_appends(&pw);
    pickle_write_stop(&pw);
    CHECK(fclose(f) == 0);
    char err[256];
    pickle_doc *doc = pickle_parse(buf, len, NULL, err, sizeof err);
    if (!doc)
        fprintf(stderr, "pickle_parse: %s\n", err);
    CHECK(doc != NULL);
    if (doc) {
        pickle_value root = pickle_root(doc);
        CHECK_EQ_U64(pickle_len(root), nints + 5 + 300 + 2);
        for (size_t i = 0; i < nints; i++) {
            int64_t got = 0;
            CHECK(pickle_get_i64(pickle_item(root, i), &got) && got == ints[i]);
        }
        uint64_t u = 0;
        double d = 0;
        int b = 0;
        size_t n = 0;
        CHECK(pickle_get_u64(pickle_item(root, nints), &u) && u == UINT64_MAX);
        CHECK(pickle_get_f64(pickle_item(root, nints + 1), &d) && d == 0.6);
        const char *str = pickle_get_str(pickle_item(root, nints + 2), &n);
        CHECK(str && n == strlen(big) && !memcmp(str, big, n));
        CHECK(pickle_get_bool(pickle_item(root, nints + 3), &b) && b == 1);
        size_t last = nints + 5 + 300;
        CHECK(pickle_identity(pickle_item(root, last)) ==
              pickle_identity(pickle_item(root, nints + 5 + 299)));
        CHECK(pickle_identity(pickle_item(root, last + 1)) ==
              pickle_identity(pickle_item(root, nints + 5 + 3)));
        pickle_free(doc);
    }
    free(buf);
}

/* The tree {"s": TEXT, "f": [0.0, 0.1, -2.5e-07], "i": [INT64_MIN, UINT64_MAX], "b": true,
 * "n": null, "e": [], "d": {}, "l": [0 .. count), "m": the "e" list again (pickle: memo)}. */
static void write_tree(FILE *f, int json, size_t count) {
    tree_writer tw;
    tree_begin(&tw, f, json);
    tree_dict(&tw);
    tree_key(&tw, "s");
    tree_str(&tw, "q\"b\\n\n\x01\xc3\xa9");
    tree_key(&tw, "f");
    tree_list(&tw);
    tree_float(&tw, 0.0);
    tree_float(&tw, 0.1);
    tree_float(&tw, -2.5e-7);
    tree_close(&tw);
    tree_key(&tw, "i");
    tree_list(&tw);
    tree_int(&tw, INT64_MIN);
    tree_uint(&tw, UINT64_MAX);
    tree_close(&tw);
    tree_key(&tw, "b");
    tree_bool(&tw, 1);
    tree_key(&tw, "n");
    tree_none(&tw);
    tree_key(&tw, "e");
    tree_list(&tw);
    tree_close(&tw);
    uint32_t memo = tree_memoize(&tw);
    CHECK(json ? memo == 0 : memo == 1);
    tree_key(&tw, "d");
    tree_dict(&tw);
    tree_close(&tw);
    if (count) {
        tree_key(&tw, "l");
        tree_list(&tw);
        for (size_t i = 0; i < count; i++)
            tree_uint(&tw, i);
        tree_close(&tw);
    }
    if (memo) {
        tree_key(&tw, "m");
        tree_get(&tw, memo);
    }
    tree_close(&tw);
    tree_end(&tw);
}

static void test_tree(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    if (!f)
        return;
    write_tree(f, 1, 0);
    CHECK(fclose(f) == 0);
    CHECK_STR_EQ(buf, "{\"s\":\"q\\\"b\\\\n\\n\\u0001\xc3\xa9\",\"f\":[0.0,0.1,-2.5e-07],"
                      "\"i\":[-9223372036854775808,18446744073709551615],\"b\":true,"
                      "\"n\":null,\"e\":[],\"d\":{}}\n");
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    if (!f)
        return;
    write_tree(f, 0, 2500);
    CHECK(fclose(f) == 0);
    char err[256];
    pickle_doc *doc = pickle_parse(buf, len, NULL, err, sizeof err);
    if (!doc)
        fprintf(stderr, "pickle_parse: %s\n", err);
    CHECK(doc != NULL);
    if (doc) {
        pickle_value root = pickle_root(doc), l = pickle_dict_get(root, "l");
        size_t n = 0;
        const char *s = pickle_get_str(pickle_dict_get(root, "s"), &n);
        CHECK(s && n == 9 && !memcmp(s, "q\"b\\n\n\x01\xc3\xa9", n));
        CHECK_EQ_U64(pickle_len(l), 2500);
        uint64_t last = 0, big = 0;
        CHECK(pickle_get_u64(pickle_item(l, 2499), &last) && last == 2499);
        CHECK(pickle_get_u64(pickle_item(pickle_dict_get(root, "i"), 1), &big) &&
              big == UINT64_MAX);
        CHECK(pickle_identity(pickle_dict_get(root, "m")) ==
              pickle_identity(pickle_dict_get(root, "e")));
        CHECK_EQ_U64(pickle_len(pickle_dict_get(root, "d")), 0);
        pickle_free(doc);
    }
    free(buf);
}

int main(void) {
    if (tmpdir_make("torch_export") != 0)
        return 1;
    test_driver_only();
    test_writer();
    test_tree();
    return tmpdir_finish("test_torch_export");
}
