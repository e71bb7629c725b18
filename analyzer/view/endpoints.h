/* endpoints.h — the viewer's JSON answers, one function each, as server.c's routing table calls
 * them. Each reads its arguments from the request, asks query/'s facts on the thread's read-only
 * connection and prints JSON (base/json_out.h) to `out`; none has SQL of its own. */
#ifndef GMT_VIEW_ENDPOINTS_H
#define GMT_VIEW_ENDPOINTS_H

#include "step_table.h"
#include "view_marks.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>

struct view_blocks_index;

/* A request as the endpoints see it (server.c owns it). */
typedef struct view_request view_request;

/* The query argument `name` (?name=value, decoded), or NULL when absent. */
const char *view_request_arg(const view_request *rq, const char *name);
/* The request's input (input=I) as the user named it. */
const char *view_request_input(const view_request *rq);
/* The server's inputs: how many, and each one's name and database (for /api/inputs). */
size_t view_request_input_count(const view_request *rq);
const char *view_request_input_name(const view_request *rq, size_t i);
const char *view_request_input_db_path(const view_request *rq, size_t i);
/* The worker thread's blocks index (view_blocks.h), opened on its first use; NULL with a
 * one-line message and the HTTP status to answer (503 while the server still builds it, 500)
 * when there is none. */
struct view_blocks_index *view_request_blocks(const view_request *rq, int *status, char *err,
                                              size_t errlen);

/* The devices with events (at most max), for the answers computed at the start. */
int view_devices(sqlite3 *db, int *devices, int max);
/* The device an endpoint answers for without a device argument (the one with the highest
 * peak), for the start's answers to such requests. */
int view_default_device(sqlite3 *db);

/* An endpoint: 200 with the JSON written to out, or an HTTP error status (400 a bad argument,
 * 404 nothing of that name, 500 the database failed) with a one-line message in err, which the
 * server sends as {"error": "..."}. */
typedef int (*view_endpoint)(sqlite3 *db, const view_request *rq, FILE *out, char *err,
                             size_t errlen);

/* /api/summary: the run (report's run keys) and per device its peaks and their moments, the end
 * state, OOMs, as `report --json` names them. */
int view_api_summary(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen);
/* /api/steps?device=D[&first=K&count=N]: `steps --json`'s document (fact_json.h), with
 * "step_count" and "first_row", its rows [K, K + N) only when asked (then from
 * step_table_part: a pass over those steps' events, not the run's). */
int view_api_steps(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen);
/* /api/segments?device=D&at=WHEN[&first=K&count=N][&frames=1]: `segments --at WHEN --json`'s
 * document (fact_json.h), without the frames unless asked (they make most of its bytes), with
 * "segment_count" and "first_segment", the segments [K, K + N) only when asked. */
int view_api_segments(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen);
/* /api/segment_series?device=D&at=WHEN&by=site|category|stream|size[&first=K&count=N]: the keys
 * of the series (as /api/stacks names them) of the live blocks of /api/segments' segments
 * [K, K + N) at the same moment, one list per segment in its blocks' order
 * (layout_series_json_write): the page's segment map coloured as the timeline's stacks. */
int view_api_segment_series(sqlite3 *db, const view_request *rq, FILE *out, char *err,
                            size_t errlen);
/* /api/timeline?device=D[&lo=A&hi=B][&n=N]: view_timeline.h's buckets of [lo, hi) (absent: the
 * whole run, view_timeline_axis), at most n + 1 (n at most 2000; default 1000), as parallel arrays.
 */
int view_api_timeline(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen);
/* /api/stacks?device=D&by=site|category|stream|size[&lo=A&hi=B][&n=N][&top=S]: view_stacks.h's
 * series (S at most 12, default 12, then "others"): their labels once, then per bucket of
 * /api/timeline's grid the bytes of each at the bucket's highest allocated, in "unit" bytes (so
 * each bucket's sum times unit is its max_allocated), and the event each shows; "refused": true
 * (no values) for a window that ends too far into a long run; "folded": the
 * smallest series folded into "others" to keep the answer under the cap (a rare answer of many
 * buckets and large, odd values). 404: by=category on a database
 * without block categories. */
int view_api_stacks(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen);
/* /api/allocations?device=D&t0=A&t1=B[&k=K]: view_blocks.h's K largest blocks (K at most 2000;
 * default 500) live in [t0, t1), and the window's counts. */
int view_api_allocations(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen);
/* /api/marks?device=D[&lo=A&hi=B][&ooms=0]: the steps overlapping the window (the whole run when
 * absent) as [step, begin, end] on the timeline's axis, at most 2000 (every k-th beyond:
 * "step_stride"), the NVTX ranges overlapping it ("ranges": [begin, end, depth, name, domain,
 * tid, open] as "range_columns" says; an open one ends at the run's end; at most 300, the
 * outermost then the longest kept, of "ranges_total"; "ranges_depth": the rows they take; none
 * on the event axis), and the device's OOMs in it (ooms=0: none, and no pass over the events)
 * (view_marks.h). */
int view_api_marks(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen);
/* /api/inputs: every input's facts (view_inputs.h) in the order given: its label, rank and
 * where it came from, devices, events, span, axis, peaks and their moments, OOMs, steps, with
 * `ranks --json`'s key names; whether they are ranks of one job or runs and why, one clock or
 * each its own (endpoints_inputs.c). The db argument is unused: it opens each database itself. */
int view_api_inputs(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen);
/* /api/block?id=ALLOC_ID: one allocation (block_detail.h) with its alloc and free frames. */
int view_api_block(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen);

/* /api/window?device=D&from=WHEN&to=WHEN (or t0=&t1=, on the timeline's axis: ns since the first
 * event, event ids for an input without timestamps): the window's diff (`diff --json`'s
 * document, its 10 largest stacks, without their frames), the sites allocating most in it, the
 * categories at its peak and end, its steps (`steps --json`'s rows from the first that overlaps
 * it to the last, at most 200: step_table_overlap's range and step_table_part's rows, those
 * steps' events, not the run's; the kept table when there is one; implicit steps: the whole
 * table, kept) and its OOMs with report's verdicts (endpoints_window.c). */
int view_api_window(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen);
/* /api/search?device=D&q=TEXT: the sites whose frames hold TEXT (function or file,
 * case-insensitive; at most 50) and a histogram of their allocations over the axis;
 * /api/search?device=D&addr=0x...: the blocks (at most 100) and segments that held the address
 * (endpoints_window.c). */
int view_api_search(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen);

/* The step table of `device` (step_table.h) on db's file, made by the first thread that asks and
 * kept for all of them (the others wait while it is made): the whole table's /api/steps and the
 * window summary of implicit steps read it once, not at each answer (a pass over the events:
 * 0.34 s at 10 M events, once for the server, not once per worker thread). A part (first=&count=,
 * as the page asks) and a window's steps are step_table_part's while none is kept: the start's
 * memos and the first brush make no pass over the run. 0, or 500 with the message. */
int view_step_table(sqlite3 *db, int device, const step_row **rows, size_t *n,
                    const step_history **history, char *err, size_t errlen);
/* 1 with the kept table of `device` on db's file (nothing made), else 0: /api/steps then
 * answers a part, and /api/window its steps, with step_table_part. */
int view_step_table_held(sqlite3 *db, int device, const step_row **rows, size_t *n,
                         const step_history **history);
/* A copy of the step order of `device` on db's file (step_table.h: what its parts share), made
 * by the first thread that asks (a walk of the steps' index: ~60 ms per 300 k steps) and kept:
 * the window's steps are then a seek at each end, and a part's first reserved jump is looked
 * for once. 0, or 500 with the message. */
int view_step_order(sqlite3 *db, int device, step_order *o, char *err, size_t errlen);
/* What a part learnt of the order (the first reserved jump, step_table_part), kept for the next
 * ones. */
void view_step_order_keep(sqlite3 *db, int device, const step_order *o);
/* The NVTX ranges' index (view_marks.h) of db's file, made by the first thread that asks (a
 * pass over the ranges) and kept for all: every /api/marks then reads only the window's
 * ranges. 0, or 500 with the message. */
int view_ranges(sqlite3 *db, int event_axis, const view_ranges_index **out, char *err,
                size_t errlen);
/* Frees every kept table, order and ranges' index: only while no thread may still read one
 * (before the workers start, after they and the builder are joined). */
void view_step_table_drop(void);

#endif
