/* report_oom.c — what `report`'s numbers mean (report.h): the OOMs of a window with what each
 * one was (memory outside the allocator, fragmentation, a full device), and the
 * recommendations, each said only when a number supports it. */
#include "db_query.h"
#include "gmt_vocab.h"
#include "report_internal.h"
#include "stack_names.h"
#include "units.h"
#include "when.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRAPPED_WORTH_SAYING (64 << 20) /* trapped bytes below which no recommendation */

const char *report_oom_verdict_name(report_oom_verdict v) {
    switch (v) {
    case OOM_VERDICT_OUTSIDE:
        return "outside_allocator";
    case OOM_VERDICT_FRAGMENTATION:
        return "fragmentation";
    case OOM_VERDICT_DEVICE_FULL:
        return "device_full";
    case OOM_VERDICT_NONE:
        break;
    }
    return NULL;
}

void report_oom_describe(const report_oom *o, char *buf, size_t len) {
    char b1[32], b2[32], b3[32];
    int n = snprintf(buf, len, "OOM at %s asking %s while %s is reserved but unallocated", o->when,
                     units_bytes_i64(o->size, b1), units_bytes_i64(o->unallocated, b2));
    size_t at = n < 0 ? 0 : (size_t)n < len ? (size_t)n : len;
    if (o->verdict == OOM_VERDICT_OUTSIDE)
        snprintf(buf + at, len - at,
                 " (%s of it releasable: whole free segments or pages): the allocator's retry "
                 "frees its cache and should have found room, so look for memory outside this "
                 "allocator (untracked below, another process)",
                 units_bytes_i64(o->releasable, b3));
    else if (o->verdict == OOM_VERDICT_FRAGMENTATION)
        snprintf(buf + at, len - at, " (largest free block %s%s%s): fragmentation",
                 units_bytes_i64(o->largest_free, b3), o->have_split ? ", trapped " : "",
                 o->have_split ? units_bytes_i64(o->trapped, b2) : "");
    else if (o->verdict == OOM_VERDICT_DEVICE_FULL)
        snprintf(buf + at, len - at, "; the driver had %s free: the device is full",
                 units_bytes_i64(o->driver_free, b3));
}

void report_ooms_read(sqlite3 *db, int64_t from, int64_t to, report_device *d) {
    if (d->s.ooms <= 0)
        return; /* the summary counted none: no scan of the events for them */
    sqlite3_stmt *st;
    if (db_prepare(db,
                   "SELECT event_id, size, allocated_bytes, reserved_bytes, "
                   "largest_free_bytes, (SELECT value FROM counters c WHERE c.device = "
                   "e.device AND c.kind = 'driver_free' AND c.ts_ns <= e.ts_ns ORDER BY "
                   "c.ts_ns DESC LIMIT 1) FROM event_rows e WHERE device = ? AND op = {op:oom} "
                   "AND event_id > ? AND event_id <= ? ORDER BY event_id LIMIT ?",
                   &st) != SQLITE_OK)
        return;
    sqlite3_bind_int(st, 1, d->s.device);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    sqlite3_bind_int(st, 4, REPORT_MAX_OOMS);
    while (d->nooms < REPORT_MAX_OOMS && sqlite3_step(st) == SQLITE_ROW) {
        report_oom *o = &d->ooms[d->nooms++];
        memset(o, 0, sizeof *o);
        o->event_id = sqlite3_column_int64(st, 0);
        o->size = sqlite3_column_int64(st, 1);
        o->unallocated = sqlite3_column_int64(st, 3) - sqlite3_column_int64(st, 2);
        o->largest_free = sqlite3_column_int64(st, 4);
        o->driver_free = db_column_i64(st, 5, -1);
        when_describe(db, o->event_id, o->when, sizeof o->when);
    }
    sqlite3_finalize(st);
}

void report_ooms_judge(report_device *d) {
    for (size_t i = 0; i < d->nooms; i++) {
        report_oom *o = &d->ooms[i];
        if (o->have_split && o->releasable >= o->size)
            o->verdict = OOM_VERDICT_OUTSIDE;
        else if (o->unallocated >= o->size && o->largest_free < o->size)
            o->verdict = OOM_VERDICT_FRAGMENTATION;
        else if (o->driver_free >= 0)
            o->verdict = OOM_VERDICT_DEVICE_FULL;
        else
            o->verdict = OOM_VERDICT_NONE;
    }
}

int report_window_ooms(sqlite3 *db, int device, int64_t from, int64_t to, int64_t ooms,
                       report_oom out[REPORT_MAX_OOMS], size_t *n, char *err, size_t errlen) {
    assert(db && n);
    report_device *d = calloc(1, sizeof *d);
    *n = 0;
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d->s.device = device;
    d->s.ooms = ooms;
    report_ooms_read(db, from, to, d);
    int64_t ids[REPORT_MAX_OOMS];
    free_split split[REPORT_MAX_OOMS];
    for (size_t i = 0; i < d->nooms; i++)
        ids[i] = d->ooms[i].event_id;
    /* as report: without the splits (a database error) the verdicts go by the other numbers */
    char ignored[256];
    int split_ok =
        d->nooms && free_split_at(db, device, ids, d->nooms, split, ignored, sizeof ignored) == 0;
    for (size_t i = 0; split_ok && i < d->nooms; i++) {
        d->ooms[i].have_split = 1;
        d->ooms[i].releasable = split[i].releasable;
        d->ooms[i].trapped = split[i].trapped;
    }
    report_ooms_judge(d);
    memcpy(out, d->ooms, d->nooms * sizeof *out);
    *n = d->nooms;
    free(d);
    return 0;
}

/* The run's allocator settings say expandable_segments was on (meta allocator_settings). */
static int expandable_on(sqlite3 *db) {
    return db_query_int(db,
                        "SELECT count(*) FROM meta WHERE key = 'allocator_settings' AND "
                        "replace(value, ' ', '') LIKE '%\"expandable_segments\":true%'",
                        0) > 0;
}

static report_recommendation *next(report_device *d, const char *kind) {
    report_recommendation *r = &d->recommendations[d->nrecommendations++];
    r->kind = kind;
    return r;
}

void report_recommend(sqlite3 *db, report_device *d) {
    char b1[32], b2[32];
    const device_summary *s = &d->s;
    d->nrecommendations = 0;
    /* the verdict is the trapped ratio: a warm cache (releasable) is not fragmentation */
    double at_peak = d->have_split ? d->trapped_at_peak : 0;
    int64_t trapped = d->have_split ? d->split_peak.trapped : 0;
    if (at_peak >= gmt_frag_band_from(FRAG_BAND_SERIOUS) && trapped >= TRAPPED_WORTH_SAYING) {
        report_recommendation *r = next(d, "trapped");
        snprintf(r->text, sizeof r->text,
                 "%s of the peak's %s reserved is free but trapped in segments that hold live "
                 "blocks (trapped ratio %.2f, %s): %s",
                 units_bytes_i64(trapped, b1), units_bytes_i64(s->peak_allocated.reserved, b2),
                 at_peak, frag_rating(at_peak),
                 expandable_on(db) ? "with expandable segments already on, "
                                     "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb keeps large free "
                                     "blocks from being split by small requests"
                                   : "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets "
                                     "segments grow instead of leaving split free blocks behind");
    }
    if (d->nleaks && d->leaks[0].g.growth_per_step > 0 && d->windows >= 2) {
        report_recommendation *r = next(d, "growth");
        snprintf(r->text, sizeof r->text,
                 "%s keeps +%s per step alive: something holds on to what it allocates (a list "
                 "of tensors, a history, a cache)",
                 d->leaks[0].site, units_bytes_i64(d->leaks[0].g.growth_per_step, b1));
    }
    if (s->ooms && !d->nrecommendations)
        snprintf(next(d, "oom")->text, sizeof d->recommendations[0].text,
                 "the run hit OOM: see the OOM lines above for whether it was fragmentation or a "
                 "full device");
}
