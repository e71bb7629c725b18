/* gmt_rank.c — the rank from RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID (gmt_rank.h). */
#include "gmt_rank.h"

#include <stdlib.h>

static const char *const names[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};

const char *gmt_rank_variable(void) {
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return names[i];
    }
    return NULL;
}

const char *gmt_rank_text(void) {
    const char *name = gmt_rank_variable();
    return name ? getenv(name) : NULL;
}

int32_t gmt_rank(void) {
    const char *v = gmt_rank_text();
    return v ? (int32_t)atoi(v) : -1;
}
