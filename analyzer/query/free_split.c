/* free_split.c — releasable and trapped free memory from layouts (see
 * free_split.h). */
#include "free_split.h"

#include "layout.h"

static int split_of(void *ctx, size_t index, layout *l) {
    free_split *f = &((free_split *)ctx)[index];
    /* blocks outside every segment count in the layout's allocated, not here */
    f->reserved = (int64_t)l->reserved_bytes;
    f->releasable = (int64_t)l->releasable_bytes;
    f->trapped = (int64_t)l->trapped_bytes;
    f->allocated = f->reserved - f->releasable - f->trapped;
    layout_free(l);
    return 0;
}

int free_split_at(sqlite3 *db, int device, const int64_t *event_ids, size_t n, free_split *out,
                  char *err, size_t errlen) {
    for (size_t i = 0; i < n; i++)
        out[i] = (free_split){.event_id = event_ids[i]};
    return layout_build_each(db, device, event_ids, n, split_of, out, err, errlen);
}

double free_split_trapped_ratio(const free_split *f) {
    return f->reserved > 0 ? (double)f->trapped / (double)f->reserved : 0;
}
