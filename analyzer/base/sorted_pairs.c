/* sorted_pairs.c — sorted runs, spilled and merged (see sorted_pairs.h). */
#include "sorted_pairs.h"

#include "gmt_radix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MERGE_BUFFER 1024 /* pairs read from a run at a time: 16 KiB per run */

typedef struct pair {
    int64_t first, second;
} pair;

_Static_assert(sizeof(pair) == sizeof(int64_t[2]), "a pair is the sink's int64_t[2]");

struct sorted_pairs {
    char *beside;
    pair *run, *spare; /* the run being gathered; room to sort it */
    size_t len, run_pairs, total;
    FILE *runs; /* sorted runs, one after another */
    size_t *run_len;
    size_t nruns, runs_cap;
};

static int fail(char *err, size_t errlen, const char *what) {
    snprintf(err, errlen, "%s", what);
    return -1;
}

sorted_pairs *sorted_pairs_new(const char *beside, size_t run_pairs) {
    sorted_pairs *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->run_pairs = run_pairs ? run_pairs : SORTED_PAIRS_RUN_DEFAULT;
    s->beside = strdup(beside ? beside : "");
    s->run = malloc(s->run_pairs * sizeof *s->run);
    s->spare = malloc(s->run_pairs * sizeof *s->spare);
    if (!s->beside || !s->run || !s->spare) {
        sorted_pairs_free(s);
        return NULL;
    }
    return s;
}

void sorted_pairs_free(sorted_pairs *s) {
    if (!s)
        return;
    free(s->beside);
    free(s->run);
    free(s->spare);
    free(s->run_len);
    if (s->runs)
        fclose(s->runs);
    free(s);
}

size_t sorted_pairs_count(const sorted_pairs *s) { return s->total; }

static int compare_pairs(const void *a, const void *b) {
    const pair *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return (x->second > y->second) - (x->second < y->second);
}

/* Sorts the run by (first, second) (gmt_radix.h: ~5x faster than qsort here). */
static void sort_run(sorted_pairs *s) {
    gmt_radix_sort((uint64_t(*)[2])s->run, (uint64_t(*)[2])s->spare, s->len, 1, 0);
}

/* The runs' file, in the folder of s->beside, unlinked at once. */
static FILE *open_runs_file(const sorted_pairs *s) {
    if (!s->beside[0])
        return tmpfile();
    size_t n = strlen(s->beside) + 32;
    char *path = malloc(n);
    if (!path)
        return NULL;
    snprintf(path, n, "%s", s->beside);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, n - (size_t)(slash ? slash + 1 - path : 0),
             ".gmt-runs-XXXXXX");
    int fd = mkstemp(path);
    FILE *f = NULL;
    if (fd >= 0) {
        unlink(path);
        if (!(f = fdopen(fd, "w+b")))
            close(fd);
    }
    free(path);
    return f;
}

/* Sorts the run in memory and appends it to the runs' file. */
static int spill_run(sorted_pairs *s, char *err, size_t errlen) {
    if (!s->len)
        return 0;
    sort_run(s);
    if (!s->runs && !(s->runs = open_runs_file(s)))
        return fail(err, errlen, "cannot create a temporary file for sorting");
    if (s->nruns == s->runs_cap) {
        size_t cap = s->runs_cap ? 2 * s->runs_cap : 16;
        size_t *grown = realloc(s->run_len, cap * sizeof *grown);
        if (!grown)
            return fail(err, errlen, "out of memory");
        s->run_len = grown;
        s->runs_cap = cap;
    }
    if (fwrite(s->run, sizeof *s->run, s->len, s->runs) != s->len)
        return fail(err, errlen, "writing a temporary file for sorting (disk full?)");
    s->run_len[s->nruns++] = s->len;
    s->len = 0;
    return 0;
}

int sorted_pairs_add(sorted_pairs *s, int64_t first, int64_t second, char *err, size_t errlen) {
    if (s->len == s->run_pairs && spill_run(s, err, errlen) != 0)
        return -1;
    s->run[s->len++] = (pair){first, second};
    s->total++;
    return 0;
}

/* A run being merged: a window of it in memory. */
typedef struct run_reader {
    long offset; /* in pairs, of the window's start in the runs' file */
    size_t left; /* pairs of the run not yet read into the window */
    pair buf[MERGE_BUFFER];
    size_t at, len;
} run_reader;

static int run_fill(FILE *f, run_reader *r) {
    size_t n = r->left < MERGE_BUFFER ? r->left : MERGE_BUFFER;
    r->at = 0;
    r->len = 0;
    if (!n)
        return 0;
    if (fseek(f, r->offset * (long)sizeof(pair), SEEK_SET) != 0 ||
        fread(r->buf, sizeof(pair), n, f) != n)
        return -1;
    r->offset += (long)n;
    r->left -= n;
    r->len = n;
    return 0;
}

/* Keeps heap[0] the run with the smallest next pair. */
static void sift_down(run_reader **heap, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && compare_pairs(&heap[l]->buf[heap[l]->at], &heap[m]->buf[heap[m]->at]) < 0)
            m = l;
        if (l + 1 < n &&
            compare_pairs(&heap[l + 1]->buf[heap[l + 1]->at], &heap[m]->buf[heap[m]->at]) < 0)
            m = l + 1;
        if (m == i)
            return;
        run_reader *t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

static int merge_runs(sorted_pairs *s, size_t batch, sorted_pairs_sink sink, void *ctx, char *err,
                      size_t errlen) {
    run_reader *runs = calloc(s->nruns, sizeof *runs);
    run_reader **heap = calloc(s->nruns, sizeof *heap);
    pair *out = malloc(batch * sizeof *out);
    int rc = runs && heap && out ? 0 : fail(err, errlen, "out of memory");
    size_t n = 0, filled = 0;
    long offset = 0;
    for (size_t i = 0; rc == 0 && i < s->nruns; i++) {
        runs[i].offset = offset;
        runs[i].left = s->run_len[i];
        offset += (long)s->run_len[i];
        if (run_fill(s->runs, &runs[i]) != 0)
            rc = fail(err, errlen, "reading a temporary file for sorting");
        else if (runs[i].len)
            heap[n++] = &runs[i];
    }
    for (size_t i = n; i-- > 0;)
        sift_down(heap, n, i);
    while (rc == 0 && n) {
        run_reader *r = heap[0];
        out[filled++] = r->buf[r->at++];
        if (filled == batch) {
            rc = sink(ctx, (const int64_t(*)[2])out, filled, err, errlen);
            filled = 0;
        }
        if (r->at == r->len && run_fill(s->runs, r) != 0)
            rc = fail(err, errlen, "reading a temporary file for sorting");
        if (r->len == 0)
            heap[0] = heap[--n];
        sift_down(heap, n, 0);
    }
    if (rc == 0 && filled)
        rc = sink(ctx, (const int64_t(*)[2])out, filled, err, errlen);
    free(runs);
    free(heap);
    free(out);
    return rc;
}

int sorted_pairs_drain(sorted_pairs *s, size_t batch, sorted_pairs_sink sink, void *ctx, char *err,
                       size_t errlen) {
    if (batch == 0)
        batch = 1;
    if (!s->nruns) { /* one run, in memory: no file */
        sort_run(s);
        int rc = 0;
        for (size_t i = 0; rc == 0 && i < s->len; i += batch)
            rc = sink(ctx, (const int64_t(*)[2])(s->run + i),
                      s->len - i < batch ? s->len - i : batch, err, errlen);
        return rc;
    }
    if (spill_run(s, err, errlen) != 0)
        return -1;
    if (fflush(s->runs) != 0)
        return fail(err, errlen, "writing a temporary file for sorting (disk full?)");
    return merge_runs(s, batch, sink, ctx, err, errlen);
}
