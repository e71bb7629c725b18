/* run_summary.c — a run's summary from the replay's small tables (see run_summary.h). Every
 * query here reads a summary table (a row per device, step end, segment or site), so the cost
 * does not grow with the events; the one exception is run_sites_at with an explicit moment. */
#include "run_summary.h"

#include "alloc_settings.h"
#include "analysis.h"
#include "db_query.h"
#include "gmt_utf8.h"
#include "step_stream.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void read_meta(sqlite3 *db, run_summary *s) {
    char json[2048];
    s->rank = db_query_i64(db, "SELECT value FROM meta WHERE key = 'rank'", 0, 0, -1);
    db_meta_text(db, "host", s->host, sizeof s->host);
    db_meta_text(db, "command_line", s->command, sizeof s->command);
    gmt_utf8_trim(s->host);
    gmt_utf8_trim(s->command);
    if (db_meta_text(db, "allocator_settings", json, sizeof json)[0]) {
        am_settings settings = am_settings_default();
        am_settings_from_json(&settings, json);
        am_settings_conf_text(&settings, s->settings, sizeof s->settings);
    }
}

static void read_peaks(sqlite3 *db, run_summary *s) {
    sqlite3_stmt *st = db_statement(
        db, "SELECT coalesce(total_bytes, 0), peak_allocated_bytes, peak_allocated_event_id,"
            " peak_requested_bytes, peak_reserved_bytes, peak_reserved_event_id, ooms FROM devices"
            " WHERE device = ?1");
    if (st) {
        sqlite3_bind_int(st, 1, s->device);
        if (sqlite3_step(st) == SQLITE_ROW) {
            s->total_bytes = db_column_i64(st, 0, 0);
            s->peak_allocated = db_column_i64(st, 1, 0);
            s->peak_allocated_event = db_column_i64(st, 2, 0);
            s->peak_requested = db_column_i64(st, 3, 0);
            s->peak_reserved = db_column_i64(st, 4, 0);
            s->peak_reserved_event = db_column_i64(st, 5, 0);
            s->ooms = db_column_i64(st, 6, 0);
        }
    }
    sqlite3_finalize(st);
    /* the innermost step holding it, as report says it (when_describe) */
    static const char step_of[] = "SELECT step FROM steps WHERE end_event_id >= ?1 AND "
                                  "begin_event_id < ?1 ORDER BY begin_event_id DESC, step LIMIT 1";
    s->peak_allocated_step = db_query_i64(db, step_of, s->peak_allocated_event, 0, -1);
    s->peak_reserved_step = db_query_i64(db, step_of, s->peak_reserved_event, 0, -1);
    /* the free split at the peak (free_splits keeps one there) */
    st = db_statement(db, "SELECT reserved_bytes, allocated_bytes, trapped_bytes FROM free_splits"
                          " WHERE device = ?1 AND event_id = ?2");
    if (st) {
        sqlite3_bind_int(st, 1, s->device);
        sqlite3_bind_int64(st, 2, s->peak_allocated_event);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0) {
            double reserved = (double)sqlite3_column_int64(st, 0);
            s->frag_at_peak = (reserved - (double)sqlite3_column_int64(st, 1)) / reserved;
            s->trapped_at_peak = (double)sqlite3_column_int64(st, 2) / reserved;
        }
    }
    sqlite3_finalize(st);
    /* the free split at the end: free_splits keeps one at the device's last event, its last row */
    st = db_statement(db, "SELECT reserved_bytes, allocated_bytes, trapped_bytes FROM free_splits"
                          " WHERE device = ?1 ORDER BY event_id DESC LIMIT 1");
    if (st) {
        sqlite3_bind_int(st, 1, s->device);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0) {
            double reserved = (double)sqlite3_column_int64(st, 0);
            s->frag_at_end = (reserved - (double)sqlite3_column_int64(st, 1)) / reserved;
            s->trapped_at_end = (double)sqlite3_column_int64(st, 2) / reserved;
        }
    }
    sqlite3_finalize(st);
    /* the most segments at once, as event_rows.segments counts them (an expandable segment's
     * contiguous mapped range is one, not a row per page) */
    s->segments_max =
        db_query_i64(db, "SELECT peak_segments FROM devices WHERE device = ?1", s->device, 0, 0);
}

/* Fragmentation and the trapped ratio at every step end: their mean and maximum. */
static void read_step_fragmentation(sqlite3 *db, run_summary *s) {
    sqlite3_stmt *st = db_statement(
        /* steps first, each end then found by step_ends' key: SQLite chose the other order,
         * a scan of steps per step end (minutes at 70 k steps) */
        db, "SELECT e.allocated_bytes, e.reserved_bytes, f.trapped_bytes, f.reserved_bytes FROM "
            "steps s CROSS JOIN step_ends e ON e.device = ?1 AND e.end_event_id = s.end_event_id "
            "LEFT JOIN free_splits f ON f.device = e.device AND f.event_id = e.event_id ORDER BY "
            "e.end_event_id");
    if (!st)
        return;
    sqlite3_bind_int(st, 1, s->device);
    double frag_sum = 0, trapped_sum = 0;
    int64_t n = 0, with_split = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        double allocated = (double)sqlite3_column_int64(st, 0);
        double reserved = (double)sqlite3_column_int64(st, 1);
        double frag = reserved > 0 ? (reserved - allocated) / reserved : 0;
        frag_sum += frag;
        if (frag > s->frag_max)
            s->frag_max = frag;
        n++;
        if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
            double split_reserved = (double)sqlite3_column_int64(st, 3);
            double trapped =
                split_reserved > 0 ? (double)sqlite3_column_int64(st, 2) / split_reserved : 0;
            trapped_sum += trapped;
            if (trapped > s->trapped_max)
                s->trapped_max = trapped;
            with_split++;
        }
    }
    sqlite3_finalize(st);
    s->frag_mean = n ? frag_sum / (double)n : 0;
    s->trapped_mean = with_split ? trapped_sum / (double)with_split : 0;
}

static int read_steps(sqlite3 *db, run_summary *s, char *err, size_t errlen) {
    int64_t from, to;
    if (when_window(db, NULL, NULL, s->device, &from, &to, err, errlen) != 0)
        return -1;
    step_state *steps = NULL;
    size_t n = 0;
    if (analysis_steps(db, s->device, from, to, &steps, &n) != 0) {
        snprintf(err, errlen, "reading the steps: %s", sqlite3_errmsg(db));
        return -1;
    }
    s->steps = (int64_t)n;
    if (analysis_headroom(db, s->device, from, to, s->total_bytes, &s->growth_per_step,
                          &s->limit_step) != 0) {
        free(steps);
        snprintf(err, errlen, "reading the steps: %s", sqlite3_errmsg(db));
        return -1;
    }
    if (n) {
        s->allocated_at_step = malloc(n * sizeof *s->allocated_at_step);
        s->reserved_at_step = malloc(n * sizeof *s->reserved_at_step);
        s->step_numbers = malloc(n * sizeof *s->step_numbers);
        if (!s->allocated_at_step || !s->reserved_at_step || !s->step_numbers) {
            free(steps);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            s->allocated_at_step[i] = steps[i].at_end.allocated;
            s->reserved_at_step[i] = steps[i].at_end.reserved;
            s->step_numbers[i] = steps[i].step;
        }
    }
    free(steps);
    site_growth *growth = NULL;
    size_t ngrowth = 0, windows = 0;
    if (analysis_site_growth(db, s->device, from, to, &growth, &ngrowth, &windows) == 0 &&
        ngrowth && windows && growth[0].growth_per_step > 0) {
        s->top_growth_stack = growth[0].stack_id;
        s->top_growth_per_step = growth[0].growth_per_step;
        stack_label(db, s->top_growth_stack, s->top_growth_site, sizeof s->top_growth_site);
    }
    free(growth);
    return 0;
}

int run_summary_read(sqlite3 *db, int device, run_summary *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->limit_step = -1;
    out->device = device >= 0 ? device : when_default_device(db);
    if (db_query_i64(db, "SELECT count(*) FROM devices WHERE device = ?1", out->device, 0, 0) ==
        0) {
        snprintf(err, errlen, "no device %d", out->device);
        return -1;
    }
    read_meta(db, out);
    read_peaks(db, out);
    read_step_fragmentation(db, out);
    if (read_steps(db, out, err, errlen) != 0) {
        run_summary_release(out);
        return -1;
    }
    return 0;
}

void run_summary_release(run_summary *s) {
    free(s->allocated_at_step);
    free(s->reserved_at_step);
    free(s->step_numbers);
    s->allocated_at_step = s->reserved_at_step = s->step_numbers = NULL;
}

/* ---- sites, matched across runs by their frames ---------------------------------------- */

static int by_key(const void *a, const void *b) {
    return strcmp(((const run_site *)a)->key, ((const run_site *)b)->key);
}

int run_sites_at(sqlite3 *db, int device, int64_t event_id, stack_names *names, run_site **out,
                 size_t *count) {
    *out = NULL;
    *count = 0;
    if (event_id < 0)
        event_id = db_query_i64(db, "SELECT peak_allocated_event_id FROM devices WHERE device = ?1",
                                device, 0, 0);
    stack_bytes *top = NULL;
    size_t n = 0;
    /* every site: at most one per stack, and the stackless */
    size_t limit = (size_t)db_query_i64(db, "SELECT count(*) FROM stacks", 0, 0, 0) + 1;
    if (analysis_top_stacks_at(db, device, event_id, limit, &top, &n) != 0) {
        free(top);
        return -1;
    }
    run_site *sites = malloc((n ? n : 1) * sizeof *sites);
    if (!sites) {
        free(top);
        return -1;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const named_stack *stack = stack_names_get(names, top[i].stack_id);
        if (!stack) {
            free(top);
            free(sites);
            return -1;
        }
        sites[m++] = (run_site){stack->key, stack->site, stack, top[i].bytes};
    }
    free(top);
    qsort(sites, m, sizeof *sites, by_key);
    size_t k = 0; /* one site per key */
    for (size_t i = 0; i < m; i++) {
        if (k && !strcmp(sites[k - 1].key, sites[i].key))
            sites[k - 1].bytes += sites[i].bytes;
        else
            sites[k++] = sites[i];
    }
    if (run_sites_label(names, sites, k) != 0) {
        free(sites);
        return -1;
    }
    *out = sites;
    *count = k;
    return 0;
}

int run_sites_label(stack_names *names, run_site *sites, size_t n) {
    const named_stack **stacks = calloc(n ? n : 1, sizeof *stacks);
    char **labels = calloc(n ? n : 1, sizeof *labels);
    int rc = stacks && labels ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        stacks[i] = sites[i].stack;
        if (!(labels[i] = malloc(256)))
            rc = -1;
    }
    if (rc == 0)
        rc = stack_labels_distinct(stacks, n, labels, 256);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!(sites[i].label = stack_names_keep(names, labels[i])))
            rc = -1;
    for (size_t i = 0; labels && i < n; i++)
        free(labels[i]);
    free(stacks);
    free(labels);
    return rc;
}

int64_t run_site_bytes(const run_site *sites, size_t n, const char *key) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(sites[mid].key, key);
        if (c == 0)
            return sites[mid].bytes;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}
