/* export_perfetto.c — `export --to perfetto` (export_perfetto.h): timeline_export.h's facts as
 * Perfetto's TracePacket stream (protos/perfetto/trace/: trace.proto, trace_packet.proto,
 * track_event/ (track_event, track_descriptor, counter_descriptor, debug_annotation,
 * process_descriptor), interned_data/interned_data.proto, profiling/profile_common.proto), written
 * field by field through proto_write.h. A printer: the facts are timeline_export.h's.
 *
 * Tracks: a process per (rank, device) with three counter tracks (allocated, reserved,
 * requested; unit UNIT_SIZE_BYTES), one more per category when the analyzer knows them
 * ("allocated: activation", ...: each category's live bytes, which sum to allocated; a track
 * written before the first value of a category that has bytes, none for the others), and two
 * instant tracks, "allocations" and "OOMs"; a process
 * "steps and ranges" with a track of steps and the NVTX ranges on lanes (a lane per thread and
 * depth: a range goes on the first lane of its thread that is free at its begin, so slices on
 * a track never overlap). Events: a counter sample per event that changes a total (one
 * TrackEvent: the first changed counter as counter_value, the others as
 * extra_counter_values); an allocation is an instant with its callstack (callstack_iid) and
 * callstack_weight = its bytes (selecting a window in Perfetto shows who allocated in it as a
 * flame graph) carrying the totals after it as extra counter values (no packet of its own for
 * them); an OOM an instant with its facts as debug annotations; steps and ranges slices.
 *
 * Interning (on the events' sequence, id 1; its first packet clears the incremental state,
 * the packets that use interned ids say they need it): event and annotation names in the first
 * packet, a frame's label as a function name and a frame (one iid for both) and a stack's shown
 * frames (stack_names.h's flame-graph frames, outermost first) as a Callstack, each in the
 * packet that first uses it. Counters are deltas (CounterDescriptor.is_incremental: each value
 * adds to the track's last, from 0 where the incremental state is cleared): TrackEvent's counter
 * values are int64, so a negative delta takes 10 bytes, but a delta repeats (the same sizes come
 * and go) where a total does not, and the bundles deflate ~20 % smaller than with totals.
 *
 * Times: ts_ns shifted so that the earliest (a marker before the first event) is 0. The events
 * are on a clock of their sequence counting microseconds, each packet's timestamp the
 * microseconds since the one before (a sequence-scoped clock, ClockSnapshot.Clock
 * is_incremental with unit_multiplier_ns 1000, the sequence's TracePacketDefaults): nanosecond
 * times were 90 % of the deflated bytes (a synth run: 5.7 of 5.9 B/event; its times' low bits
 * are noise no deflate removes), microsecond deltas take one byte. Microseconds are what
 * PyTorch's snapshots and Chrome's JSON have; two events of one microsecond keep their order
 * (the file's). The slices keep nanoseconds, on a sequence of their own (id 2): they are
 * written after every event, and an incremental clock cannot go back.
 *
 * Size: the packets are written in bundles of up to BUNDLE_BYTES, each deflated (zlib, level
 * ZLIB_LEVEL) into one TracePacket's compressed_packets, as Perfetto's own service writes them
 * (its trace processor inflates them; a bundle stays under the 512 KB it asks for): ~2.9 B per
 * event instead of ~35 (a synth run). A build without zlib writes the packets as they are. */
#include "export_perfetto.h"

#include "addr_map.h"
#include "gmt_hash.h"
#include "gmt_vocab.h"
#include "proto_write.h"
#include "stack_names.h"
#include "timeline_export.h"

#include <stdlib.h>
#include <string.h>
#ifdef GMT_HAVE_ZLIB
#include <zlib.h>
#endif

export_timeline_counts export_timeline_last;

/* Field numbers of the upstream protos (tests/perfetto/perfetto_subset.proto names them). */
enum {
    TRACE_PACKET = 1,
    PKT_CLOCK_SNAPSHOT = 6,
    PKT_TIMESTAMP = 8,
    PKT_TIMESTAMP_CLOCK_ID = 58,
    PKT_TRACE_PACKET_DEFAULTS = 59,
    TPD_TIMESTAMP_CLOCK_ID = 58,
    CS_CLOCKS = 1,
    CLOCK_ID = 1,
    CLOCK_TIMESTAMP = 2,
    CLOCK_IS_INCREMENTAL = 3,
    CLOCK_UNIT_MULTIPLIER_NS = 4,
    BUILTIN_CLOCK_BOOTTIME = 6,
    PKT_SEQUENCE_ID = 10,
    PKT_TRACK_EVENT = 11,
    PKT_INTERNED_DATA = 12,
    PKT_SEQUENCE_FLAGS = 13,
    PKT_TRACK_DESCRIPTOR = 60,
    PKT_COMPRESSED_PACKETS = 50,
    SEQ_INCREMENTAL_STATE_CLEARED = 1,
    SEQ_NEEDS_INCREMENTAL_STATE = 2,
    TD_UUID = 1,
    TD_NAME = 2,
    TD_PROCESS = 3,
    TD_PARENT_UUID = 5,
    TD_COUNTER = 8,
    PD_PID = 1,
    PD_PROCESS_NAME = 6,
    CD_UNIT = 3,
    CD_IS_INCREMENTAL = 5,
    UNIT_SIZE_BYTES = 3,
    TE_DEBUG_ANNOTATIONS = 4,
    TE_TYPE = 9,
    TE_NAME_IID = 10,
    TE_TRACK_UUID = 11,
    TE_EXTRA_COUNTER_VALUES = 12,
    TE_NAME = 23,
    TE_COUNTER_VALUE = 30,
    TE_EXTRA_COUNTER_TRACK_UUIDS = 31,
    TE_CALLSTACK_IID = 56,
    TE_CALLSTACK_WEIGHT = 57,
    TYPE_SLICE_BEGIN = 1,
    TYPE_SLICE_END = 2,
    TYPE_INSTANT = 3,
    TYPE_COUNTER = 4,
    DA_NAME_IID = 1,
    DA_INT_VALUE = 4,
    ID_EVENT_NAMES = 2,
    ID_DEBUG_ANNOTATION_NAMES = 3,
    ID_FUNCTION_NAMES = 5,
    ID_FRAMES = 6,
    ID_CALLSTACKS = 7,
    IID = 1,       /* every interned message's iid */
    IID_VALUE = 2, /* EventName.name, DebugAnnotationName.name, InternedString.str */
    FRAME_FUNCTION_NAME_ID = 2,
    CALLSTACK_FRAME_IDS = 2,
};

/* The names interned in the first packet. */
enum { NAME_ALLOC = 1, NAME_OOM };
static const char *const event_names[] = {NULL, "alloc", "OOM"};
enum { ANN_REQUESTED = 1, ANN_ALLOCATED, ANN_RESERVED, ANN_LARGEST_FREE, ANN_DRIVER_FREE };
static const char *const annotation_names[] = {NULL,
                                               "requested_bytes",
                                               "allocated_bytes",
                                               "reserved_bytes",
                                               "largest_free_block",
                                               "driver_free_bytes"};

/* The sequences: the events' (interned names, frames, callstacks; the microsecond clock), and
 * the slices' (steps and ranges, plain names, absolute nanoseconds: they come after every event
 * and would go back in time on an incremental clock). */
#define EVENTS_SEQUENCE 1
#define SLICES_SEQUENCE 2
/* The events' clock: sequence-scoped (ids 64-127), each packet's timestamp the microseconds
 * since the packet before it on this clock (ClockSnapshot.Clock is_incremental,
 * unit_multiplier_ns 1000), from 0 at the snapshot, which is the trace clock's (BOOTTIME) 0. */
#define EVENTS_CLOCK 64
/* Deflate's effort: level 3 made a synth run's file 17 % smaller than level 1 at the same speed
 * (1 M events: 5.9 vs 7.1 B/event with nanosecond times, 0.40 vs 0.36 s of CPU); 6 took 1.5x
 * the time for 9 % more. */
#define ZLIB_LEVEL 3
#define MAX_LANES 4096
#define BUNDLE_BYTES (384u << 10)

/* Track uuids, small so that their varints are (an event names two or three): a device's
 * process 16 * (d + 1), its tracks + 1 ... + 5, its categories' + 6 ... + 13; the markers'
 * process 1, its steps 2, its lanes 2^20 + k. */
#define DEV_UUID(d) (16 * ((uint64_t)(d) + 1))
enum { T_ALLOCATED = 1, T_RESERVED, T_REQUESTED, T_ALLOCS, T_OOMS, T_CATEGORY };
_Static_assert(T_CATEGORY + BLOCK_CATEGORY_COUNT <= 16, "a device's tracks fit its 16 uuids");
/* A device's counters: the three totals, then one per category. */
#define NCOUNTERS (3 + BLOCK_CATEGORY_COUNT)
#define MARKERS_UUID 1
#define STEPS_UUID 2
#define LANE_UUID(k) ((1u << 20) + (uint64_t)(k))

typedef struct label_slot {
    uint64_t hash, iid; /* iid 0: empty */
    char *text;
} label_slot;

typedef struct lane {
    int64_t tid, end;
} lane;

typedef struct pf {
    FILE *f;
    sqlite3 *db;
    proto_buf b;      /* the packets of the bundle being made */
    proto_buf outer;  /* a compressed bundle's packet */
    unsigned char *z; /* the deflated bundle */
    size_t zcap;
    stack_names *names;
    addr_map stacks; /* stack_id -> callstack iid */
    label_slot *labels;
    size_t label_mask, nlabels;
    uint64_t next_frame, next_stack;
    int64_t shift;    /* added to every ts_ns */
    uint64_t last_us; /* the events' clock: the microsecond of the last timed packet */
    lane lanes[MAX_LANES];
    int nlanes;
    int64_t last[256][NCOUNTERS];              /* each device's counters as last written (0: the
                                                  incremental base): the totals, then the categories */
    char cat_track[256][BLOCK_CATEGORY_COUNT]; /* a category's track written */
    char started[256]; /* a device's first totals written (all three, even a 0) */
    char known[256];   /* the devices with tracks */
    char *err;
    size_t errlen;
} pf;

static uint64_t ts_of(const pf *p, int64_t ts) {
    int64_t t = ts + p->shift;
    return t > 0 ? (uint64_t)t : 0;
}

/* Writes the bundle's packets: deflated into one packet (with zlib), else as they are. 0, or
 * -1 (err set); a write error is left to the caller's ferror. */
static int flush_bundle(pf *p) {
    if (!p->b.n)
        return 0;
#ifdef GMT_HAVE_ZLIB
    uLongf zn = compressBound(p->b.n);
    if (zn > p->zcap) {
        unsigned char *z = realloc(p->z, zn);
        if (!z) {
            snprintf(p->err, p->errlen, "out of memory");
            return -1;
        }
        p->z = z;
        p->zcap = zn;
    }
    if (compress2(p->z, &zn, p->b.p, p->b.n, ZLIB_LEVEL) != Z_OK) {
        snprintf(p->err, p->errlen, "zlib cannot compress the trace's packets");
        return -1;
    }
    proto_buf_clear(&p->b);
    proto_begin(&p->outer, TRACE_PACKET);
    proto_bytes(&p->outer, PKT_COMPRESSED_PACKETS, p->z, zn);
    proto_end(&p->outer);
    if (proto_buf_failed(&p->outer)) {
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    (void)proto_flush(&p->outer, p->f);
#else
    (void)proto_flush(&p->b, p->f);
#endif
    return 0;
}

/* The end of a packet: the bundle written once it is full. 0, or -1 (err set). */
static int end_packet(pf *p) {
    proto_end(&p->b);
    if (proto_buf_failed(&p->b)) {
        snprintf(p->err, p->errlen, "out of memory");
        return -1;
    }
    return p->b.n >= BUNDLE_BYTES ? flush_bundle(p) : 0;
}

/* A packet of the events' sequence; timed: at ts (ns), written as the microseconds since the
 * last timed one (never back: threads' records may interleave a little out of time order, the
 * order of the events is kept). */
static void begin_packet(pf *p, int timed, int64_t ts, unsigned flags) {
    proto_begin(&p->b, TRACE_PACKET);
    if (timed) {
        uint64_t us = ts_of(p, ts) / 1000;
        if (us < p->last_us)
            us = p->last_us;
        proto_varint(&p->b, PKT_TIMESTAMP, us - p->last_us);
        p->last_us = us;
    }
    proto_varint(&p->b, PKT_SEQUENCE_ID, EVENTS_SEQUENCE);
    if (flags)
        proto_varint(&p->b, PKT_SEQUENCE_FLAGS, flags);
}

static int track(pf *p, uint64_t uuid, uint64_t parent, const char *name, int counter) {
    begin_packet(p, 0, 0, 0);
    proto_begin(&p->b, PKT_TRACK_DESCRIPTOR);
    proto_varint(&p->b, TD_UUID, uuid);
    if (parent)
        proto_varint(&p->b, TD_PARENT_UUID, parent);
    proto_string(&p->b, TD_NAME, name);
    if (counter) {
        proto_begin(&p->b, TD_COUNTER);
        proto_varint(&p->b, CD_UNIT, UNIT_SIZE_BYTES);
        proto_varint(&p->b, CD_IS_INCREMENTAL, 1);
        proto_end(&p->b);
    }
    proto_end(&p->b);
    return end_packet(p);
}

static int process(pf *p, uint64_t uuid, int pid, const char *name) {
    begin_packet(p, 0, 0, 0);
    proto_begin(&p->b, PKT_TRACK_DESCRIPTOR);
    proto_varint(&p->b, TD_UUID, uuid);
    proto_begin(&p->b, TD_PROCESS);
    proto_varint(&p->b, PD_PID, (uint64_t)pid);
    proto_string(&p->b, PD_PROCESS_NAME, name);
    proto_end(&p->b);
    proto_end(&p->b);
    return end_packet(p);
}

/* The first packet: the incremental state cleared, the fixed names interned. */
static void clock(proto_buf *b, uint64_t id, int incremental, uint64_t unit_ns) {
    proto_begin(b, CS_CLOCKS);
    proto_varint(b, CLOCK_ID, id);
    proto_varint(b, CLOCK_TIMESTAMP, 0);
    if (incremental)
        proto_varint(b, CLOCK_IS_INCREMENTAL, 1);
    if (unit_ns != 1)
        proto_varint(b, CLOCK_UNIT_MULTIPLIER_NS, unit_ns);
    proto_end(b);
}

/* The first packet of the events' sequence: the incremental state cleared, the events' clock
 * defined (its 0 is the trace clock's 0) and made the sequence's default, the fixed names
 * interned. Its own time is on the trace clock. */
static int first_packet(pf *p) {
    proto_begin(&p->b, TRACE_PACKET);
    proto_varint(&p->b, PKT_TIMESTAMP, 0);
    proto_varint(&p->b, PKT_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_BOOTTIME);
    proto_varint(&p->b, PKT_SEQUENCE_ID, EVENTS_SEQUENCE);
    proto_varint(&p->b, PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    proto_begin(&p->b, PKT_CLOCK_SNAPSHOT);
    clock(&p->b, BUILTIN_CLOCK_BOOTTIME, 0, 1);
    clock(&p->b, EVENTS_CLOCK, 1, 1000);
    proto_end(&p->b);
    proto_begin(&p->b, PKT_TRACE_PACKET_DEFAULTS);
    proto_varint(&p->b, TPD_TIMESTAMP_CLOCK_ID, EVENTS_CLOCK);
    proto_end(&p->b);
    proto_begin(&p->b, PKT_INTERNED_DATA);
    for (size_t i = 1; i < sizeof event_names / sizeof *event_names; i++) {
        proto_begin(&p->b, ID_EVENT_NAMES);
        proto_varint(&p->b, IID, i);
        proto_string(&p->b, IID_VALUE, event_names[i]);
        proto_end(&p->b);
    }
    for (size_t i = 1; i < sizeof annotation_names / sizeof *annotation_names; i++) {
        proto_begin(&p->b, ID_DEBUG_ANNOTATION_NAMES);
        proto_varint(&p->b, IID, i);
        proto_string(&p->b, IID_VALUE, annotation_names[i]);
        proto_end(&p->b);
    }
    proto_end(&p->b);
    return end_packet(p);
}

/* The frame iid of a label, 0 when it is new (then *iid is the one to intern). -1: out of
 * memory. */
static int label_iid(pf *p, const char *text, uint64_t *iid) {
    if ((p->nlabels + 1) * 2 > p->label_mask + 1) {
        size_t cap = p->label_mask ? (p->label_mask + 1) * 2 : 1024;
        label_slot *t = calloc(cap, sizeof *t);
        if (!t)
            return -1;
        for (size_t i = 0; p->labels && i <= p->label_mask; i++) {
            if (!p->labels[i].iid)
                continue;
            size_t k = p->labels[i].hash & (cap - 1);
            while (t[k].iid)
                k = (k + 1) & (cap - 1);
            t[k] = p->labels[i];
        }
        free(p->labels);
        p->labels = t;
        p->label_mask = cap - 1;
    }
    uint64_t h = gmt_hash_bytes(GMT_HASH_SEED, text, strlen(text));
    size_t k = h & p->label_mask;
    for (; p->labels[k].iid; k = (k + 1) & p->label_mask)
        if (p->labels[k].hash == h && !strcmp(p->labels[k].text, text)) {
            *iid = p->labels[k].iid;
            return 0;
        }
    char *copy = strdup(text);
    if (!copy)
        return -1;
    p->labels[k] = (label_slot){h, ++p->next_frame, copy};
    p->nlabels++;
    *iid = p->next_frame;
    return 1;
}

/* Interns stack_id's callstack in the open packet's InternedData when it is new; its iid in
 * *iid. 0, or -1 (err set). */
static int intern_stack(pf *p, int64_t stack_id, uint64_t *iid) {
    uint32_t *known = addr_map_get(&p->stacks, 0, (uint64_t)stack_id);
    if (known) {
        *iid = *known;
        return 0;
    }
    const named_stack *s = stack_names_get(p->names, stack_id);
    size_t nshown = 0, *shown = NULL;
    if (!s || (s->frame_count && !(shown = malloc(s->frame_count * sizeof *shown))))
        goto oom;
    nshown = stack_frames_shown(s, shown);
    uint64_t ids_small[64], *ids = nshown <= 64 ? ids_small : malloc(nshown * sizeof *ids);
    if (!ids)
        goto oom;
    proto_begin(&p->b, PKT_INTERNED_DATA);
    char label[512];
    for (size_t k = 0; k < nshown; k++) { /* outermost first: Callstack's bottom frame */
        stack_frame_label(&s->frames[shown[nshown - 1 - k]], label, sizeof label);
        int r = label_iid(p, label, &ids[k]);
        if (r < 0) {
            if (ids != ids_small)
                free(ids);
            goto oom;
        }
        if (r == 1) {
            proto_begin(&p->b, ID_FUNCTION_NAMES);
            proto_varint(&p->b, IID, ids[k]);
            proto_string(&p->b, IID_VALUE, label);
            proto_end(&p->b);
            proto_begin(&p->b, ID_FRAMES);
            proto_varint(&p->b, IID, ids[k]);
            proto_varint(&p->b, FRAME_FUNCTION_NAME_ID, ids[k]);
            proto_end(&p->b);
        }
    }
    if (!nshown) { /* a stack without frames: one frame saying so, so its bytes still count */
        const char *none = stack_id ? "unknown stack" : "no stack";
        uint64_t id;
        int r = label_iid(p, none, &id);
        if (r < 0)
            goto oom;
        if (r == 1) {
            proto_begin(&p->b, ID_FUNCTION_NAMES);
            proto_varint(&p->b, IID, id);
            proto_string(&p->b, IID_VALUE, none);
            proto_end(&p->b);
            proto_begin(&p->b, ID_FRAMES);
            proto_varint(&p->b, IID, id);
            proto_varint(&p->b, FRAME_FUNCTION_NAME_ID, id);
            proto_end(&p->b);
        }
        ids[0] = id;
        nshown = 1;
    }
    proto_begin(&p->b, ID_CALLSTACKS);
    proto_varint(&p->b, IID, ++p->next_stack);
    for (size_t k = 0; k < nshown; k++)
        proto_varint(&p->b, CALLSTACK_FRAME_IDS, ids[k]);
    proto_end(&p->b);
    proto_end(&p->b);
    if (ids != ids_small)
        free(ids);
    free(shown);
    if (p->next_stack > UINT32_MAX ||
        addr_map_put(&p->stacks, 0, (uint64_t)stack_id, (uint32_t)p->next_stack) != 0)
        goto oom;
    *iid = p->next_stack;
    return 0;
oom:
    free(shown);
    snprintf(p->err, p->errlen, "out of memory");
    return -1;
}

/* The counters of the device whose values changed since its last sample (all three totals at
 * its first), with their deltas; each then written as its last value. How many (at most
 * NCOUNTERS). */
static int changed(pf *p, const tl_event *e, uint64_t *uuid, int64_t *delta) {
    int64_t now[NCOUNTERS] = {e->allocated, e->reserved, e->requested};
    int64_t *was = p->last[e->device];
    int n = 0, counters = e->categories ? NCOUNTERS : 3;
    for (int k = 0; e->categories && k < BLOCK_CATEGORY_COUNT; k++)
        now[3 + k] = e->categories[k];
    for (int c = 0; c < counters; c++) {
        if (now[c] == was[c] && (p->started[e->device] || c >= 3))
            continue;
        uuid[n] = DEV_UUID(e->device) +
                  (c < 3 ? T_ALLOCATED + (uint64_t)c : T_CATEGORY + (uint64_t)(c - 3));
        delta[n++] = now[c] - was[c];
        was[c] = now[c];
    }
    p->started[e->device] = 1;
    return n;
}

/* A category's counter track, before its first value (a category with no bytes has none). */
static int category_tracks(pf *p, const tl_event *e) {
    for (int k = 0; e->categories && k < BLOCK_CATEGORY_COUNT; k++) {
        if (p->cat_track[e->device][k] || e->categories[k] == p->last[e->device][3 + k])
            continue;
        char name[64];
        snprintf(name, sizeof name, "allocated: %s", gmt_category_name((gmt_category)k));
        p->cat_track[e->device][k] = 1;
        if (track(p, DEV_UUID(e->device) + T_CATEGORY + (uint64_t)k, DEV_UUID(e->device), name,
                  1) != 0)
            return -1;
    }
    return 0;
}

/* The changed counters into the open TrackEvent: the first as counter_value when `main` (a
 * TYPE_COUNTER event), the rest (all, when not `main`) as extra values. */
static void counters(pf *p, const tl_event *e, int main) {
    uint64_t uuid[NCOUNTERS];
    int64_t delta[NCOUNTERS];
    int n = changed(p, e, uuid, delta), first = 0;
    if (!n)
        return;
    if (main) {
        proto_varint(&p->b, TE_TRACK_UUID, uuid[0]);
        proto_varint(&p->b, TE_COUNTER_VALUE, (uint64_t)delta[0]);
        first = 1;
    }
    for (int k = first; k < n; k++)
        proto_varint(&p->b, TE_EXTRA_COUNTER_TRACK_UUIDS, uuid[k]);
    for (int k = first; k < n; k++)
        proto_varint(&p->b, TE_EXTRA_COUNTER_VALUES, (uint64_t)delta[k]);
    export_timeline_last.counter_samples++;
}

static void annotation(pf *p, uint64_t name_iid, int64_t v) {
    proto_begin(&p->b, TE_DEBUG_ANNOTATIONS);
    proto_varint(&p->b, DA_NAME_IID, name_iid);
    proto_varint(&p->b, DA_INT_VALUE, (uint64_t)v);
    proto_end(&p->b);
}

static int on_event(void *ctx, const tl_event *e) {
    pf *p = ctx;
    if (!p->known[e->device])
        return 0; /* a device the devices table does not list: no tracks */
    int64_t *was = p->last[e->device];
    int changes = was[0] != e->allocated || was[1] != e->reserved || was[2] != e->requested ||
                  !p->started[e->device];
    for (int k = 0; e->categories && k < BLOCK_CATEGORY_COUNT; k++)
        changes |= e->categories[k] != was[3 + k];
    if (changes && category_tracks(p, e) != 0)
        return -1;
    if (e->kind == TL_TOTALS) {
        if (!changes)
            return 0;
        begin_packet(p, 1, e->ts_ns, 0);
        proto_begin(&p->b, PKT_TRACK_EVENT);
        proto_varint(&p->b, TE_TYPE, TYPE_COUNTER);
        counters(p, e, 1);
        proto_end(&p->b);
        return end_packet(p);
    }
    begin_packet(p, 1, e->ts_ns, SEQ_NEEDS_INCREMENTAL_STATE);
    uint64_t stack_iid = 0;
    if (e->kind == TL_ALLOC && intern_stack(p, e->stack_id, &stack_iid) != 0)
        return -1;
    proto_begin(&p->b, PKT_TRACK_EVENT);
    proto_varint(&p->b, TE_TYPE, TYPE_INSTANT);
    proto_varint(&p->b, TE_TRACK_UUID,
                 DEV_UUID(e->device) + (e->kind == TL_ALLOC ? T_ALLOCS : T_OOMS));
    proto_varint(&p->b, TE_NAME_IID, e->kind == TL_ALLOC ? NAME_ALLOC : NAME_OOM);
    if (e->kind == TL_ALLOC) {
        proto_varint(&p->b, TE_CALLSTACK_IID, stack_iid);
        proto_double(&p->b, TE_CALLSTACK_WEIGHT, (double)e->size);
        export_timeline_last.allocations++;
    } else {
        annotation(p, ANN_REQUESTED, (int64_t)e->size);
        annotation(p, ANN_ALLOCATED, e->allocated);
        annotation(p, ANN_RESERVED, e->reserved);
        if (e->largest_free >= 0)
            annotation(p, ANN_LARGEST_FREE, e->largest_free);
        if (e->driver_free >= 0)
            annotation(p, ANN_DRIVER_FREE, e->driver_free);
        export_timeline_last.ooms++;
    }
    if (changes) /* the totals after it, on their tracks, in the same event */
        counters(p, e, 0);
    proto_end(&p->b);
    return end_packet(p);
}

/* A slice's begin or end: on the slices' sequence, at ts in ns on the trace clock. */
static int slice_event(pf *p, uint64_t uuid, int64_t ts, int type, const char *name) {
    proto_begin(&p->b, TRACE_PACKET);
    proto_varint(&p->b, PKT_TIMESTAMP, ts_of(p, ts));
    proto_varint(&p->b, PKT_SEQUENCE_ID, SLICES_SEQUENCE);
    proto_begin(&p->b, PKT_TRACK_EVENT);
    proto_varint(&p->b, TE_TYPE, (uint64_t)type);
    proto_varint(&p->b, TE_TRACK_UUID, uuid);
    if (name)
        proto_string(&p->b, TE_NAME, name);
    proto_end(&p->b);
    return end_packet(p);
}

static int on_slice(void *ctx, int is_step, const tl_slice *s) {
    pf *p = ctx;
    uint64_t uuid = STEPS_UUID;
    if (!is_step) {
        int k = 0;
        while (k < p->nlanes && (p->lanes[k].tid != s->tid || p->lanes[k].end > s->begin_ts_ns))
            k++;
        if (k == p->nlanes) {
            if (p->nlanes == MAX_LANES) {
                snprintf(p->err, p->errlen, "more than %d NVTX ranges open at once", MAX_LANES);
                return -1;
            }
            char name[64];
            if (s->tid >= 0)
                snprintf(name, sizeof name, "ranges, thread %lld", (long long)s->tid);
            else
                snprintf(name, sizeof name, "ranges");
            p->lanes[p->nlanes++].tid = s->tid;
            if (track(p, LANE_UUID(k), MARKERS_UUID, name, 0) != 0)
                return -1;
        }
        p->lanes[k].end = s->end_ts_ns;
        uuid = LANE_UUID(k);
    }
    export_timeline_last.slices++;
    if (slice_event(p, uuid, s->begin_ts_ns, TYPE_SLICE_BEGIN, s->name) != 0)
        return -1;
    return slice_event(p, uuid, s->end_ts_ns, TYPE_SLICE_END, NULL);
}

int export_perfetto_fill(FILE *f, void *ctx, char *err, size_t errlen) {
    sqlite3 *db = ctx;
    pf *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(&export_timeline_last, 0, sizeof export_timeline_last);
    p->f = f;
    p->db = db;
    p->err = err;
    p->errlen = errlen;
    proto_buf_init(&p->b);
    proto_buf_init(&p->outer);
    p->names = stack_names_new(db);
    int rc = p->names ? 0 : -1;
    if (rc)
        snprintf(err, errlen, "out of memory");
    int64_t earliest = timeline_export_earliest(db);
    p->shift = earliest < 0 ? -earliest : 0;
    int devs[256], ndev = timeline_export_devices(db, devs, 256), rank = timeline_export_rank(db),
                   timed = timeline_export_timed(db);
    export_timeline_last.devices = ndev;
    if (rc == 0)
        rc = first_packet(p);
    for (int i = 0; rc == 0 && i < ndev; i++) {
        char name[128];
        int d = devs[i];
        if (rank >= 0)
            snprintf(name, sizeof name, "rank %d GPU %d%s", rank, d,
                     timed ? "" : " (no times: the order only)");
        else
            snprintf(name, sizeof name, "GPU %d%s", d, timed ? "" : " (no times: the order only)");
        uint64_t u = DEV_UUID(d);
        if ((rc = process(p, u, 100000 + (rank >= 0 ? rank : 0) * 1000 + d, name)) == 0 &&
            (rc = track(p, u + T_ALLOCATED, u, "allocated", 1)) == 0 &&
            (rc = track(p, u + T_RESERVED, u, "reserved", 1)) == 0 &&
            (rc = track(p, u + T_REQUESTED, u, "requested", 1)) == 0 &&
            (rc = track(p, u + T_ALLOCS, u, "allocations", 0)) == 0)
            rc = track(p, u + T_OOMS, u, "OOMs", 0);
        p->known[d] = 1;
    }
    if (rc == 0)
        rc = process(p, MARKERS_UUID, 99999, "steps and ranges");
    if (rc == 0)
        rc = track(p, STEPS_UUID, MARKERS_UUID, "steps", 0);
    if (rc == 0)
        rc = timeline_export_events(db, on_event, p, err, errlen);
    if (rc == 0)
        rc = timeline_export_slices(db, on_slice, p, err, errlen);
    if (rc == 0)
        rc = flush_bundle(p);
    proto_buf_free(&p->b);
    proto_buf_free(&p->outer);
    free(p->z);
    if (p->names)
        stack_names_free(p->names);
    addr_map_free(&p->stacks);
    for (size_t i = 0; p->labels && i <= p->label_mask; i++)
        free(p->labels[i].text);
    free(p->labels);
    free(p);
    return rc == 0 ? 0 : -1;
}
