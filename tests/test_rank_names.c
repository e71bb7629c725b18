/* test_rank_names.c — the rank a file name states (rank_stats.h rank_of_name): only an explicit
 * rank pattern ("rank" then digits, or the digits memrec -o trace.%r.zst writes before the
 * input's endings), never any other digits of the name (issue 29: m512 is no rank 512, pt20 no
 * rank 20, the pid of memrec's default memrec-%h-%p.zst no rank). */
#include "check.h"
#include "rank_stats.h"

#include <stdint.h>

#define RANK(name, want) CHECK_EQ_U64((uint64_t)rank_of_name(name), (uint64_t)(int64_t)(want))

int main(void) {
    /* "rank" and its digits, with or without a separator, anywhere but inside a word */
    RANK("rank3.zst", 3);
    RANK("rank-3.zst", 3);
    RANK("rank_3.pickle", 3);
    RANK("RANK.12.db", 12);
    RANK("/runs/job/rank0_step500.db", 0);
    RANK("snapshot_rank7_iter20.pickle", 7);
    RANK("frank3.zst", -1); /* a word that ends in "rank" */
    RANK("rank.zst", -1);
    /* -o trace.%r.zst: the part right before the endings, all digits */
    RANK("trace.3.zst", 3);
    RANK("/data/job/trace.11.zst", 11);
    RANK("trace.3.zst.db", 3);
    RANK("job.5.sqlite", 5);
    RANK("memrec-node7.2.zst", 2);
    /* digits that are no rank */
    RANK("m512.zst", -1);
    RANK("pt20.pickle", -1);
    RANK("memrec-node7-4242.zst", -1); /* the default pattern: the pid */
    RANK("train-step-m512.pickle", -1);
    RANK("lm-ctx512-forward.pickle", -1);
    RANK("step500.db", -1);
    RANK("3.zst", -1);              /* a name of digits alone: not a pattern */
    RANK("trace.3", -1);            /* no input's ending */
    RANK("trace.3.txt.zst", -1);    /* the part before the endings is not digits */
    RANK("/a/rank9/trace.zst", -1); /* the folder's name is not the file's */
    return check_finish("test_rank_names");
}
