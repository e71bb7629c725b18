/* leak_table.c — the leaks of one device and a window, labelled and cut into the lists
 * `memanalyze leaks` shows (see leak_table.h), so the command only prints them. */
#include "leak_table.h"

#include "gmt_assert.h"
#include "stack_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int leak_table_read(sqlite3 *db, int device, int64_t from, int64_t to, size_t top, leak_table *out,
                    char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->device = device;
    site_growth *g;
    size_t n, windows;
    if (analysis_site_growth(db, device, from, to, &g, &n, &windows) != 0) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
        return -1;
    }
    out->windows = windows;
    out->step_ends = windows ? windows + 1 : 0;
    size_t most = n < top ? n : top;
    out->sites = calloc(most + 1, sizeof *out->sites);
    out->growing = calloc(most + 1, sizeof *out->growing);
    out->never_freed = calloc(most + 1, sizeof *out->never_freed);
    if (!out->sites || !out->growing || !out->never_freed) {
        free(g);
        leak_table_release(out);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* the sites any list shows, labelled together: one label per site in all three lists */
    size_t *shown = malloc((n ? n : 1) * sizeof *shown), nshown = 0;
    int64_t *ids = malloc((n ? n : 1) * sizeof *ids);
    char **labels = NULL;
    leak_site *rows = calloc(n ? n : 1, sizeof *rows);
    size_t ngrowing = 0, nnever = 0;
    for (size_t i = 0; shown && ids && rows && i < n; i++) {
        int listed = i<top, grows = g[i].growth_per_step> 0 &&
                     ngrowing<top, never_freed = g[i].never_freed_count> 0 && nnever < top;
        ngrowing += grows != 0;
        nnever += never_freed != 0;
        if (listed || grows || never_freed) {
            rows[nshown].g = g[i];
            ids[nshown] = g[i].stack_id;
            shown[nshown++] = i;
        }
    }
    if (shown && ids && rows && (labels = malloc((nshown ? nshown : 1) * sizeof *labels)))
        for (size_t k = 0; k < nshown; k++)
            labels[k] = rows[k].site;
    if (!labels || stack_labels_of(db, ids, nshown, labels, sizeof rows->site) != 0) {
        free(shown), free(ids), free(labels), free(rows), free(g);
        leak_table_release(out);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t k = 0; k < nshown; k++) {
        const leak_site *s = &rows[k];
        int listed = shown[k]<top, grows = s->g.growth_per_step> 0 &&
                     out->ngrowing<top, never_freed = s->g.never_freed_count> 0 &&
                     out->nnever_freed < top;
        /* each list holds at most `top` of the n sites: `most` */
        if (listed && GMT_ALWAYS(out->nsites < most))
            out->sites[out->nsites++] = *s;
        if (grows && GMT_ALWAYS(out->ngrowing < most))
            out->growing[out->ngrowing++] = *s;
        if (never_freed && GMT_ALWAYS(out->nnever_freed < most))
            out->never_freed[out->nnever_freed++] = *s;
    }
    free(shown), free(ids), free(labels), free(rows);
    free(g);
    return 0;
}

void leak_table_release(leak_table *t) {
    free(t->sites);
    free(t->growing);
    free(t->never_freed);
    memset(t, 0, sizeof *t);
}
