/* db_writer.h — writes the replay's rows into a fresh SQLite database laid
 * out by schema/schema.sql (embedded in the binary).
 *
 * One transaction, prepared statements, journal off, indexes after the
 * bulk load. The replay calls one function per row; nothing here knows how
 * the rows were derived. Values equal to DB_NULL are stored as SQL NULL.
 *
 * Ownership: db_writer_open creates the file under a temporary name beside it;
 * db_writer_finish commits, indexes and closes it and renames it into place (replacing a
 * regular file, never anything else: base/db_file.h); db_writer_abort closes
 * and deletes it. Either frees the writer. */
#ifndef GMT_DB_WRITER_H
#define GMT_DB_WRITER_H

#include <stddef.h>
#include <stdint.h>

#define DB_NULL INT64_MIN

typedef struct db_writer db_writer;

/* One row of event_rows: an event and its device's totals after it. */
typedef struct db_event_row {
    int64_t event_id, ts_ns, device, op, level, kind, source;
    int64_t addr, size, requested_size, stream, pool, tid, stack_id;
    int64_t segment_id, alloc_event_id;
    int64_t allocated_bytes, requested_bytes, reserved_bytes, segments, largest_free_bytes;
} db_event_row;

typedef struct db_segment_row {
    int64_t segment_id, device;
    const char *kind;
    int64_t addr, size, requested_size, stream, pool, mapped, whole_block, tid;
    int64_t alloc_ts_ns, free_ts_ns, free_event_id, stack_id, driver_stack_id, free_stack_id;
} db_segment_row;

typedef struct db_marker_row {
    int64_t marker_id, ts_ns, tid;
    const char *kind, *name, *domain;
    int64_t begin_marker_id;
} db_marker_row;

typedef struct db_step_row {
    int64_t step;
    const char *name;
    int64_t begin_ts_ns, end_ts_ns, begin_event_id, end_event_id;
} db_step_row;

typedef struct db_device_row {
    int64_t device;
    const char *name;
    int64_t total_bytes;
    int64_t peak_allocated_bytes, peak_allocated_event_id;
    int64_t peak_reserved_bytes, peak_reserved_event_id;
    int64_t peak_requested_bytes, peak_requested_event_id;
    int64_t peak_segments;
    int64_t allocs, frees, cache_allocs, cache_misses, ooms, alloc_failed;
} db_device_row;

typedef struct db_bucket_row {
    int64_t device, bucket_ns, bucket, first_event_id, last_event_id, events;
    int64_t min_allocated, max_allocated, min_reserved, max_reserved, max_requested;
    int64_t min_largest_free;
    int64_t end_allocated, end_reserved; /* after the bucket's last event */
} db_bucket_row;

/* A row of timeline_levels (schema.sql): one bucket of one level of the timeline's mipmap. */
typedef struct db_level_row {
    int64_t device, bucket_ns, bucket, first_event_id, last_event_id, events;
    int64_t min_allocated, max_allocated, max_allocated_event_id, ooms;
    int64_t min_reserved, max_reserved;
    int64_t end_allocated, end_reserved; /* after the bucket's last event */
} db_level_row;

/* Where the event rows go: a plain table any SQLite client reads (`import -o`), or the event
 * store (analyzer/base/event_store.h: compressed chunks behind a virtual table `event_rows`
 * only memanalyze reads; ~5x smaller and built at the replay's speed: the cache). */
typedef enum db_writer_events { DB_EVENTS_TABLE, DB_EVENTS_STORE } db_writer_events;

/* NULL with a one-line message when path is neither a regular file nor nothing (a link, a
 * device…), or the file cannot be made. db_writer_open_mode: the new file's mode (less the
 * umask); db_writer_open's is 0666, as any program's new file. */
db_writer *db_writer_open(const char *path, db_writer_events events, char *err, size_t errlen);
db_writer *db_writer_open_mode(const char *path, db_writer_events events, int mode, char *err,
                               size_t errlen);

/* A writer that takes every row and keeps none (no file, no thread): the replay run for its
 * state alone (replay_live.h). Freed by db_writer_abort; NULL: out of memory. */
db_writer *db_writer_open_discard(void);

/* Each returns 0, or -1 with the message in db_writer_error(). */
int db_writer_event(db_writer *w, const db_event_row *row);
int db_writer_segment(db_writer *w, const db_segment_row *row);
int db_writer_marker(db_writer *w, const db_marker_row *row);
int db_writer_step(db_writer *w, const db_step_row *row);
int db_writer_device(db_writer *w, const db_device_row *row);
int db_writer_bucket(db_writer *w, const db_bucket_row *row);
int db_writer_level(db_writer *w, const db_level_row *row);
int db_writer_counter(db_writer *w, int64_t ts_ns, int64_t event_id, int64_t device,
                      const char *kind, int64_t pool, int64_t value);
/* inlined_into: the frame a native inline-chain entry is inlined into (the
 * next outer one at the same ip); DB_NULL for a frame that is not inlined. */
int db_writer_frame(db_writer *w, int64_t frame_id, const char *name, const char *file,
                    int64_t line, const char *module, int64_t ip, int64_t inlined_into);
int db_writer_stack(db_writer *w, int64_t stack_id, int64_t parent_id, int64_t frame_id);
int db_writer_module(db_writer *w, int64_t module_id, const char *path, const char *build_id,
                     int64_t load_base);
int db_writer_site(db_writer *w, int64_t device, int64_t stack_id, int64_t peak_bytes,
                   int64_t peak_blocks, int64_t end_bytes, int64_t end_blocks,
                   int64_t never_freed_count, int64_t never_freed_bytes);
int db_writer_site_step(db_writer *w, int64_t device, int64_t stack_id, int64_t end_event_id,
                        int64_t delta_bytes, int64_t live_bytes);
int db_writer_site_bucket(db_writer *w, int64_t device, int64_t bucket_ns, int64_t bucket,
                          int64_t stack_id, int64_t live_bytes, int64_t peak_live_bytes);
/* A row of site_levels, added to the row of the same (device, width, chunk, stack_id) when
 * there is one (a correction: site_levels.h). */
int db_writer_site_level(db_writer *w, int64_t device, int64_t width, int64_t chunk,
                         int64_t stack_id, int64_t blocks, int64_t bytes);
/* A row of series_levels (series_levels.h); key DB_NULL: the rest. */
int db_writer_series_level(db_writer *w, int64_t device, int64_t by, int64_t event_id, int64_t rank,
                           int64_t key, int64_t bytes);
/* A row of series_deltas (series_levels.h); key DB_NULL: the rest (entry 0). */
int db_writer_series_delta(db_writer *w, int64_t device, int64_t by, int64_t event_id,
                           int64_t entry, int64_t key, int64_t bytes);
/* A heatmap row: `n` floats, stored as a little-endian float32 blob. */
int db_writer_heat_row(db_writer *w, int64_t device, int64_t bucket_ns, int64_t bucket,
                       const float *fractions, size_t n);
int db_writer_live_at_end(db_writer *w, int64_t alloc_id, int64_t device, int64_t addr,
                          int64_t size, int64_t requested, int64_t stream, int64_t stack_id,
                          int64_t segment_id, int64_t pending);
/* A step_ends row: `device`'s state (its last row `event_id` at `ts_ns`, with the totals after
 * it) when a step ended at `end_event_id`. */
int db_writer_step_end(db_writer *w, int64_t device, int64_t end_event_id, int64_t event_id,
                       int64_t ts_ns, int64_t allocated, int64_t requested, int64_t reserved,
                       int64_t largest_free);
/* A free_splits row: trapped is reserved - allocated - releasable. */
int db_writer_free_split(db_writer *w, int64_t device, int64_t event_id, int64_t reserved,
                         int64_t allocated, int64_t releasable);
int db_writer_largest(db_writer *w, int64_t device, int64_t alloc_id, int64_t size,
                      int64_t stack_id);
/* A tensor_names row: `name` given to the block alloc_id; category NULL when the program gave
 * a name alone. */
int db_writer_tensor_name(db_writer *w, int64_t alloc_id, const char *name, const char *category,
                          int64_t tensors, int64_t ts_ns);
int db_writer_warning(db_writer *w, int64_t event_id, const char *code, const char *message);
/* An unrecorded_calls row: a kind of call the recorder counted instead of recording. */
int db_writer_unrecorded_call(db_writer *w, int64_t call_id, const char *name, int64_t calls,
                              int64_t bytes);
int db_writer_meta_int(db_writer *w, const char *key, int64_t value);
int db_writer_meta_text(db_writer *w, const char *key, const char *value);

/* A hook db_writer_finish runs on the complete, closed file at its temporary path, before the
 * rename makes it visible: what the layers above add (categories). Its failure fails the finish
 * (the file is removed, nothing is published). */
void db_writer_before_rename(db_writer *w,
                             int (*hook)(const char *path, void *ctx, char *err, size_t errlen),
                             void *ctx);

/* Commits, builds the indexes and closes; frees the writer. 0 or -1 (err). */
int db_writer_finish(db_writer *w, char *err, size_t errlen);
/* Closes without committing and deletes the file; frees the writer. */
void db_writer_abort(db_writer *w);

const char *db_writer_error(const db_writer *w);

/* The schema text (schema/schema.sql), for tests and `memanalyze`. */
extern const char schema_sql_text[];

#endif
