/* snapshot_import.c — placeholder until the snapshot reader lands. */
#include "snapshot_import.h"

#include <stdio.h>

int snapshot_import_file(const char *pickle_path, const char *trace_path, char *err,
                         size_t errlen) {
    (void)trace_path;
    snprintf(err, errlen, "%s: reading PyTorch snapshots is not built yet", pickle_path);
    return -1;
}
