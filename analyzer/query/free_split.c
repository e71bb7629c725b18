/* free_split.c — releasable and trapped free memory from layouts (see
 * free_split.h). */
#include "free_split.h"

#include "layout.h"

#include <stdlib.h>

int free_split_at(sqlite3 *db, int device, const int64_t *event_ids, size_t n, free_split *out,
                  char *err, size_t errlen) {
    if (n == 0)
        return 0;
    layout **ls = calloc(n, sizeof *ls);
    if (!ls)
        return -1;
    int rc = layout_build_many(db, device, event_ids, n, ls, err, errlen);
    for (size_t i = 0; i < n; i++) {
        const layout *l = ls[i];
        free_split f = {.event_id = event_ids[i]};
        if (rc == 0 && l) {
            /* blocks outside every segment count in the layout's allocated, not here */
            f.reserved = (int64_t)l->reserved_bytes;
            f.releasable = (int64_t)l->releasable_bytes;
            f.trapped = (int64_t)l->trapped_bytes;
            f.allocated = f.reserved - f.releasable - f.trapped;
        }
        out[i] = f;
        layout_free(ls[i]);
    }
    free(ls);
    return rc;
}

double free_split_trapped_ratio(const free_split *f) {
    return f->reserved > 0 ? (double)f->trapped / (double)f->reserved : 0;
}
