/* test_codec_damage.c — what a killed recorder or a bad disk leaves behind.
 *
 *  - a trace cut at EVERY byte offset opens (or, below 4 bytes, fails with a
 *    one-line error), yields exactly the events of its complete frames — a
 *    prefix — and says "truncated after N events" unless the cut falls on a
 *    frame boundary;
 *  - a single byte flipped at EVERY offset loses at most the frame holding
 *    it: the events read are the original ones minus whole frames, in order,
 *    and any loss comes with a warning carrying the frame's byte offset;
 *  - a reader that follows a growing file (trace_reader_follow), the file appended to in pieces
 *    of 1 to 300 bytes (cut anywhere, inside a frame's magic too), reads after each piece
 *    exactly the events of the complete frames so far, then the rest, with no warning;
 *  - random multi-byte damage never crashes (this test also runs under
 *    ASan/UBSan in `make test`);
 *  - `zstd -t` accepts what the writer makes. */
#include "check.h"
#include "trace_format.h"

#include <zstd.h>

static char tmpdir[] = "/tmp/gmt-damage-XXXXXX";
static char trace_path[300], cut_path[300];

static uint8_t *file_data;
static size_t file_len;
static trace_event *original;
static size_t original_count;
/* frame_start[i]: byte offset of frame i; frame_events_before[i]: events in
 * frames before it. One extra entry for the end of the file. */
static size_t frame_start[256], frame_events_before[256], frame_count;

static uint64_t rng = 0x243F6A8885A308D3ULL;
static uint64_t rnd(void) { return check_random(&rng); }

static void make_trace(void) {
    char err[256];
    trace_writer_options opt = {.chunk_bytes = 1024};
    trace_writer *w = trace_writer_open(trace_path, &opt, err, sizeof err);
    CHECK(w != NULL);
    if (!w)
        exit(1);
    uint32_t name = trace_writer_string(w, "step 1", 6);
    original_count = 800;
    original = calloc(original_count, sizeof *original);
    uint64_t ts = 1000;
    for (size_t i = 0; i < original_count; i++) {
        trace_event *ev = &original[i];
        ts += 100 + rnd() % 1000;
        ev->ts_ns = ts;
        ev->addr = 0x7f0000000000ULL + (rnd() % 1000) * 512;
        ev->size = ev->requested = (1 + rnd() % 64) * 512;
        ev->op = (uint8_t)(i % 2 ? TRACE_OP_FREE : TRACE_OP_ALLOC);
        ev->level = TRACE_LEVEL_BLOCK;
        ev->stack_id = (uint32_t)(rnd() % 50);
        ev->tid = 7;
        CHECK(trace_writer_event(w, ev) == 0);
        if (i % 100 == 0) {
            trace_marker m = {
                .ts_ns = ts, .tid = 7, .name_id = name, .kind = TRACE_MARK_RANGE_PUSH};
            CHECK(trace_writer_marker(w, &m) == 0);
        }
    }
    CHECK(trace_writer_close(w, NULL, err, sizeof err) == 0);

    FILE *f = fopen(trace_path, "rb");
    fseek(f, 0, SEEK_END);
    file_len = (size_t)ftell(f);
    rewind(f);
    file_data = malloc(file_len);
    CHECK(fread(file_data, 1, file_len, f) == file_len);
    fclose(f);

    /* Where the frames are, and how many events each holds (by decoding
     * each frame alone through the reader). */
    size_t off = 0;
    frame_count = 0;
    while (off < file_len && frame_count < 255) {
        size_t n = ZSTD_findFrameCompressedSize(file_data + off, file_len - off);
        CHECK(!ZSTD_isError(n));
        if (ZSTD_isError(n))
            exit(1);
        frame_start[frame_count++] = off;
        off += n;
    }
    frame_start[frame_count] = file_len;
}

static void write_bytes(const char *path, const uint8_t *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (len)
        fwrite(data, 1, len, f);
    fclose(f);
}

typedef struct read_result {
    int opened;
    size_t events;
    int prefix_ok;      /* events equal original[0..events) */
    int subsequence_ok; /* events appear in original, in order */
    int truncated;
    int warned_truncated_n; /* the warning names the right count */
    int warned_offset;      /* some warning names a byte offset */
    char first_warning[256];
} read_result;

static int event_eq(const trace_event *a, const trace_event *b) {
    return a->ts_ns == b->ts_ns && a->addr == b->addr && a->size == b->size && a->op == b->op &&
           a->stack_id == b->stack_id;
}

static read_result read_all(const char *path) {
    read_result res = {.prefix_ok = 1, .subsequence_ok = 1};
    char err[256];
    trace_reader *r = trace_reader_open(path, err, sizeof err);
    if (!r)
        return res;
    res.opened = 1;
    trace_record rec;
    size_t next_original = 0;
    while (trace_reader_next(r, &rec) == 1) {
        if (rec.kind != TRACE_REC_EVENT)
            continue;
        if (res.events >= original_count || !event_eq(&rec.u.event, &original[res.events]))
            res.prefix_ok = 0;
        while (next_original < original_count && !event_eq(&rec.u.event, &original[next_original]))
            next_original++;
        if (next_original == original_count)
            res.subsequence_ok = 0;
        else
            next_original++;
        res.events++;
    }
    const trace_reader_stats *st = trace_reader_get_stats(r);
    res.truncated = st->truncated;
    char expect[64];
    snprintf(expect, sizeof expect, "truncated after %zu events", res.events);
    for (size_t i = 0; i < trace_reader_warning_count(r); i++) {
        const char *wtext = trace_reader_warning(r, i);
        if (!wtext)
            break;
        if (i == 0)
            snprintf(res.first_warning, sizeof res.first_warning, "%s", wtext);
        if (strstr(wtext, expect))
            res.warned_truncated_n = 1;
        if (strstr(wtext, "byte offset"))
            res.warned_offset = 1;
    }
    trace_reader_close(r);
    return res;
}

static void test_frame_layout(void) {
    /* Each frame decodes on its own: reading frames [0, k) gives the event
     * counts per frame boundary that the cut test below expects. */
    CHECK(frame_count > 5);
    printf("trace of %zu bytes in %zu frames\n", file_len, frame_count);
    for (size_t k = 0; k <= frame_count; k++) {
        write_bytes(cut_path, file_data, frame_start[k]);
        read_result res = read_all(cut_path);
        frame_events_before[k] = res.events;
        if (k > 0) {
            CHECK(res.opened);
            CHECK(res.prefix_ok);
            CHECK(!res.truncated);
        }
    }
    CHECK_EQ_U64(frame_events_before[frame_count], original_count);
}

static void test_cut_at_every_byte(void) {
    size_t bad = 0;
    for (size_t cut = 0; cut < file_len; cut++) {
        write_bytes(cut_path, file_data, cut);
        read_result res = read_all(cut_path);
        if (cut < 4) {
            if (res.opened)
                bad++;
            continue;
        }
        size_t k = 0; /* complete frames before the cut */
        while (k < frame_count && frame_start[k + 1] <= cut)
            k++;
        int at_boundary = frame_start[k] == cut;
        int ok = res.opened && res.prefix_ok && res.events == frame_events_before[k] &&
                 res.truncated == !at_boundary && (at_boundary || res.warned_truncated_n);
        if (!ok && bad++ < 5)
            fprintf(stderr,
                    "cut at %zu: opened=%d events=%zu (want %zu) prefix=%d trunc=%d "
                    "warning='%s'\n",
                    cut, res.opened, res.events, frame_events_before[k], res.prefix_ok,
                    res.truncated, res.first_warning);
    }
    CHECK_EQ_U64(bad, 0);
}

static void test_follow_growing(void) {
    write_bytes(cut_path, file_data, frame_start[1]);
    char err[256];
    trace_reader *r = trace_reader_open(cut_path, err, sizeof err);
    CHECK(r != NULL);
    if (!r)
        return;
    trace_reader_follow(r);
    size_t have = frame_start[1], events = 0, bad = 0;
    int in_order = 1;
    trace_record rec;
    for (;;) {
        int got;
        while ((got = trace_reader_next(r, &rec)) == 1)
            if (rec.kind == TRACE_REC_EVENT &&
                !(events < original_count && event_eq(&rec.u.event, &original[events++])))
                in_order = 0;
        CHECK(got == 0);
        size_t k = 0; /* complete frames in the file now */
        while (k < frame_count && frame_start[k + 1] <= have)
            k++;
        if (events != frame_events_before[k] && bad++ < 5)
            fprintf(stderr, "following, at %zu bytes: %zu events, want %zu\n", have, events,
                    frame_events_before[k]);
        if (have == file_len)
            break;
        size_t n = 1 + rnd() % 300;
        if (n > file_len - have)
            n = file_len - have;
        FILE *f = fopen(cut_path, "ab");
        CHECK(f && fwrite(file_data + have, 1, n, f) == n);
        if (f)
            fclose(f);
        have += n;
    }
    CHECK(in_order);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(events, original_count);
    CHECK_EQ_U64(trace_reader_warning_count(r), 0);
    CHECK(!trace_reader_get_stats(r)->truncated);
    trace_reader_close(r);
}

static void test_flip_every_byte(void) {
    uint8_t *copy = malloc(file_len);
    size_t bad = 0, lossy = 0;
    for (size_t off = 0; off < file_len; off++) {
        memcpy(copy, file_data, file_len);
        copy[off] ^= (uint8_t)(1u << (off % 8));
        write_bytes(cut_path, copy, file_len);
        read_result res = read_all(cut_path);
        if (!res.opened) /* only the first frame's header can make it "not a trace" */
            continue;
        if (res.events < original_count)
            lossy++;
        /* The events of one frame at most are lost (two when the flip hits a
         * frame boundary's bytes), the rest intact and in order; loss is
         * reported with an offset. */
        size_t k = 0;
        while (k < frame_count && frame_start[k + 1] <= off)
            k++;
        size_t held = frame_events_before[k + 1] - frame_events_before[k];
        size_t next_held =
            k + 2 <= frame_count ? frame_events_before[k + 2] - frame_events_before[k + 1] : 0;
        int ok = res.subsequence_ok && res.events + held + next_held >= original_count &&
                 (res.events == original_count || res.warned_offset || res.truncated);
        if (!ok && bad++ < 5)
            fprintf(stderr, "flip at %zu (frame %zu): events=%zu of %zu subseq=%d warning='%s'\n",
                    off, k, res.events, original_count, res.subsequence_ok, res.first_warning);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK(lossy > file_len / 2); /* the checksum catches flips in frame content */
    free(copy);
}

static void test_random_damage(void) {
    uint8_t *copy = malloc(file_len + 64);
    for (int iter = 0; iter < 1500; iter++) {
        memcpy(copy, file_data, file_len);
        size_t len = file_len;
        int flips = 1 + (int)(rnd() % 8);
        for (int i = 0; i < flips; i++)
            copy[rnd() % len] = (uint8_t)rnd();
        if (rnd() % 4 == 0)
            len = rnd() % len;
        if (rnd() % 8 == 0) { /* a run of zeros, as a torn write leaves */
            size_t at = rnd() % len, n = rnd() % 300;
            if (at + n > len)
                n = len - at;
            memset(copy + at, 0, n);
        }
        write_bytes(cut_path, copy, len);
        read_result res = read_all(cut_path);
        CHECK(res.events <= original_count);
    }
    free(copy);
}

static void test_zstd_cli_accepts(void) {
    if (system("zstd --version >/dev/null 2>&1") != 0) {
        fprintf(stderr, "note: zstd CLI not installed; zstd -t check not run\n");
        return;
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "zstd -q -t %s", trace_path);
    CHECK(system(cmd) == 0);
    /* and decompresses to the concatenated frame contents */
    snprintf(cmd, sizeof cmd, "zstd -q -d -c %s | head -c 8 | grep -q GPUMEMTR", trace_path);
    CHECK(system(cmd) == 0);
}

int main(void) {
    if (!mkdtemp(tmpdir))
        return 1;
    snprintf(trace_path, sizeof trace_path, "%s/t.zst", tmpdir);
    snprintf(cut_path, sizeof cut_path, "%s/cut.zst", tmpdir);
    make_trace();
    test_frame_layout();
    test_cut_at_every_byte();
    test_follow_growing();
    test_flip_every_byte();
    test_random_damage();
    test_zstd_cli_accepts();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        return 1;
    free(file_data);
    free(original);
    return check_finish("test_codec_damage");
}
