/* export_pytorch.h — `memanalyze export --to pytorch`: a recording as the pickle
 * torch.cuda.memory._dump_snapshot writes (MemoryViz, torch.cuda._memory_viz read it), or as
 * the same structure in JSON (what json.dump of torch.cuda.memory._snapshot() writes; MemoryViz
 * reads that too). */
#ifndef GMT_EXPORT_PYTORCH_H
#define GMT_EXPORT_PYTORCH_H

#include <stddef.h>
#include <stdio.h>

/* Writes the snapshot of the database ctx (a sqlite3 *) to f: every device's segments at the
 * last event and its events. 0, or -1 with a one-line message in err (a write error shows on
 * f: the caller checks it). */
int export_pytorch_fill(FILE *f, void *ctx, char *err, size_t errlen);
/* The same, as JSON. */
int export_pytorch_fill_json(FILE *f, void *ctx, char *err, size_t errlen);

#endif
