/* check.h — the tiny assertion kit every C test in tests/ uses.
 *
 * A test is a plain program: it exits 0 when every CHECK held, 1 when one
 * failed (after printing file:line and the expression), and 77 when it cannot
 * run here (ctest's SKIP_RETURN_CODE), e.g. without ../shared or a GPU.
 * Kept header-only so a test is one .c file and nothing else. */
#ifndef GMT_TESTS_CHECK_H
#define GMT_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_SKIP_CODE 77
#define CHECK_MAX_PRINTED 20 /* later failures are counted, not printed */

static int check_failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

/* Compares two unsigned 64-bit values and prints both when they differ. */
#define CHECK_EQ_U64(a, b)                                                                         \
    do {                                                                                           \
        uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b);                               \
        if (check_a_ != check_b_) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%" PRIu64 " vs %" PRIu64 ")\n",        \
                    __FILE__, __LINE__, #a, #b, check_a_, check_b_);                               \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

#define CHECK_STR_EQ(a, b)                                                                         \
    do {                                                                                           \
        const char *check_a_ = (a), *check_b_ = (b);                                               \
        if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0) {                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (\"%s\" vs \"%s\")\n", __FILE__,        \
                    __LINE__, #a, #b, check_a_ ? check_a_ : "(null)",                              \
                    check_b_ ? check_b_ : "(null)");                                               \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

/* xorshift64: the tests' reproducible pseudo-random numbers; *state is the seed (not 0) and
 * moves on with each call. */
static inline uint64_t check_random(uint64_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* qsort's order of int64_t[2] pairs: by the first, then the second (the reference the tests
 * of sorted pairs and index keys compare with). */
static inline int check_pair_cmp(const void *x, const void *y) {
    const int64_t *a = x, *b = y;
    for (int i = 0; i < 2; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* Skips the whole test with a reason ctest shows in its log. */
#define CHECK_SKIP(...)                                                                            \
    do {                                                                                           \
        fprintf(stderr, "SKIP: " __VA_ARGS__);                                                     \
        fputc('\n', stderr);                                                                       \
        exit(CHECK_SKIP_CODE);                                                                     \
    } while (0)

/* Ends main(): prints a summary line and returns the exit code. */
static inline int check_finish(const char *name) {
    if (check_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
        return 1;
    }
    printf("%s: ok\n", name);
    return 0;
}

#endif
