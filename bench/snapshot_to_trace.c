/* snapshot_to_trace.c — converts a PyTorch snapshot pickle to a trace file
 * with the analyzer's importer, so bench/run_analyzer.sh can compare the
 * sizes of both forms. */
#include "snapshot_import.h"

#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: snapshot_to_trace SNAPSHOT.pickle OUT.zst\n");
        return 2;
    }
    char err[512];
    if (snapshot_import_file(argv[1], argv[2], err, sizeof err) != 0) {
        fprintf(stderr, "snapshot_to_trace: %s\n", err);
        return 2;
    }
    return 0;
}
