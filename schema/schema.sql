-- schema.sql — the SQLite database that `memanalyze` fills when it replays a trace.
--
-- This file is a public contract: table, view and column names, their units and the meaning of
-- NULL are what users' queries (`memanalyze sql`, sqlite3, notebooks) depend on. Definitions
-- (reserved, allocated, requested, fragmentation, live, step, WHEN) are those of DESIGN.md,
-- section "The SQLite database" and "Time, steps and WHEN"; this file refers to them, it does not
-- redefine them.
--
-- The file has two parts, split at the line that starts with `-- @@ indexes`:
--   1. tables, lookup rows and views: run before the bulk load;
--   2. indexes: run after the bulk load (building an index once is far cheaper than keeping it
--      up to date row by row). Everything in part 1 works without part 2, only slower.
-- The whole file also loads in one go (`sqlite3 trace.db < schema/schema.sql`), which is what the
-- tests do. Bulk-load pragmas (journal_mode, synchronous) are the loader's business, not the
-- schema's, and are not set here.
--
-- DESIGN DECISIONS
--
-- Rows. SQLite writes about 1.5 M rows/s, so the loader writes ONE narrow row per recorded
-- memory event (table `event_rows`) and everything per-event is derived from it by views:
--   * `events`      = event_rows with names instead of codes;
--   * `timeline`    = the running per-device totals each event_rows row already carries;
--   * `allocations` = alloc rows LEFT JOIN the free row that ends them (the free row carries
--                     `alloc_event_id`, known to the replay when it sees the free, so no row is
--                     ever updated) — a block lifetime costs no extra row.
-- `segments` is a TABLE, not a view: segments are few (hundreds to thousands per run), and one
-- segment can be reported twice (PyTorch's segment_alloc and CUPTI's cuMemAlloc for the same
-- memory: joined by address, both stacks kept, counted once) — a row per lifetime written by the
-- replay says that directly, where a view would have to re-do the join. Steps, markers, counters,
-- frames and stacks are tables: they are small or are what the trace itself records.
--
-- Codes. `op`, `level`, `kind` and `source` are stored in event_rows as small integers (codes 0
-- and 1 take no bytes in a SQLite record, the others one byte). Measured on 1 M synthetic events
-- with these columns: text values make the file 19 % larger (17 bytes per row) and filters on
-- them slower (a text compare per row), integers plus a CASE in the view are as fast as raw
-- integers. Users never see the codes: the `events`, `allocations` and `segments` surfaces expose
-- names, so `SELECT … FROM events WHERE op = 'alloc'` works as one expects. The code→name
-- tables `ops`, `levels`, `memory_kinds` and `sources` list every valid value with a description;
-- codes are stable forever (never renumbered, never reused). They are defined once, in
-- schema/gmt_vocab.h, with the names and descriptions below (tests/test_vocab.c fails when this
-- file and that list disagree). The tools themselves query event_rows with codes; in this file
-- (and in memanalyze's own SQL) a code is written as its word in braces, `{op:alloc}`,
-- `{level:block}`, which memanalyze replaces by the code (0, 1) when it creates the database:
-- the views in a database read `e.op = 0`. The small tables (segments, markers, counters) store names as TEXT
-- directly: they hold far fewer rows than event_rows, and a marker row is dominated by its name.
--
-- Time. Every `*_ts_ns` column is in nanoseconds on one clock and one origin: ts_ns = 0 is the
-- first recorded memory event (the first record of any kind in a trace without one), so
-- `time:1.5s` is ts_ns = 1500000000. Markers and counters before it are negative.
-- meta 't0_unix_ns' maps ts_ns = 0 to wall-clock time.
--
-- Event ids and the seed. event_id is the replay order. Recorded events are numbered 1, 2, 3…
-- so event_id N is exactly `event:N`. Rows with event_id <= 0 are the seed, synthesized by the
-- replay, not recorded: first one alloc (or map) row per block/segment that was already live when
-- the recording began (a PyTorch snapshot's ring buffer, walked backwards from its final
-- `segments`), then one row with op 'seed' per device, the last of which has event_id 0. Like
-- every row, a seed row carries its device's totals after it: the seeded start state. With one
-- device the seeded state is therefore the row event_id = 0, op = 'seed'; with several devices
-- their 'seed' rows are 1-n, …, -1, 0. Seed rows have ts_ns = 0.
-- The state of device D after event N (`event:N`; N = 0 is the seeded start) is the `timeline`
-- row of device D with the greatest event_id <= N. A block is live after event N when
--   alloc_id <= N AND (free_event_id IS NULL OR free_event_id > N)
-- (compare event ids, not timestamps: several events can share one ts_ns).
--
-- Other choices: strings are stored inline as TEXT (frames, markers and steps are small next to
-- event_rows; a `strings` table would only cost a join). No STRICT tables: sqlite3 clients older
-- than 3.37 could not open the file. REFERENCES clauses document the relations and are not
-- enforced (an id interned in a lost trace frame is an "unknown stack/string", not an error).
-- `stack_frames` needs the JSON functions (built into SQLite >= 3.38; enabled in most earlier
-- distribution builds).
--
-- Compatibility: meta 'schema_version' (also PRAGMA user_version) is 1. Adding tables, views,
-- columns, op/kind codes or meta keys keeps version 1; renaming or removing any of them, or
-- changing a unit or a meaning, increments it. The database is a cache derived from the trace:
-- memanalyze rebuilds one whose schema_version differs from its own rather than migrating it.
-- Queries should name their columns rather than rely on SELECT * column order.

PRAGMA user_version = 1;

-- meta: one row per fact about the recording and the analysis (key → value).
-- Keys written by the loader, each absent when unknown:
--   schema_version (1, written here), format_version (trace format version),
--   input_format ('gpumemtrace' | 'pytorch_snapshot'), input_path, input_size, input_mtime_ns,
--   pid, rank, host, command_line, clock_source, t0_unix_ns (wall-clock ns of ts_ns = 0),
--   recorded_events (count of event_rows rows with event_id > 0), last_ts_ns (the greatest ts_ns of
--   event_rows: how long the recording lasts), dropped_events (the recorder's
--   count from the end record), clean_shutdown (1 when the end record was read, else 0),
--   truncated_after_events (set when the trace ended early), corrupt_frames (count skipped),
--   analyzer_version, step_rule (the regular expression used for step names),
--   allocator_settings (PyTorch's caching-allocator settings the replay followed, as the text
--   of one JSON object with PyTorch's names: those of a snapshot's allocator_settings dict,
--   e.g. "expandable_segments": true, "max_split_size": -1 (bytes; -1: unlimited),
--   "roundup_power2_divisions" (an object keyed by MiB), and PYTORCH_CUDA_ALLOC_CONF's key for
--   a setting the dict has none for, e.g. "max_non_split_rounding_mb"; only the settings
--   known; an empty object when none),
--   allocator_settings_source ('snapshot': the snapshot's allocator_settings, plus expandable
--   segments inferred when it does not say; 'trace': the PYTORCH_CUDA_ALLOC_CONF a live trace
--   recorded (memrec's mark of the domain 'memrec.allocator'); 'inferred': nothing but
--   expandable segments inferred from mapped memory in the input; 'none'),
--   timestamps (1: events carry times; 0: a snapshot without time_us, PyTorch <= 2.1, whose
--   ts_ns only keep the order), history (1: the input has a history of events; 0: a snapshot
--   without trace entries, i.e. its final state alone), timeline_level_ns,
--   timeline_levels and timeline_level_axis (the levels of timeline_levels: the finest
--   width, how many, and 'time' or 'event'), site_level_events and site_levels (the levels
--   of site_levels: the finest width in event ids, how many), series_level_ns and
--   series_level_top (series_levels' bucket width on the timeline's axis and the series a
--   vector names), series_delta_ns (series_deltas' bucket width), series_level_categories
--   (1: series_levels and series_deltas have the category rows).
CREATE TABLE meta (
  key   TEXT PRIMARY KEY NOT NULL, -- name of the fact, lower_snake_case; see the list above
  value                            -- its value, stored as given (no type affinity): INTEGER for counts, ids and ns, TEXT otherwise
);
INSERT INTO meta (key, value) VALUES ('schema_version', 1);

-- devices: one row per GPU the process used (from the trace's device-info records).
CREATE TABLE devices (
  device                  INTEGER PRIMARY KEY, -- CUDA device ordinal as the process saw it (0, 1, …)
  name                    TEXT,                -- product name, e.g. 'NVIDIA H100 80GB HBM3'; NULL: unknown (e.g. snapshot input)
  total_bytes             INTEGER,             -- device memory size in bytes (driver's total); NULL: unknown
  uuid                    TEXT,                -- device UUID 'GPU-…' to tell identical cards apart; NULL: unknown
  peak_allocated_bytes    INTEGER,             -- highest allocated_bytes of this device over the run (bytes); NULL: no events
  peak_allocated_event_id INTEGER,             -- first event_id at which it was reached: WHEN 'peak' of this device; NULL: no events
  peak_reserved_bytes     INTEGER,             -- highest reserved_bytes of this device (bytes); NULL: no events
  peak_reserved_event_id  INTEGER,             -- first event_id at which it was reached; NULL: no events
  peak_requested_bytes    INTEGER,             -- highest requested_bytes of this device (bytes); NULL: no events
  peak_requested_event_id INTEGER,             -- first event_id at which it was reached; NULL: no events
  peak_segments           INTEGER,             -- most segments live at once (the highest event_rows.segments of this device); NULL: no events
  allocs                  INTEGER,             -- recorded block allocations of device memory (event_id >= 1; plain cudaMalloc segments count as blocks); NULL: no events
  frees                   INTEGER,             -- recorded completed frees of such blocks (free_requested not counted); NULL: no events
  cache_allocs            INTEGER,             -- recorded block allocations of PyTorch's caching allocator (source torch); NULL: no events
  cache_misses            INTEGER,             -- those of them that needed new driver memory (a segment allocated or pages mapped just before them); cache_allocs - cache_misses were served from the cache; NULL: no events
  ooms                    INTEGER,             -- recorded 'oom' events; NULL: no events
  alloc_failed            INTEGER              -- recorded 'alloc_failed' events (driver allocations that failed); NULL: no events
);

-- ops: one row per memory-event operation; code → name (the `op` column of event_rows).
CREATE TABLE ops (
  op          INTEGER PRIMARY KEY, -- code stored in event_rows.op; stable, never reused
  name        TEXT NOT NULL UNIQUE, -- name exposed by the views, e.g. 'alloc'
  description TEXT NOT NULL         -- what the event means and what its addr/size say
);
INSERT INTO ops (op, name, description) VALUES
  (0,  'alloc',          'memory handed out: a segment from the driver (cuMemAlloc*, pool reserve, PyTorch segment_alloc) or a block inside a segment (a tensor, a region); addr/size = the allocation, size as the allocator accounts it (pitch x height for cuMemAllocPitch)'),
  (1,  'free',           'the allocation ends (for blocks: PyTorch''s free_completed); size = the bytes of its alloc, never the free record''s size field'),
  (2,  'free_requested', 'a block freed by the program but still used by a stream: stays live until its free; size = the bytes of its alloc'),
  (3,  'map',            'cuMemMap: a VMM address range becomes a mapped segment; addr/size = the range'),
  (4,  'unmap',          'cuMemUnmap: the mapped range ends'),
  (5,  'pool_trim',      'cuMemPoolTrimTo on pool `pool`; size = the minBytesToKeep argument, addr NULL; what it released shows in the next pool counters'),
  (6,  'alloc_failed',   'a driver allocation failed for want of memory (CUDA_ERROR_OUT_OF_MEMORY; not yet an OOM: PyTorch frees its cache and retries); size = bytes asked for, addr NULL'),
  (7,  'oom',            'the allocator gave up (PyTorch''s oom entry); size = bytes asked for, addr NULL'),
  (8,  'phys_create',    'cuMemCreate: physical memory reserved; size = its bytes, addr NULL'),
  (9,  'phys_release',   'cuMemRelease: that physical memory is released'),
  (10, 'va_reserve',     'cuMemAddressReserve: an address range only, no memory; addr/size = the range'),
  (11, 'va_free',        'cuMemAddressFree: the address range is given back'),
  (12, 'seed',           'synthesized, not recorded: the seeded start state of `device` (event_id <= 0, one per device); addr/size NULL');

-- levels: one row per event level; code → name (the `level` column of event_rows).
CREATE TABLE levels (
  level       INTEGER PRIMARY KEY,  -- code stored in event_rows.level; stable, never reused
  name        TEXT NOT NULL UNIQUE, -- name exposed by the views
  description TEXT NOT NULL         -- which memory the level describes
);
INSERT INTO levels (level, name, description) VALUES
  (0, 'segment', 'memory the process got from the driver: cuMemAlloc*, a pool''s reserve, a VMM range or physical handle; counted in reserved'),
  (1, 'block',   'memory an allocator handed to the program inside a segment: a PyTorch tensor, an NVTX-mem region, a memrec.h region; counted in allocated');

-- memory_kinds: one row per memory kind; code → name (the `kind` column of event_rows).
CREATE TABLE memory_kinds (
  kind        INTEGER PRIMARY KEY,  -- code stored in event_rows.kind; stable, never reused
  name        TEXT NOT NULL UNIQUE, -- name exposed by the views
  description TEXT NOT NULL         -- what memory it is; only 'device' counts in the totals
);
INSERT INTO memory_kinds (kind, name, description) VALUES
  (0, 'device',      'device memory; the only kind summed into reserved/allocated/requested'),
  (1, 'managed',     'unified memory (cuMemAllocManaged): recorded, not summed'),
  (2, 'pinned_host', 'page-locked host memory (cuMemHostAlloc, cudaMallocHost): recorded, not summed');

-- sources: one row per producer of events; code → name (the `source` column of event_rows).
CREATE TABLE sources (
  source      INTEGER PRIMARY KEY,  -- code stored in event_rows.source; stable, never reused
  name        TEXT NOT NULL UNIQUE, -- name exposed by the views
  description TEXT NOT NULL         -- who reported the event
);
INSERT INTO sources (source, name, description) VALUES
  (0, 'cupti',  'a CUDA driver/runtime API call seen by the CUPTI callback'),
  (1, 'torch',  'PyTorch''s caching-allocator history (live through memrec, or an imported snapshot pickle)'),
  (2, 'nvtx',   'an NVTX memory-region annotation'),
  (3, 'memrec', 'the program itself through memrec.h');

-- modules: one row per loaded binary in the recording process (the trace's module map), kept so
-- that native frames can be re-symbolized offline.
CREATE TABLE modules (
  module_id INTEGER PRIMARY KEY, -- id of the module record in the trace
  path      TEXT NOT NULL,       -- file path on the recording host; frames.module holds this path
  build_id  TEXT,                -- GNU build-id as lowercase hex; NULL: the binary has none
  load_base INTEGER              -- address the module was loaded at; ip - load_base = file offset; NULL: unknown
);

-- frames: one row per distinct frame (native, already symbolized on the recording host, or a
-- Python/imported frame). A native ip whose code was inlined has one row per function of its
-- inline chain: the trace's frame_id names the function that really holds the ip (inlined 0), and
-- each function inlined there has a row of its own (inlined 1, a frame_id >= 2^32 made by the
-- replay) whose inlined_into is the next outer function, so
--   SELECT * FROM frames WHERE inlined_into = ?
-- goes one level inward. All rows of one chain share module and ip. Each row's file and line are
-- where the ip is in that function: in the innermost, the line executing; in each outer one, the
-- line of the call that was inlined.
CREATE TABLE frames (
  frame_id     INTEGER PRIMARY KEY, -- id of the frame as interned in the trace; >= 2^32: an inlined function of a native frame's chain, numbered by the replay
  name         TEXT,                -- function name (demangled) or Python qualified name; NULL: not symbolized
  file         TEXT,                -- source file; NULL: unknown
  line         INTEGER,             -- 1-based source line; NULL: unknown
  module       TEXT,                -- path of the binary holding a native frame (= modules.path); NULL for Python/imported frames
  ip           INTEGER,             -- native instruction pointer (return address) in the recording process; NULL for Python/imported frames
  inlined      INTEGER NOT NULL DEFAULT 0, -- 1: a function inlined at this ip (inlined_into is the next outer frame, same ip); 0 otherwise
  inlined_into INTEGER REFERENCES frames(frame_id) -- the frame this inlined function's code sits in (the next outer function of the chain); NULL when inlined = 0
);

-- stacks: one row per node of the stack trie. A stack is identified by the node of its innermost
-- frame; following parent_id walks outward to the outermost frame. Events carry one stack_id.
-- A trace node whose native frame has an inline chain of k functions is k nodes here: the trace's
-- stack_id holds the innermost (inlined) function, and k - 1 nodes numbered by the replay
-- (stack_id >= 2^32, never on an event) hold the outer ones, the outermost of them (the function
-- that really holds the ip) pointing at the trace node's parent. So an event's stack_id is still
-- the stack of its call, and every function of it is a frame of its own in stack_frames.
CREATE TABLE stacks (
  stack_id  INTEGER PRIMARY KEY,                 -- node id = id of the stack that ends (innermost) at this frame; >= 2^32: an outer function of an inline chain, numbered by the replay
  parent_id INTEGER REFERENCES stacks(stack_id), -- the stack of the caller (one frame shorter); NULL: outermost frame
  frame_id  INTEGER REFERENCES frames(frame_id)  -- this node's frame; NULL or a missing frame: unknown (lost trace frame)
);

-- stack_frames: one row per (stack, depth): the frames of every stack, innermost first (an inlined
-- function comes before the function it is inlined into). The walk is a recursive CTE run per
-- stack (through json_each), so `WHERE stack_id = ?` or a join on stack_id only walks the stacks
-- asked for; always `ORDER BY depth`.
CREATE VIEW stack_frames AS
SELECT
  s.stack_id                AS stack_id, -- the stack (stacks.stack_id)
  CAST(walk.key AS INTEGER) AS depth,    -- 0 = innermost frame (the allocation site), +1 per caller outward
  walk.value                AS frame_id, -- frames.frame_id of that frame; NULL: unknown
  f.name                    AS name,     -- function name (frames.name); NULL: unknown
  f.file                    AS file,     -- source file (frames.file); NULL: unknown
  f.line                    AS line,     -- source line (frames.line); NULL: unknown
  f.module                  AS module,   -- binary of a native frame (frames.module); NULL otherwise
  f.inlined                 AS inlined   -- 1: inlined into the frame at depth + 1 (frames.inlined); 0: not; NULL: unknown frame
FROM stacks AS s
JOIN json_each((
  WITH RECURSIVE up(node, d) AS (
    SELECT s.stack_id, 0
    UNION ALL
    SELECT st.parent_id, up.d + 1
    FROM up JOIN stacks AS st ON st.stack_id = up.node
    WHERE st.parent_id IS NOT NULL AND up.d < 65536
  )
  SELECT json_group_object(up.d, n.frame_id)
  FROM up JOIN stacks AS n ON n.stack_id = up.node
)) AS walk
LEFT JOIN frames AS f ON f.frame_id = walk.value;

-- event_rows: one row per memory event, in replay order — the one narrow row per event of the
-- row budget. In memanalyze's cache it is a read-only virtual table with these columns over
-- compressed chunks (analyzer/base/event_store.h); `memanalyze import -o` writes this table,
-- and keeps the chunks beside it (tables event_chunks and event_ends: memanalyze's own format,
-- read by its passes over every event; not part of this interface). Stores codes; query the `events` view for names. Besides what was recorded, each
-- row carries the running totals of its device AFTER the event (DESIGN.md definitions; device
-- memory only: managed and pinned_host events leave them unchanged).
CREATE TABLE event_rows (
  event_id           INTEGER PRIMARY KEY,    -- replay order; >= 1: the N of `event:N`; <= 0: seed rows (see the top of the file)
  ts_ns              INTEGER NOT NULL,       -- when, in ns since the first recorded event (seed rows: 0)
  device             INTEGER NOT NULL REFERENCES devices(device), -- device ordinal whose context made the call; the totals below are this device's
  op                 INTEGER NOT NULL REFERENCES ops(op), -- operation code (ops)
  level              INTEGER REFERENCES levels(level), -- level code (levels); NULL only on 'seed' rows
  kind               INTEGER REFERENCES memory_kinds(kind), -- memory kind code (memory_kinds); NULL only on 'seed' rows
  source             INTEGER REFERENCES sources(source), -- who reported it (sources); NULL: synthesized by the replay (seed rows)
  addr               INTEGER,                -- start address (device VA, or host address for pinned_host); NULL when the op has none (see ops)
  size               INTEGER,                -- bytes, as ops describes per op (frees: the bytes of their alloc); NULL when the op has none
  requested_size     INTEGER,                -- bytes the program asked for (before the allocator's rounding); NULL: not reported (then counted as size in requested_bytes)
  stream             INTEGER,                -- CUstream handle value (0 = the legacy default stream); NULL: not stream-ordered or unknown
  pool               INTEGER,                -- memory pool: CUmemoryPool handle value, or a PyTorch private pool (a CUDA graph's or MemPool's segment_pool_id (a, b) as a * 2^32 + b); NULL: no pool / the allocator's default pool
  tid                INTEGER,                -- OS thread id of the caller; NULL: unknown (e.g. snapshot input)
  stack_id           INTEGER REFERENCES stacks(stack_id), -- stack of the call (stacks / stack_frames); NULL: none recorded
  segment_id         INTEGER,                -- segments.segment_id: for blocks the segment holding them, for segment events the segment itself; NULL: none or unknown
  alloc_event_id     INTEGER,                -- on an event that ends or advances a lifetime (free, free_requested, unmap, phys_release, va_free): event_id of the row that began it; exactly one row ends a lifetime; NULL otherwise or when its start was never seen (see warnings)
  allocated_bytes    INTEGER NOT NULL,       -- after this event: sum of live block sizes on `device` (allocated), bytes
  requested_bytes    INTEGER NOT NULL,       -- after this event: sum of live blocks' requested sizes (requested), bytes
  reserved_bytes     INTEGER NOT NULL,       -- after this event: sum of live segment sizes (reserved; VMM: created physical memory), bytes
  segments           INTEGER NOT NULL,       -- after this event: number of live segments on `device`
  largest_free_bytes INTEGER                 -- after this event: largest free range inside a live segment of `device` (the biggest request that fits without a new segment), bytes; NULL: not computed
);

-- events: one row per memory event (event_rows), with names instead of codes. The user-facing
-- way to read events: `WHERE op = 'alloc' AND level = 'block'`.
CREATE VIEW events AS
SELECT
  e.event_id AS event_id, -- replay order; >= 1: `event:N`; <= 0: seed rows
  e.ts_ns    AS ts_ns,    -- ns since the first recorded event
  e.device   AS device,   -- device ordinal (devices.device); the totals are this device's
  CASE e.op WHEN 0 THEN 'alloc' WHEN 1 THEN 'free' WHEN 2 THEN 'free_requested'
            WHEN 3 THEN 'map' WHEN 4 THEN 'unmap' WHEN 5 THEN 'pool_trim'
            WHEN 6 THEN 'alloc_failed' WHEN 7 THEN 'oom' WHEN 8 THEN 'phys_create'
            WHEN 9 THEN 'phys_release' WHEN 10 THEN 'va_reserve' WHEN 11 THEN 'va_free'
            WHEN 12 THEN 'seed' END
             AS op,       -- operation name (ops.name), e.g. 'alloc', 'free', 'oom'
  CASE e.level WHEN 0 THEN 'segment' WHEN 1 THEN 'block' END
             AS level,    -- 'segment' or 'block' (levels.name); NULL on seed rows
  CASE e.kind WHEN 0 THEN 'device' WHEN 1 THEN 'managed' WHEN 2 THEN 'pinned_host' END
             AS kind,     -- 'device', 'managed' or 'pinned_host' (memory_kinds.name); NULL on seed rows
  CASE e.source WHEN 0 THEN 'cupti' WHEN 1 THEN 'torch' WHEN 2 THEN 'nvtx' WHEN 3 THEN 'memrec' END
             AS source,   -- who reported it (sources.name); NULL: synthesized (seed)
  e.addr               AS addr,               -- start address; NULL when the op has none
  e.size               AS size,               -- bytes (frees: the bytes of their alloc); NULL when the op has none
  e.requested_size     AS requested_size,     -- bytes asked for; NULL: not reported
  e.stream             AS stream,             -- CUstream handle value; NULL: none/unknown
  e.pool               AS pool,               -- pool id; NULL: none / default pool
  e.tid                AS tid,                -- OS thread id; NULL: unknown
  e.stack_id           AS stack_id,           -- stack (stack_frames.stack_id); NULL: none
  e.segment_id         AS segment_id,         -- segments.segment_id; NULL: none/unknown
  e.alloc_event_id     AS alloc_event_id,     -- on frees etc.: event_id of the alloc/map/create they end; NULL otherwise
  e.allocated_bytes    AS allocated_bytes,    -- device's allocated bytes after the event
  e.requested_bytes    AS requested_bytes,    -- device's requested bytes after the event
  e.reserved_bytes     AS reserved_bytes,     -- device's reserved bytes after the event
  e.segments           AS segments,           -- device's live segment count after the event
  e.largest_free_bytes AS largest_free_bytes  -- device's largest free range after the event, bytes; NULL: not computed
FROM event_rows AS e;

-- segments: one row per segment lifetime (memory from the driver, or a VMM mapped range), as the
-- replay reconstructs it: two reports of the same memory (PyTorch's segment_alloc and CUPTI's
-- cuMemAlloc) are one row. Written by the loader when the segment is freed or at the end; small.
-- Device-kind live segments sum to reserved_bytes (VMM: physical memory created but not mapped
-- counts in reserved_bytes and has no row here).
CREATE TABLE segments (
  segment_id      INTEGER PRIMARY KEY,     -- event_id of the event_rows row that created it (< 0: seeded, live before the recording began)
  device          INTEGER NOT NULL REFERENCES devices(device), -- device ordinal
  kind            TEXT NOT NULL,           -- memory kind name: 'device', 'managed' or 'pinned_host' (memory_kinds.name)
  addr            INTEGER NOT NULL,        -- start address
  size            INTEGER NOT NULL,        -- bytes (cuMemAllocPitch: pitch x height)
  requested_size  INTEGER,                 -- bytes the caller asked for; NULL: same as size / not reported
  stream          INTEGER,                 -- stream the segment belongs to (PyTorch segments, async pools); NULL: none/unknown
  pool            INTEGER,                 -- pool id as in event_rows.pool; NULL: none / default pool
  mapped          INTEGER NOT NULL DEFAULT 0, -- 1: a VMM range made by cuMemMap (e.g. PyTorch expandable segments); 0: an allocation
  whole_block     INTEGER NOT NULL DEFAULT 0, -- 1: no allocator sub-allocates it, so the segment is itself one block (a plain cudaMalloc) and appears in `allocations`; 0: blocks are recorded inside it
  tid             INTEGER,                 -- OS thread that created it; NULL: unknown
  alloc_ts_ns     INTEGER NOT NULL,        -- creation time, ns since the first recorded event (seeded: 0)
  free_ts_ns      INTEGER,                 -- time of its free/unmap; NULL: live at the end of the trace
  free_event_id   INTEGER,                 -- event_id of that free/unmap row; NULL: live at the end
  stack_id        INTEGER REFERENCES stacks(stack_id), -- stack of the creation as the allocator saw it (PyTorch's, with Python frames) or else the driver call's; NULL: none
  driver_stack_id INTEGER REFERENCES stacks(stack_id), -- native stack of the driver call (CUPTI) when the allocator also reported it; NULL: none or same as stack_id
  free_stack_id   INTEGER REFERENCES stacks(stack_id)  -- stack of the free/unmap; NULL: live at the end or none recorded
);

-- steps: one row per training step (DESIGN.md "Time, steps and WHEN": step rule, global
-- interval [begin_ts_ns, end_ts_ns), numbered by the number in the name or 0, 1, 2… by begin).
CREATE TABLE steps (
  step           INTEGER PRIMARY KEY, -- step number N of `step:N`
  name           TEXT,                -- the marker name it came from, e.g. 'ProfilerStep#3'; NULL: an explicit memrec.h step without a name
  begin_ts_ns    INTEGER NOT NULL,    -- step start, ns since the first recorded event (inclusive)
  end_ts_ns      INTEGER,             -- step end (exclusive); NULL: still open when the trace ended
  begin_event_id INTEGER,             -- last event_id with ts_ns < begin_ts_ns: the state when the step starts (<= 0: the seed)
  end_event_id   INTEGER              -- last event_id with ts_ns < end_ts_ns (or the last event when open): `step:N` is `event:end_event_id`
);

-- markers: one row per NVTX call or annotation (range push/pop, start/end, mark; a snapshot's
-- external_annotations START/END; memrec.h markers).
CREATE TABLE markers (
  marker_id       INTEGER PRIMARY KEY, -- order of the marker in the trace
  ts_ns           INTEGER NOT NULL,    -- when, ns since the first recorded event (may be negative)
  tid             INTEGER,             -- OS thread that made the call; NULL: process-wide or unknown (snapshot annotations)
  kind            TEXT NOT NULL,       -- 'push' / 'pop' (nvtxRangePush/Pop), 'start' / 'end' (nvtxRangeStart/End, snapshot START/END), 'mark', 'step_begin' / 'step_end' (memrec.h explicit steps)
  name            TEXT,                -- message; on 'pop'/'end' rows the name of the range they close; NULL: none
  domain          TEXT,                -- NVTX domain name; NULL: the default domain
  begin_marker_id INTEGER              -- on 'pop'/'end': marker_id of the 'push'/'start' it closes; NULL otherwise or unmatched
);

-- ranges: one row per NVTX range ('push' or 'start' marker) with its end.
CREATE VIEW ranges AS
SELECT
  b.marker_id AS marker_id,   -- marker_id of the 'push'/'start' row
  b.kind      AS kind,        -- 'push' (thread range) or 'start' (process range)
  b.tid       AS tid,         -- thread that opened it; NULL: process-wide/unknown
  b.name      AS name,        -- range name
  b.domain    AS domain,      -- NVTX domain; NULL: default
  b.ts_ns     AS begin_ts_ns, -- opened at, ns
  e.ts_ns     AS end_ts_ns    -- closed at, ns; NULL: still open at the end of the trace
FROM markers AS b
LEFT JOIN markers AS e ON e.begin_marker_id = b.marker_id
WHERE b.kind IN ('push', 'start');

-- counters: one row per counter sample: the driver's free/total (cuMemGetInfo) per device, and
-- for async pools their reserved/used bytes (sampled after pool operations).
CREATE TABLE counters (
  ts_ns  INTEGER NOT NULL, -- sample time, ns since the first recorded event
  event_id INTEGER,        -- the last event_id replayed before the sample: the state it goes with (timeline row <= it); NULL: before any event
  device INTEGER NOT NULL REFERENCES devices(device), -- device ordinal
  kind   TEXT NOT NULL,    -- 'driver_free', 'driver_total' (cuMemGetInfo), 'pool_reserved', 'pool_used' (CU_MEMPOOL_ATTR_*_MEM_CURRENT)
  pool   INTEGER,          -- pool handle for 'pool_*' samples; NULL for 'driver_*'
  value  INTEGER NOT NULL  -- bytes
);

-- unrecorded_calls: one row per kind of driver call the recorder saw and counted instead of
-- recording as memory (the trace's END record, format version 2 on; TRACE_FORMAT.md "Calls
-- counted, not recorded"): memory of other processes mapped here (CUDA IPC, imported pool
-- pointers and VMM handles, and the maps of those), CUDA graph memory nodes (allocated when the
-- graph runs, which no callback reports), multicast objects and their binds, and allocation
-- calls refused with an error other than out of memory ('cuMemCreate refused'). None of it is in
-- events, segments or any sum. Empty for traces without such calls, older traces and snapshots.
CREATE TABLE unrecorded_calls (
  call_id INTEGER PRIMARY KEY, -- the CUPTI driver-API callback id (CUpti_driver_api_trace_cbid), e.g. 638
  name    TEXT NOT NULL,       -- the call as CUPTI names it, e.g. 'cuGraphAddMemAllocNode'; a refusal's: 'cuMemCreate refused'
  calls   INTEGER NOT NULL,    -- successful calls of it during the recording (refused ones for a refusal's row)
  bytes   INTEGER NOT NULL     -- the bytes those calls named (an alloc node's size, a mapped range); 0 when the call names none (cuIpcOpenMemHandle)
);

-- timeline: one row per recorded event (event_id >= 1) plus each device's seeded start state
-- (the op 'seed' rows, event_id <= 0; event_id 0 with one device): the device totals after it.
-- The state of device D at `event:N` is its row with the greatest event_id <= N.
CREATE VIEW timeline AS
SELECT
  e.event_id           AS event_id,           -- `event:N`; <= 0: the seeded start state (event:0) of `device`
  e.ts_ns              AS ts_ns,              -- ns since the first recorded event
  e.device             AS device,             -- device ordinal the totals belong to
  e.allocated_bytes    AS allocated_bytes,    -- allocated after the event, bytes
  e.requested_bytes    AS requested_bytes,    -- requested after the event, bytes
  e.reserved_bytes     AS reserved_bytes,     -- reserved after the event, bytes
  e.segments           AS segments,           -- live segments after the event
  e.largest_free_bytes AS largest_free_bytes, -- largest free range in a live segment, bytes; NULL: not computed
  CAST(e.reserved_bytes - e.allocated_bytes AS REAL) / NULLIF(e.reserved_bytes, 0)
                       AS fragmentation       -- (reserved - allocated) / reserved, 0..1; NULL when reserved is 0
FROM event_rows AS e
WHERE e.event_id > 0 OR e.op = {op:seed};

-- allocations: one row per block lifetime: every block-level alloc, plus every segment that is
-- itself one block (segments.whole_block = 1, e.g. a plain cudaMalloc), each joined to the free
-- that ends it. Blocks of every memory kind; filter kind = 'device' for the summed ones.
CREATE VIEW allocations AS
SELECT
  a.event_id       AS alloc_id,       -- event_id of the alloc row (< 0: seeded, live before the recording began)
  a.device         AS device,         -- device ordinal
  CASE a.kind WHEN 0 THEN 'device' WHEN 1 THEN 'managed' WHEN 2 THEN 'pinned_host' END
                   AS kind,           -- memory kind name
  a.addr           AS addr,           -- start address
  a.size           AS size,           -- bytes as the allocator accounts them (counted in allocated)
  a.requested_size AS requested_size, -- bytes the program asked for; NULL: not reported
  a.stream         AS stream,         -- stream; NULL: none/unknown
  a.segment_id     AS segment_id,     -- segments.segment_id holding the block; NULL: unknown
  a.tid            AS alloc_tid,      -- OS thread that allocated; NULL: unknown
  a.ts_ns          AS alloc_ts_ns,    -- alloc time, ns (seeded: 0)
  (SELECT q.ts_ns FROM event_rows AS q WHERE q.alloc_event_id = a.event_id AND q.op = {op:free_requested})
                   AS free_requested_ts_ns, -- when the program freed it while streams still used it; NULL: no free_requested event
  f.ts_ns          AS free_ts_ns,     -- when the free completed (end of life); NULL: live at the end of the trace
  f.event_id       AS free_event_id,  -- event_id of that free; NULL: live at the end
  a.stack_id       AS alloc_stack_id, -- stack of the alloc; NULL: none recorded
  f.stack_id       AS free_stack_id,  -- stack of the free; NULL: live at the end or none recorded
  (SELECT CASE WHEN s.end_ts_ns IS NULL OR a.ts_ns < s.end_ts_ns THEN s.step END
   FROM steps AS s WHERE s.begin_ts_ns <= a.ts_ns ORDER BY s.begin_ts_ns DESC LIMIT 1)
                   AS alloc_step,     -- step whose [begin, end) holds alloc_ts_ns; NULL: outside every step
  (SELECT CASE WHEN s.end_ts_ns IS NULL OR f.ts_ns < s.end_ts_ns THEN s.step END
   FROM steps AS s WHERE s.begin_ts_ns <= f.ts_ns ORDER BY s.begin_ts_ns DESC LIMIT 1)
                   AS free_step,      -- step whose [begin, end) holds free_ts_ns; NULL: live at the end or outside every step
  (SELECT c.category FROM block_categories AS c WHERE c.alloc_id = a.event_id)
                   AS category,       -- what the memory is (block_categories: 'parameter', 'gradient', 'optimizer_state', 'activation', 'temporary', 'input', 'other', 'unknown'); NULL: not computed for this database
  (SELECT t.name FROM tensor_names AS t WHERE t.alloc_id = a.event_id)
                   AS tensor_name     -- the name the program gave it (tensor_names), e.g. 'layers.3.attn.q_proj.weight.grad'; NULL: none
FROM event_rows AS a
LEFT JOIN event_rows AS f ON f.alloc_event_id = a.event_id AND f.op IN ({op:free}, {op:unmap})
WHERE (a.level = {level:block} AND a.op = {op:alloc})
   OR (a.level = {level:segment} AND a.op IN ({op:alloc}, {op:map})
       AND a.event_id IN (SELECT segment_id FROM segments WHERE whole_block = 1));

-- timeline_buckets: one row per (device, bucket width, bucket) that holds at least one event:
-- the min/max summaries that pictures read instead of raw rows, built by the loader at import.
-- A bucket without events is absent: the state carries over from the previous one.
CREATE TABLE timeline_buckets (
  device                 INTEGER NOT NULL, -- device ordinal
  bucket_ns              INTEGER NOT NULL, -- bucket width in ns (several resolutions may coexist)
  bucket                 INTEGER NOT NULL, -- bucket index: the bucket covers [bucket * bucket_ns, (bucket + 1) * bucket_ns)
  first_event_id         INTEGER NOT NULL, -- first event_id of this device in the bucket
  last_event_id          INTEGER NOT NULL, -- last event_id of this device in the bucket (its row is the state at the bucket's end)
  events                 INTEGER NOT NULL, -- number of this device's events in the bucket
  min_allocated_bytes    INTEGER NOT NULL, -- lowest allocated_bytes after any of them, bytes
  max_allocated_bytes    INTEGER NOT NULL, -- highest allocated_bytes, bytes
  min_reserved_bytes     INTEGER NOT NULL, -- lowest reserved_bytes, bytes
  max_reserved_bytes     INTEGER NOT NULL, -- highest reserved_bytes, bytes
  max_requested_bytes    INTEGER NOT NULL, -- highest requested_bytes, bytes
  min_largest_free_bytes INTEGER,          -- lowest largest_free_bytes, bytes; NULL: not computed
  end_allocated_bytes    INTEGER,          -- allocated_bytes after the bucket's last event (the state the next bucket starts from), bytes; NULL: a database of an older memanalyze
  end_reserved_bytes     INTEGER,          -- reserved_bytes after the bucket's last event, bytes; NULL: a database of an older memanalyze
  PRIMARY KEY (device, bucket_ns, bucket)
) WITHOUT ROWID;

-- timeline_levels: the levels of detail behind `memanalyze view`'s timeline, a counter mipmap
-- as Perfetto keeps one: one row per (device, level, bucket) that holds at least one event, with
-- the exact min/max of allocated and reserved over its events and the state after its last.
-- Level widths are powers of two, each 8x the one below, aligned to 0: a bucket of one level is
-- exactly 8 of the level below, so any window cut on the grid of a level is answered from the
-- rows of that level without an event. The finest width holds ~64 events per bucket on average
-- (meta 'timeline_level_ns'; 'timeline_levels' levels). The axis is ts_ns, or the event id
-- where meta 'timestamps' = 0 (meta 'timeline_level_axis': 'time' or 'event'). An event's
-- place on the axis is the running max over its device's rows in event_id order of
-- max(ts_ns, 0) (of max(event_id, 0) on the event axis), as timeline_buckets places it: threads'
-- records may interleave out of time order.
CREATE TABLE timeline_levels (
  device              INTEGER NOT NULL, -- device ordinal
  bucket_ns           INTEGER NOT NULL, -- bucket width on the axis (ns, or event ids), a power of two
  bucket              INTEGER NOT NULL, -- bucket index: the bucket covers [bucket * bucket_ns, (bucket + 1) * bucket_ns)
  first_event_id      INTEGER NOT NULL, -- first event_id of this device in the bucket
  last_event_id       INTEGER NOT NULL, -- last event_id of this device in the bucket
  events              INTEGER NOT NULL, -- number of this device's event_rows rows in the bucket
  min_allocated_bytes INTEGER NOT NULL, -- lowest allocated_bytes after any of them, bytes
  max_allocated_bytes INTEGER NOT NULL, -- highest allocated_bytes, bytes
  max_allocated_event_id INTEGER NOT NULL, -- the first of its events at max_allocated_bytes
  ooms                INTEGER NOT NULL, -- how many of its events are 'oom' events
  min_reserved_bytes  INTEGER NOT NULL, -- lowest reserved_bytes, bytes
  max_reserved_bytes  INTEGER NOT NULL, -- highest reserved_bytes, bytes
  end_allocated_bytes INTEGER NOT NULL, -- allocated_bytes after the bucket's last event, bytes
  end_reserved_bytes  INTEGER NOT NULL, -- reserved_bytes after the bucket's last event, bytes
  PRIMARY KEY (device, bucket_ns, bucket)
) WITHOUT ROWID;

-- site_levels: the blocks each allocation stack allocated, per chunk of event ids, behind
-- `memanalyze view`'s window summary (its sites): a window of any width adds up the rows of a
-- few whole chunks and reads only the events of its two ragged ends. The blocks are those of
-- the `allocations` view of kind 'device' (allocator blocks and whole-block segments) counted
-- at their alloc_id. Chunk widths are powers of two, each 8x the one below, aligned to 0 (meta
-- 'site_level_events' the finest, 'site_levels' how many): a chunk of one level is exactly 8 of
-- the level below. A stack that allocated nothing in a chunk has no row there (or one of 0
-- blocks, where a segment first counted as one block was later found to hold blocks).
CREATE TABLE site_levels (
  device   INTEGER NOT NULL, -- device ordinal
  width    INTEGER NOT NULL, -- chunk width in event ids, a power of two
  chunk    INTEGER NOT NULL, -- chunk index: the chunk holds event ids [chunk * width, (chunk + 1) * width)
  stack_id INTEGER NOT NULL, -- the allocation stack (stacks.stack_id; 0: none recorded)
  blocks   INTEGER NOT NULL, -- blocks allocated in the chunk with this stack
  bytes    INTEGER NOT NULL, -- their bytes (allocations.size)
  PRIMARY KEY (device, width, chunk, stack_id)
) WITHOUT ROWID;

-- series_levels: the stacked timeline's series at the highest moment of every bucket of one
-- timeline_levels level (meta 'series_level_ns', ~4096 events a bucket), behind `memanalyze
-- view`'s stacks of wide windows: a bucket of the answer made of whole buckets of that level
-- shows the vector at its max_allocated_event_id, one of these, without a pass over its events.
-- A vector is the state after event_id: at a bucket's max_allocated_event_id, or after its
-- last event where the next bucket of that level holds no event of the device or it is the
-- last (what an empty bucket carries). It names the largest series (meta 'series_level_top';
-- equal bytes: the lower key first), ranks 0, 1, ...; the next rank is the rest (key NULL,
-- always there). Series: the live blocks of kind 'device' (allocator blocks and whole-block
-- segments) by what series_by says, gmt_vocab.h's STACK_BY_LIST in order: 0 the allocation
-- stack, 1 the category (block_categories', written after the replay), 2 the allocating
-- stream, 3 the size class (gmt_vocab.h's SIZE_CLASS_LIST, in order). Sites, streams and size
-- classes follow the replay as it went: a segment counted as a whole block counts until a
-- block lands in it, as allocated_bytes does, so a vector sums to allocated_bytes at event_id.
CREATE TABLE series_levels (
  device    INTEGER NOT NULL, -- device ordinal
  series_by INTEGER NOT NULL, -- 0 site, 1 category, 2 stream, 3 size class
  event_id  INTEGER NOT NULL, -- the state after this event
  rank      INTEGER NOT NULL, -- 0: the series with the most bytes; the last rank: the rest
  key       INTEGER,          -- stack_id, category (gmt_vocab.h's order), stream or size class; NULL: the rest
  bytes     INTEGER NOT NULL, -- live block bytes of the series (the rest: of all the others)
  PRIMARY KEY (device, series_by, event_id, rank)
) WITHOUT ROWID;

-- series_deltas: the same vectors at every bucket of the timeline_levels level below (meta
-- 'series_delta_ns', ~512 events a bucket), as a chain: each the changes from the one before
-- it of its (device, series_by) in event_id order, so that a window whose buckets are whole
-- buckets of that level (but finer than series_levels') is its vectors without a pass. The
-- chain holds a vector at every bucket's max_allocated_event_id and after its last event
-- where the next bucket is empty or it is the last, each vector chosen as in series_levels;
-- every series_levels vector is one of the chain's (a coarse bucket's highest moment is one of
-- its fine buckets'), so a vector is the series_levels one at or before it and the deltas
-- after that up to it. A vector's rows: entry 0 the rest (key NULL, always there, so each
-- vector of the chain has a row), then the named series whose bytes differ from the previous
-- vector's or that are newly named (key, bytes), then those named before and no longer
-- (key, bytes 0).
CREATE TABLE series_deltas (
  device    INTEGER NOT NULL, -- device ordinal
  series_by INTEGER NOT NULL, -- as series_levels'
  event_id  INTEGER NOT NULL, -- the vector is the state after this event
  entry     INTEGER NOT NULL, -- 0: the rest; 1, 2, ...: a named series' change
  key       INTEGER,          -- as series_levels'; NULL: the rest
  bytes     INTEGER NOT NULL, -- its live block bytes now (0: no longer named)
  PRIMARY KEY (device, series_by, event_id, entry)
) WITHOUT ROWID;

-- site_stats: one row per (device, allocation site) that held device memory at the device's
-- peak or at the end: a summary the replay builds as it goes, so `report` and `leaks` over the
-- whole run never rescan event_rows. A site is a stack (stacks.stack_id; 0 = no stack).
CREATE TABLE site_stats (
  device            INTEGER NOT NULL, -- device ordinal
  stack_id          INTEGER NOT NULL, -- the allocation stack (0: none recorded)
  peak_bytes        INTEGER NOT NULL, -- live block bytes of this site at devices.peak_allocated_event_id
  peak_blocks       INTEGER NOT NULL, -- live blocks of this site then
  end_bytes         INTEGER NOT NULL, -- live block bytes at the end of the trace
  end_blocks        INTEGER NOT NULL, -- live blocks at the end
  never_freed_count INTEGER NOT NULL, -- blocks allocated during the recording (event_id >= 1) and live at the end
  never_freed_bytes INTEGER NOT NULL, -- their bytes as requested
  PRIMARY KEY (device, stack_id)
) WITHOUT ROWID;

-- site_steps: one row per (device, site, step end) at which the site's live bytes differ from
-- the previous step end: the per-step changes behind growth (DESIGN.md: the median of a site's
-- per-step changes at step ends; absent rows are changes of 0). The first step end of a device
-- has a row per site holding memory then (its change counts from the start).
CREATE TABLE site_steps (
  device       INTEGER NOT NULL, -- device ordinal
  stack_id     INTEGER NOT NULL, -- the allocation stack (0: none recorded)
  end_event_id INTEGER NOT NULL, -- the step end: steps.end_event_id of the step that ended
  delta_bytes  INTEGER NOT NULL, -- change of the site's live block bytes since the previous step end
  live_bytes   INTEGER NOT NULL, -- the site's live block bytes at this step end
  PRIMARY KEY (device, end_event_id, stack_id)
) WITHOUT ROWID;

-- site_buckets: one row per (device, group of 16 timeline buckets, site) whose live block bytes
-- changed in the group: the site's live bytes at the group's end, and at the moment of the
-- group's highest allocated bytes (so a picture's stacked sites reach the allocated envelope at
-- every spike: what filled the peak is the question). The row's bucket is the bucket of that
-- highest moment. Groups bound rows = buckets x sites; a site without a row in a group kept its
-- previous value.
-- Pictures read it to stack allocated bytes by site without a pass over the events.
CREATE TABLE site_buckets (
  device     INTEGER NOT NULL, -- device ordinal
  bucket_ns  INTEGER NOT NULL, -- bucket width, as in timeline_buckets
  bucket     INTEGER NOT NULL, -- bucket index, as in timeline_buckets
  stack_id   INTEGER NOT NULL, -- the allocation stack (0: none recorded)
  live_bytes INTEGER NOT NULL, -- the site's live block bytes at the end of the bucket group (rows are written for groups of buckets, at the bucket of the group's highest allocated bytes)
  peak_live_bytes INTEGER NOT NULL, -- the site's live block bytes at the group's highest allocated bytes: what filled the spike
  PRIMARY KEY (device, bucket_ns, bucket, stack_id)
) WITHOUT ROWID;

-- heatmap_rows: one row per (device, timeline bucket): the device's address space (every range a
-- segment ever covered, stacked by address without the holes between, cut into equal rows) as
-- the fraction of each row's reserved bytes that is allocated at the bucket's end — what the
-- heatmap picture draws, built by the replay as it goes.
CREATE TABLE heatmap_rows (
  device    INTEGER NOT NULL, -- device ordinal
  bucket_ns INTEGER NOT NULL, -- bucket width, as in timeline_buckets
  bucket    INTEGER NOT NULL, -- bucket index, as in timeline_buckets
  fractions BLOB NOT NULL,    -- 400 little-endian float32, lowest addresses first: allocated / reserved of each row, -1 where nothing is reserved
  PRIMARY KEY (device, bucket_ns, bucket)
) WITHOUT ROWID;

-- live_at_end: one row per block of device memory live at the end of the trace (the replay's
-- own list), so the layout at `end` needs no pass over the events.
CREATE TABLE live_at_end (
  alloc_id       INTEGER PRIMARY KEY, -- allocations.alloc_id (event_id of the alloc)
  device         INTEGER NOT NULL,    -- device ordinal
  addr           INTEGER NOT NULL,    -- start address
  size           INTEGER NOT NULL,    -- bytes as the allocator accounts them
  requested_size INTEGER NOT NULL,    -- bytes asked for
  stream         INTEGER,             -- allocating stream
  stack_id       INTEGER,             -- allocation stack; NULL: none
  segment_id     INTEGER,             -- segments.segment_id holding it; NULL: outside every segment
  pending        INTEGER NOT NULL     -- 1: its free was requested (a stream still uses it), 0: allocated
);

-- categories: one row per category of memory (torch.profiler's names); name -> what it holds
-- (block_categories.category, category_peaks.category, allocations.category).
CREATE TABLE categories (
  name        TEXT PRIMARY KEY, -- category name, e.g. 'optimizer_state'; stable, never reused
  description TEXT NOT NULL     -- what memory of this category is and how it is recognized
);
INSERT INTO categories (name, description) VALUES
  ('parameter', 'model weights and buffers: named parameters, or made before the first step and kept'),
  ('gradient', 'a parameter''s .grad, or made in backward and kept past it'),
  ('optimizer_state', 'an optimizer''s state (exp_avg, momentum_buffer, ...), or made in its step and kept'),
  ('activation', 'made in forward and freed in a later phase (saved for backward)'),
  ('temporary', 'freed in the phase that made it'),
  ('input', 'made at the start of a step before forward (a batch copied in) and used by it'),
  ('other', 'none of the above: caches, leaks, code the rules cannot see'),
  ('unknown', 'no history to tell what it is: a snapshot of one moment (segments without a trace, or a one-entry history)');

-- block_categories: one row per block lifetime (allocations.alloc_id) with its category
-- (DESIGN.md "category": the program's tensor name, else the phase it was made in and its
-- lifetime; never the user's --categories rules, which a command applies as it runs). Written by
-- `memanalyze import -o` and by `memanalyze sql` when a query names a category; empty otherwise
-- (then allocations.category is NULL).
CREATE TABLE block_categories (
  alloc_id INTEGER PRIMARY KEY, -- allocations.alloc_id
  category TEXT NOT NULL        -- categories.name
);

-- category_peaks: per device, the bytes of each category live at its peak allocated
-- (devices.peak_allocated_event_id): what `report` shows as "held at the peak by category",
-- summed once when the database is built. A category with no bytes there has no row.
CREATE TABLE category_peaks (
  device   INTEGER NOT NULL, -- device ordinal
  category TEXT NOT NULL,    -- categories.name
  bytes    INTEGER NOT NULL, -- block bytes of that category live right after the peak event
  PRIMARY KEY (device, category)
) WITHOUT ROWID;

-- tensor_peaks: per device, the named blocks (tensor_names) live at its peak allocated, with
-- their category: what `report` lists as the largest named tensors at the peak, found once when
-- the database is built.
CREATE TABLE tensor_peaks (
  device   INTEGER NOT NULL, -- device ordinal
  alloc_id INTEGER NOT NULL, -- tensor_names.alloc_id of a block live right after the peak event
  category TEXT NOT NULL,    -- its category (categories.name): the name's, else what its lifetime says
  PRIMARY KEY (device, alloc_id)
) WITHOUT ROWID;

-- tensor_names: one row per block the program named (TRACE_FORMAT.md "Tensor names": memrec's
-- walk of the model's parameters, gradients and optimizer state at optimizer steps, or a
-- snapshot's user metadata). A block named twice keeps its first name.
CREATE TABLE tensor_names (
  alloc_id INTEGER PRIMARY KEY, -- allocations.alloc_id of the named block (or whole-block segment)
  name     TEXT NOT NULL,       -- the tensor's name, e.g. 'layers.3.attn.q_proj.weight.exp_avg'
  category TEXT,                -- what the program says it is ('parameter', 'gradient', 'optimizer_state', ...); NULL: a name alone
  tensors  INTEGER NOT NULL,    -- tensors sharing the storage (a DDP bucket: > 1, the name is the first one's)
  ts_ns    INTEGER NOT NULL     -- when the name was given, ns since the first recorded event
);

-- step_ends: each device's state at each step's end (`step:N`), as `timeline` has it: the
-- device's last row at or before the step's end event. Kept by the replay as steps end, so the
-- per-step questions (fragmentation and segments per step, growth across steps, the headroom
-- trend) read one row per step instead of searching the events. Small: a row per device per end.
CREATE TABLE step_ends (
  device             INTEGER NOT NULL, -- device ordinal
  end_event_id       INTEGER NOT NULL, -- steps.end_event_id: the step's end
  event_id           INTEGER NOT NULL, -- the device's last row at or before it (<= 0: the seed row)
  ts_ns              INTEGER NOT NULL, -- that row's time
  allocated_bytes    INTEGER NOT NULL, -- the device's allocated bytes after that row (event_rows.allocated_bytes)
  requested_bytes    INTEGER NOT NULL, -- its requested bytes after that row (event_rows.requested_bytes)
  reserved_bytes     INTEGER NOT NULL, -- its reserved bytes after that row (event_rows.reserved_bytes)
  largest_free_bytes INTEGER,          -- its largest free range after that row, bytes; NULL: not computed
  PRIMARY KEY (device, end_event_id)
) WITHOUT ROWID;

-- free_splits: the free part of reserved memory, split as a PyTorch user reads it, at the moments
-- the commands ask about: each step's end (`step:N`), each device's peak allocated, its last event,
-- each OOM. Kept by the replay's allocator model as it goes, so `report` and the fragmentation
-- picture need no pass over the events; any other moment is a layout (`segments --at`).
-- releasable + trapped = reserved_bytes - allocated_bytes (of this table: the segments' own).
CREATE TABLE free_splits (
  device           INTEGER NOT NULL, -- device ordinal
  event_id         INTEGER NOT NULL, -- the state after this event (of the device's events up to it)
  reserved_bytes   INTEGER NOT NULL, -- sum of the device's live segment sizes (the layout's reserved), bytes
  allocated_bytes  INTEGER NOT NULL, -- sum of the live blocks inside them (blocks outside every segment not counted), bytes
  releasable_bytes INTEGER NOT NULL, -- what empty_cache() would give back: whole free segments, and the pages of expandable segments wholly inside free blocks, bytes
  trapped_bytes    INTEGER NOT NULL, -- the rest of the free bytes: in segments (or pages) that also hold live blocks, bytes
  PRIMARY KEY (device, event_id)
) WITHOUT ROWID;

-- largest_allocations: the 16 largest block allocations of each device over the run (ties: the
-- earliest), so `report` lists them without sorting every allocation.
CREATE TABLE largest_allocations (
  device   INTEGER NOT NULL, -- device ordinal
  alloc_id INTEGER NOT NULL, -- allocations.alloc_id (event_id of the alloc)
  size     INTEGER NOT NULL, -- its bytes
  stack_id INTEGER,          -- its stack; NULL: none recorded
  PRIMARY KEY (device, alloc_id)
) WITHOUT ROWID;

-- warnings: one row per anomaly met while decoding or replaying (a free of unknown memory, a
-- double free, a corrupt or truncated trace frame, …); at most 100 rows per code (meta
-- 'warnings_total' counts them all).
CREATE TABLE warnings (
  warning_id INTEGER PRIMARY KEY, -- order in which the warnings were raised
  event_id   INTEGER,             -- the event it concerns; NULL: not tied to one event (e.g. a corrupt frame)
  code       TEXT NOT NULL REFERENCES warning_kinds(code), -- short stable identifier (warning_kinds), e.g. 'free_unknown', 'double_free', 'corrupt_frame', 'truncated'
  message    TEXT NOT NULL        -- human-readable explanation (byte offsets, addresses, counts)
);

-- warning_kinds: one row per kind of warning; code → what it means (the `code` of warnings).
CREATE TABLE warning_kinds (
  code        TEXT PRIMARY KEY, -- warnings.code; stable, never reused
  description TEXT NOT NULL     -- what the anomaly is and what the replay did about it
);
INSERT INTO warning_kinds (code, description) VALUES
  ('truncated', 'the trace ends inside a frame: the process was killed or the file cut; events up to the last complete frame are used'),
  ('corrupt_frame', 'a damaged zstd frame was skipped (its byte offset is in the message); ids interned in it read as unknown'),
  ('device_out_of_range', 'an event on a device ordinal beyond the analyzer''s limit was ignored'),
  ('segment_size_mismatch', 'two reports of one segment (PyTorch''s and the driver''s) disagree on its size'),
  ('segment_overlap', 'a new segment or mapped range overlaps a live one; it is left out of the layout'),
  ('segment_free_in_use', 'a segment was freed while blocks inside it were live; they end with it'),
  ('free_unknown', 'a free of memory that is not live (never seen allocated, or already freed)'),
  ('unmap_unknown', 'an unmap of a range that is not mapped'),
  ('double_free', 'a block''s free was requested twice'),
  ('double_alloc', 'a block was allocated where a live block already was; the old one ends'),
  ('block_outside_segment', 'a block lies outside every live segment; it is counted on its own'),
  ('block_overlap', 'a block overlaps a live block; it is counted on its own'),
  ('allocated_above_reserved', 'invariant: after this event a device''s allocated bytes exceed its reserved bytes (a block counted outside every segment, or a segment the replay missed); raised when it starts'),
  ('requested_above_allocated', 'invariant: after this event a device''s requested bytes exceed its allocated bytes (a block smaller than its request); raised when it starts'),
  ('layout_invalid', 'invariant: the replay''s layout of a device failed its self-check (blocks not tiling their segment, overlaps, totals that disagree); checked after the seed and at the end'),
  ('event_out_of_range', 'a memory event no memory can have: a size over 2^60 bytes, a range past the end of the address space, one that holds or ends at the address 2^63 (the database''s NULL), or bytes that would take a device''s totals over 2^60; it is left out (no row; the message says where it was)');

-- @@ indexes (run after the bulk load)
-- Everything below only makes queries faster. Index names are not part of the contract.
-- After building them the loader may run `PRAGMA optimize;` (or ANALYZE) for the planner.

-- No index on event_rows.ts_ns, on purpose: building it took as long as the other index and a
-- third of the whole import of a 10 M-event trace (bench/README.md). Rows are in replay order,
-- which is time order up to threads' interleaving, so memanalyze turns times into event ids
-- through timeline_buckets (a bucket's first/last event ids) and counters.event_id, and works
-- on event_id ranges (the primary key). An ad-hoc `WHERE ts_ns BETWEEN ...` on event_rows
-- scans the table (about 2 s per 10 M rows); `WHERE event_id BETWEEN ...` does not.
-- the free/unmap/... row that ends a lifetime: the join behind `allocations`
CREATE INDEX event_rows_alloc_event ON event_rows (alloc_event_id) WHERE alloc_event_id IS NOT NULL;
-- step of a timestamp (allocations.alloc_step / free_step)
CREATE INDEX steps_begin ON steps (begin_ts_ns);
-- the steps in the step table's order (step_table.h: by end, then number), covering: the
-- viewer's first rows and the table's row count without a sort of every step
CREATE INDEX steps_end ON steps (end_event_id, step, begin_event_id);
-- the step an event is in (when.h: "step N" of a moment, the summary's peaks), covering
CREATE INDEX steps_begin_event ON steps (begin_event_id, end_event_id, step);
CREATE INDEX markers_ts ON markers (ts_ns);
CREATE INDEX markers_begin ON markers (begin_marker_id) WHERE begin_marker_id IS NOT NULL;
CREATE INDEX counters_device_ts ON counters (device, ts_ns);
-- children of a trie node (top-down flame graphs)
CREATE INDEX stacks_parent ON stacks (parent_id);
CREATE INDEX segments_device_addr ON segments (device, addr);
CREATE INDEX warnings_event ON warnings (event_id) WHERE event_id IS NOT NULL;

-- @@ examples
-- Queries a user would run (each one runs as written; tests/test_schema_sql.py checks that).
-- Sizes are bytes: divide by 1048576.0 for MiB.
--
-- 1. What held memory at the peak: the top allocation stacks live at the moment of the highest
--    allocated bytes (on the device with the highest peak), with their innermost frames.
--   WITH peak AS (
--     SELECT event_id, device FROM timeline ORDER BY allocated_bytes DESC, event_id LIMIT 1)
--   SELECT a.alloc_stack_id, COUNT(*) AS blocks, SUM(a.size) AS bytes,
--          (SELECT group_concat(name, ' <- ') FROM
--             (SELECT name FROM stack_frames WHERE stack_id = a.alloc_stack_id
--              ORDER BY depth LIMIT 6)) AS innermost_frames
--   FROM allocations AS a JOIN peak AS p ON a.device = p.device
--   WHERE a.kind = 'device' AND a.alloc_id <= p.event_id
--     AND (a.free_event_id IS NULL OR a.free_event_id > p.event_id)
--   GROUP BY a.alloc_stack_id ORDER BY bytes DESC LIMIT 10;
--
-- 2. The 20 largest allocations, with their lifetime and steps.
--   SELECT alloc_id, device, size / 1048576.0 AS mib, printf('0x%x', addr) AS address,
--          alloc_ts_ns / 1e9 AS alloc_s, (free_ts_ns - alloc_ts_ns) / 1e6 AS lifetime_ms,
--          alloc_step, free_step
--   FROM allocations ORDER BY size DESC LIMIT 20;
--
-- 3. Blocks allocated during the recording and never freed, grouped by allocation site.
--   SELECT a.alloc_stack_id, COUNT(*) AS blocks, SUM(a.size) AS bytes,
--          MIN(a.alloc_step) AS first_step, MAX(a.alloc_step) AS last_step,
--          (SELECT name FROM stack_frames WHERE stack_id = a.alloc_stack_id AND depth = 0) AS site
--   FROM allocations AS a
--   WHERE a.free_ts_ns IS NULL AND a.alloc_id > 0
--   GROUP BY a.alloc_stack_id ORDER BY bytes DESC LIMIT 20;
--
-- 4. Peak allocated and reserved bytes per step and device (the state entering the step included).
--   SELECT s.step, t.device, MAX(t.allocated_bytes) AS peak_allocated,
--          MAX(t.reserved_bytes) AS peak_reserved, MAX(t.fragmentation) AS worst_fragmentation
--   FROM steps AS s JOIN timeline AS t
--     ON t.event_id BETWEEN s.begin_event_id AND s.end_event_id
--   GROUP BY s.step, t.device ORDER BY s.step, t.device;
--
-- 5. Fragmentation over time, one row per device and second, rated as in DESIGN.md.
--   SELECT device, ts_ns / 1000000000 AS second,
--          MAX(reserved_bytes) AS reserved, MIN(largest_free_bytes) AS min_largest_free,
--          MAX(fragmentation) AS fragmentation,
--          CASE WHEN MAX(fragmentation) < 0.15 THEN 'good'
--               WHEN MAX(fragmentation) < 0.30 THEN 'moderate'
--               WHEN MAX(fragmentation) < 0.40 THEN 'serious' ELSE 'severe' END AS rating
--   FROM timeline WHERE event_id > 0
--   GROUP BY device, second ORDER BY device, second;
--
-- 6. What changed between the end of step 10 and the end of step 11, by allocation site.
--   WITH w AS (SELECT (SELECT end_event_id FROM steps WHERE step = 10) AS a,
--                     (SELECT end_event_id FROM steps WHERE step = 11) AS b),
--   live AS (
--     SELECT al.alloc_stack_id AS stack_id, al.size AS size,
--            (al.alloc_id <= w.a AND (al.free_event_id IS NULL OR al.free_event_id > w.a)) AS at_a,
--            (al.alloc_id <= w.b AND (al.free_event_id IS NULL OR al.free_event_id > w.b)) AS at_b
--     FROM allocations AS al, w WHERE al.alloc_id <= max(w.a, w.b))
--   SELECT stack_id, SUM(CASE WHEN at_b AND NOT at_a THEN size ELSE 0 END) AS added_bytes,
--          SUM(CASE WHEN at_a AND NOT at_b THEN size ELSE 0 END) AS removed_bytes
--   FROM live GROUP BY stack_id HAVING added_bytes <> removed_bytes
--   ORDER BY added_bytes - removed_bytes DESC LIMIT 20;
--
-- 7. OOMs and failed driver allocations, with the state they met.
--   SELECT event_id, ts_ns / 1e9 AS s, device, op, size AS asked_bytes,
--          allocated_bytes, reserved_bytes, largest_free_bytes, stack_id
--   FROM events WHERE op IN ('oom', 'alloc_failed') ORDER BY event_id;
--
-- 8. Untracked memory (context, libraries, other processes) at each driver sample.
--   SELECT c.ts_ns / 1e9 AS s, c.device, d.total_bytes - c.value AS driver_used,
--          r.reserved_bytes, d.total_bytes - c.value - r.reserved_bytes AS untracked
--   FROM counters AS c JOIN devices AS d ON d.device = c.device
--   JOIN timeline AS r ON r.event_id = (
--     SELECT t.event_id FROM timeline AS t WHERE t.device = c.device AND t.event_id <= c.event_id
--     ORDER BY t.event_id DESC LIMIT 1)
--   WHERE c.kind = 'driver_free' ORDER BY c.device, c.ts_ns;
