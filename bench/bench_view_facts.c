/* bench_view_facts.c — what `memanalyze view` asks of query/view_timeline.h and
 * query/view_blocks.h, timed on one database (issue 31): the blocks' sidecar built (or opened),
 * then REQUESTS random windows at random zooms (the whole run down to 1 / 8^7 of it), each a
 * timeline of 2000 buckets and the 2000 largest blocks, warm: the p50/p95/max of each, the
 * largest answer's bytes as plain structs, and how the timeline was answered. Run by
 * bench/run_view_facts.sh.
 *
 *   bench_view_facts DB SIDECAR [REQUESTS] [SEED]      (SIDECAR "-": the timeline alone) */
#include "db_open.h"
#include "event_store.h"
#include "view_blocks.h"
#include "view_timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_stats(const char *what, double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    printf("%s: p50 %.2f ms, p95 %.2f ms, max %.2f ms (%d requests)\n", what, v[n / 2],
           v[(int)(n * 0.95)], v[n - 1], n);
}

static uint64_t rng;
static uint64_t next_random(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_view_facts DB SIDECAR [REQUESTS] [SEED]\n");
        return 2;
    }
    int requests = argc > 3 ? atoi(argv[3]) : 200;
    rng = argc > 4 ? strtoull(argv[4], NULL, 10) : 88172645463325252ull;
    if (requests < 1 || !rng)
        return 2;
    char err[512];
    sqlite3 *db = NULL;
    db_configure_process();
    if (event_store_register() != SQLITE_OK || db_open_readonly(argv[1], &db, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        return 1;
    }
    int event_axis = 0, built = 0;
    int64_t end = 0;
    if (view_timeline_axis(db, &event_axis, &end, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    double t = now_ms();
    int blocks = strcmp(argv[2], "-") != 0;
    view_blocks_index *ix =
        blocks ? view_blocks_index_open(db, argv[2], &built, err, sizeof err) : NULL;
    if (blocks && !ix) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (blocks)
        printf("blocks' sidecar %s: %.3f ms\n", built ? "built" : "opened", now_ms() - t);
    int devices[256], ndev = 0;
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, "SELECT device FROM devices ORDER BY device", -1, &st, NULL);
    while (ndev < 256 && sqlite3_step(st) == SQLITE_ROW)
        devices[ndev++] = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (!ndev)
        return 1;
    double *tl = calloc((size_t)requests, sizeof *tl), *bl = calloc((size_t)requests, sizeof *bl);
    size_t max_tl_bytes = 0, max_bl_bytes = 0;
    int64_t max_events_read = 0, from_levels = 0, max_bands = 0;
    /* warm: the whole run once */
    view_timeline_result r;
    view_blocks_result b;
    memset(&b, 0, sizeof b);
    if (view_timeline(db, devices[0], 0, end, 2000, &r, err, sizeof err) != 0 ||
        (blocks && view_blocks(ix, devices[0], 0, end, 2000, &b, err, sizeof err) != 0)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    view_timeline_free(&r);
    view_blocks_free(&b);
    for (int i = 0; i < requests; i++) {
        int device = devices[next_random() % (uint64_t)ndev];
        int zoom = (int)(next_random() % 8);
        int64_t w = end >> (3 * zoom);
        w = w > 1 ? w : 1;
        int64_t lo = (int64_t)(next_random() % (uint64_t)(end - (w < end ? w : 0) + 1));
        t = now_ms();
        if (view_timeline(db, device, lo, lo + w, 2000, &r, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        tl[i] = now_ms() - t;
        t = now_ms();
        if (blocks && view_blocks(ix, device, lo, lo + w, 2000, &b, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        bl[i] = now_ms() - t;
        size_t tb = r.n * sizeof *r.buckets, bb = b.n * sizeof *b.blocks;
        max_tl_bytes = tb > max_tl_bytes ? tb : max_tl_bytes;
        max_bl_bytes = bb > max_bl_bytes ? bb : max_bl_bytes;
        max_events_read = r.events_read > max_events_read ? r.events_read : max_events_read;
        max_bands = b.bands > max_bands ? b.bands : max_bands;
        from_levels += r.level_width > 0;
        view_timeline_free(&r);
        view_blocks_free(&b);
    }
    printf("axis: %s, end %lld, %d device(s)\n", event_axis ? "event ids" : "ns", (long long)end,
           ndev);
    print_stats("view_timeline (2000 buckets)", tl, requests);
    printf("  from the levels: %lld of %d; from the events: the most events read %lld; the "
           "largest answer %zu bytes of structs\n",
           (long long)from_levels, requests, (long long)max_events_read, max_tl_bytes);
    if (blocks) {
        print_stats("view_blocks (top 2000)", bl, requests);
        printf("  the most runs of the index read %lld; the largest answer %zu bytes of "
               "structs\n",
               (long long)max_bands, max_bl_bytes);
    }
    free(tl);
    free(bl);
    view_blocks_index_close(ix);
    db_close(db);
    return 0;
}
