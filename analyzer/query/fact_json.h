/* fact_json.h — the JSON documents that more than one output prints from the same facts:
 * `segments --json` and the viewer's /api/segments (a layout, PyTorch's snapshot keys), `steps
 * --json` and the viewer's /api/steps (a step table), `diff --from --to --json` and the viewer's
 * /api/window (a diff of two points), the viewer's with their lists in parts.
 * Written once here, so the command line and the viewer cannot drift apart: a test compares their
 * answers byte for byte. Like stack_json_frames (stack_names.h), they write to a FILE and compute
 * nothing. */
#ifndef GMT_FACT_JSON_H
#define GMT_FACT_JSON_H

#include "diff.h"
#include "layout.h"
#include "report.h"
#include "stack_names.h"
#include "step_table.h"

#include "gmt_vocab.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>

/* A part of a list: its rows [first, first + count) (the viewer's answers are bounded). */
typedef struct json_slice {
    size_t first, count;
} json_slice;

/* What the viewer asks of a layout's JSON beyond the command line's (which passes NULL: all of
 * it): no "frames" keys (a block's frames are one /api/block away), and a slice of the
 * segments, with "segment_count" (all of them) and "first_segment" said. */
typedef struct layout_json_options {
    int no_frames;
    json_slice slice;
} layout_json_options;

/* The layout l at `when` (the user's WHEN as given, `described` as when_describe says it):
 * the totals, then each segment with PyTorch's keys and the blocks that tile it, the blocks
 * outside every segment, the rows left out. Frames come from `stacks`. */
void layout_json_write(FILE *out, const layout *l, const char *when, const char *described,
                       stack_names *stacks, const layout_json_options *o);

/* The series of the live blocks of l's segments [first, first + count) of `slice` (NULL: all),
 * as /api/stacks keys them by `by` (view_stacks.h: the stack id, 0 for none; the stream; the
 * gmt_size_class; the gmt_category, unknown where `categories`, category_stored_statement's,
 * has none or is NULL): "keys", one list per segment of its live blocks' keys in address order
 * (layout_json_write's blocks whose state is active_*), with "segment_count" and
 * "first_segment". The viewer's segment map coloured as the timeline's stacks, apart from the
 * layout's own answer (which is near the response cap at the page's 400 segments). */
void layout_series_json_write(FILE *out, const layout *l, gmt_stack_by by, sqlite3_stmt *categories,
                              const json_slice *slice);

/* The step table of `device` (step_table.h): where its history begins, then a row per step;
 * with a slice (NULL: every row) its rows only, "step_count" (all of them) and "first_row"
 * said. */
void step_table_json_write(FILE *out, int device, const step_row *r, size_t n,
                           const step_history *h, const json_slice *slice);
/* The same document from the rows [first, first + count) of a table of n rows alone (rows holds
 * just those: step_table_part's answer); sliced: "step_count" and "first_row" said. */
void step_table_json_write_rows(FILE *out, int device, const step_row *rows, size_t count, size_t n,
                                size_t first, const step_history *h, int sliced);

/* `diff INPUT --from A --to B --json`'s document: the points, their change, the segments, the
 * listed stacks, with their frames unless no_frames (the viewer's: a real stack's frames make
 * nearly all of its bytes). */
void diff_points_json_write(FILE *out, const diff_points *d, int no_frames);

/* One point's object as ` "name": {...},\n` (input and device said when input is not NULL:
 * `diff A B`'s points), and the change between two: ` "change": {...}`. */
void diff_point_json_write(FILE *out, const char *name, const diff_point *p, const char *input,
                           int device);
void diff_change_json_write(FILE *out, const diff_change *c);

/* One OOM with its verdict, as report --json's "oom_events" lists it. */
void report_oom_json_write(FILE *out, const report_oom *o);

#endif
