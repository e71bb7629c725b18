/* tensor_view.h — `memanalyze tensors`' answer: the named tensors live at a moment, summed per
 * group (layer, module, or parameter: tensor_table.h's grouping), each group with its
 * parameters beside it, every row with its bytes per category, the rest ("other"), the total
 * and its share of the device's peak allocated, and the total of all groups. The text and the
 * JSON print this struct; nothing is added up after it. */
#ifndef GMT_TENSOR_VIEW_H
#define GMT_TENSOR_VIEW_H

#include "categories.h"
#include "tensor_table.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* One row of the view: a group, one of its parameters, or the total. */
typedef struct tensor_sum {
    const char *name; /* the group's or the parameter's (the view owns it); "total" */
    int64_t bytes[BLOCK_CATEGORY_COUNT];
    int64_t other_bytes;  /* every category but parameter, gradient and optimizer state */
    int64_t total_bytes;  /* every category's */
    double share_of_peak; /* total_bytes / the device's peak allocated; 0 without a peak */
} tensor_sum;

typedef struct tensor_view_group {
    tensor_sum sum;
    tensor_sum *params; /* its parameters in the model's order; none with GROUP_BY_NONE */
    size_t nparams;
} tensor_view_group;

typedef struct tensor_view {
    int device;
    int64_t event_id;
    char when[128]; /* the moment described: "event 6454 (step 19, 1.062 s)" */
    int64_t peak_allocated;
    tensor_grouping by;
    tensor_row *tensors; /* every named tensor live then, largest first */
    size_t ntensors;
    tensor_view_group *groups; /* in the order of each group's first block */
    size_t ngroups;
    tensor_sum total; /* of every group */
    /* owned: what the rows point into */
    tensor_group *group_rows, *param_rows;
    size_t ngroup_rows, nparam_rows;
} tensor_view;

/* The view of device's named tensors right after `when` (when.h: step:N, peak, end ...),
 * grouped `by`. 0, or -1 with err set (a bad moment, a database error, out of memory). */
int tensor_view_build(sqlite3 *db, int device, const char *when, tensor_grouping by,
                      tensor_view **out, char *err, size_t errlen);
void tensor_view_free(tensor_view *v);

#endif
