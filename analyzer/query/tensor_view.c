/* tensor_view.c — the sums of `memanalyze tensors` (tensor_view.h) over tensor_table.h's rows
 * and groups: per group and per parameter the three training-state columns, the rest and the
 * total, and the share of the peak. */
#include "tensor_view.h"

#include "db_query.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const gmt_category state_columns[] = {BLOCK_CATEGORY_PARAMETER, BLOCK_CATEGORY_GRADIENT,
                                             BLOCK_CATEGORY_OPTIMIZER_STATE};

static tensor_sum sum_of(const char *name, const int64_t bytes[], int64_t peak) {
    tensor_sum s = {.name = name};
    for (int k = 0; k < BLOCK_CATEGORY_COUNT; k++) {
        s.bytes[k] = bytes[k];
        s.total_bytes += bytes[k];
    }
    s.other_bytes = s.total_bytes;
    for (size_t c = 0; c < sizeof state_columns / sizeof state_columns[0]; c++)
        s.other_bytes -= bytes[state_columns[c]];
    s.share_of_peak = peak > 0 ? (double)s.total_bytes / (double)peak : 0.0;
    return s;
}

/* Each group's parameters: those whose group (tensor_group_of) is the group's name. */
static int add_params(tensor_view *v) {
    char group[1024];
    for (size_t i = 0; i < v->ngroups; i++) {
        tensor_view_group *g = &v->groups[i];
        for (size_t p = 0; p < v->nparam_rows; p++) {
            tensor_group_of(v->param_rows[p].group, v->by, group, sizeof group);
            if (strcmp(group, g->sum.name) != 0)
                continue;
            tensor_sum *grown = realloc(g->params, (g->nparams + 1) * sizeof *grown);
            if (!grown)
                return -1;
            g->params = grown;
            g->params[g->nparams++] =
                sum_of(v->param_rows[p].group, v->param_rows[p].bytes, v->peak_allocated);
        }
    }
    return 0;
}

int tensor_view_build(sqlite3 *db, int device, const char *when, tensor_grouping by,
                      tensor_view **out, char *err, size_t errlen) {
    *out = NULL;
    tensor_view *v = calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    v->device = device;
    v->by = by;
    categorizer *cats = NULL;
    if (when_resolve(db, when, device, &v->event_id, err, errlen) != 0 ||
        !(cats = categorizer_new(db, NULL, err, errlen)) ||
        tensor_rows_at(db, cats, device, v->event_id, 0, &v->tensors, &v->ntensors, err, errlen) !=
            0)
        goto fail;
    categorizer_free(cats);
    cats = NULL;
    v->peak_allocated = db_query_i64(
        db, "SELECT peak_allocated_bytes FROM devices WHERE device = ?1", device, 0, 0);
    when_describe(db, v->event_id, v->when, sizeof v->when);
    if (tensor_groups(v->tensors, v->ntensors, by, &v->group_rows, &v->ngroup_rows) != 0 ||
        tensor_groups(v->tensors, v->ntensors, GROUP_BY_NONE, &v->param_rows, &v->nparam_rows) !=
            0 ||
        !(v->groups = calloc(v->ngroup_rows ? v->ngroup_rows : 1, sizeof *v->groups))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    int64_t totals[BLOCK_CATEGORY_COUNT] = {0};
    for (size_t i = 0; i < v->ngroup_rows; i++) {
        v->groups[v->ngroups++].sum =
            sum_of(v->group_rows[i].group, v->group_rows[i].bytes, v->peak_allocated);
        for (int k = 0; k < BLOCK_CATEGORY_COUNT; k++)
            totals[k] += v->group_rows[i].bytes[k];
    }
    v->total = sum_of("total", totals, v->peak_allocated);
    if (by != GROUP_BY_NONE && add_params(v) != 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    *out = v;
    return 0;
fail:
    categorizer_free(cats);
    tensor_view_free(v);
    return -1;
}

void tensor_view_free(tensor_view *v) {
    if (!v)
        return;
    for (size_t i = 0; i < v->ngroups; i++)
        free(v->groups[i].params);
    free(v->groups);
    tensor_groups_free(v->group_rows, v->ngroup_rows);
    tensor_groups_free(v->param_rows, v->nparam_rows);
    tensor_rows_free(v->tensors, v->ntensors);
    free(v);
}
