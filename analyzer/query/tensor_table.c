/* tensor_table.c — named tensors at a moment, and their groups (see tensor_table.h). */
#include "tensor_table.h"

#include "addr_map.h"
#include "db_query.h"
#include "gmt_grow.h"
#include "gmt_hash.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tensor_rows_free(tensor_row *rows, size_t n) {
    for (size_t i = 0; rows && i < n; i++)
        free(rows[i].name);
    free(rows);
}

typedef struct uncategorized {
    addr_map index; /* alloc_id -> 1 + row */
    tensor_row *rows;
} uncategorized;

static int fill_category(void *ctx, const classified_block *b) {
    uncategorized *u = ctx;
    const uint32_t *at = addr_map_get(&u->index, 0, (uint64_t)b->alloc_id);
    if (at)
        u->rows[*at - 1].category = b->category;
    return 0;
}

int tensor_rows_at(sqlite3 *db, categorizer *cats, int64_t device, int64_t event_id, size_t top,
                   tensor_row **rows, size_t *n, char *err, size_t errlen) {
    *rows = NULL;
    *n = 0;
    if (!db_has_table(db, "tensor_names"))
        return 0; /* a database of an older memanalyze: no names */
    /* at the device's peak the database found them when it was built (tensor_peaks), unless
     * the user's rules may say otherwise */
    int at_peak = !categorizer_has_rules(cats) &&
                  db_query_int(db, "SELECT value FROM meta WHERE key = 'category_peaks'", 0) == 1 &&
                  db_query_i64(db, "SELECT peak_allocated_event_id FROM devices WHERE device = ?1",
                               device, 0, INT64_MIN) == event_id;
    /* A block is live after event_id when it began at or before it and no free ended it by
     * then (the allocations view's rule); whole-block segments end by free or unmap. CROSS JOIN
     * keeps tensor_names the outer loop: the planner would otherwise walk the events. */
    sqlite3_stmt *st = db_statement(
        db,
        at_peak
            ? "SELECT t.alloc_id, t.name, p.category, t.tensors, a.size, a.addr FROM tensor_peaks "
              "AS p CROSS JOIN tensor_names AS t ON t.alloc_id = p.alloc_id CROSS JOIN event_rows "
              "AS a ON a.event_id = p.alloc_id WHERE p.device = ?1 AND ?2 = ?2 ORDER BY a.size "
              "DESC, t.alloc_id LIMIT ?3"
            : "SELECT t.alloc_id, t.name, t.category, t.tensors, a.size, a.addr FROM tensor_names "
              "AS t CROSS JOIN event_rows AS a ON a.event_id = t.alloc_id WHERE a.device = ?1 AND "
              "t.alloc_id <= ?2 AND NOT EXISTS (SELECT 1 FROM event_rows AS f WHERE "
              "f.alloc_event_id = t.alloc_id AND f.op IN ({op:free}, {op:unmap}) AND f.event_id "
              "<= ?2) ORDER BY a.size DESC, t.alloc_id LIMIT ?3");
    if (!st) {
        snprintf(err, errlen, "reading tensor_names: %s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, device);
    sqlite3_bind_int64(st, 2, event_id);
    sqlite3_bind_int64(st, 3, top ? (int64_t)top : -1);
    size_t cap = 0;
    int rc = 0, missing = 0, failed = 0;
    while (rc == 0 && db_next_row(st, &failed)) {
        const char *category = (const char *)sqlite3_column_text(st, 2);
        int c = category ? gmt_category_from_name(category, strlen(category)) : -1;
        missing |= c < 0;
        if (gmt_grow((void **)rows, &cap, *n, sizeof **rows) != 0 ||
            !((*rows)[*n].name = strdup((const char *)sqlite3_column_text(st, 1)))) {
            rc = -1;
            break;
        }
        tensor_row *t = &(*rows)[(*n)++];
        t->alloc_id = sqlite3_column_int64(st, 0);
        t->category = c >= 0 ? (gmt_category)c : BLOCK_CATEGORY_OTHER;
        t->tensors = sqlite3_column_int64(st, 3);
        t->bytes = sqlite3_column_int64(st, 4);
        t->address = sqlite3_column_int64(st, 5);
    }
    if (failed) {
        snprintf(err, errlen, "reading tensor_names: %s", sqlite3_errmsg(db));
        rc = -1;
    } else if (rc != 0) {
        snprintf(err, errlen, "out of memory");
    }
    sqlite3_finalize(st);
    if (rc == 0 && missing && cats) { /* names given without a category: a sweep decides */
        uncategorized u = {{0}, *rows};
        for (size_t i = 0; rc == 0 && i < *n; i++)
            rc = addr_map_put(&u.index, 0, (uint64_t)(*rows)[i].alloc_id, (uint32_t)i + 1);
        if (rc != 0)
            snprintf(err, errlen, "out of memory");
        else
            rc = categorizer_sweep(cats, device, fill_category, &u, err, errlen);
        addr_map_free(&u.index);
    }
    if (rc != 0) {
        tensor_rows_free(*rows, *n);
        *rows = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

void tensor_parameter_name(const tensor_row *t, char *buf, size_t len) {
    size_t n = strlen(t->name);
    const char *dot = strrchr(t->name, '.');
    if (t->category == BLOCK_CATEGORY_GRADIENT && n > 5 && !strcmp(t->name + n - 5, ".grad"))
        n -= 5;
    else if (t->category == BLOCK_CATEGORY_OPTIMIZER_STATE && dot)
        n = (size_t)(dot - t->name);
    snprintf(buf, len, "%.*s", (int)n, t->name);
}

void tensor_group_of(const char *parameter, tensor_grouping by, char *buf, size_t len) {
    size_t n = strlen(parameter);
    if (by == GROUP_BY_MODULE) {
        const char *dot = strrchr(parameter, '.');
        n = dot ? (size_t)(dot - parameter) : n;
    } else if (by == GROUP_BY_LAYER) {
        size_t first_end = strcspn(parameter, "."), end = 0;
        for (const char *p = parameter; *p && !end;) {
            size_t part = strcspn(p, ".");
            int numeric = part > 0;
            for (size_t i = 0; i < part; i++)
                numeric &= isdigit((unsigned char)p[i]) != 0;
            if (numeric)
                end = (size_t)(p - parameter) + part;
            p += part + (p[part] == '.');
        }
        n = end ? end : first_end;
    }
    snprintf(buf, len, "%.*s", (int)n, parameter);
}

void tensor_groups_free(tensor_group *groups, size_t n) {
    for (size_t i = 0; groups && i < n; i++)
        free(groups[i].group);
    free(groups);
}

static int by_alloc(const void *a, const void *b) {
    int64_t x = (*(const tensor_row *const *)a)->alloc_id;
    int64_t y = (*(const tensor_row *const *)b)->alloc_id;
    return (x > y) - (x < y);
}

int tensor_groups(const tensor_row *rows, size_t n, tensor_grouping by, tensor_group **groups,
                  size_t *ngroups) {
    *groups = NULL;
    *ngroups = 0;
    const tensor_row **sorted = malloc((n ? n : 1) * sizeof *sorted);
    addr_map index = {0}; /* (hash, length) of the group's name -> 1 + group */
    size_t cap = 0;
    int rc = sorted ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        sorted[i] = &rows[i];
    if (rc == 0 && n > 1)
        qsort(sorted, n, sizeof *sorted, by_alloc);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char parameter[1024], group[1024];
        tensor_parameter_name(sorted[i], parameter, sizeof parameter);
        tensor_group_of(parameter, by, group, sizeof group);
        size_t len = strlen(group);
        uint64_t h = gmt_hash_bytes(GMT_HASH_SEED, group, len);
        uint32_t *at = addr_map_get(&index, h, len);
        size_t g = at ? *at - 1 : SIZE_MAX;
        if (g != SIZE_MAX && strcmp((*groups)[g].group, group) != 0) /* a collision: search */
            for (g = 0; g < *ngroups && strcmp((*groups)[g].group, group) != 0; g++)
                ;
        if (g == SIZE_MAX || g == *ngroups) {
            if (gmt_grow((void **)groups, &cap, *ngroups, sizeof **groups) != 0 ||
                !((*groups)[*ngroups].group = strdup(group)) ||
                (!at && addr_map_put(&index, h, len, (uint32_t)*ngroups + 1) != 0)) {
                rc = -1;
                break;
            }
            memset((*groups)[*ngroups].bytes, 0, sizeof(*groups)[*ngroups].bytes);
            g = (*ngroups)++;
        }
        (*groups)[g].bytes[sorted[i]->category] += sorted[i]->bytes;
    }
    free(sorted);
    addr_map_free(&index);
    if (rc != 0) {
        tensor_groups_free(*groups, *ngroups);
        *groups = NULL;
        *ngroups = 0;
    }
    return rc;
}
