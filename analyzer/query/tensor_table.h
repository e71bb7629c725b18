/* tensor_table.h — the named tensors live at a moment (tensor_names: memrec's walk of the
 * model, or a snapshot's names), each with its bytes and category, and their grouping into the
 * per-parameter view: a parameter, its gradient and its optimizer state side by side, summed
 * per layer or module. `memanalyze tensors` prints it; `report` lists the largest at the
 * peak. */
#ifndef GMT_TENSOR_TABLE_H
#define GMT_TENSOR_TABLE_H

#include "categories.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tensor_row {
    char *name;
    gmt_category category; /* the name's; else the categorizer's (other without one) */
    int64_t bytes;         /* the block's, as the allocator accounts it */
    int64_t tensors;       /* tensors sharing the storage (1 for most) */
    int64_t address, alloc_id;
} tensor_row;

/* The named blocks of device live right after event_id, largest first; `top` of them (0: all).
 * cats decides the category of names given without one (NULL: they read other). 0, or -1
 * with err set. */
int tensor_rows_at(sqlite3 *db, categorizer *cats, int64_t device, int64_t event_id, size_t top,
                   tensor_row **rows, size_t *n, char *err, size_t errlen);
void tensor_rows_free(tensor_row *rows, size_t n);

typedef enum tensor_grouping { GROUP_BY_LAYER, GROUP_BY_MODULE, GROUP_BY_NONE } tensor_grouping;

typedef struct tensor_group {
    char *group; /* "layers.3", "layers.3.attn.q_proj", or the parameter's name (none) */
    int64_t bytes[BLOCK_CATEGORY_COUNT];
} tensor_group;

/* The parameter a tensor belongs to: its name less ".grad" (a gradient) or less the state's key
 * (optimizer state: "...weight.exp_avg" -> "...weight"); the name itself otherwise. */
void tensor_parameter_name(const tensor_row *t, char *buf, size_t len);

/* The group of a parameter's name: GROUP_BY_LAYER, the name up to its first numeric part
 * ("model.layers.3.mlp.up.weight" -> "model.layers.3"; without one, its first part: "embed");
 * GROUP_BY_MODULE, the name less its last part; GROUP_BY_NONE, the name. */
void tensor_group_of(const char *parameter, tensor_grouping by, char *buf, size_t len);

/* The rows summed per group, in the order of each group's first block (the model's order:
 * parameters are made module by module). 0 or -1. */
int tensor_groups(const tensor_row *rows, size_t n, tensor_grouping by, tensor_group **groups,
                  size_t *ngroups);
void tensor_groups_free(tensor_group *groups, size_t n);

#endif
