/* median.c — medians of int64 values (see median.h).
 *
 * The streamed median's first pass counts the values, keeps the first ones, and sorts every
 * value into a bucket: each value from -256 to 255 its own, larger ones by sign, bit length
 * and the next 7 bits. If they all fit the buffer, that is the answer. Else the middle ranks
 * (one when the count is odd) fall in known buckets; a bucket of one value answers at once (a
 * steady run's step-to-step changes are mostly 0); a bucket holding fewer values than the
 * buffer is kept whole by one more pass and sorted; a larger one is narrowed down by radix
 * selection over the bits its range spans, 16 a pass (each pass counts, among the values
 * whose offset in the range starts with the bits fixed so far, how many fall under each next
 * digit), until what is left fits the buffer or is one value. The source must give the same
 * values on every pass; a pass that counts differently fails rather than answer wrong. */
#include "median.h"

#include <stdlib.h>
#include <string.h>

#define DIGIT_BITS 16
#define DIGITS (1u << DIGIT_BITS)

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int64_t median_of_middles(int64_t lo, int64_t hi) {
    int64_t sum;
    if (!__builtin_add_overflow(lo, hi, &sum))
        return sum / 2;
    /* both have the sign of the overflow, so their difference fits */
    return lo > 0 ? lo + (hi - lo) / 2 : hi - (hi - lo) / 2;
}

int64_t median_i64(int64_t *values, size_t n) {
    if (!n)
        return 0;
    if (n > 1)
        qsort(values, n, sizeof *values, cmp_i64);
    return n % 2 ? values[n / 2] : median_of_middles(values[n / 2 - 1], values[n / 2]);
}

/* The first pass's buckets, in the values' order: one per value from -256 to 255, then for
 * larger magnitudes one per sign, bit length and next 7 bits (a 128th of a power of two), so a
 * bucket is one value or a range of 2^s values starting at a multiple of 2^s. */
#define EXACT_BITS 8
#define RANGES_PER_SIGN ((1u << EXACT_BITS) + (63 - EXACT_BITS) * (1u << (EXACT_BITS - 1)))
#define BUCKETS (2 * RANGES_PER_SIGN)

/* The bucket of a magnitude u (0 .. 2^63 - 1) within its sign, and the bits it spans. */
static unsigned magnitude_bucket(uint64_t u, unsigned *span_bits) {
    unsigned len = u ? 64 - (unsigned)__builtin_clzll(u) : 0;
    if (len <= EXACT_BITS) {
        *span_bits = 0;
        return (unsigned)u;
    }
    unsigned shift = len - EXACT_BITS; /* the top 8 bits stay: 1 and 7 more */
    *span_bits = shift;
    return (1u << EXACT_BITS) + (len - EXACT_BITS - 1) * (1u << (EXACT_BITS - 1)) +
           (unsigned)((u >> shift) - (1u << (EXACT_BITS - 1)));
}

/* A value's bucket; a negative v's magnitude is ~v (so -1 is 0), its buckets in reverse. */
static unsigned bucket_of(int64_t v) {
    unsigned bits;
    if (v >= 0)
        return RANGES_PER_SIGN + magnitude_bucket((uint64_t)v, &bits);
    return RANGES_PER_SIGN - 1 - magnitude_bucket((uint64_t)~v, &bits);
}

/* The smallest value of bucket b, and the bits its range spans (0: one value). */
static int64_t bucket_low(unsigned b, unsigned *span_bits) {
    int negative = b < RANGES_PER_SIGN;
    unsigned m = negative ? RANGES_PER_SIGN - 1 - b : b - RANGES_PER_SIGN;
    uint64_t lowest;
    if (m < (1u << EXACT_BITS)) {
        *span_bits = 0;
        lowest = m;
    } else {
        unsigned k = m - (1u << EXACT_BITS), len = EXACT_BITS + 1 + k / (1u << (EXACT_BITS - 1));
        *span_bits = len - EXACT_BITS;
        lowest = (uint64_t)((1u << (EXACT_BITS - 1)) + k % (1u << (EXACT_BITS - 1))) << *span_bits;
    }
    if (!negative)
        return (int64_t)lowest;
    /* magnitudes lowest .. lowest + 2^span - 1 are the values ~that .. ~lowest */
    return (int64_t) ~(lowest + ((UINT64_C(1) << *span_bits) - 1));
}

/* The search for one rank within a range of 2^open values from `min`. */
typedef struct rank_search {
    int64_t min;     /* the range's first value */
    uint64_t rank;   /* the rank wanted among the values under the prefix */
    uint64_t prefix; /* the offset's bits fixed so far (those above `open`), the rest 0 */
    unsigned open;   /* low bits of the offset not fixed yet (0: found) */
    uint64_t under;  /* values under the prefix, as the last pass counted them */
    uint64_t below;  /* values below the prefix's range, as the passes so far counted them */
    int collect;     /* the next pass keeps the values under the prefix (they fit) */
    int64_t value;   /* the answer, once open == 0 */
    uint64_t *counts;
    int64_t *kept;
} rank_search;

static int is_under(const rank_search *r, int64_t v) {
    uint64_t offset = (uint64_t)v - (uint64_t)r->min; /* below min: wraps past the range */
    return r->open < 64 && (offset >> r->open) == (r->prefix >> r->open);
}

static unsigned digit_width(const rank_search *r) {
    return r->open < DIGIT_BITS ? r->open : DIGIT_BITS;
}

static void found(rank_search *r, int64_t value) {
    r->value = value;
    r->open = 0;
}

/* Once the values under the prefix are one, or few enough to keep, or need another digit. */
static void next_step(rank_search *r, size_t kept) {
    if (r->open == 0)
        found(r, (int64_t)((uint64_t)r->min + r->prefix));
    else
        r->collect = r->under <= kept;
}

/* After a counting pass: fix the digit the rank falls in. */
static void fix_digit(rank_search *r, size_t kept) {
    unsigned shift = r->open - digit_width(r);
    uint64_t below = 0, digit = 0;
    while (below + r->counts[digit] <= r->rank)
        below += r->counts[digit++];
    r->rank -= below;
    r->below += below;
    r->under = r->counts[digit];
    r->prefix |= digit << shift;
    r->open = shift;
    memset(r->counts, 0, DIGITS * sizeof *r->counts);
    next_step(r, kept);
}

/* The first value of the prefix's range. */
static int64_t range_low(const rank_search *r) { return (int64_t)((uint64_t)r->min + r->prefix); }

/* One pass over the source for the searches still open. 0, or -1 (the source failed, or it
 * gave other values than before: another count, or another count below or in a range). */
static int search_pass(const value_source *src, uint64_t n, rank_search *rs, size_t nrs,
                       size_t kept) {
    if (src->rewind(src->ctx) != 0)
        return -1;
    size_t taken[2] = {0, 0};
    uint64_t seen = 0, below[2] = {0, 0};
    int64_t v;
    int got;
    while ((got = src->next(src->ctx, &v)) == 1) {
        seen++;
        for (size_t i = 0; i < nrs; i++) {
            rank_search *r = &rs[i];
            if (r->open == 0)
                continue;
            if (!is_under(r, v)) {
                below[i] += v < range_low(r);
                continue;
            }
            if (!r->collect)
                r->counts[(((uint64_t)v - (uint64_t)r->min) >> (r->open - digit_width(r))) &
                          ((UINT64_C(1) << digit_width(r)) - 1)]++;
            else if (taken[i] < kept)
                r->kept[taken[i]++] = v;
            else
                return -1; /* more than the last pass counted: the source changed */
        }
    }
    if (got < 0 || seen != n)
        return -1;
    for (size_t i = 0; i < nrs; i++) {
        rank_search *r = &rs[i];
        if (r->open == 0)
            continue;
        if (below[i] != r->below)
            return -1;
        if (!r->collect) {
            uint64_t total = 0;
            for (size_t d = 0; d < DIGITS; d++)
                total += r->counts[d];
            if (total != r->under)
                return -1; /* not what the last pass counted */
            fix_digit(r, kept);
            continue;
        }
        if (taken[i] != r->under)
            return -1;
        qsort(r->kept, taken[i], sizeof *r->kept, cmp_i64);
        found(r, r->kept[r->rank]);
    }
    return 0;
}

/* The values at ranks lo and hi of n (n > kept) from the first pass's buckets, with as many
 * more passes as it takes. */
static int select_ranks(const value_source *src, size_t kept, uint64_t n, const uint64_t *buckets,
                        int64_t *lo, int64_t *hi) {
    rank_search rs[2] = {{.rank = (n - 1) / 2}, {.rank = n / 2}};
    size_t nrs = rs[0].rank == rs[1].rank ? 1 : 2;
    int rc = 0;
    for (size_t i = 0; i < nrs; i++) {
        rank_search *r = &rs[i];
        unsigned b = 0;
        uint64_t below = 0;
        while (below + buckets[b] <= r->rank)
            below += buckets[b++];
        r->rank -= below;
        r->below = below;
        r->under = buckets[b];
        r->min = bucket_low(b, &r->open);
        next_step(r, kept);
        if (r->open && (!(r->counts = calloc(DIGITS, sizeof *r->counts)) ||
                        !(r->kept = malloc(kept * sizeof *r->kept))))
            rc = -1;
    }
    while (rc == 0 && (rs[0].open || rs[nrs - 1].open))
        rc = search_pass(src, n, rs, nrs, kept);
    *lo = rs[0].value;
    *hi = rs[nrs - 1].value;
    for (size_t i = 0; i < nrs; i++) {
        free(rs[i].counts);
        free(rs[i].kept);
    }
    return rc;
}

int median_stream(const value_source *src, size_t kept, int64_t *median, size_t *count) {
    *median = 0;
    *count = 0;
    if (!kept)
        kept = MEDIAN_STREAM_KEPT;
    int64_t *first = malloc(kept * sizeof *first);
    uint64_t *buckets = calloc(BUCKETS, sizeof *buckets);
    if (!first || !buckets || src->rewind(src->ctx) != 0) {
        free(first);
        free(buckets);
        return -1;
    }
    uint64_t n = 0;
    int64_t v;
    int got;
    while ((got = src->next(src->ctx, &v)) == 1) {
        if (n < kept)
            first[n] = v;
        buckets[bucket_of(v)]++;
        n++;
    }
    int rc = got < 0 ? -1 : 0;
    if (rc == 0 && n <= kept) {
        *median = median_i64(first, (size_t)n);
    } else if (rc == 0) {
        free(first); /* the passes keep their own */
        first = NULL;
        int64_t lo, hi;
        rc = select_ranks(src, kept, n, buckets, &lo, &hi);
        if (rc == 0)
            *median = median_of_middles(lo, hi);
    }
    free(first);
    free(buckets);
    if (rc == 0)
        *count = (size_t)n;
    return rc;
}
