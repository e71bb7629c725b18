/* test_sorted_pairs.c — analyzer/base/sorted_pairs.h (and common/gmt_radix.h) against qsort.
 *
 * Pairs of every kind the writers give (ids with gaps, negative seed ids, the extremes of
 * int64, repeats, a second field already in order or not) go in; they must come out once each,
 * in (first, second) order, whether they fit one run in memory or spill into many runs merged
 * back, and whatever the sink's batch. */
#include "check.h"

#include "gmt_radix.h"
#include "sorted_pairs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t next_random(void) { return check_random(&rng); }

typedef struct collected {
    int64_t (*pairs)[2];
    size_t n, batches, max_batch;
} collected;

static int collect(void *ctx, const int64_t (*pairs)[2], size_t n, char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    collected *c = ctx;
    memcpy(c->pairs + c->n, pairs, n * sizeof *pairs);
    c->n += n;
    c->batches++;
    c->max_batch = n > c->max_batch ? n : c->max_batch;
    return 0;
}

/* kind 0: small ids, second ascending (the event store); 1: both random over all of int64;
 * 2: few distinct firsts (repeats); 3: extremes */
static int64_t value(int kind, size_t i, int field) {
    switch (kind) {
    case 0:
        return field ? (int64_t)i * 3 - 100 : (int64_t)(next_random() % 5000000) - 10;
    case 1:
        return (int64_t)next_random();
    case 2:
        return field ? (int64_t)(next_random() % 7) : (int64_t)(next_random() % 5) - 2;
    default: {
        static const int64_t ends[] = {INT64_MIN, INT64_MIN + 1, -1,       0,
                                       1,         INT64_MAX - 1, INT64_MAX};
        return ends[next_random() % 7];
    }
    }
}

static void run_case(int kind, size_t n, size_t run_pairs, size_t batch) {
    int64_t(*ref)[2] = malloc((n + 1) * sizeof *ref);
    collected got = {malloc((n + 1) * sizeof *got.pairs), 0, 0, 0};
    sorted_pairs *s = sorted_pairs_new("/tmp/test_sorted_pairs.db", run_pairs);
    CHECK(s != NULL);
    char err[128] = "";
    for (size_t i = 0; i < n; i++) {
        ref[i][0] = value(kind, i, 0);
        ref[i][1] = value(kind, i, 1);
        CHECK(sorted_pairs_add(s, ref[i][0], ref[i][1], err, sizeof err) == 0);
    }
    CHECK(sorted_pairs_count(s) == n);
    CHECK(sorted_pairs_drain(s, batch, collect, &got, err, sizeof err) == 0);
    qsort(ref, n, sizeof *ref, check_pair_cmp);
    if (got.n != n || (n && memcmp(got.pairs, ref, n * sizeof *ref) != 0)) {
        fprintf(stderr, "kind %d, %zu pairs, runs of %zu: not in order (%zu out)\n", kind, n,
                run_pairs, got.n);
        check_failures++;
    }
    CHECK(got.max_batch <= batch);
    sorted_pairs_free(s);
    free(ref);
    free(got.pairs);
}

/* gmt_radix.h on its own: unsigned keys (addresses above 2^63 too), and by the first key alone,
 * which must keep the records of one key in their order (stable). */
static int by_first_u64(const void *x, const void *y) {
    const uint64_t *a = x, *b = y;
    return (a[0] > b[0]) - (a[0] < b[0]);
}

static void radix_alone(void) {
    enum { N = 50000 };
    static uint64_t a[N][2], spare[N][2], ref[N][2];
    for (size_t i = 0; i < N; i++) {
        uint64_t r = next_random();
        a[i][0] = i % 3 == 0 ? r : i % 3 == 1 ? (r % 100) : UINT64_MAX - r % 1000;
        a[i][1] = i; /* the order they came in */
    }
    memcpy(ref, a, sizeof a);
    gmt_radix_sort(a, spare, N, 0, 1);
    int sorted = 1, stable = 1;
    for (size_t i = 1; i < N; i++) {
        sorted &= a[i - 1][0] <= a[i][0];
        stable &= a[i - 1][0] != a[i][0] || a[i - 1][1] < a[i][1];
    }
    CHECK(sorted);
    CHECK(stable);
    qsort(ref, N, sizeof *ref, by_first_u64); /* the same keys, each once */
    int same_keys = 1;
    for (size_t i = 0; i < N; i++)
        same_keys &= ref[i][0] == a[i][0];
    CHECK(same_keys);
    uint64_t one[1][2] = {{5, 6}}, none[1][2];
    gmt_radix_sort(one, none, 1, 0, 0);
    CHECK(one[0][0] == 5 && one[0][1] == 6);
}

int main(void) {
    radix_alone();
    static const size_t sizes[] = {0, 1, 2, 3, 1000, 4097, 100000};
    for (int kind = 0; kind < 4; kind++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            run_case(kind, sizes[i], 0, 4096);  /* one run, in memory */
            run_case(kind, sizes[i], 777, 100); /* many runs, merged */
            run_case(kind, sizes[i], 1, 1);     /* a run per pair */
        }
    return check_finish("test_sorted_pairs");
}
