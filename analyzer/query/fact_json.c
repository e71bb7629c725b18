/* fact_json.c — the JSON of a layout, a step table, a diff of two points and an OOM
 * (fact_json.h), as `segments --json`, `steps --json`, `diff --json`, `report --json` and the
 * viewer's endpoints print them. */
#include "fact_json.h"

#include "json_out.h"
#include "view_stacks.h"

#include <assert.h>
#include <inttypes.h>

#include <stdint.h>
#include <stdio.h>

/* `, "frames": [...]` of a stack, when it has frames. */
static void print_json_frames(FILE *out, stack_names *stacks, int64_t stack_id) {
    const named_stack *s = stack_id && stacks ? stack_names_get(stacks, stack_id) : NULL;
    if (s && s->frame_count) {
        fputs(", \"frames\": ", out);
        stack_json_frames(out, s);
    }
}

/* An event id, or null for ids <= 0: the replay's seed, what existed before
 * the recording began (internal ids that never reach users). */
static void print_json_id(FILE *out, int64_t id) {
    if (id > 0)
        fprintf(out, "%lld", (long long)id);
    else
        fputs("null", out);
}

static void print_json_block(FILE *out, const layout_block *b, stack_names *stacks) {
    fprintf(out, "{\"address\": %llu, \"size\": %llu, \"requested_size\": %llu, \"state\": ",
            (unsigned long long)b->addr, (unsigned long long)b->size,
            (unsigned long long)b->requested);
    json_string(out, layout_state_name(b->state));
    if (b->state != LAYOUT_INACTIVE) {
        fputs(", \"alloc_event_id\": ", out);
        print_json_id(out, b->alloc_event_id);
        if (b->alloc_event_id <= 0)
            fputs(", \"alloc_recorded\": false", out);
        print_json_frames(out, stacks, b->stack_id);
    }
    fputc('}', out);
}

void layout_json_write(FILE *out, const layout *l, const char *when, const char *described,
                       stack_names *stacks, const layout_json_options *o) {
    stack_names *frames = o && o->no_frames ? NULL : stacks; /* NULL: no "frames" keys */
    size_t first = o ? o->slice.first : 0, end = l->segment_count;
    if (first > end)
        first = end;
    if (o && o->slice.count < end - first)
        end = first + o->slice.count;
    fprintf(out, "{\"device\": %d, \"event_id\": %lld, \"when\": ", l->device,
            (long long)l->event_id);
    json_string(out, when);
    fputs(", \"description\": ", out);
    json_string(out, described);
    fprintf(out,
            ",\n \"reserved_bytes\": %llu, \"allocated_bytes\": %llu, \"requested_bytes\": %llu, "
            "\"pending_free_bytes\": %llu, \"largest_free_bytes\": %llu,\n \"free_bytes\": %llu, "
            "\"releasable_bytes\": %llu, \"trapped_bytes\": %llu, \"live_blocks\": %zu, "
            "\"outside_bytes\": %llu,\n ",
            (unsigned long long)l->reserved_bytes, (unsigned long long)l->allocated_bytes,
            (unsigned long long)l->requested_bytes, (unsigned long long)l->pending_bytes,
            (unsigned long long)l->largest_free_bytes, (unsigned long long)l->free_bytes,
            (unsigned long long)l->releasable_bytes, (unsigned long long)l->trapped_bytes,
            l->live_blocks, (unsigned long long)l->outside_bytes);
    if (o)
        fprintf(out, "\"segment_count\": %zu, \"first_segment\": %zu, ", l->segment_count, first);
    fputs("\"segments\": [", out);
    for (size_t i = first; i < end; i++) {
        const layout_segment *s = &l->segments[i];
        /* PyTorch's snapshot fields and meanings: allocated_size the allocated blocks,
         * active_size those and the pending-free ones (DESIGN.md's "allocated"),
         * requested_size what the live ones asked for */
        fprintf(out,
                "%s\n  {\"address\": %llu, \"total_size\": %llu, \"allocated_size\": %llu, "
                "\"active_size\": %llu, \"requested_size\": %llu, \"stream\": %llu, "
                "\"segment_type\": \"%s\", \"is_expandable\": %s, \"segment_id\": ",
                i > first ? "," : "", (unsigned long long)s->addr, (unsigned long long)s->size,
                (unsigned long long)(s->allocated_bytes - s->pending_bytes),
                (unsigned long long)s->allocated_bytes, (unsigned long long)s->requested_bytes,
                (unsigned long long)s->stream, s->small_pool ? "small" : "large",
                s->mapped ? "true" : "false");
        print_json_id(out, s->segment_id);
        /* ours beside PyTorch's keys: what the text's line of the segment says */
        const named_stack *st = stack_names_get(stacks, s->stack_id);
        fputs(", \"site\": ", out);
        json_string(out, st ? st->site : "?");
        fprintf(out,
                ", \"free_size\": %llu, \"largest_free_size\": %llu, \"live_blocks\": %zu, "
                "\"gaps\": %zu",
                (unsigned long long)s->free_bytes, (unsigned long long)s->largest_free_bytes,
                s->live_blocks, s->gaps);
        print_json_frames(out, frames, s->stack_id);
        fputs(",\n   \"blocks\": [", out);
        for (size_t k = 0; k < s->block_count; k++) {
            fputs(k ? ",\n    " : "\n    ", out);
            print_json_block(out, &l->blocks[s->first_block + k], frames);
        }
        fputs("]}", out);
    }
    fputs(end > first ? "\n ],\n \"outside_blocks\": [" : "],\n \"outside_blocks\": [", out);
    for (size_t i = 0; i < l->outside_count; i++) {
        fputs(i ? ",\n  " : "\n  ", out);
        print_json_block(out, &l->outside[i], frames);
    }
    fprintf(out, "],\n \"rows_left_out\": %zu}\n", l->conflicts);
}

void layout_series_json_write(FILE *out, const layout *l, gmt_stack_by by, sqlite3_stmt *categories,
                              const json_slice *slice) {
    size_t first = slice ? slice->first : 0, end = l->segment_count;
    if (first > end)
        first = end;
    if (slice && slice->count < end - first)
        end = first + slice->count;
    fprintf(out,
            "{\"device\": %d, \"event_id\": %lld, \"by\": \"%s\", \"segment_count\": %zu, "
            "\"first_segment\": %zu,\n \"keys\": [",
            l->device, (long long)l->event_id, view_stack_by_name(by), l->segment_count, first);
    for (size_t i = first; i < end; i++) {
        const layout_segment *s = &l->segments[i];
        fputs(i > first ? ",\n  [" : "\n  [", out);
        int any = 0;
        for (size_t k = 0; k < s->block_count; k++) {
            const layout_block *b = &l->blocks[s->first_block + k];
            if (b->state == LAYOUT_INACTIVE)
                continue;
            int failed = 0; /* a category that cannot be read: unknown, as a stack says it */
            fprintf(out, "%s%" PRId64, any++ ? "," : "",
                    view_stack_block_key(by, b->stack_id, (int64_t)b->stream, (int64_t)b->size,
                                         categories, b->alloc_event_id, &failed));
        }
        fputc(']', out);
    }
    fputs(end > first ? "\n ]}\n" : "]}\n", out);
}

void step_table_json_write(FILE *out, int device, const step_row *r, size_t n,
                           const step_history *h, const json_slice *slice) {
    size_t first = slice ? slice->first : 0, end = n;
    if (first > end)
        first = end;
    if (slice && slice->count < end - first)
        end = first + slice->count;
    step_table_json_write_rows(out, device, r ? r + first : r, end - first, n, first, h,
                               slice != NULL);
}

void step_table_json_write_rows(FILE *out, int device, const step_row *rows, size_t count, size_t n,
                                size_t first, const step_history *h, int sliced) {
    assert(first + count <= n);
    fprintf(out, "{\"device\": %d, \"history\": {\"mid_run\": %s, \"first_step\": ", device,
            h->mid_run ? "true" : "false");
    if (h->first_step >= 0 || n)
        fprintf(out, "%lld", (long long)h->first_step);
    else
        fprintf(out, "null");
    fprintf(out, ", \"steps_before\": %lld, \"steps_before_first\": ", (long long)h->before);
    if (h->before)
        fprintf(out, "%lld, \"steps_before_last\": %lld}", (long long)h->before_first,
                (long long)h->before_last);
    else
        fprintf(out, "null, \"steps_before_last\": null}");
    if (sliced)
        fprintf(out, ", \"step_count\": %zu, \"first_row\": %zu", n, first);
    fprintf(out, ", \"steps\": [");
    for (size_t k = 0; k < count; k++) {
        const step_row *x = &rows[k];
        fprintf(out,
                "%s\n  {\"step\": %lld, \"peak_allocated_bytes\": %lld, \"peak_event_id\": %lld, "
                "\"peak_phase\": ",
                k ? "," : "", (long long)x->step, (long long)x->peak_allocated,
                (long long)x->peak_event_id);
        json_string(out, x->peak_phase);
        fprintf(out,
                ", \"reserved_at_end_bytes\": %lld, \"allocated_at_end_bytes\": %lld, "
                "\"fragmentation_at_end\": ",
                (long long)x->reserved_at_end, (long long)x->allocated_at_end);
        json_number(out, x->fragmentation_at_end);
        fprintf(out, ", \"trapped_ratio_at_end\": ");
        if (x->trapped_at_end >= 0)
            json_number(out, x->trapped_at_end);
        else
            fprintf(out, "null");
        fprintf(out,
                ", \"segments_at_end\": %lld, \"allocs\": %lld, \"frees\": %lld, "
                "\"growth_bytes\": ",
                (long long)x->segments_at_end, (long long)x->allocs, (long long)x->frees);
        if (x->growth_known)
            fprintf(out, "%lld", (long long)x->growth);
        else
            fprintf(out, "null");
        fprintf(out,
                ", \"partial\": %s, \"implicit\": %s, \"anomaly\": ", x->partial ? "true" : "false",
                x->implicit ? "true" : "false");
        if (x->anomaly[0])
            json_string(out, x->anomaly);
        else
            fprintf(out, "null");
        fprintf(out, "}");
    }
    fprintf(out, "\n]}\n");
}

/* ---- diff of two points, report's OOMs ----------------------------------------------------- */

void diff_point_json_write(FILE *out, const char *name, const diff_point *p, const char *input,
                           int device) {
    fprintf(out, " \"%s\": {", name);
    if (input) {
        fputs("\"input\": ", out);
        json_string(out, input);
        fprintf(out, ", \"device\": %d, ", device);
    }
    fputs("\"when\": ", out);
    json_string(out, p->when);
    fprintf(out, ", \"event_id\": %lld, \"description\": ", (long long)p->event_id);
    json_string(out, p->described);
    fprintf(out,
            ", \"allocated_bytes\": %lld, \"requested_bytes\": %lld, \"reserved_bytes\": %lld, "
            "\"segments\": %lld, \"live_blocks\": %zu}",
            (long long)p->totals.allocated_bytes, (long long)p->totals.requested_bytes,
            (long long)p->totals.reserved_bytes, (long long)p->totals.segments, p->live_blocks);
    fputs(",\n", out);
}

void diff_change_json_write(FILE *out, const diff_change *c) {
    fprintf(out,
            " \"change\": {\"allocated_bytes\": %lld, \"requested_bytes\": %lld, "
            "\"reserved_bytes\": %lld, \"segments\": %lld, \"live_blocks\": %lld}",
            (long long)c->allocated_bytes, (long long)c->requested_bytes,
            (long long)c->reserved_bytes, (long long)c->segments, (long long)c->live_blocks);
}

void diff_points_json_write(FILE *out, const diff_points *d, int no_frames) {
    fprintf(out, "{\"device\": %d,\n", d->device);
    diff_point_json_write(out, "from", &d->from, NULL, d->device);
    diff_point_json_write(out, "to", &d->to, NULL, d->device);
    diff_change_json_write(out, &d->change);
    fprintf(out,
            ",\n \"segments\": {\"added_count\": %llu, \"added_bytes\": %llu, "
            "\"removed_count\": %llu, \"removed_bytes\": %llu},\n",
            (unsigned long long)d->segments_added, (unsigned long long)d->segments_added_bytes,
            (unsigned long long)d->segments_removed, (unsigned long long)d->segments_removed_bytes);
    fprintf(out,
            " \"stacks_changed\": %zu, \"stacks_replaced_only\": %zu, "
            "\"replaced_bytes_each_way\": %llu, \"stacks_listed\": %zu,\n \"stacks\": [",
            d->stacks_changed, d->stacks_replaced_only, (unsigned long long)d->replaced_bytes,
            d->nrows);
    for (size_t i = 0; i < d->nrows; i++) {
        const diff_stack *c = &d->rows[i];
        fprintf(out, "%s\n  {\"stack_id\": %lld, \"site\": ", i ? "," : "", (long long)c->stack_id);
        json_string(out, c->label);
        fprintf(out,
                ", \"net_bytes\": %lld, \"net_count\": %lld, \"added_bytes\": %llu, "
                "\"added_count\": %llu, \"removed_bytes\": %llu, \"removed_count\": %llu",
                (long long)c->net_bytes, (long long)c->net_count,
                (unsigned long long)c->added_bytes, (unsigned long long)c->added_count,
                (unsigned long long)c->removed_bytes, (unsigned long long)c->removed_count);
        if (!no_frames && c->stack && c->stack->frame_count) {
            fputs(", \"frames\": ", out);
            stack_json_frames(out, c->stack);
        }
        fputc('}', out);
    }
    fputs(d->nrows ? "\n ]}\n" : "]}\n", out);
}

/* `key` then the number, or null when not known */
static void known_i64(FILE *out, const char *key, int64_t v, int known) {
    if (known)
        fprintf(out, "%s%lld", key, (long long)v);
    else
        fprintf(out, "%snull", key);
}

void report_oom_json_write(FILE *out, const report_oom *o) {
    fprintf(out, "{\"event_id\": %lld, \"when\": ", (long long)o->event_id);
    json_string(out, o->when);
    fprintf(out,
            ", \"size_bytes\": %lld, \"reserved_unallocated_bytes\": %lld, "
            "\"largest_free_bytes\": %lld",
            (long long)o->size, (long long)o->unallocated, (long long)o->largest_free);
    known_i64(out, ", \"releasable_bytes\": ", o->releasable, o->have_split);
    known_i64(out, ", \"trapped_bytes\": ", o->trapped, o->have_split);
    known_i64(out, ", \"driver_free_bytes\": ", o->driver_free, o->driver_free >= 0);
    fputs(", \"verdict\": ", out);
    json_string(out, report_oom_verdict_name(o->verdict));
    char text[1024];
    report_oom_describe(o, text, sizeof text);
    fputs(", \"text\": ", out);
    json_string(out, text);
    fputc('}', out);
}
