/* test_snapshot_records.c — a snapshot replayed straight from the importer gets the records a
 * reader of its trace file yields.
 *
 * The analyzer replays a snapshot from a sink writer (snapshot_import_source, no file between
 * the importer and the replay); the trace file (snapshot_import_file) is what bench/ and
 * earlier builds replayed. For every snapshot at hand — the real ones in ../shared, the
 * Python-written ones, the simulated ones of make_pickles.py --snapshots (expandable segments
 * on two devices, an OOM, no time_us, settings, training loops) — the two record streams must be
 * the same record for record, field for field, text for text; the replay is a function of its
 * records, so its database is then the same too. Each stream is also read twice, as the
 * replay's two passes do. */
#include "check.h"
#include "pickle_build.h"
#include "snapshot_import.h"
#include "trace_format.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Records as text lines, every field and every byte of text. */
typedef struct stream {
    char *text;
    size_t len, cap;
    size_t records;
} stream;

static void put(stream *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(stream *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (s->len + (size_t)n + 1 > s->cap) {
        s->cap = (s->len + (size_t)n + 1) * 2;
        s->text = realloc(s->text, s->cap);
    }
    va_start(ap, fmt);
    vsnprintf(s->text + s->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s->len += (size_t)n;
}

/* Text as its length and bytes; a pointer the reader would give is never NULL and ends in NUL. */
static void put_bytes(stream *s, trace_bytes b) {
    CHECK(b.ptr != NULL && b.ptr[b.len] == '\0');
    put(s, " %u:%.*s", b.len, (int)b.len, b.ptr ? b.ptr : "");
}

static int record_line(void *ctx, const trace_record *r) {
    stream *s = ctx;
    s->records++;
    put(s, "%u", (unsigned)r->kind);
    switch (r->kind) {
    case TRACE_REC_EVENT: {
        const trace_event *e = &r->u.event;
        put(s, " %llu %llx %llu %llu %llu %llu %u %u %u %u %u %u %u", (unsigned long long)e->ts_ns,
            (unsigned long long)e->addr, (unsigned long long)e->size,
            (unsigned long long)e->requested, (unsigned long long)e->stream,
            (unsigned long long)e->pool, e->stack_id, e->tid, e->device, e->op, e->level, e->kind,
            e->source);
        break;
    }
    case TRACE_REC_PROCESS: {
        const trace_process *p = &r->u.process;
        put(s, " %u %u %d %llu %llu", p->pid, p->ppid, p->rank,
            (unsigned long long)p->wall_anchor_ns, (unsigned long long)p->clock_anchor_ns);
        put_bytes(s, p->host);
        put_bytes(s, p->cmdline);
        put_bytes(s, p->clock_source);
        put_bytes(s, p->producer);
        break;
    }
    case TRACE_REC_DEVICE:
        put(s, " %u %llu", r->u.device.device, (unsigned long long)r->u.device.total_bytes);
        put_bytes(s, r->u.device.name);
        break;
    case TRACE_REC_STRING:
        put(s, " %u", r->u.string.string_id);
        put_bytes(s, r->u.string.text);
        break;
    case TRACE_REC_FRAME: {
        const trace_frame *f = &r->u.frame;
        put(s, " %u %u %u %llx %u %u %u", f->frame_id, f->kind, f->module_id,
            (unsigned long long)f->ip, f->function_id, f->file_id, f->line);
        break;
    }
    case TRACE_REC_STACK:
        put(s, " %u %u %u", r->u.stack.stack_id, r->u.stack.parent_id, r->u.stack.frame_id);
        break;
    case TRACE_REC_MARKER: {
        const trace_marker *m = &r->u.marker;
        put(s, " %llu %llu %lld %u %u %u %u", (unsigned long long)m->ts_ns,
            (unsigned long long)m->range_id, (long long)m->value, m->tid, m->domain_id, m->name_id,
            m->kind);
        break;
    }
    case TRACE_REC_COUNTER: {
        const trace_counter *c = &r->u.counter;
        put(s, " %llu %llu %llu %u %u", (unsigned long long)c->ts_ns, (unsigned long long)c->key,
            (unsigned long long)c->value, c->device, c->kind);
        break;
    }
    case TRACE_REC_END:
        put(s, " %llu %llu %llu %u", (unsigned long long)r->u.end.ts_ns,
            (unsigned long long)r->u.end.events, (unsigned long long)r->u.end.dropped,
            r->u.end.flags);
        break;
    default: /* the importer writes no other kind */
        put(s, " ?");
        CHECK(0);
        break;
    }
    put(s, "\n");
    return 0;
}

/* The first line where two streams differ, for the message. */
static void report_difference(const char *path, const stream *a, const stream *b) {
    size_t i = 0, line = 1, start = 0;
    while (i < a->len && i < b->len && a->text[i] == b->text[i]) {
        if (a->text[i] == '\n') {
            line++;
            start = i + 1;
        }
        i++;
    }
    fprintf(stderr, "%s: record %zu differs:\n  file: %.*s\n  sink: %.*s\n", path, line,
            (int)strcspn(a->text + start, "\n"), a->text + start,
            (int)strcspn(b->text + start, "\n"), b->text + start);
}

static void check_snapshot(const char *path) {
    char err[512], trace[] = "/tmp/test_snapshot_records.XXXXXX";
    int fd = mkstemp(trace);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    close(fd);
    stream from_file = {0}, from_sink[2] = {{0}, {0}};
    snapshot_facts facts[2];
    int file_rc = snapshot_import_file_facts(path, trace, &facts[0], err, sizeof err);
    if (file_rc == 0) {
        trace_reader *r = trace_reader_open(trace, err, sizeof err);
        CHECK(r != NULL);
        trace_record rec;
        int more;
        while (r && (more = trace_reader_next(r, &rec)) == 1)
            record_line(&from_file, &rec);
        trace_reader_close(r);
    }
    unlink(trace);
    char sink_err[512];
    snapshot_import *imp = snapshot_import_open(path, &facts[1], sink_err, sizeof sink_err);
    CHECK((imp == NULL) == (file_rc != 0));
    if (!imp) { /* the same refusal both ways */
        if (file_rc != 0)
            CHECK_STR_EQ(sink_err, err);
        goto done;
    }
    for (int pass = 0; pass < 2; pass++)
        CHECK(snapshot_import_source(imp, record_line, &from_sink[pass], sink_err,
                                     sizeof sink_err) == 0);
    snapshot_import_close(imp);
    CHECK(memcmp(&facts[0].settings, &facts[1].settings, sizeof facts[0].settings) == 0 &&
          !strcmp(facts[0].settings_source, facts[1].settings_source) &&
          facts[0].timestamps == facts[1].timestamps && facts[0].history == facts[1].history);
    CHECK(from_file.records > 0 && from_sink[0].records == from_file.records);
    for (int pass = 0; pass < 2; pass++) {
        int same = from_sink[pass].len == from_file.len &&
                   (!from_file.len || !memcmp(from_sink[pass].text, from_file.text, from_file.len));
        if (!same) {
            report_difference(path, &from_file, &from_sink[pass]);
            check_failures++;
        }
    }
done:
    free(from_file.text);
    free(from_sink[0].text);
    free(from_sink[1].text);
}

/* Every *.pickle in dir; how many. */
static size_t check_folder(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    char path[8400];
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 8 || strcmp(e->d_name + len - 7, ".pickle") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        check_snapshot(path);
        n++;
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv) {
    find_source_dir(argc, argv);
    char tmpl[] = "/tmp/test_snapshot_records.d.XXXXXX";
    char *dir = python_pickles_make(tmpl, "Python-written and simulated snapshots");
    if (dir) {
        char cmd[9000], made[4200];
        snprintf(made, sizeof made, "%s/made", dir);
        snprintf(cmd, sizeof cmd, "python3 '%s/tests/make_pickles.py' --snapshots '%s'", source_dir,
                 made);
        CHECK(system(cmd) == 0);
        CHECK(check_folder(dir) >= 7);  /* values (not snapshots: refused alike) and two */
        CHECK(check_folder(made) >= 5); /* the simulated ones */
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
    char real[4200];
    int have_real = real_snapshots_dir(real, sizeof real) && check_folder(real) > 0;
    return finish_or_skip("test_snapshot_records", have_real);
}
