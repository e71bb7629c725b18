/* replay.c — from trace records to database rows (see replay.h).
 *
 * The state of the replay is, per device, a caching-allocator model in
 * apply mode (segments and the blocks inside them, and so reserved,
 * allocated, requested and the largest free block at every moment) and one
 * table of live allocations of every kind (addr_map -> live_entry), which
 * links each free to the alloc it ends. The rules that are not the model's:
 *
 *  - Only device memory counts in the totals; managed and pinned host
 *    allocations are tracked for their lifetimes only.
 *  - A segment no allocator sub-allocates (a plain cudaMalloc) is itself one
 *    block (allocated = reserved for it) until a block is placed inside it.
 *  - CUPTI's cuMemAlloc and PyTorch's segment_alloc of the same address are
 *    one segment: the first pass lists PyTorch's segment addresses, so the
 *    CUPTI report of one of them never counts as a separate whole block.
 *  - PyTorch reports requested sizes; its blocks are placed with the
 *    allocator's split rule (am_block_place_requested). Other sources give
 *    the block's real size.
 *  - VMM: physical memory (cuMemCreate) is what is reserved; mapped ranges
 *    are the layout. A device whose trace has no cuMemCreate (a PyTorch
 *    snapshot with expandable segments) counts its mapped ranges instead.
 *    Each map is a segments row; an unmap ends the rows it covers (a row it
 *    cuts keeps its other part as a new row).
 *  - The models follow the allocator's settings (replay_options.settings),
 *    with expandable segments inferred from PyTorch's map/unmap events when
 *    the settings do not say: the split rule depends on them.
 *  - A free's bytes are those of its alloc, whatever the free record says.
 *
 * Warnings are capped at WARNINGS_PER_CODE rows per code (all are counted). */
#include "replay_state.h"

#include "gmt_grow.h"

#include "heat_rows.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the other records ---------------------------------------------------- */

/* Pairs a pop with the latest open push of its thread, an end with the
 * start of its range id; returns the index in open_markers or -1. */
static long find_open(const replay *rp, int is_push, uint64_t key) {
    for (size_t i = rp->open_len; i-- > 0;)
        if (rp->open_markers[i].is_push == is_push && rp->open_markers[i].key == key)
            return (long)i;
    return -1;
}

/* One piece of a step into `steps`, where pieces of one step merge
 * (db_writer_step). */
static int write_step(replay *rp, const step_interval *s) {
    db_step_row row = {s->step,           s->name,
                       s->begin_ts,       s->open ? DB_NULL : s->end_ts,
                       s->begin_event_id, s->end_event_id};
    return replay_db_ok(rp, db_writer_step(rp->db, &row));
}

static int on_marker(replay *rp, const trace_marker *m) {
    if (m->kind == TRACE_MARK_SEED_END) {
        if (!rp->in_seed) /* the seed ended at the first one (replay_scan_record) */
            return 0;
        rp->in_seed = 0;
        replay_check_layouts(rp, "after the seed");
        return replay_write_seed_rows(rp);
    }
    const char *domain = replay_string(rp, m->domain_id); /* NULL: none, or never defined */
    if (m->kind == TRACE_MARK_MARK && domain && strcmp(domain, TRACE_TENSOR_DOMAIN) == 0)
        return replay_on_tensor_name(rp, m);
    int64_t ts = replay_ts(rp, m->ts_ns);
    uint32_t name_id = m->name_id;
    int64_t id = (int64_t)++rp->marker_count, begin = DB_NULL;
    int opens = m->kind == TRACE_MARK_RANGE_PUSH || m->kind == TRACE_MARK_RANGE_START;
    int closes = m->kind == TRACE_MARK_RANGE_POP || m->kind == TRACE_MARK_RANGE_END;
    int is_push = m->kind == TRACE_MARK_RANGE_PUSH || m->kind == TRACE_MARK_RANGE_POP;
    uint64_t key = is_push ? m->tid : m->range_id;
    if (opens) {
        if (gmt_grow((void **)&rp->open_markers, &rp->open_cap, rp->open_len,
                     sizeof *rp->open_markers) != 0)
            return replay_fail(rp, "out of memory");
        rp->open_markers[rp->open_len++] = (struct open_marker){key, id, name_id, is_push};
    } else if (closes) {
        long i = find_open(rp, is_push, key);
        if (i >= 0) {
            begin = rp->open_markers[i].marker_id;
            if (!name_id)
                name_id = rp->open_markers[i].name_id;
            memmove(&rp->open_markers[i], &rp->open_markers[i + 1],
                    (rp->open_len - (size_t)i - 1) * sizeof *rp->open_markers);
            rp->open_len--;
        }
    }
    const char *name = replay_string(rp, name_id);
    db_marker_row row = {.marker_id = id,
                         .ts_ns = ts,
                         .tid = m->tid ? (int64_t)m->tid : DB_NULL,
                         .kind = trace_marker_kind_name(m->kind),
                         .name = name,
                         .domain = domain,
                         .begin_marker_id = begin};
    int ended = steps_marker(rp->steps, m->kind, m->tid, m->range_id, replay_string(rp, m->name_id),
                             m->value, ts, rp->last_event_id);
    if (ended < 0)
        return replay_fail(rp, "out of memory");
    if (ended && write_step(rp, steps_closed(rp->steps)) != 0)
        return -1;
    if (ended && rp->step_end_hook)
        rp->step_end_hook(rp->hook_ctx, steps_closed(rp->steps));
    if (ended && site_stats_step_end(rp->sites, rp->last_event_id, rp->db) != 0)
        return replay_fail(rp, "%s", db_writer_error(rp->db));
    if (ended &&
        (replay_write_splits(rp) != 0 || replay_write_step_ends(rp, rp->last_event_id) != 0))
        return -1;
    return replay_db_ok(rp, db_writer_marker(rp->db, &row));
}

/* The END record's counted calls (seen by the recorder, not recorded as memory): the
 * unrecorded_calls rows. A count past INT64_MAX is stored as INT64_MAX. */
static int write_unrecorded(replay *rp, const trace_end *e) {
    for (uint32_t i = 0; i < e->n_calls; i++) {
        const trace_call_count *c = &e->calls[i];
        if (replay_db_ok(rp, db_writer_unrecorded_call(rp->db, c->call_id, c->name.ptr,
                                                       replay_clamp(c->calls),
                                                       replay_clamp(c->bytes))) != 0)
            return -1;
    }
    return 0;
}

static int on_record(replay *rp, const trace_record *rec) {
    switch (rec->kind) {
    case TRACE_REC_EVENT:
        return replay_event(rp, &rec->u.event);
    case TRACE_REC_MARKER:
        return on_marker(rp, &rec->u.marker);
    case TRACE_REC_STRING: {
        if (replay_strings_put(rp->strings, rec->u.string.string_id, rec->u.string.text.ptr) != 0)
            return replay_fail(rp, "out of memory (or no room for the trace's strings)");
        return 0;
    }
    case TRACE_REC_FRAME:
        return replay_on_frame(rp, &rec->u.frame);
    case TRACE_REC_SYMBOL:
        return replay_on_symbol(rp, &rec->u.symbol);
    case TRACE_REC_STACK:
        return replay_on_stack(rp, &rec->u.stack);
    case TRACE_REC_MODULE:
        return replay_on_module(rp, &rec->u.module);
    case TRACE_REC_DEVICE: {
        uint32_t dev = rec->u.device.device;
        if (dev >= GMT_MAX_DEVICES)
            return 0;
        free(rp->dev[dev].name);
        if (!(rp->dev[dev].name = strdup(rec->u.device.name.ptr)))
            return replay_fail(rp, "out of memory");
        rp->dev[dev].total_bytes = replay_clamp(rec->u.device.total_bytes);
        return 0;
    }
    case TRACE_REC_COUNTER: {
        const trace_counter *c = &rec->u.counter;
        int pool = c->kind == TRACE_COUNTER_POOL_RESERVED || c->kind == TRACE_COUNTER_POOL_USED;
        return replay_db_ok(
            rp, db_writer_counter(rp->db, replay_ts(rp, c->ts_ns), rp->last_event_id, c->device,
                                  trace_counter_kind_name(c->kind),
                                  pool ? (int64_t)c->key : DB_NULL, replay_clamp(c->value)));
    }
    case TRACE_REC_PROCESS: {
        const trace_process *p = &rec->u.process;
        db_writer_meta_int(rp->db, "pid", p->pid);
        if (p->rank >= 0) {
            rp->process_rank = p->rank;
            db_writer_meta_int(rp->db, "rank", p->rank);
        }
        db_writer_meta_text(rp->db, "host", p->host.ptr);
        db_writer_meta_text(rp->db, "command_line", p->cmdline.ptr);
        db_writer_meta_text(rp->db, "clock_source", p->clock_source.ptr);
        db_writer_meta_text(rp->db, "producer", p->producer.ptr);
        int64_t t0_unix = (int64_t)(p->wall_anchor_ns + (rp->t0 - p->clock_anchor_ns));
        return replay_db_ok(rp, db_writer_meta_int(rp->db, "t0_unix_ns", t0_unix));
    }
    case TRACE_REC_END:
        if (write_unrecorded(rp, &rec->u.end) != 0)
            return -1;
        rp->saw_end = 1;
        db_writer_meta_int(rp->db, "clean_shutdown", (rec->u.end.flags & TRACE_END_CLEAN) != 0);
        return replay_db_ok(
            rp, db_writer_meta_int(rp->db, "dropped_events", replay_clamp(rec->u.end.dropped)));
    default:
        return 0;
    }
}

/* ---- the allocator's settings ----------------------------------------------- */

/* The settings the models follow: the input's, with expandable segments inferred from
 * PyTorch's mapped memory when they do not say. */
static void choose_settings(replay *rp) {
    const replay_options *opt = rp->opt;
    rp->settings = opt && opt->settings ? *opt->settings : am_settings_default();
    rp->settings_source =
        opt && opt->settings && opt->settings_source ? opt->settings_source : "none";
    if (!(opt && opt->settings) && rp->trace_conf[0]) { /* a live trace's recorded configuration */
        char err[256];
        am_settings s = am_settings_default();
        if (am_settings_parse(&s, rp->trace_conf, err, sizeof err) == 0) {
            snprintf(s.alloc_conf, sizeof s.alloc_conf, "%s", rp->trace_conf);
            s.known |= AM_SET_CONF;
            rp->settings = s;
            rp->settings_source = "trace";
        }
    }
    /* PyTorch maps pages only with expandable segments on: the maps win over settings that
     * say nothing, or that say off (a run that turned them on later, by
     * _set_allocator_settings, after the settings were first reported) */
    if (rp->torch_maps && !rp->settings.expandable_segments) {
        rp->settings.expandable_segments = true;
        rp->settings.known |= AM_SET_EXPANDABLE;
        if (!strcmp(rp->settings_source, "none"))
            rp->settings_source = "inferred";
    }
    rp->config = am_settings_config(&rp->settings, am_config_default());
}

static int write_input_facts(replay *rp) {
    char json[2048];
    size_t need = am_settings_json(&rp->settings, json, sizeof json);
    char *text = need < sizeof json ? json : malloc(need + 1);
    if (!text)
        return replay_fail(rp, "out of memory");
    if (text != json)
        am_settings_json(&rp->settings, text, need + 1);
    db_writer_meta_text(rp->db, "allocator_settings", text);
    if (text != json)
        free(text);
    db_writer_meta_text(rp->db, "allocator_settings_source", rp->settings_source);
    const replay_options *opt = rp->opt;
    db_writer_meta_int(rp->db, "timestamps", opt && opt->timestamps >= 0 ? opt->timestamps : 1);
    return replay_db_ok(
        rp, db_writer_meta_int(rp->db, "history", opt && opt->history >= 0 ? opt->history : 1));
}

/* ---- the end ---------------------------------------------------------------- */

static int finish(replay *rp, const trace_reader *r) {
    if (!rp->seed_rows_written && replay_write_seed_rows(rp) != 0)
        return -1;
    replay_check_layouts(rp, "at the end");
    /* frames and stacks, now that every SYMBOL record has been read */
    if (replay_write_frames(rp) != 0)
        return -1;
    /* the device blocks live at the end, for the layout at `end` */
    for (size_t i = 0; i < rp->entries_len; i++) {
        live_entry *e = &rp->entries[i];
        uint32_t *v = addr_map_get(&rp->live, replay_space_key(e->device, SPACE_BLOCK), e->addr);
        if (e->space != SPACE_BLOCK || e->kind != TRACE_KIND_DEVICE || !v || *v != i)
            continue;
        if (replay_db_ok(rp, db_writer_live_at_end(rp->db, e->event_id, e->device, (int64_t)e->addr,
                                                   (int64_t)e->size, (int64_t)e->requested,
                                                   (int64_t)e->stream, e->stack_id, e->segment_id,
                                                   e->pending)) != 0)
            return -1;
    }
    /* what was allocated during the recording and is still live: never freed */
    for (size_t i = 0; i < rp->entries_len; i++) {
        live_entry *e = &rp->entries[i];
        int block = e->space == SPACE_BLOCK || (e->space == SPACE_SEGMENT && e->whole_block);
        uint32_t *v =
            addr_map_get(&rp->live, replay_space_key(e->device, (enum space)e->space), e->addr);
        if (!block || e->kind != TRACE_KIND_DEVICE || e->event_id <= 0 || e->ended || !v || *v != i)
            continue;
        if (site_stats_never_freed(rp->sites, e->device, e->stack_id == DB_NULL ? 0 : e->stack_id,
                                   (int64_t)e->requested) != 0)
            return replay_fail(rp, "out of memory");
    }
    if (site_stats_finish(rp->sites, rp->db) != 0 || site_levels_finish(rp->site_levels, rp->db))
        return replay_fail(rp, "%s", db_writer_error(rp->db));
    /* live segments: their rows, with no end */
    for (size_t i = 0; i < rp->entries_len; i++) {
        live_entry *e = &rp->entries[i];
        if (e->space != SPACE_SEGMENT || e->ended ||
            !addr_map_get(&rp->live, replay_space_key(e->device, SPACE_SEGMENT), e->addr))
            continue;
        uint32_t *v = addr_map_get(&rp->live, replay_space_key(e->device, SPACE_SEGMENT), e->addr);
        if (*v != i)
            continue;
        if (replay_write_segment_row(rp, e, DB_NULL, DB_NULL, DB_NULL) != 0)
            return -1;
    }
    /* the end: where still-open steps end too */
    if (replay_write_splits(rp) != 0 || replay_write_peak_splits(rp) != 0 ||
        replay_write_step_ends(rp, rp->last_event_id) != 0)
        return -1;
    for (uint32_t i = 0; i < GMT_MAX_DEVICES; i++) {
        device_state *d = &rp->dev[i];
        if (!d->present && !d->name)
            continue;
        if (replay_flush_bucket(rp, i, INT64_MAX) != 0 || replay_levels_flush(rp, i) != 0)
            return -1;
        if (rp->series && series_levels_flush(rp->series, rp->db, i) != 0)
            return replay_fail(
                rp, "%s", db_writer_error(rp->db)[0] ? db_writer_error(rp->db) : "out of memory");
        db_device_row row = {i,
                             d->name,
                             d->total_bytes ? d->total_bytes : DB_NULL,
                             d->present ? d->peak_alloc : DB_NULL,
                             d->present ? d->peak_alloc_id : DB_NULL,
                             d->present ? d->peak_res : DB_NULL,
                             d->present ? d->peak_res_id : DB_NULL,
                             d->present ? d->peak_req : DB_NULL,
                             d->present ? d->peak_req_id : DB_NULL,
                             d->present ? d->peak_segments : DB_NULL,
                             d->present ? d->allocs : DB_NULL,
                             d->present ? d->frees : DB_NULL,
                             d->present ? d->cache_allocs : DB_NULL,
                             d->present ? d->cache_misses : DB_NULL,
                             d->present ? d->ooms : DB_NULL,
                             d->present ? d->alloc_failed : DB_NULL};
        if (replay_db_ok(rp, db_writer_device(rp->db, &row)) != 0)
            return -1;
    }
    size_t nsteps; /* the steps still open: the closed ones are written */
    const step_interval *steps = steps_finish(rp->steps, rp->last_ts, rp->last_event_id, &nsteps);
    for (size_t i = 0; i < nsteps; i++)
        if (write_step(rp, &steps[i]) != 0)
            return -1;
    /* what the file's reader found (records from a source: an undamaged input of this
     * build's format) */
    const trace_reader_stats none = {0};
    const trace_reader_stats *st = r ? trace_reader_get_stats(r) : &none;
    for (size_t i = 0; r && i < trace_reader_warning_count(r); i++) {
        const char *w = trace_reader_warning(r, i);
        if (w)
            replay_warn(rp, DB_NULL, trace_reader_warning_kind(r, i), "%s", w);
    }
    db_writer_meta_int(rp->db, "format_version",
                       r ? trace_reader_version(r) : TRACE_FORMAT_VERSION);
    db_writer_meta_int(rp->db, "recorded_events", rp->last_event_id);
    db_writer_meta_int(rp->db, "last_ts_ns", rp->last_ts);
    db_writer_meta_int(rp->db, "corrupt_frames", (int64_t)st->corrupt_frames);
    if (st->truncated)
        db_writer_meta_int(rp->db, "truncated_after_events", (int64_t)st->events);
    if (r && !rp->saw_end) /* killed, or still running: schema.sql's clean_shutdown 0 */
        db_writer_meta_int(rp->db, "clean_shutdown", 0);
    db_writer_meta_int(rp->db, "lost_events", (int64_t)st->lost_events);
    if (write_input_facts(rp) != 0)
        return -1;
    db_writer_meta_int(rp->db, "warnings_total", (int64_t)rp->warnings_total);
    db_writer_meta_int(rp->db, "bucket_ns", rp->bucket_ns);
    replay_levels_meta(rp);
    if (rp->series)
        series_levels_meta(rp->series, rp->db);
    db_writer_meta_text(rp->db, "step_rule",
                        rp->opt && rp->opt->step_word ? rp->opt->step_word : "step");
    rp->sum->events = (uint64_t)rp->last_event_id;
    rp->sum->seed_events = rp->seed_seen;
    rp->sum->warnings = rp->warnings_total;
    return rp->failed ? -1 : 0;
}

static void cleanup(replay *rp) {
    for (int i = 0; i < GMT_MAX_DEVICES; i++) {
        am_model_free(rp->dev[i].model);
        heat_rows_free(rp->dev[i].heat);
        free(rp->dev[i].name);
    }
    replay_frames_free(rp);
    replay_strings_free(rp->strings);
    free(rp->entries);
    addr_map_free(&rp->live);
    addr_map_free(&rp->torch_segments);
    steps_free(rp->steps);
    site_stats_free(rp->sites);
    site_levels_free(rp->site_levels);
    series_levels_free(rp->series);
    free(rp->open_markers);
    free(rp->pieces);
}

/* ---- the two passes ---------------------------------------------------------- */

replay *replay_state_new(db_writer *db, const replay_options *opt, replay_summary *summary,
                         char *err, size_t errlen) {
    replay *rp = calloc(1, sizeof *rp);
    if (!rp) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    rp->db = db;
    rp->opt = opt;
    rp->err = err;
    rp->errlen = errlen;
    rp->sum = summary ? summary : &rp->own_summary;
    memset(rp->sum, 0, sizeof *rp->sum);
    rp->steps = steps_new(opt ? opt->step_word : NULL);
    rp->sites = site_stats_new();
    rp->process_rank = -1;
    rp->site_levels = site_levels_new();
    rp->strings = replay_strings_new(0, 0);
    if (!rp->steps || !rp->sites || !rp->site_levels || !rp->strings)
        replay_fail(rp, "out of memory");
    return rp;
}

void replay_state_free(replay *rp) {
    cleanup(rp);
    free(rp);
}

int replay_state_start(replay *rp, const scan_result *sr) {
    int rc = 0;
    choose_settings(rp);
    rp->t0 = sr->first_ts;
    rp->last_ts = 0;
    uint64_t span = sr->last_ts - sr->first_ts; /* last_ts >= first_ts */
    rp->bucket_ns = (int64_t)(span / BUCKETS + 1);
    replay_levels_setup(rp, span, sr->events, rp->opt && rp->opt->timestamps == 0);
    if (rp->level_count > SERIES_LEVELS_LEVEL &&
        !(rp->series = series_levels_new(rp->level_shift + 3 * SERIES_DELTAS_LEVEL)))
        return replay_fail(rp, "out of memory");
    rp->in_seed = sr->has_seed_end;
    rp->seed_events_total = sr->seed_events;
    int ndev = 0;
    for (int i = 0; i < GMT_MAX_DEVICES; i++) {
        device_state *d = &rp->dev[i];
        d->peak_alloc_id = d->peak_res_id = d->peak_req_id = DB_NULL;
        if (!d->present)
            continue;
        ndev++;
        if (d->heat)
            heat_rows_freeze(d->heat);
        if (!(d->model = am_model_new(&rp->config)))
            rc = replay_fail(rp, "out of memory");
    }
    /* Seed events, then one seed row per device, end at event_id 0. */
    rp->next_seed_id = 1 - (int64_t)sr->seed_events - ndev;
    return rc;
}

int replay_state_record(replay *rp, const trace_record *rec) {
    if (rec->kind == TRACE_REC_EVENT && rec->u.event.device < GMT_MAX_DEVICES &&
        !rp->dev[rec->u.event.device].model) {
        rp->dev[rec->u.event.device].present = 1; /* not seen by the first pass: damage */
        if (!(rp->dev[rec->u.event.device].model = am_model_new(&rp->config)))
            return replay_fail(rp, "out of memory");
    }
    if (on_record(rp, rec) != 0)
        return -1;
    if (replay_strings_failed(rp->strings))
        return replay_fail(rp, "cannot read back the trace's strings from a temporary file");
    return 0;
}

/* The first pass over a file. */
static int scan_file(replay *rp, const char *path, scan_result *sr) {
    char err[512];
    trace_reader *r = trace_reader_open(path, err, sizeof err);
    if (!r)
        return replay_fail(rp, "%s", err);
    replay_scan ss;
    replay_scan_begin(&ss);
    trace_record rec;
    int more, rc = 0;
    while (rc == 0 && (more = trace_reader_next(r, &rec)) == 1)
        rc = replay_scan_record(rp, &ss, &rec);
    trace_reader_close(r);
    if (rc == 0 && more < 0)
        return replay_fail(rp, "%s: read error", path);
    *sr = *replay_scan_end(&ss);
    return rc;
}

int replay_trace(const char *trace_path, db_writer *db, const replay_options *opt,
                 replay_summary *summary, char *err, size_t errlen) {
    replay *rp = replay_state_new(db, opt, summary, err, errlen);
    if (!rp)
        return -1;
    scan_result sr;
    int rc = rp->failed ? -1 : scan_file(rp, trace_path, &sr);
    trace_reader *r = NULL;
    if (rc == 0)
        rc = replay_state_start(rp, &sr);
    if (rc == 0 && !(r = trace_reader_open(trace_path, err, errlen)))
        rc = -1;
    trace_record rec;
    int more = 0;
    uint64_t records = 0;
    while (rc == 0 && (more = trace_reader_next(r, &rec)) == 1) {
        rc = replay_state_record(rp, &rec);
        if (opt && opt->progress && (++records & 0xffff) == 0)
            opt->progress(opt->progress_ctx, trace_reader_position(r),
                          trace_reader_get_stats(r)->file_bytes);
    }
    if (rc == 0 && more < 0)
        rc = replay_fail(rp, "%s: %s", trace_path, trace_reader_error(r));
    if (rc == 0)
        rc = finish(rp, r);
    trace_reader_close(r);
    replay_state_free(rp);
    return rc;
}

/* The passes fed by a source: each record to the first pass, counted, then to the second. */
typedef struct source_pass {
    replay *rp;
    replay_scan scan; /* the first pass's */
    uint64_t records, total;
} source_pass;

static int first_pass_sink(void *ctx, const trace_record *rec) {
    source_pass *sp = ctx;
    sp->records++;
    return replay_scan_record(sp->rp, &sp->scan, rec);
}

static int second_pass_sink(void *ctx, const trace_record *rec) {
    source_pass *sp = ctx;
    const replay_options *opt = sp->rp->opt;
    if (opt && opt->progress && (++sp->records & 0xffff) == 0)
        opt->progress(opt->progress_ctx, sp->records, sp->total);
    return replay_state_record(sp->rp, rec);
}

int replay_records(replay_source source, void *source_ctx, db_writer *db, const replay_options *opt,
                   replay_summary *summary, char *err, size_t errlen) {
    replay *rp = replay_state_new(db, opt, summary, err, errlen);
    if (!rp)
        return -1;
    source_pass sp = {.rp = rp};
    replay_scan_begin(&sp.scan);
    /* the source's own reason goes to err only when the replay has none (a sink's refusal
     * reaches the source as "its reader stopped") */
    char why[512] = "";
    int rc = rp->failed ? -1 : source(source_ctx, first_pass_sink, &sp, why, sizeof why);
    if (rc == 0)
        rc = replay_state_start(rp, replay_scan_end(&sp.scan));
    sp.total = sp.records;
    sp.records = 0;
    if (rc == 0)
        rc = source(source_ctx, second_pass_sink, &sp, why, sizeof why);
    if (rc != 0 && !rp->failed)
        replay_fail(rp, "%s", why[0] ? why : "the input could not be read");
    if (rc == 0)
        rc = finish(rp, NULL);
    replay_state_free(rp);
    return rc;
}
