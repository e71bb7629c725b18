/* report.c — `report`'s facts about the run as a whole (report.h): what was recorded and by
 * whom, its events, span and steps, the allocator settings in a line, the replay's warnings,
 * the window; and the report itself: the devices to look at, each one's facts gathered when
 * asked for (report_device.c), the categorizer they share. */
#include "report.h"

#include "db_query.h"
#include "gmt_vocab.h"
#include "report_internal.h"
#include "units.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct report {
    sqlite3 *db;
    report_options o;
    report_run run;
    int devices[GMT_MAX_DEVICES];
    size_t ndevices;
    categorizer *cats; /* shared by the devices' sweeps; NULL: none (cats_err says why) */
    char cats_err[256];
};

/* Whether text is one JSON object as far as braces and strings go (it is copied into report
 * --json as it is; a database given as input may hold anything, or a value cut by
 * db_meta_text's buffer). */
static int looks_like_object(const char *t) {
    int depth = 0, in_string = 0;
    for (const char *p = t; *p; p++) {
        if (in_string) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                in_string = 0;
        } else if (*p == '"') {
            in_string = 1;
        } else if (*p == '{') {
            depth++;
        } else if (*p == '}' && --depth == 0) {
            return p[1] == '\0';
        } else if (depth <= 0) {
            return 0;
        }
    }
    return 0;
}

/* meta `allocator_settings`, a JSON object as PyTorch names the settings; 0 (and "{}") when
 * the input says nothing about them. */
static int allocator_settings(sqlite3 *db, char *buf, size_t len) {
    db_meta_text(db, "allocator_settings", buf, len);
    if (buf[0] != '{' || !looks_like_object(buf)) {
        snprintf(buf, len, "{}");
        return 0;
    }
    return 1;
}

/* The value text after `"key": ` in a flat JSON object (our own meta JSON: strings without
 * escaped quotes, numbers, true/false, one nested object). */
static const char *json_field(const char *json, const char *key, char *buf, size_t len) {
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(json, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    /* a database given as input may hold anything: an unclosed value runs to the end */
    const char *close = *p == '{' ? strchr(p, '}') : *p == '"' ? strchr(p + 1, '"') : NULL;
    const char *end = close                    ? close + 1
                      : *p == '{' || *p == '"' ? p + strlen(p)
                                               : p + strcspn(p, ",}");
    snprintf(buf, len, "%.*s", (int)(end - p), p);
    return buf;
}

/* The settings people compare runs by, in a line: "expandable_segments True, max_split_size
 * 256 MiB, roundup_power2_divisions [1:4, 2:4], ...". */
static void settings_summary(const char *json, char *out, size_t len) {
    char v[512], b[32];
    size_t n = 0;
#define ADD(...) n += (size_t)snprintf(out + n, n < len ? len - n : 0, __VA_ARGS__)
    out[0] = 0;
    if (json_field(json, "expandable_segments", v, sizeof v))
        ADD("expandable_segments %s", !strcmp(v, "true") ? "True" : "False");
    if (json_field(json, "max_split_size", v, sizeof v))
        ADD("%smax_split_size %s", n ? ", " : "",
            atoll(v) < 0 ? "unlimited" : units_bytes((uint64_t)atoll(v), b, sizeof b));
    if (json_field(json, "roundup_power2_divisions", v, sizeof v)) {
        ADD("%sroundup_power2_divisions ", n ? ", " : "");
        int any = 0; /* {"1": 0, "2": 4, ...}: the intervals that round, keyed by MiB */
        for (const char *p = strchr(v, '"'); p; p = strchr(p + 1, '"')) {
            const char *q = strchr(p + 1, '"');
            if (!q)
                break;
            long d = strtol(q + 2 + (q[1] == ':' && q[2] == ' '), NULL, 10);
            if (d > 0)
                ADD("%s%.*s:%ld", any++ ? ", " : "[", (int)(q - p - 1), p + 1, d);
            p = q;
        }
        ADD("%s", any ? "]" : "off");
    }
    if (json_field(json, "garbage_collection_threshold", v, sizeof v) && atof(v) > 0)
        ADD("%sgarbage_collection_threshold %s", n ? ", " : "", v);
    if (json_field(json, "PYTORCH_CUDA_ALLOC_CONF", v, sizeof v) && strcmp(v, "\"\"") != 0)
        ADD("%sPYTORCH_CUDA_ALLOC_CONF=%s", n ? "; " : "", v);
#undef ADD
    if (!out[0]) /* settings we do not summarize: as they are */
        snprintf(out, len, "%.1000s", json);
}

static void read_run(sqlite3 *db, report_run *r) {
    db_meta_text(db, "input_format", r->input_format, sizeof r->input_format);
    db_meta_text(db, "producer", r->producer, sizeof r->producer);
    db_meta_text(db, "pid", r->pid, sizeof r->pid);
    if (!strcmp(r->pid, "0"))
        r->pid[0] = 0;
    db_meta_text(db, "host", r->host, sizeof r->host);
    db_meta_text(db, "command_line", r->command_line, sizeof r->command_line);
    /* from meta (a database of an older memanalyze: a scan of the events) */
    r->events = db_query_int(db,
                             "SELECT coalesce((SELECT value FROM meta WHERE key = "
                             "'recorded_events'), (SELECT count(*) FROM event_rows "
                             "WHERE event_id > 0))",
                             0);
    r->span_ns = db_query_int(db,
                              "SELECT coalesce((SELECT value FROM meta WHERE key = "
                              "'last_ts_ns'), (SELECT max(ts_ns) FROM event_rows))",
                              0);
    if (r->span_ns < 0)
        r->span_ns = 0;
    r->steps = db_query_int(db, "SELECT count(*) FROM steps", 0);
    r->first_step = r->steps ? db_query_int(db, "SELECT min(step) FROM steps", 0) : 0;
    r->last_step = r->steps ? db_query_int(db, "SELECT max(step) FROM steps", 0) : 0;
    r->history = when_has_history(db);
    r->timestamps = when_has_timestamps(db);
    r->have_settings = allocator_settings(db, r->settings_json, sizeof r->settings_json) &&
                       strcmp(r->settings_json, "{}") != 0;
    if (r->have_settings)
        settings_summary(r->settings_json, r->settings_line, sizeof r->settings_line);
    r->warnings_total = db_query_int(db, "SELECT value FROM meta WHERE key = 'warnings_total'", 0);
    r->truncated =
        db_query_int(db, "SELECT value FROM meta WHERE key='truncated_after_events'", -1) >= 0;
    /* A recording killed between two frames reads as whole but for its end record: absent
     * (a snapshot, an older database) is taken as ended. */
    r->ended = db_query_int(db, "SELECT value FROM meta WHERE key='clean_shutdown'", 1) != 0;
    r->windowed = r->from > 0 || r->to < analysis_last_event(db);
    if (r->windowed) {
        when_describe(db, r->from, r->from_when, sizeof r->from_when);
        when_describe(db, r->to, r->to_when, sizeof r->to_when);
    }
}

int report_open(sqlite3 *db, const report_options *o, report **out, char *err, size_t errlen) {
    *out = NULL;
    report *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        sqlite3_close(db);
        return -1;
    }
    r->db = db;
    r->o = *o;
    r->run.input = o->input;
    if (when_window(db, o->from, o->to, o->device, &r->run.from, &r->run.to, err, errlen) != 0) {
        report_close(r);
        return -1;
    }
    int ndev = analysis_devices(db, r->devices, GMT_MAX_DEVICES);
    if (o->device >= 0) {
        int found = 0;
        for (int i = 0; i < ndev; i++)
            found |= r->devices[i] == o->device;
        if (!found) {
            snprintf(err, errlen, "device %d has no events in %s", o->device, o->input);
            report_close(r);
            return -1;
        }
        r->devices[0] = o->device;
        ndev = 1;
    }
    r->ndevices = ndev > 0 ? (size_t)ndev : 0;
    read_run(db, &r->run);
    r->run.devices.bottleneck = -1;
    if (o->device < 0 && !r->run.windowed && device_balance_read(db, &r->run.devices) != 0) {
        snprintf(err, errlen, "reading the devices: %s", sqlite3_errmsg(db));
        report_close(r);
        return -1;
    }
    /* the categories are a sweep per device; what they share is read once */
    if (r->ndevices)
        r->cats = categorizer_new(db, o->rules, r->cats_err, sizeof r->cats_err);
    if (r->cats || !r->ndevices)
        r->cats_err[0] = 0; /* else it says why there are none */
    *out = r;
    return 0;
}

const report_run *report_run_of(const report *r) { return &r->run; }

void report_run_read(sqlite3 *db, const char *input, report_run *out) {
    memset(out, 0, sizeof *out);
    out->input = input;
    out->to = analysis_last_event(db);
    read_run(db, out);
    out->devices.bottleneck = -1;
}

size_t report_device_count(const report *r) { return r->ndevices; }

int report_device_id(const report *r, size_t i) { return r->devices[i]; }

const char *report_categories_error(const report *r) { return r->cats_err; }

int report_device_read(report *r, size_t i, report_device *out, char *err, size_t errlen) {
    if (report_device_build(r->db, r->cats, r->o.rules != NULL, r->devices[i], r->run.from,
                            r->run.to, r->o.top, out) != 0) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(r->db));
        return -1;
    }
    return 0;
}

void report_close(report *r) {
    if (!r)
        return;
    categorizer_free(r->cats);
    sqlite3_close(r->db);
    free(r);
}
