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
    for (size_t i = 0; i < n; i++) {
        int listed = i<top, grows = g[i].growth_per_step> 0 &&
                     out->ngrowing<top, never_freed = g[i].never_freed_count> 0 &&
                     out->nnever_freed < top;
        if (!listed && !grows && !never_freed)
            continue;
        leak_site s = {g[i], ""};
        stack_label(db, g[i].stack_id, s.site, sizeof s.site); /* unknown: its text says so */
        /* each list holds at most `top` of the n sites: `most` */
        if (listed && GMT_ALWAYS(out->nsites < most))
            out->sites[out->nsites++] = s;
        if (grows && GMT_ALWAYS(out->ngrowing < most))
            out->growing[out->ngrowing++] = s;
        if (never_freed && GMT_ALWAYS(out->nnever_freed < most))
            out->never_freed[out->nnever_freed++] = s;
    }
    free(g);
    return 0;
}

void leak_table_release(leak_table *t) {
    free(t->sites);
    free(t->growing);
    free(t->never_freed);
    memset(t, 0, sizeof *t);
}
