/* rank_stats.c — across the ranks of a job (see rank_stats.h). Per rank only its summary, its
 * sites at the peak (site_stats) and its devices: a thousand ranks cost a thousand small reads;
 * the events are read only up to the first OOM of an input that has one. */
#include "rank_stats.h"

#include "analysis.h"
#include "db_open.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_assert.h"
#include "median.h"
#include "trace_format.h"

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

/* The read entries without a rank, numbered in the order given: from 0 when no entry has one,
 * else after the highest rank known (never one a trace or name gave). */
static size_t number_in_order(rank_entry *ranks, size_t count) {
    int64_t next = 0;
    for (size_t r = 0; r < count; r++)
        if (!ranks[r].failed && ranks[r].rank_from != RANK_FROM_ORDER && ranks[r].rank >= next)
            next = ranks[r].rank + 1;
    size_t n = 0;
    for (size_t r = 0; r < count; r++)
        if (!ranks[r].failed && ranks[r].rank_from == RANK_FROM_ORDER) {
            ranks[r].rank = next++;
            n++;
        }
    return n;
}

/* A rank by a key: the time of its first OOM, or the step its growth reaches the device. */
typedef struct keyed {
    int64_t key;
    long index;
} keyed;

static int by_key_then_index(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Sorts `n` indexes into st->ranks by key(st, index). */
static int sort_by(const rank_stats *st, long *indexes, size_t n,
                   int64_t (*key)(const rank_stats *, const rank_entry *)) {
    keyed *k = malloc((n ? n : 1) * sizeof *k);
    if (!k)
        return -1;
    for (size_t i = 0; i < n; i++)
        k[i] = (keyed){key(st, &st->ranks[indexes[i]]), indexes[i]};
    qsort(k, n, sizeof *k, by_key_then_index);
    for (size_t i = 0; i < n; i++)
        indexes[i] = k[i].index;
    free(k);
    return 0;
}

static int64_t first_oom_time(const rank_stats *st, const rank_entry *e) {
    return e->first_oom_ts_ns + (st->ran_out_wall_clock ? e->t0_unix_ns : 0);
}

static int64_t limit_step(const rank_stats *st, const rank_entry *e) {
    (void)st;
    return e->s.limit_step;
}

/* The ranks that ran out, first by time, then the forecasts of the others by step. */
static int running_out(rank_stats *st) {
    st->ran_out = malloc((st->read ? st->read : 1) * sizeof *st->ran_out);
    st->forecast = malloc((st->read ? st->read : 1) * sizeof *st->forecast);
    if (!st->ran_out || !st->forecast)
        return -1;
    st->ran_out_wall_clock = 1;
    for (size_t r = 0; r < st->read; r++) {
        const rank_entry *e = &st->ranks[r];
        if (e->input_ooms > 0) {
            st->ran_out[st->nran_out++] = (long)r;
            if (e->t0_unix_ns <= 0)
                st->ran_out_wall_clock = 0;
        } else if (e->s.limit_step >= 0) {
            st->forecast[st->nforecast++] = (long)r;
        }
    }
    if (sort_by(st, st->ran_out, st->nran_out, first_oom_time) != 0 ||
        sort_by(st, st->forecast, st->nforecast, limit_step) != 0)
        return -1;
    st->first_to_run_out = st->nran_out ? st->ran_out[0] : st->nforecast ? st->forecast[0] : -1;
    return 0;
}

int rank_stats_build(rank_entry *ranks, size_t count, size_t top, rank_stats *out, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    out->ranks = ranks;
    out->count = count;
    out->bottleneck = out->first_to_run_out = -1;
    out->numbered = number_in_order(ranks, count);
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
        if (e->devices.bottleneck >= 0)
            out->devices_compared++;
    }
    double mean = sum / (double)out->read;
    out->mean_peak = (int64_t)mean;
    out->imbalance = mean > 0 ? (double)max / mean : 1.0;
    out->spread = max - min;
    if (bottleneck_sites(out, top) != 0 || mark_leaking(out) != 0 || running_out(out) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void rank_stats_release(rank_stats *st) {
    free(st->excess);
    free(st->duplicate_ranks);
    free(st->ran_out);
    free(st->forecast);
    st->ran_out = st->forecast = NULL;
    st->excess = NULL;
    st->duplicate_ranks = NULL;
}

/* rank_of_name's endings: what ranks takes from a directory (cmd_ranks.c), and a database
 * named after its trace (trace.3.zst.db). */
static int is_ending(const char *p, size_t n) {
    static const char *const endings[] = {"zst", "db", "sqlite", "pickle", "pkl"};
    for (size_t i = 0; i < sizeof endings / sizeof endings[0]; i++)
        if (strlen(endings[i]) == n && !strncasecmp(p, endings[i], n))
            return 1;
    return 0;
}

const char *rank_input_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

const char *rank_from_word(const rank_entry *e) {
    return e->rank_from == RANK_FROM_TRACE  ? "trace"
           : e->rank_from == RANK_FROM_NAME ? "file name"
                                            : "order";
}

int64_t rank_of_name(const char *path) {
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    for (const char *p = base; *p; p++) {
        if (strncasecmp(p, "rank", 4) || (p > base && isalpha((unsigned char)p[-1])))
            continue;
        const char *q = p + 4;
        if (*q == '-' || *q == '_' || *q == '.')
            q++;
        if (isdigit((unsigned char)*q))
            return strtoll(q, NULL, 10);
    }
    /* trace.3.zst: the part before the endings, when it is all digits */
    const char *end = base + strlen(base);
    for (;;) {
        const char *dot = end;
        while (dot > base && dot[-1] != '.')
            dot--;
        if (dot == base)
            return -1; /* no dot-separated part left */
        size_t n = (size_t)(end - dot);
        if (is_ending(dot, n)) {
            end = dot - 1;
            continue;
        }
        if (end == base + strlen(base))
            return -1; /* the name has no ending of an input */
        if (dot - 1 == base || !n || n > 9)
            return -1; /* ".3.zst" alone, or not a rank's digits */
        for (size_t i = 0; i < n; i++)
            if (!isdigit((unsigned char)dot[i]))
                return -1;
        return strtoll(dot, NULL, 10);
    }
}

/* Its input's first OOM, on any device, when the devices table counts any: one forward pass
 * over the events (event_scan: the chunks decoded, not SQL), ended at the first. */
static int first_oom(rank_entry *e, sqlite3 *db, char *err, size_t errlen) {
    e->first_oom_event = e->first_oom_step = -1;
    e->first_oom_ts_ns = 0;
    e->first_oom_device = -1;
    e->t0_unix_ns = db_query_i64(db, "SELECT value FROM meta WHERE key = 't0_unix_ns'", 0, 0, 0);
    e->input_ooms = db_query_i64(db, "SELECT coalesce(sum(ooms), 0) FROM devices", 0, 0, 0);
    if (e->input_ooms <= 0)
        return 0;
    enum { ID, TS, DEVICE, OP, NCOL };
    static const int want[NCOL] = {EVENT_COL_event_id, EVENT_COL_ts_ns, EVENT_COL_device,
                                   EVENT_COL_op};
    event_scan *scan =
        event_scan_open(db, event_scan_mask(want, NCOL), INT64_MIN, INT64_MAX, err, errlen);
    if (!scan)
        return -1;
    const int64_t *col[EVENT_STORE_NCOLS], *v[NCOL];
    long got = 0;
    while (e->first_oom_event < 0 && (got = event_scan_next(scan, col)) > 0) {
        event_scan_pick(col, want, NCOL, v);
        for (long r = 0; r < got; r++)
            if (v[OP][r] == TRACE_OP_OOM) {
                e->first_oom_event = v[ID][r];
                e->first_oom_ts_ns = v[TS][r];
                e->first_oom_device = (int)v[DEVICE][r];
                break;
            }
    }
    int rc = e->first_oom_event < 0 && got < 0 ? -1 : 0;
    if (rc != 0)
        snprintf(err, errlen, "reading its OOMs: %s", event_scan_error(scan));
    event_scan_close(scan);
    if (e->first_oom_event >= 0)
        e->first_oom_step = db_query_i64(db,
                                         "SELECT step FROM steps WHERE end_event_id >= ?1 AND "
                                         "begin_event_id < ?1 ORDER BY begin_event_id DESC, step "
                                         "LIMIT 1",
                                         e->first_oom_event, 0, -1);
    return rc;
}

/* A rank's summary and its sites at the peak, from its open database. */
static int rank_entry_read(rank_entry *e, sqlite3 *db, int device, char *err, size_t errlen) {
    if (run_summary_read(db, device, &e->s, err, errlen) != 0)
        return -1;
    if (first_oom(e, db, err, errlen) != 0) {
        run_summary_release(&e->s);
        return -1;
    }
    if (device_balance_read(db, &e->devices) != 0) {
        snprintf(err, errlen, "reading its devices: %s", sqlite3_errmsg(db));
        run_summary_release(&e->s);
        return -1;
    }
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

int rank_entry_load(rank_entry *e, const char *input, const char *db_path, int device, char *err,
                    size_t errlen) {
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
    e->rank_from = RANK_FROM_TRACE;
    e->rank = e->s.rank;
    if (e->rank < 0) {
        e->rank_from = RANK_FROM_NAME;
        e->rank = rank_of_name(input);
    }
    if (e->rank < 0)
        e->rank_from = RANK_FROM_ORDER; /* numbered by rank_stats_build */
    return 0;
}
