/* bench_codec.c — encode and decode speed and size of the trace codec.
 *
 *   bench_codec TRACE [repeats]
 *
 * Loads every record of TRACE (made by samples/synth) into memory, then
 * times, on one core: encoding them all again with the writer (zstd level 1,
 * default frame size, to a file in /tmp: compression and write included),
 * and decoding that file with the reader to the end. Prints events/s, MB/s
 * (of the compressed file) and bytes/event. Best of `repeats` (default 3). */
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct stored {
    trace_record rec;
    char *text; /* deep copy of a string record's bytes */
    trace_symbol_entry *entries;
} stored;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int encode(const stored *recs, size_t n, const char *path) {
    char err[256];
    trace_writer *w = trace_writer_open(path, NULL, err, sizeof err);
    if (!w)
        return fprintf(stderr, "%s\n", err), -1;
    for (size_t i = 0; i < n; i++) {
        const trace_record *r = &recs[i].rec;
        switch (r->kind) {
        case TRACE_REC_EVENT:
            trace_writer_event(w, &r->u.event);
            break;
        case TRACE_REC_STRING:
            trace_writer_string(w, recs[i].text, r->u.string.text.len);
            break;
        case TRACE_REC_FRAME:
            trace_writer_frame(w, &r->u.frame);
            break;
        case TRACE_REC_STACK:
            trace_writer_stack(w, r->u.stack.parent_id, r->u.stack.frame_id);
            break;
        case TRACE_REC_MARKER:
            trace_writer_marker(w, &r->u.marker);
            break;
        case TRACE_REC_COUNTER:
            trace_writer_counter(w, &r->u.counter);
            break;
        case TRACE_REC_SYMBOL:
            trace_writer_symbol(w, &r->u.symbol);
            break;
        case TRACE_REC_THREAD:
            trace_writer_thread(w, &r->u.thread);
            break;
        default:
            break; /* process/device/module/end: a handful, strings omitted */
        }
    }
    return trace_writer_close(w, NULL, err, sizeof err);
}

static uint64_t decode(const char *path) {
    char err[256];
    trace_reader *r = trace_reader_open(path, err, sizeof err);
    if (!r)
        return fprintf(stderr, "%s\n", err), 0;
    trace_record rec;
    uint64_t events = 0, checksum = 0;
    while (trace_reader_next(r, &rec) == 1) {
        if (rec.kind == TRACE_REC_EVENT) {
            events++;
            checksum += rec.u.event.addr ^ rec.u.event.size; /* use what was decoded */
        }
    }
    trace_reader_close(r);
    if (checksum == 42)
        fprintf(stderr, " ");
    return events;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_codec TRACE [repeats]\n");
        return 2;
    }
    int repeats = argc > 2 ? atoi(argv[2]) : 3;
    char err[256];
    trace_reader *r = trace_reader_open(argv[1], err, sizeof err);
    if (!r)
        return fprintf(stderr, "bench_codec: %s\n", err), 2;
    size_t n = 0, cap = 1 << 20;
    stored *recs = malloc(cap * sizeof *recs);
    uint64_t events = 0;
    trace_record rec;
    while (trace_reader_next(r, &rec) == 1) {
        if (n == cap)
            recs = realloc(recs, (cap *= 2) * sizeof *recs);
        stored *s = &recs[n++];
        memset(s, 0, sizeof *s);
        s->rec = rec;
        if (rec.kind == TRACE_REC_STRING)
            s->text = strndup(rec.u.string.text.ptr, rec.u.string.text.len);
        if (rec.kind == TRACE_REC_SYMBOL) {
            s->entries = malloc(rec.u.symbol.count * sizeof *s->entries + 1);
            memcpy(s->entries, rec.u.symbol.entries, rec.u.symbol.count * sizeof *s->entries);
            s->rec.u.symbol.entries = s->entries;
        }
        events += rec.kind == TRACE_REC_EVENT;
    }
    trace_reader_close(r);

    char out[] = "/tmp/bench-codec-XXXXXX";
    int fd = mkstemp(out);
    if (fd < 0)
        return 2;
    close(fd);
    double best_enc = 1e30, best_dec = 1e30;
    uint64_t decoded = 0;
    for (int i = 0; i < repeats; i++) {
        double t0 = now();
        if (encode(recs, n, out) != 0)
            return 2;
        double t1 = now();
        decoded = decode(out);
        double t2 = now();
        if (t1 - t0 < best_enc)
            best_enc = t1 - t0;
        if (t2 - t1 < best_dec)
            best_dec = t2 - t1;
    }
    FILE *f = fopen(out, "rb");
    fseek(f, 0, SEEK_END);
    double bytes = (double)ftell(f);
    fclose(f);
    unlink(out);
    if (decoded != events)
        return fprintf(stderr, "bench_codec: decoded %llu of %llu events\n",
                       (unsigned long long)decoded, (unsigned long long)events),
               1;
    printf("%s: %llu events, %zu records, %.0f bytes\n", argv[1], (unsigned long long)events, n,
           bytes);
    printf("  encode: %6.1f M events/s  %7.1f MB/s out  (%.3f s)\n", events / best_enc / 1e6,
           bytes / best_enc / 1e6, best_enc);
    printf("  decode: %6.1f M events/s  %7.1f MB/s in   (%.3f s)\n", events / best_dec / 1e6,
           bytes / best_dec / 1e6, best_dec);
    printf("  size:   %.2f bytes/event\n", bytes / events);
    for (size_t i = 0; i < n; i++) {
        free(recs[i].text);
        free(recs[i].entries);
    }
    free(recs);
    return 0;
}
