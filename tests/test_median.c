/* test_median.c — analyzer/base/median.h: the streamed median against sorting.
 *
 * Sequences of every shape the report gives (all equal: a steady run's step-to-step changes;
 * few distinct values; negatives; the extremes of int64, whose mean overflows a plain sum;
 * spread over all of int64, or just over one digit) go through median_stream with buffers from 1
 * value to more than the sequence, so both the one-pass path and the radix passes answer; the
 * answer must be median_i64's, in one pass when the values fit the buffer or the middle ones are
 * small, else in at most five. A source that fails or changes between passes must make the median
 * fail, never answer wrong. */
#include "check.h"

#include "median.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;

typedef struct array_source {
    const int64_t *values;
    size_t n, at;
    int passes;
    int fail_on_pass;   /* 0: never */
    int change_on_pass; /* 0: never; from this pass on one more value comes, 2500 << 40 (the
                           middle of bad_sources' values, where the passes look) */
    int move_on_pass;   /* 0: never; from this pass on the smallest value comes as the largest
                           (the count is the same, the median is not) */
} array_source;

static int array_rewind(void *ctx) {
    array_source *a = ctx;
    a->at = 0;
    a->passes++;
    return a->fail_on_pass && a->passes == a->fail_on_pass ? -1 : 0;
}

static int array_next(void *ctx, int64_t *value) {
    array_source *a = ctx;
    size_t n = a->n + (a->change_on_pass && a->passes >= a->change_on_pass);
    if (a->at >= n)
        return 0;
    *value = a->at < a->n ? a->values[a->at] : (int64_t)2500 << 40;
    if (a->move_on_pass && a->passes >= a->move_on_pass && *value == 0)
        *value = INT64_MAX;
    a->at++;
    return 1;
}

static int64_t value(int kind, size_t i) {
    uint64_t r = check_random(&rng);
    switch (kind) {
    case 0:
        return 0; /* a steady run */
    case 1:
        return (int64_t)(r % 5) * 4096 - 8192; /* few values, negatives */
    case 2:
        return i % 2 ? INT64_MAX - (int64_t)(r % 3) : INT64_MIN + (int64_t)(r % 3);
    case 3:
        return (int64_t)r; /* all of int64 */
    case 4:
        return (int64_t)(r % 1000) - (i % 7 == 0 ? (int64_t)1 << 40 : 0); /* an outlying tail */
    case 5:
        return 1 << 20; /* all equal, not 0 */
    case 6:
        return (int64_t)(r % 70000) + 5000000; /* a spread just over one digit */
    case 7: /* at the edges of the first pass's buckets: powers of two and their neighbours */
        return (i % 2 ? 1 : -1) * ((int64_t)1 << (r % 62)) + (int64_t)(r / 64 % 3) - 1;
    default:
        return i % 3 ? INT64_MAX : INT64_MAX - 1; /* extremes, the sum overflows */
    }
}

static void run_case(int kind, size_t n, size_t kept) {
    int64_t *v = malloc((n + 1) * sizeof *v), *sorted = malloc((n + 1) * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = value(kind, i);
    memcpy(sorted, v, n * sizeof *v);
    int64_t want = median_i64(sorted, n);
    array_source a = {v, n, 0, 0, 0, 0, 0};
    value_source src = {&a, array_rewind, array_next};
    int64_t got = -12345;
    size_t count = 7;
    CHECK(median_stream(&src, kept, &got, &count) == 0);
    if (got != want || count != n)
        fprintf(stderr, "kind %d, n %zu, kept %zu: %lld (want %lld), count %zu\n", kind, n, kept,
                (long long)got, (long long)want, count);
    CHECK(got == want);
    CHECK_EQ_U64(count, n);
    /* one pass when they fit the buffer or the middle values are among the ones the first pass
     * counts one by one (-256 .. 255), else at most five */
    int exact = n && sorted[(n - 1) / 2] >= -256 && sorted[n / 2] <= 255;
    int most = n <= (kept ? kept : MEDIAN_STREAM_KEPT) || exact ? 1 : 5;
    if (a.passes > most)
        fprintf(stderr, "kind %d, n %zu, kept %zu: %d passes (at most %d)\n", kind, n, kept,
                a.passes, most);
    CHECK(a.passes <= most);
    free(v);
    free(sorted);
}

/* The middle values' mean rounds toward zero, as C's (lo + hi) / 2, even where the sum does
 * not fit. */
static void means(void) {
    int64_t a[] = {-1, 2}, b[] = {-5, -2}, c[] = {INT64_MAX, INT64_MAX - 1},
            d[] = {INT64_MIN, INT64_MIN + 1}, e[] = {3, 1, 2}, f[] = {INT64_MIN, INT64_MAX};
    CHECK(median_i64(a, 2) == 0);
    CHECK(median_i64(b, 2) == -3);
    CHECK(median_i64(c, 2) == INT64_MAX - 1);
    CHECK(median_i64(d, 2) == INT64_MIN + 1);
    CHECK(median_i64(e, 3) == 2);
    CHECK(median_i64(f, 2) == 0);
    CHECK(median_i64(NULL, 0) == 0);
}

/* A source that fails, or gives more values on a later pass, or moves one from below the
 * middle to above it, fails the median. The values are
 * 0..4999 shifted into the high bits, with room for 4 of them: a first pass (the middle ones
 * share a bucket with 14 others), a counting pass, a pass that keeps the middle. */
static void bad_sources(void) {
    enum { N = 5000 };
    static int64_t v[N];
    for (size_t i = 0; i < N; i++)
        v[i] = (int64_t)(i * 7919 % N) << 40;
    for (int pass = 1; pass <= 3; pass++) {
        array_source a = {v, N, 0, 0, pass, 0, 0};
        value_source src = {&a, array_rewind, array_next};
        int64_t m;
        size_t count;
        CHECK(median_stream(&src, 4, &m, &count) == -1);
        CHECK(count == 0);
        if (pass == 3)
            break;
        array_source b = {v, N, 0, 0, 0, pass + 1, 0};
        value_source changing = {&b, array_rewind, array_next};
        CHECK(median_stream(&changing, 4, &m, &count) == -1);
        array_source c = {v, N, 0, 0, 0, 0, pass + 1};
        value_source moving = {&c, array_rewind, array_next};
        CHECK(median_stream(&moving, 4, &m, &count) == -1);
    }
    array_source ok = {v, N, 0, 0, 0, 0, 0};
    value_source src = {&ok, array_rewind, array_next};
    int64_t m;
    size_t count;
    CHECK(median_stream(&src, 4, &m, &count) == 0 && count == N);
    CHECK(m == ((int64_t)2499 << 40) + ((int64_t)1 << 39)); /* (2499 + 2500) / 2, shifted */
    CHECK(ok.passes == 3);
}

int main(void) {
    means();
    bad_sources();
    static const size_t sizes[] = {0, 1, 2, 3, 64, 65, 1000, 4097, 100001};
    static const size_t kept[] = {1, 2, 7, 64, 1000, 0};
    for (int kind = 0; kind < 9; kind++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            for (size_t k = 0; k < sizeof kept / sizeof kept[0]; k++)
                run_case(kind, sizes[i], kept[k]);
    return check_finish("test_median");
}
