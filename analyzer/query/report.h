/* report.h — everything `memanalyze report` says about an input, as plain structs: the run's
 * summary (what was recorded, its events, steps and allocator settings), then per device the
 * peaks and what held memory at the peak, the cache, fragmentation (worst, at the peak, at the
 * end, per step) and its verdict (the trapped ratio), the OOMs with their verdicts, untracked
 * memory, the largest allocations, leaks and growth, the headroom trend and its risk, and the
 * recommendations. The text and the JSON of `report` print these structs and nothing else, so
 * neither knows a fact the other lacks.
 *
 * The numbers are analysis.h's, step_stream.h's, free_split.h's, categories.h's and
 * tensor_table.h's; what is decided here is which of them to say and what they mean: an OOM's
 * verdict (report_oom.c), the recommendations, the warm cache. Definitions are DESIGN.md's.
 *
 * Usage: report_open (the run, the window, the devices), report_device_read for each of them in
 * turn (a device's facts are gathered when asked for, so a text report prints as it goes), then
 * report_close. */
#ifndef GMT_REPORT_H
#define GMT_REPORT_H

#include "analysis.h"
#include "categories.h"
#include "category_rules.h"
#include "device_balance.h"
#include "free_split.h"
#include "step_stream.h"
#include "tensor_table.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define REPORT_MAX_OOMS 10         /* OOMs described one by one */
#define REPORT_MAX_SPLIT_STEPS 128 /* step ends whose trapped part is measured (a layout each) */
#define REPORT_JSON_LEAKS 10       /* the sites report --json lists at least */

/* What was recorded, and the window looked at. Texts are "" when the input does not say. */
typedef struct report_run {
    const char *input; /* as the user gave it */
    char input_format[512], producer[128], host[128], command_line[512];
    char pid[128];    /* "" also for pid 0 (an input that does not know it) */
    int history;      /* 0: a snapshot of its final segments only (when_has_history) */
    int timestamps;   /* 0: times are event order (when_has_timestamps) */
    long long events; /* recorded events */
    long long span_ns;
    long long steps, first_step, last_step; /* steps of the whole input */
    /* meta allocator_settings, when it is one JSON object (else "{}"), and in a line */
    char settings_json[4096];
    int have_settings; /* the input says something about them (settings_json is not "{}") */
    char settings_line[1024];
    long long warnings_total;
    int truncated;    /* the recording was cut short */
    int ended;        /* the trace's end record was read (meta clean_shutdown); 1 for a snapshot */
    int64_t from, to; /* the window [from, to] as event ids */
    int windowed;     /* it is not the whole run */
    char from_when[96], to_when[96]; /* when_describe of each end, when windowed */
    /* the devices of the process compared like ranks (DataParallel, pipeline stages): over the
     * whole run, all devices shown and no window; bottleneck -1: not said (fewer than two
     * devices with events, --device, or a window) */
    device_balance devices;
} report_run;

/* A stack that held memory at the peak. */
typedef struct report_stack {
    int64_t stack_id, bytes, blocks;
    double share;    /* of the peak allocated */
    char site[256];  /* stack_label */
    char label[256]; /* the list's label (stack_labels_distinct): site, and what tells it apart */
    /* blocks whose allocation the history lost are known by their free (categories.h), as
     * PyTorch's viewer shows them: the stack of the free that ends most of their bytes */
    int64_t freed_at_stack_id; /* 0: none (their alloc is known, or none of them is freed) */
    char freed_at[256];        /* its stack_label */
} report_stack;

/* A site's growth (analysis_site_growth) with its label. */
typedef struct report_growth {
    site_growth g;
    char site[256]; /* the list's label (stack_labels_distinct) */
} report_growth;

/* What an OOM was, from the numbers at its event (the first that applies):
 *   OUTSIDE        the releasable bytes (whole free segments, free pages) cover the request:
 *                  the allocator's retry frees its cache and should have found room, so the
 *                  memory was taken outside this allocator (untracked, another process)
 *   FRAGMENTATION  reserved-but-unallocated covers the request, no free block does
 *   DEVICE_FULL    the driver's last free sample before it: the device was full
 *   NONE           none of the numbers tells */
typedef enum report_oom_verdict {
    OOM_VERDICT_NONE,
    OOM_VERDICT_OUTSIDE,
    OOM_VERDICT_FRAGMENTATION,
    OOM_VERDICT_DEVICE_FULL
} report_oom_verdict;

typedef struct report_oom {
    int64_t event_id;
    char when[96];
    int64_t size;         /* asked */
    int64_t unallocated;  /* reserved but unallocated at it */
    int64_t largest_free; /* the largest free block */
    int have_split;       /* releasable and trapped are known */
    int64_t releasable, trapped;
    int64_t driver_free; /* the driver's last free sample at or before it; -1: none */
    report_oom_verdict verdict;
} report_oom;

/* The OOMs of `device` with event_id in (from, to], the first REPORT_MAX_OOMS, into out[] with
 * their verdicts as report judges them (the free splits at them said), *n how many; `ooms` is
 * how many the window holds (device_summary's count: 0 skips the events). 0, or -1 with a
 * one-line message in err. */
int report_window_ooms(sqlite3 *db, int device, int64_t from, int64_t to, int64_t ooms,
                       report_oom out[REPORT_MAX_OOMS], size_t *n, char *err, size_t errlen);

/* "outside_allocator", "fragmentation", "device_full", or NULL (none). */
const char *report_oom_verdict_name(report_oom_verdict v);

/* The OOM as people read it, one line without its newline: "OOM at step 3 asking 2.0 GiB while
 * 512 MiB is reserved but unallocated (largest free block ...): fragmentation". `report` prints
 * it, its --json and the viewer's window summary carry it as "text": one wording. */
void report_oom_describe(const report_oom *o, char *buf, size_t len);

typedef struct report_allocation {
    int64_t event_id, bytes, stack_id;
    char site[256], when[96]; /* site: the list's label (stack_labels_distinct) */
} report_allocation;

typedef struct report_recommendation {
    const char *kind; /* "trapped", "growth", "oom" */
    char text[768];   /* one sentence for people */
} report_recommendation;

/* The trapped ratio at the measured step ends. */
typedef struct report_trapped_steps {
    size_t measured;    /* step ends measured; 0: none */
    size_t stride;      /* 1 step end in `stride` measured */
    double mean, max;   /* trapped ratio */
    int64_t max_step;   /* the first measured step with the max */
    const char *rating; /* frag_rating(max) */
} report_trapped_steps;

typedef struct report_device {
    device_summary s;
    char peak_allocated_when[96], peak_requested_when[96], peak_reserved_when[96];
    const char *peak_phase; /* of the peak allocated, in an input without steps (step_table.h's
                               implicit steps' rule); NULL: the input has steps, or no events */
    /* a history that begins mid-run (step_table.h): the steps that ended before its first
     * event, and the first it measures (-1: none) */
    int history_mid_run;
    int64_t steps_before_history, first_step_before, last_step_before, history_first_step;
    int64_t replay_warnings; /* warnings at this device's events */
    report_stack *top;       /* at the peak allocated */
    size_t ntop;
    /* categories and named tensors at the peak (the sweep ran) */
    int have_categories;
    int categories_one_moment; /* the history is one moment: no phases, the blocks unknown */
    int64_t categories[BLOCK_CATEGORY_COUNT];
    double category_share[BLOCK_CATEGORY_COUNT]; /* of the peak allocated */
    tensor_row *named;                           /* the largest named tensors live at the peak */
    size_t nnamed;
    /* the cache at work: PyTorch's block allocations and those after new memory (the whole
     * run's counters: -1 in a window or when the input does not count them) */
    int64_t cache_allocs, cache_misses;
    double cache_hit_rate;    /* -1: no allocations counted */
    int64_t inactive_at_peak; /* reserved - allocated at the peak allocated */
    /* fragmentation (reserved - allocated) / reserved and its ratings: the verdict word of
     * each moment is its trapped ratio's where that was measured (a warm cache is not
     * fragmentation), the raw ratio's elsewhere */
    double frag_at_peak, frag_at_end, frag_worst;
    const char *frag_at_peak_rating, *frag_at_end_rating, *frag_worst_rating;
    steps_overview steps; /* count and fragmentation at step ends */
    const char *frag_step_max_rating;
    /* the trapped ratio each rating follows; -1: not measured there, the rating is the raw
     * ratio's */
    double frag_at_peak_by, frag_at_end_by, frag_worst_by, frag_step_max_by;
    /* the free part of reserved, releasable vs trapped (free_split.h): the verdict */
    int have_split;
    free_split split_peak, split_end;
    double trapped_at_peak, trapped_at_end; /* ratios */
    const char *trapped_at_peak_rating, *trapped_at_end_rating;
    int end_warm_cache; /* at the end the releasable part outweighs the trapped, and is 64 MiB
                           or more: a warm cache, not fragmentation */
    report_trapped_steps trapped_steps;
    /* OOMs (the first REPORT_MAX_OOMS of s.ooms) */
    report_oom ooms[REPORT_MAX_OOMS];
    size_t nooms;
    report_allocation *largest; /* the largest allocations of the window, largest first */
    size_t nlargest;
    /* leaks and growth: the first sites of analysis_site_growth's order */
    report_growth *leaks;
    size_t nleaks, ngrowth; /* listed, and found */
    size_t windows;         /* step-to-step changes measured (growth needs one or more) */
    headroom_forecast forecast;
    double peak_reserved_share; /* of the device's memory; -1: its size is unknown */
    report_recommendation recommendations[3];
    size_t nrecommendations;
} report_device;

typedef struct report report;

/* What to report: `device` (-1: every device), the window's specs (NULL: the start, the end),
 * `top` rows per list, the user's category rules (NULL: none; they stay the caller's). */
typedef struct report_options {
    const char *input;
    int device;
    const char *from, *to;
    size_t top;
    const category_rules *rules;
} report_options;

/* The report of db (report_close closes it, also when this fails): the run and the devices.
 * 0, or -1 with a one-line message in err (a bad window, no such device). */
int report_open(sqlite3 *db, const report_options *o, report **out, char *err, size_t errlen);

const report_run *report_run_of(const report *r);

/* The run's facts alone, over the whole run, without the devices compared (devices.bottleneck
 * -1) and without a report (the viewer's summary): what report_run_of says with no window. */
void report_run_read(sqlite3 *db, const char *input, report_run *out);
size_t report_device_count(const report *r);
int report_device_id(const report *r, size_t i);

/* Why there are no categories ("" when there are, or nothing asked for them). */
const char *report_categories_error(const report *r);

/* The facts of the i-th device into *out (report_device_release frees them). 0, or -1 with
 * the database's message in err. */
int report_device_read(report *r, size_t i, report_device *out, char *err, size_t errlen);
void report_device_release(report_device *d);

void report_close(report *r);

#endif
