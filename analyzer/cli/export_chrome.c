/* export_chrome.c — `export --to chrome-json` (export_perfetto.h): timeline_export.h's
 * counters, slices and instants as Chrome's trace-event JSON ({"traceEvents": [...],
 * "displayTimeUnit": "ns"}), for small inputs and the viewers that read it (chrome://tracing,
 * Perfetto's legacy importer, speedscope). Streamed: an event is written as it comes, nothing
 * kept but the stack labels (stack_names.h's cache) and the range lanes.
 *
 * Per device a process ("ph":"M" names it) with a counter per total ("ph":"C", "allocated",
 * "reserved", "requested": one name each, so a viewer does not stack them) and, when the
 * analyzer knows categories, per category that has bytes ("allocated: activation", ...: they
 * sum to allocated after every event), an instant per
 * allocation on thread 1 (its bytes, address, stream and site) and per OOM on thread 2 ("s":"p"
 * and its facts); a process "steps and ranges" with the steps ("ph":"X") on thread 0 and the
 * ranges on lanes as export_perfetto.c makes them. Times in µs ("ts", three decimals: ns), shifted
 * as in perfetto. Refused above EXPORT_CHROME_MAX_EVENTS events, before anything is written:
 * ~275 B per event (measured on synth), 1 M events make ~275 MB, about where Chrome's JSON
 * loader gives up (it holds the whole text, then the parsed objects). */
#include "export_perfetto.h"

#include "gmt_vocab.h"
#include "json_out.h"
#include "stack_names.h"
#include "timeline_export.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LANES 4096
#define MARKERS_PID 99999

typedef struct chrome {
    FILE *f;
    stack_names *names;
    int64_t shift;
    int64_t last[256][3];
    int64_t cat_last[256][BLOCK_CATEGORY_COUNT]; /* 0 until a category has bytes */
    int pid[256];
    int64_t lane_tid[MAX_LANES], lane_end[MAX_LANES];
    int nlanes;
    char *err;
    size_t errlen;
} chrome;

static void ts(FILE *f, const chrome *c, int64_t ns) {
    int64_t t = ns + c->shift;
    if (t < 0)
        t = 0;
    fprintf(f, "%" PRId64 ".%03d", t / 1000, (int)(t % 1000));
}

static const char *const counter_names[3] = {"allocated", "reserved", "requested"};

static int on_event(void *ctx, const tl_event *e) {
    chrome *c = ctx;
    FILE *f = c->f;
    if (!c->pid[e->device])
        return 0; /* a device the devices table does not list */
    int64_t now[3] = {e->allocated, e->reserved, e->requested};
    for (int k = 0; k < 3; k++) {
        if (now[k] == c->last[e->device][k])
            continue;
        c->last[e->device][k] = now[k];
        fprintf(f, ",\n{\"ph\":\"C\",\"name\":\"%s\",\"pid\":%d,\"ts\":", counter_names[k],
                c->pid[e->device]);
        ts(f, c, e->ts_ns);
        fprintf(f, ",\"args\":{\"bytes\":%" PRId64 "}}", now[k]);
        export_timeline_last.counter_samples++;
    }
    for (int k = 0; e->categories && k < BLOCK_CATEGORY_COUNT; k++) {
        if (e->categories[k] == c->cat_last[e->device][k])
            continue;
        c->cat_last[e->device][k] = e->categories[k];
        fprintf(f, ",\n{\"ph\":\"C\",\"name\":\"allocated: %s\",\"pid\":%d,\"ts\":",
                gmt_category_name((gmt_category)k), c->pid[e->device]);
        ts(f, c, e->ts_ns);
        fprintf(f, ",\"args\":{\"bytes\":%" PRId64 "}}", e->categories[k]);
        export_timeline_last.counter_samples++;
    }
    if (e->kind == TL_ALLOC) {
        const named_stack *s = stack_names_get(c->names, e->stack_id);
        if (!s) {
            snprintf(c->err, c->errlen, "out of memory");
            return -1;
        }
        fprintf(f, ",\n{\"ph\":\"i\",\"s\":\"t\",\"name\":\"alloc\",\"pid\":%d,\"tid\":1,\"ts\":",
                c->pid[e->device]);
        ts(f, c, e->ts_ns);
        fprintf(f,
                ",\"args\":{\"bytes\":%" PRIu64 ",\"addr\":\"0x%" PRIx64 "\",\"stream\":%" PRIu64
                ",\"event\":%" PRId64 ",\"site\":",
                e->size, e->addr, e->stream, e->event_id);
        json_string(f, s->site ? s->site : "no stack");
        fputs("}}", f);
        export_timeline_last.allocations++;
    } else if (e->kind == TL_OOM) {
        fprintf(f, ",\n{\"ph\":\"i\",\"s\":\"p\",\"name\":\"OOM\",\"pid\":%d,\"tid\":2,\"ts\":",
                c->pid[e->device]);
        ts(f, c, e->ts_ns);
        fprintf(f,
                ",\"args\":{\"requested_bytes\":%" PRIu64 ",\"allocated_bytes\":%" PRId64
                ",\"reserved_bytes\":%" PRId64 ",\"event\":%" PRId64,
                e->size, e->allocated, e->reserved, e->event_id);
        if (e->largest_free >= 0)
            fprintf(f, ",\"largest_free_block\":%" PRId64, e->largest_free);
        if (e->driver_free >= 0)
            fprintf(f, ",\"driver_free_bytes\":%" PRId64, e->driver_free);
        fputs("}}", f);
        export_timeline_last.ooms++;
    }
    return 0;
}

static int on_slice(void *ctx, int is_step, const tl_slice *s) {
    chrome *c = ctx;
    int tid = 0;
    if (!is_step) {
        int k = 0;
        while (k < c->nlanes && (c->lane_tid[k] != s->tid || c->lane_end[k] > s->begin_ts_ns))
            k++;
        if (k == c->nlanes) {
            if (c->nlanes == MAX_LANES) {
                snprintf(c->err, c->errlen, "more than %d NVTX ranges open at once", MAX_LANES);
                return -1;
            }
            c->lane_tid[c->nlanes++] = s->tid;
            char name[64];
            if (s->tid >= 0)
                snprintf(name, sizeof name, "ranges, thread %lld", (long long)s->tid);
            else
                snprintf(name, sizeof name, "ranges");
            fprintf(c->f,
                    ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                    "\"args\":{\"name\":\"%s\"}}",
                    MARKERS_PID, k + 1, name);
        }
        c->lane_end[k] = s->end_ts_ns;
        tid = k + 1;
    }
    fprintf(c->f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"name\":", MARKERS_PID, tid);
    json_string(c->f, s->name);
    fputs(",\"ts\":", c->f);
    ts(c->f, c, s->begin_ts_ns);
    int64_t dur = s->end_ts_ns - s->begin_ts_ns;
    fprintf(c->f, ",\"dur\":%" PRId64 ".%03d}", dur / 1000, (int)(dur % 1000));
    export_timeline_last.slices++;
    return 0;
}

int export_chrome_fill(FILE *f, void *ctx, char *err, size_t errlen) {
    sqlite3 *db = ctx;
    int64_t events = timeline_export_event_count(db);
    if (events > EXPORT_CHROME_MAX_EVENTS) {
        snprintf(err, errlen,
                 "%lld events: --to chrome-json writes at most %d (Chrome's JSON loader fails on "
                 "files of a few hundred MB); use --to perfetto",
                 (long long)events, EXPORT_CHROME_MAX_EVENTS);
        return -1;
    }
    chrome *c = calloc(1, sizeof *c);
    if (!c || !(c->names = stack_names_new(db))) {
        free(c);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(&export_timeline_last, 0, sizeof export_timeline_last);
    c->f = f;
    c->err = err;
    c->errlen = errlen;
    int64_t earliest = timeline_export_earliest(db);
    c->shift = earliest < 0 ? -earliest : 0;
    int devs[256], ndev = timeline_export_devices(db, devs, 256), rank = timeline_export_rank(db),
                   timed = timeline_export_timed(db);
    export_timeline_last.devices = ndev;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
    fprintf(f,
            "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"steps "
            "and ranges\"}}",
            MARKERS_PID);
    for (int i = 0; i < 256; i++)
        for (int k = 0; k < 3; k++)
            c->last[i][k] = -1;
    for (int i = 0; i < ndev; i++) {
        int d = devs[i];
        c->pid[d] = 100000 + (rank >= 0 ? rank : 0) * 1000 + d;
        char name[128];
        if (rank >= 0)
            snprintf(name, sizeof name, "rank %d GPU %d%s", rank, d,
                     timed ? "" : " (no times: the order only)");
        else
            snprintf(name, sizeof name, "GPU %d%s", d, timed ? "" : " (no times: the order only)");
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":",
                c->pid[d]);
        json_string(f, name);
        fputs("}}", f);
        fprintf(f,
                ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":1,\"args\":{"
                "\"name\":\"allocations\"}},\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,"
                "\"tid\":2,\"args\":{\"name\":\"OOMs\"}}",
                c->pid[d], c->pid[d]);
    }
    fprintf(f,
            ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":0,\"args\":{"
            "\"name\":\"steps\"}}",
            MARKERS_PID);
    int rc = timeline_export_events(db, on_event, c, err, errlen);
    if (rc == 0)
        rc = timeline_export_slices(db, on_slice, c, err, errlen);
    fputs("\n]}\n", f);
    stack_names_free(c->names);
    free(c);
    return rc;
}
