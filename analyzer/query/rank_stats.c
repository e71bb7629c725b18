/* rank_stats.c — across the ranks of a job (see rank_stats.h). Per rank only its summary and
 * its sites at the peak (site_stats): a thousand ranks cost a thousand small reads. */
#include "rank_stats.h"

#include "analysis.h"
#include "db_open.h"
#include "gmt_assert.h"
#include "median.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LEAK_MIN_BYTES_PER_STEP (1LL << 20)
#define LEAK_DEVIATIONS 3

static int by_rank(const void *a, const void *b) {
    const rank_entry *x = a, *y = b;
    if (!x->failed != !y->failed)
        return x->failed ? 1 : -1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->input, y->input);
}

static int by_excess(const void *a, const void *b) {
    const rank_excess *x = a, *y = b;
    if (x->over_median != y->over_median)
        return x->over_median > y->over_median ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* The median rank's bytes of each of the bottleneck's sites, and the sites above it. */
static int bottleneck_sites(rank_stats *st, size_t top) {
    const rank_entry *b = &st->ranks[st->bottleneck];
    int64_t *values = malloc((st->read ? st->read : 1) * sizeof *values);
    st->excess = malloc((b->nsites ? b->nsites : 1) * sizeof *st->excess);
    if (!values || !st->excess) {
        free(values);
        return -1;
    }
    for (size_t i = 0; i < b->nsites; i++) {
        for (size_t r = 0; r < st->read; r++)
            values[r] = run_site_bytes(st->ranks[r].sites, st->ranks[r].nsites, b->sites[i].key);
        int64_t median = median_i64(values, st->read);
        if (b->sites[i].bytes > median)
            st->excess[st->nexcess++] =
                (rank_excess){b->sites[i].label, b->sites[i].key, b->sites[i].bytes, median,
                              b->sites[i].bytes - median};
    }
    free(values);
    qsort(st->excess, st->nexcess, sizeof *st->excess, by_excess);
    if (top && st->nexcess > top)
        st->nexcess = top;
    return 0;
}

/* Ranks whose growth stands out from the others'. */
static int mark_leaking(rank_stats *st) {
    int64_t *g = malloc((st->read ? st->read : 1) * sizeof *g);
    if (!g)
        return -1;
    for (size_t r = 0; r < st->read; r++)
        g[r] = st->ranks[r].s.growth_per_step;
    st->median_growth = median_i64(g, st->read);
    for (size_t r = 0; r < st->read; r++) {
        int64_t d = st->ranks[r].s.growth_per_step - st->median_growth;
        g[r] = d < 0 ? -d : d;
    }
    int64_t mad = median_i64(g, st->read);
    free(g);
    int64_t margin = LEAK_DEVIATIONS * mad;
    if (margin < LEAK_MIN_BYTES_PER_STEP)
        margin = LEAK_MIN_BYTES_PER_STEP;
    for (size_t r = 0; r < st->read; r++)
        st->ranks[r].leaking = st->ranks[r].s.growth_per_step > st->median_growth + margin;
    return 0;
}

/* Read entries with the rank of the one before them (sorted: next to each other), and those
 * ranks once each. */
static int same_ranks(rank_stats *st) {
    for (size_t r = 0; r < st->count; r++)
        st->ranks[r].same_rank_as = -1;
    for (size_t r = 1; r < st->read; r++)
        if (st->ranks[r].rank == st->ranks[r - 1].rank) {
            st->ranks[r].same_rank_as = (long)r - 1;
            st->duplicates++;
        }
    if (!st->duplicates)
        return 0;
    st->duplicate_ranks = malloc(st->duplicates * sizeof *st->duplicate_ranks);
    if (!st->duplicate_ranks)
        return -1;
    for (size_t r = 1; r < st->read; r++)
        if (st->ranks[r].same_rank_as >= 0 && st->ranks[r - 1].same_rank_as < 0 &&
            GMT_ALWAYS(st->nduplicate_ranks < st->duplicates))
            st->duplicate_ranks[st->nduplicate_ranks++] = st->ranks[r].rank;
    return 0;
}

int rank_stats_build(rank_entry *ranks, size_t count, size_t top, rank_stats *out, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    out->ranks = ranks;
    out->count = count;
    out->bottleneck = out->first_to_run_out = -1;
    qsort(ranks, count, sizeof *ranks, by_rank);
    while (out->read < count && !ranks[out->read].failed)
        out->read++;
    out->failed = count - out->read;
    if (same_ranks(out) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!out->read)
        return 0;
    int64_t max = INT64_MIN, min = INT64_MAX;
    double sum = 0;
    for (size_t r = 0; r < out->read; r++) {
        rank_entry *e = &ranks[r];
        int64_t peak = e->s.peak_allocated;
        sum += (double)peak;
        if (peak > max) {
            max = peak;
            out->bottleneck = (long)r;
        }
        if (peak < min)
            min = peak;
        if (e->s.limit_step >= 0 && (out->first_to_run_out < 0 ||
                                     e->s.limit_step < ranks[out->first_to_run_out].s.limit_step))
            out->first_to_run_out = (long)r;
    }
    double mean = sum / (double)out->read;
    out->mean_peak = (int64_t)mean;
    out->imbalance = mean > 0 ? (double)max / mean : 1.0;
    out->spread = max - min;
    if (bottleneck_sites(out, top) != 0 || mark_leaking(out) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void rank_stats_release(rank_stats *st) {
    free(st->excess);
    free(st->duplicate_ranks);
    st->excess = NULL;
    st->duplicate_ranks = NULL;
}

/* The rank a file name says: the number after "rank" (rank3_step500.db, rank-3.zst), else the
 * last number in its base name (trace.3.zst, memrec-node7-3.zst); -1: none. */
static int64_t rank_of_name(const char *path) {
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int64_t rank = -1;
    for (const char *p = base; *p;) {
        if (!strncasecmp(p, "rank", 4)) {
            const char *q = p + 4;
            while (*q == '-' || *q == '_' || *q == '.')
                q++;
            if (isdigit((unsigned char)*q))
                return strtoll(q, NULL, 10);
        }
        if (isdigit((unsigned char)*p)) {
            char *end;
            rank = strtoll(p, &end, 10);
            p = end;
        } else {
            p++;
        }
    }
    return rank;
}

/* A rank's summary and its sites at the peak, from its open database. */
static int rank_entry_read(rank_entry *e, sqlite3 *db, int device, char *err, size_t errlen) {
    if (run_summary_read(db, device, &e->s, err, errlen) != 0)
        return -1;
    stack_names *names = stack_names_new(db);
    run_site *sites = NULL;
    size_t n = 0;
    if (!names || run_sites_at(db, e->s.device, -1, names, &sites, &n) != 0) {
        snprintf(err, errlen, "reading its sites: %s", sqlite3_errmsg(db));
        stack_names_free(names);
        return -1;
    }
    size_t bytes = 0; /* the keys and labels, copied out of the names cache */
    for (size_t i = 0; i < n; i++)
        bytes += strlen(sites[i].key) + strlen(sites[i].label) + 2;
    char *p = e->strings = malloc(bytes ? bytes : 1);
    if (!p) {
        free(sites);
        stack_names_free(names);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(sites[i].key) + 1, l = strlen(sites[i].label) + 1;
        sites[i].key = memcpy(p, sites[i].key, k);
        sites[i].label = memcpy(p + k, sites[i].label, l);
        p += k + l;
    }
    stack_names_free(names);
    e->sites = sites;
    e->nsites = n;
    return 0;
}

void rank_entry_release(rank_entry *e) {
    run_summary_release(&e->s);
    free(e->sites);
    free(e->strings);
    e->sites = NULL;
    e->strings = NULL;
}

int rank_entry_load(rank_entry *e, const char *input, const char *db_path, size_t place, int device,
                    char *err, size_t errlen) {
    sqlite3 *db = NULL;
    e->input = input;
    if (db_open_readonly(db_path, &db, err, errlen) != 0)
        return -1;
    int rc = rank_entry_read(e, db, device, err, errlen);
    db_close(db); /* one at a time: see rank_stats.h */
    if (rc != 0) {
        rank_entry_release(e);
        return -1;
    }
    e->rank = e->s.rank >= 0 ? e->s.rank : rank_of_name(input);
    if (e->rank < 0)
        e->rank = (int64_t)place;
    return 0;
}
