/* gmt_rank.h — this process's rank in a distributed job, from the launcher's environment.
 *
 * torchrun sets RANK, Open MPI OMPI_COMM_WORLD_RANK, Slurm SLURM_PROCID; the first one set and
 * non-empty, in that order, is the rank. The recorder reads it for a trace's %r and its process
 * record, in places that run in a forked child before anything else (rec_core.c's fork handler):
 * so only getenv, no allocation, no lock. */
#ifndef GMT_RANK_H
#define GMT_RANK_H

#include <stdint.h>

/* The rank as the environment spells it, or NULL when no variable is set. */
const char *gmt_rank_text(void);

/* The name of the variable gmt_rank_text reads ("RANK", ...), or NULL when none is set. */
const char *gmt_rank_variable(void);

/* The rank as a number (atoi of gmt_rank_text), or -1 when none is set. */
int32_t gmt_rank(void);

#endif
