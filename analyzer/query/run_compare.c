/* run_compare.c — runs matched site by site (see run_compare.h): the sites of each run at one
 * moment, their differences from the baseline's, and the runs' picture by step. The summaries
 * themselves are run_summary.c's. */
#include "run_compare.h"

#include "gmt_assert.h"
#include "plots.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int compare_run_read(sqlite3 *db, int device, const char *at, compare_run *out, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    if (run_summary_read(db, device, &out->s, err, errlen) != 0)
        return -1;
    int64_t event_id = -1;
    if (at && when_resolve(db, at, out->s.device, &event_id, err, errlen) != 0) {
        compare_run_release(out);
        return -1;
    }
    out->names = stack_names_new(db);
    if (!out->names ||
        run_sites_at(db, out->s.device, event_id, out->names, &out->sites, &out->nsites) != 0) {
        snprintf(err, errlen, "reading its sites: %s", sqlite3_errmsg(db));
        compare_run_release(out);
        return -1;
    }
    return 0;
}

static int64_t magnitude(int64_t v) { return v < 0 ? -v : v; }

static int by_difference(const void *a, const void *b) {
    const site_difference *x = a, *y = b;
    int64_t dx = magnitude(x->difference), dy = magnitude(y->difference);
    if (dx != dy)
        return dx > dy ? -1 : 1;
    return strcmp(x->key, y->key);
}

int compare_against(const compare_run *b, compare_run *r) {
    free(r->differences);
    r->differences = NULL;
    r->ndifferences = 0;
    site_difference *out = malloc((b->nsites + r->nsites + 1) * sizeof *out);
    run_site *shown = malloc((b->nsites + r->nsites + 1) * sizeof *shown);
    if (!out || !shown) {
        free(out);
        free(shown);
        return -1;
    }
    size_t i = 0, k = 0, n = 0;
    /* a merge of the two key orders */
    while (i < b->nsites || k < r->nsites) {
        int c = i == b->nsites ? 1 : k == r->nsites ? -1 : strcmp(b->sites[i].key, r->sites[k].key);
        site_difference d;
        if (c < 0)
            d = (site_difference){b->sites[i].key, b->sites[i].label, b->sites[i].bytes, 0, 0}, i++;
        else if (c > 0)
            d = (site_difference){r->sites[k].key, r->sites[k].label, 0, r->sites[k].bytes, 0}, k++;
        else
            d = (site_difference){r->sites[k].key, r->sites[k].label, b->sites[i].bytes,
                                  r->sites[k].bytes, 0},
            i++, k++;
        d.difference = d.bytes - d.baseline;
        if (d.difference != 0 && GMT_ALWAYS(n < b->nsites + r->nsites)) {
            shown[n] = c < 0 ? b->sites[i - 1] : r->sites[k - 1];
            out[n++] = d;
        }
    }
    /* the baseline's sites and the run's, told apart together (run_sites_label) */
    int rc = run_sites_label(r->names, shown, n);
    for (size_t j = 0; rc == 0 && j < n; j++)
        out[j].label = shown[j].label;
    free(shown);
    if (rc != 0) {
        free(out);
        return -1;
    }
    qsort(out, n, sizeof *out, by_difference);
    r->differences = out;
    r->ndifferences = n;
    return 0;
}

void compare_run_release(compare_run *r) {
    free(r->differences);
    free(r->sites);
    stack_names_free(r->names);
    run_summary_release(&r->s);
    memset(r, 0, sizeof *r);
}

int compare_plot(const compare_run *runs, const char *const *labels, size_t n, const char *path,
                 char *err, size_t errlen) {
    size_t *nsteps = malloc((n + 1) * sizeof *nsteps);
    const int64_t **allocated = malloc((n + 1) * sizeof *allocated);
    const int64_t **reserved = malloc((n + 1) * sizeof *reserved);
    int rc = -1;
    if (!nsteps || !allocated || !reserved) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    /* the device's line only when every run has the same memory */
    uint64_t device = n ? (uint64_t)runs[0].s.total_bytes : 0;
    for (size_t i = 0; i < n; i++) {
        nsteps[i] = (size_t)runs[i].s.steps;
        allocated[i] = runs[i].s.allocated_at_step;
        reserved[i] = runs[i].s.reserved_at_step;
        if ((uint64_t)runs[i].s.total_bytes != device)
            device = 0;
    }
    size_t with_steps = 0;
    for (size_t i = 0; i < n; i++)
        with_steps += nsteps[i] > 0;
    if (!with_steps) { /* the picture is per step: an empty chart would say nothing */
        snprintf(err, errlen,
                 "no run has steps: the picture of allocated and reserved per step "
                 "would be empty");
        goto done;
    }
    plot_runs pr = {n, labels, nsteps, allocated, reserved, device};
    rc = plot_compare(&pr, path, err, errlen) == 0 ? 0 : -1;
done:
    free(nsteps);
    free(allocated);
    free(reserved);
    return rc;
}
