/* cmd_diff.c — `memanalyze diff`: what is live at one point and not the
 * other, grouped by allocation stack.
 *
 *   memanalyze diff INPUT --from WHEN --to WHEN
 *     blocks live at one point only (a block is one alloc row: the same
 *     block at both points is no change), per stack: bytes and counts added
 *     and removed, by net change; segments added and removed; the totals at
 *     both points.
 *   memanalyze diff A B [--at WHEN]
 *     two runs: stacks matched by their frames' (function, file name)
 *     sequence, since ids and addresses differ between runs; per stack the
 *     live bytes and blocks in A and in B, and the stacks only one run has.
 *
 * The live sets come from layout.h (one pass over the rows for both points
 * of one input). */
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "layout.h"
#include "stack_names.h"
#include "units.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TOP 20

#define STR(x) #x
#define XSTR(x) STR(x)

const char diff_usage[] =
    "usage: memanalyze diff INPUT --from WHEN --to WHEN [options]\n"
    "       memanalyze diff A B [--at WHEN] [options]\n"
    "What is live at one point and not the other, by allocation site; with two inputs\n"
    "(traces, snapshots or databases), what each run holds at WHEN, stacks matched by\n"
    "their frames.\n";

/* --at in text[0], --all in flag[0] */
const cli_option diff_options[] = {
    CLI_OPT_FROM("  --from WHEN, --to WHEN  step:N, event:N, time:1.5s, peak, start or end\n"),
    CLI_OPT_TO(NULL),
    {"at", 'a', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  --at WHEN     the point in both inputs (default end)\n", NULL},
    CLI_OPT_DEVICE,
    {"top", 'n', CLI_COUNT, offsetof(cli_ctx, top), 1000000000L, NULL,
     "  --top N       sites listed (default " XSTR(DEFAULT_TOP) " in text, all in JSON; 0: all)\n",
     NULL},
    {"all", 'A', CLI_FLAG, offsetof(cli_ctx, flag[0]), 0, NULL,
     "  --all         also sites whose blocks changed but whose bytes and count did not\n", NULL},
    CLI_OPT_JSON,
    {"step-rule", 's', CLI_TEXT, offsetof(cli_ctx, io.step_word), 0, NULL,
     "  --step-rule WORD  the word step names contain (default \"step\")\n", NULL},
    CLI_OPT_END};

/* "+1.00 MiB", "-512 B", "0 B" */
static const char *signed_bytes(int64_t v, char *buf, size_t len) {
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (len < 2)
        return units_bytes(m, buf, len);
    buf[0] = v > 0 ? '+' : '-';
    units_bytes(m, buf + (v != 0), len - (v != 0));
    return buf;
}

static int64_t sdiff(uint64_t a, uint64_t b) { return (int64_t)a - (int64_t)b; }

static uint64_t mag(int64_t v) { return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; }

/* ---- one input, one point ------------------------------------------------ */

typedef struct point {
    const char *when;
    int64_t event_id;
    char described[128];
    layout *l;
    layout_totals t;
} point;

typedef struct live_item {
    int64_t alloc_id, stack_id;
    uint64_t size;
} live_item;

static int by_alloc_id(const void *a, const void *b) {
    int64_t x = ((const live_item *)a)->alloc_id, y = ((const live_item *)b)->alloc_id;
    return x < y ? -1 : x > y;
}

/* The live blocks of a layout, by alloc id. NULL when out of memory. */
static live_item *live_items(const layout *l, size_t *count) {
    live_item *items = malloc((l->live_blocks + 1) * sizeof *items);
    size_t n = 0;
    if (!items)
        return NULL;
    for (size_t i = 0; i < l->block_count && n < l->live_blocks; i++)
        if (l->blocks[i].state != LAYOUT_INACTIVE)
            items[n++] =
                (live_item){l->blocks[i].alloc_event_id, l->blocks[i].stack_id, l->blocks[i].size};
    for (size_t i = 0; i < l->outside_count && n < l->live_blocks; i++)
        items[n++] =
            (live_item){l->outside[i].alloc_event_id, l->outside[i].stack_id, l->outside[i].size};
    qsort(items, n, sizeof *items, by_alloc_id);
    *count = n;
    return items;
}

static void json_point(FILE *out, const char *name, const point *p, const char *input, int device) {
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
            (long long)p->t.allocated_bytes, (long long)p->t.requested_bytes,
            (long long)p->t.reserved_bytes, (long long)p->t.segments, p->l->live_blocks);
}

static void json_change(FILE *out, const point *a, const point *b) {
    fprintf(out,
            " \"change\": {\"allocated_bytes\": %lld, \"requested_bytes\": %lld, "
            "\"reserved_bytes\": %lld, \"segments\": %lld, \"live_blocks\": %lld}",
            (long long)(b->t.allocated_bytes - a->t.allocated_bytes),
            (long long)(b->t.requested_bytes - a->t.requested_bytes),
            (long long)(b->t.reserved_bytes - a->t.reserved_bytes),
            (long long)(b->t.segments - a->t.segments),
            (long long)b->l->live_blocks - (long long)a->l->live_blocks);
}

static void text_totals(FILE *out, const char *ha, const char *hb, const char *hc, const point *a,
                        const point *b) {
    char x[32], y[32], z[32];
    fprintf(out, "%-12s  %12s  %12s  %12s\n", "", ha, hb, hc);
    fprintf(out, "%-12s  %12s  %12s  %12s\n", "allocated",
            units_bytes((uint64_t)a->t.allocated_bytes, x, sizeof x),
            units_bytes((uint64_t)b->t.allocated_bytes, y, sizeof y),
            signed_bytes(b->t.allocated_bytes - a->t.allocated_bytes, z, sizeof z));
    fprintf(out, "%-12s  %12s  %12s  %12s\n", "requested",
            units_bytes((uint64_t)a->t.requested_bytes, x, sizeof x),
            units_bytes((uint64_t)b->t.requested_bytes, y, sizeof y),
            signed_bytes(b->t.requested_bytes - a->t.requested_bytes, z, sizeof z));
    fprintf(out, "%-12s  %12s  %12s  %12s\n", "reserved",
            units_bytes((uint64_t)a->t.reserved_bytes, x, sizeof x),
            units_bytes((uint64_t)b->t.reserved_bytes, y, sizeof y),
            signed_bytes(b->t.reserved_bytes - a->t.reserved_bytes, z, sizeof z));
    fprintf(out, "%-12s  %12lld  %12lld  %+12lld\n", "segments", (long long)a->t.segments,
            (long long)b->t.segments, (long long)(b->t.segments - a->t.segments));
    fprintf(out, "%-12s  %12zu  %12zu  %+12lld\n", "live blocks", a->l->live_blocks,
            b->l->live_blocks, (long long)b->l->live_blocks - (long long)a->l->live_blocks);
}

/* Resolves WHEN and reads the timeline row; 0 or 2 (printed). */
static int resolve_point(sqlite3 *db, int device, const char *when, const char *input, point *p) {
    char err[512];
    p->when = when;
    if (when_resolve(db, when, device, &p->event_id, err, sizeof err) != 0)
        return input ? cli_error("%s: %s", input, err) : cli_error("%s", err);
    when_describe(db, p->event_id, p->described, sizeof p->described);
    layout_timeline_at(db, device, p->event_id, &p->t);
    return 0;
}

/* --device, or the default; 0 or 2 when the device has no events. */
static int pick_device(sqlite3 *db, long wanted, const char *input, int *device) {
    *device = wanted >= 0 ? (int)wanted : when_default_device(db);
    if (!when_device_answers(db, *device))
        return cli_error("diff: %s: device %d has no events", input, *device);
    return 0;
}

/* ---- diff of two points of one input -------------------------------------- */

typedef struct stack_change {
    int64_t stack_id;
    uint64_t added_bytes, removed_bytes;
    uint64_t added_count, removed_count;
} stack_change;

static int64_t net_bytes(const stack_change *c) { return sdiff(c->added_bytes, c->removed_bytes); }

static int64_t net_count(const stack_change *c) {
    return (int64_t)c->added_count - (int64_t)c->removed_count;
}

static int by_stack_then_alloc(const void *a, const void *b) {
    const live_item *x = a, *y = b;
    if (x->stack_id != y->stack_id)
        return x->stack_id < y->stack_id ? -1 : 1;
    return x->alloc_id < y->alloc_id ? -1 : x->alloc_id > y->alloc_id;
}

/* Largest net change first (either sign), then most added, then stack id. */
static int by_net(const void *a, const void *b) {
    const stack_change *x = a, *y = b;
    uint64_t mx = mag(net_bytes(x)), my = mag(net_bytes(y));
    if (mx != my)
        return mx > my ? -1 : 1;
    if (net_bytes(x) != net_bytes(y))
        return net_bytes(x) > net_bytes(y) ? -1 : 1;
    if (mag(net_count(x)) != mag(net_count(y)))
        return mag(net_count(x)) > mag(net_count(y)) ? -1 : 1;
    if (x->added_bytes != y->added_bytes)
        return x->added_bytes > y->added_bytes ? -1 : 1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

typedef struct seg_change {
    uint64_t added_count, added_bytes, removed_count, removed_bytes;
} seg_change;

static seg_change segment_changes(const layout *a, const layout *b) {
    seg_change c = {0};
    size_t i = 0, k = 0;
    while (i < a->lifetime_count || k < b->lifetime_count) {
        int64_t x = i < a->lifetime_count ? a->lifetimes[i].segment_id : INT64_MAX;
        int64_t y = k < b->lifetime_count ? b->lifetimes[k].segment_id : INT64_MAX;
        if (x == y) {
            i++, k++;
        } else if (x < y) {
            c.removed_count++;
            c.removed_bytes += a->lifetimes[i++].size;
        } else {
            c.added_count++;
            c.added_bytes += b->lifetimes[k++].size;
        }
    }
    return c;
}

/* The blocks live at one point only, per stack: *out sorted by_net. */
static int stack_changes(const layout *from, const layout *to, stack_change **out, size_t *count) {
    size_t na, nb;
    live_item *a = live_items(from, &na), *b = live_items(to, &nb);
    live_item *only = malloc((na + nb + 1) * sizeof *only);
    stack_change *changes = NULL;
    size_t n = 0, nc = 0;
    if (!a || !b || !only)
        goto fail;
    size_t i = 0, k = 0;
    while (i < na || k < nb) { /* removed: size as is; added: alloc_id negated... by a flag */
        if (i < na && k < nb && a[i].alloc_id == b[k].alloc_id) {
            i++, k++;
        } else if (k >= nb || (i < na && a[i].alloc_id < b[k].alloc_id)) {
            only[n] = a[i++];
            only[n++].alloc_id = 0; /* 0 marks removed */
        } else {
            only[n] = b[k++];
            only[n++].alloc_id = 1; /* 1 marks added */
        }
    }
    qsort(only, n, sizeof *only, by_stack_then_alloc);
    changes = malloc((n + 1) * sizeof *changes);
    if (!changes)
        goto fail;
    for (size_t j = 0; j < n; j++) {
        if (nc == 0 || changes[nc - 1].stack_id != only[j].stack_id)
            changes[nc++] = (stack_change){only[j].stack_id, 0, 0, 0, 0};
        stack_change *c = &changes[nc - 1];
        if (only[j].alloc_id) {
            c->added_bytes += only[j].size;
            c->added_count++;
        } else {
            c->removed_bytes += only[j].size;
            c->removed_count++;
        }
    }
    qsort(changes, nc, sizeof *changes, by_net);
    free(a);
    free(b);
    free(only);
    *out = changes;
    *count = nc;
    return 0;
fail:
    free(a);
    free(b);
    free(only);
    free(changes);
    return -1;
}

static int diff_points(sqlite3 *db, int device, const char *from_when, const char *to_when,
                       int json, long top, int all) {
    point p[2] = {{0}, {0}};
    char err[512];
    int status;
    if ((status = resolve_point(db, device, from_when, NULL, &p[0])) != 0 ||
        (status = resolve_point(db, device, to_when, NULL, &p[1])) != 0)
        return status;
    int64_t ids[2] = {p[0].event_id, p[1].event_id};
    layout *ls[2];
    if (layout_build_many(db, device, ids, 2, ls, err, sizeof err) != 0)
        return cli_error("diff: %s", err);
    p[0].l = ls[0];
    p[1].l = ls[1];
    stack_change *changes = NULL;
    size_t nchanges = 0;
    stack_names *stacks = stack_names_new(db);
    if (!stacks || stack_changes(ls[0], ls[1], &changes, &nchanges) != 0) {
        status = cli_error("diff: out of memory");
        goto done;
    }
    seg_change sc = segment_changes(ls[0], ls[1]);
    /* sites whose bytes and count are unchanged (blocks replaced) go last, unless --all */
    size_t shown = 0, churn = 0;
    uint64_t churn_bytes = 0;
    stack_change *listed = malloc((nchanges + 1) * sizeof *listed);
    if (!listed) {
        status = cli_error("diff: out of memory");
        goto done;
    }
    for (size_t i = 0; i < nchanges; i++) {
        if (net_bytes(&changes[i]) == 0 && net_count(&changes[i]) == 0) {
            churn++;
            churn_bytes += changes[i].added_bytes;
            if (!all)
                continue;
        }
        listed[shown++] = changes[i];
    }
    size_t nlisted = shown;
    if (top < 0)
        top = json ? 0 : DEFAULT_TOP;
    if (top > 0 && (size_t)top < shown)
        shown = (size_t)top;

    if (json) {
        printf("{\"device\": %d,\n", device);
        json_point(stdout, "from", &p[0], NULL, device);
        fputs(",\n", stdout);
        json_point(stdout, "to", &p[1], NULL, device);
        fputs(",\n", stdout);
        json_change(stdout, &p[0], &p[1]);
        printf(",\n \"segments\": {\"added_count\": %llu, \"added_bytes\": %llu, "
               "\"removed_count\": %llu, \"removed_bytes\": %llu},\n",
               (unsigned long long)sc.added_count, (unsigned long long)sc.added_bytes,
               (unsigned long long)sc.removed_count, (unsigned long long)sc.removed_bytes);
        printf(" \"stacks_changed\": %zu, \"stacks_replaced_only\": %zu, \"stacks_listed\": %zu,\n"
               " \"stacks\": [",
               nlisted - (all ? churn : 0), churn, shown);
        for (size_t i = 0; i < shown; i++) {
            const stack_change *c = &listed[i];
            const named_stack *s = stack_names_get(stacks, c->stack_id);
            printf("%s\n  {\"stack_id\": %lld, \"site\": ", i ? "," : "", (long long)c->stack_id);
            json_string(stdout, s ? s->site : NULL);
            printf(", \"net_bytes\": %lld, \"net_count\": %lld, \"added_bytes\": %llu, "
                   "\"added_count\": %llu, \"removed_bytes\": %llu, \"removed_count\": %llu",
                   (long long)net_bytes(c), (long long)net_count(c),
                   (unsigned long long)c->added_bytes, (unsigned long long)c->added_count,
                   (unsigned long long)c->removed_bytes, (unsigned long long)c->removed_count);
            if (s && s->frame_count) {
                fputs(", \"frames\": ", stdout);
                stack_json_frames(stdout, s);
            }
            putchar('}');
        }
        printf(shown ? "\n ]}\n" : "]}\n");
    } else {
        char x[32], y[32], z[32];
        printf("diff of device %d\n  from %s = %s\n  to   %s = %s\n\n", device, from_when,
               p[0].described, to_when, p[1].described);
        text_totals(stdout, "from", "to", "change", &p[0], &p[1]);
        putchar('\n');
        if (nchanges == 0) {
            printf("the same blocks are live at both points\n");
        } else if (nlisted == 0) {
            printf("no site changed its live bytes or block count\n");
        } else {
            printf("blocks live at one point only, by allocation site (largest net change "
                   "first):\n");
            printf("%12s  %6s  %12s  %6s  %12s  %6s  %s\n", "net", "blocks", "added", "blocks",
                   "removed", "blocks", "site");
            for (size_t i = 0; i < shown; i++) {
                const stack_change *c = &listed[i];
                const named_stack *s = stack_names_get(stacks, c->stack_id);
                printf("%12s  %+6lld  %12s  %6llu  %12s  %6llu  %s\n",
                       signed_bytes(net_bytes(c), x, sizeof x), (long long)net_count(c),
                       units_bytes(c->added_bytes, y, sizeof y), (unsigned long long)c->added_count,
                       units_bytes(c->removed_bytes, z, sizeof z),
                       (unsigned long long)c->removed_count, s ? s->site : "?");
            }
            if (shown < nlisted)
                printf("... %zu more site%s (--top 0 lists all)\n", nlisted - shown,
                       nlisted - shown == 1 ? "" : "s");
        }
        if (churn && !all)
            printf("%zu site%s replaced blocks without a change in bytes or count (%s each "
                   "way; --all lists them)\n",
                   churn, churn == 1 ? "" : "s", units_bytes(churn_bytes, x, sizeof x));
        printf("segments: %llu added (%s), %llu removed (%s)\n", (unsigned long long)sc.added_count,
               units_bytes(sc.added_bytes, x, sizeof x), (unsigned long long)sc.removed_count,
               units_bytes(sc.removed_bytes, y, sizeof y));
    }
    free(listed);
done:
    free(changes);
    stack_names_free(stacks);
    layout_free(ls[0]);
    layout_free(ls[1]);
    return status;
}

/* ---- diff of two inputs ------------------------------------------------------ */

typedef struct site_total {
    const char *key;
    const named_stack *stack; /* the first stack with this key */
    uint64_t bytes, count;
} site_total;

typedef struct run {
    const char *input;
    sqlite3 *db;
    int device;
    point p;
    stack_names *stacks;
    site_total *sites; /* by key */
    size_t nsites;
} run;

static int by_key(const void *a, const void *b) {
    return strcmp(((const site_total *)a)->key, ((const site_total *)b)->key);
}

/* The live bytes of a run per stack key. 0, or -1 when out of memory. */
static int run_sites(run *r) {
    size_t n;
    live_item *items = live_items(r->p.l, &n);
    site_total *per = malloc((n + 1) * sizeof *per);
    if (!items || !per) {
        free(items);
        free(per);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const named_stack *s = stack_names_get(r->stacks, items[i].stack_id);
        if (!s) {
            free(items);
            free(per);
            return -1;
        }
        per[i] = (site_total){s->key, s, items[i].size, 1};
    }
    free(items);
    qsort(per, n, sizeof *per, by_key);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !strcmp(per[m - 1].key, per[i].key)) {
            per[m - 1].bytes += per[i].bytes;
            per[m - 1].count += per[i].count;
        } else {
            per[m++] = per[i];
        }
    }
    r->sites = per;
    r->nsites = m;
    return 0;
}

typedef struct site_pair {
    const site_total *a, *b; /* either may be NULL */
} site_pair;

static int64_t pair_diff(const site_pair *p) {
    return sdiff(p->b ? p->b->bytes : 0, p->a ? p->a->bytes : 0);
}

static uint64_t pair_max(const site_pair *p) {
    uint64_t x = p->a ? p->a->bytes : 0, y = p->b ? p->b->bytes : 0;
    return x > y ? x : y;
}

/* Largest difference first, then the largest, then by key. */
static int by_pair_diff(const void *x, const void *y) {
    const site_pair *a = x, *b = y;
    uint64_t ma = mag(pair_diff(a)), mb = mag(pair_diff(b));
    if (ma != mb)
        return ma > mb ? -1 : 1;
    if (pair_diff(a) != pair_diff(b))
        return pair_diff(a) > pair_diff(b) ? -1 : 1;
    if (pair_max(a) != pair_max(b))
        return pair_max(a) > pair_max(b) ? -1 : 1;
    const char *ka = a->a ? a->a->key : a->b->key, *kb = b->a ? b->a->key : b->b->key;
    return strcmp(ka, kb);
}

static void json_site_pair(const site_pair *p, int first) {
    const site_total *any = p->a ? p->a : p->b;
    printf("%s\n  {\"site\": ", first ? "" : ",");
    json_string(stdout, any->stack->site);
    if (p->a && p->b)
        printf(", \"a_bytes\": %llu, \"a_count\": %llu, \"b_bytes\": %llu, \"b_count\": %llu, "
               "\"diff_bytes\": %lld, \"diff_count\": %lld",
               (unsigned long long)p->a->bytes, (unsigned long long)p->a->count,
               (unsigned long long)p->b->bytes, (unsigned long long)p->b->count,
               (long long)pair_diff(p), (long long)p->b->count - (long long)p->a->count);
    else
        printf(", \"bytes\": %llu, \"count\": %llu", (unsigned long long)any->bytes,
               (unsigned long long)any->count);
    if (any->stack->frame_count) {
        fputs(", \"frames\": ", stdout);
        stack_json_frames(stdout, any->stack);
    }
    putchar('}');
}

static void text_pairs(const site_pair *pairs, size_t n, long top, const char *title) {
    char x[32], y[32], z[32];
    size_t shown = top > 0 && (size_t)top < n ? (size_t)top : n;
    if (n == 0)
        return;
    printf("\n%s:\n", title);
    int both = pairs[0].a && pairs[0].b;
    if (both)
        printf("%12s  %6s  %12s  %6s  %12s  %6s  %s\n", "A", "blocks", "B", "blocks", "B - A",
               "blocks", "site");
    else
        printf("%12s  %6s  %s\n", "live", "blocks", "site");
    for (size_t i = 0; i < shown; i++) {
        const site_pair *p = &pairs[i];
        if (both)
            printf("%12s  %6llu  %12s  %6llu  %12s  %+6lld  %s\n",
                   units_bytes(p->a->bytes, x, sizeof x), (unsigned long long)p->a->count,
                   units_bytes(p->b->bytes, y, sizeof y), (unsigned long long)p->b->count,
                   signed_bytes(pair_diff(p), z, sizeof z),
                   (long long)p->b->count - (long long)p->a->count, p->a->stack->site);
        else {
            const site_total *s = p->a ? p->a : p->b;
            printf("%12s  %6llu  %s\n", units_bytes(s->bytes, x, sizeof x),
                   (unsigned long long)s->count, s->stack->site);
        }
    }
    if (shown < n)
        printf("... %zu more site%s (--top 0 lists all)\n", n - shown, n - shown == 1 ? "" : "s");
}

static int diff_runs(run *r, const char *at, int json, long top) {
    char err[512];
    int status = 0;
    site_pair *pairs = NULL;
    for (int i = 0; i < 2; i++) {
        if ((status = resolve_point(r[i].db, r[i].device, at, r[i].input, &r[i].p)) != 0)
            return status;
        if (layout_build(r[i].db, r[i].device, r[i].p.event_id, &r[i].p.l, err, sizeof err) != 0)
            return cli_error("diff: %s: %s", r[i].input, err);
        if (!(r[i].stacks = stack_names_new(r[i].db)) || run_sites(&r[i]) != 0)
            return cli_error("diff: out of memory");
    }
    pairs = malloc((r[0].nsites + r[1].nsites + 1) * sizeof *pairs);
    if (!pairs)
        return cli_error("diff: out of memory");
    /* matched first, then only in A, then only in B, each sorted */
    size_t nboth = 0, nonly_a = 0, nonly_b = 0, i = 0, k = 0, n = 0;
    while (i < r[0].nsites || k < r[1].nsites) {
        int c = i >= r[0].nsites   ? 1
                : k >= r[1].nsites ? -1
                                   : strcmp(r[0].sites[i].key, r[1].sites[k].key);
        if (c == 0) {
            pairs[n++] = (site_pair){&r[0].sites[i++], &r[1].sites[k++]};
            nboth++;
        } else if (c < 0) {
            pairs[n++] = (site_pair){&r[0].sites[i++], NULL};
            nonly_a++;
        } else {
            pairs[n++] = (site_pair){NULL, &r[1].sites[k++]};
            nonly_b++;
        }
    }
    /* group: both, only A, only B */
    site_pair *grouped = malloc((n + 1) * sizeof *grouped);
    if (!grouped) {
        free(pairs);
        return cli_error("diff: out of memory");
    }
    size_t gb = 0, ga = nboth, gz = nboth + nonly_a;
    for (size_t j = 0; j < n; j++) {
        if (pairs[j].a && pairs[j].b)
            grouped[gb++] = pairs[j];
        else if (pairs[j].a)
            grouped[ga++] = pairs[j];
        else
            grouped[gz++] = pairs[j];
    }
    free(pairs);
    qsort(grouped, nboth, sizeof *grouped, by_pair_diff);
    qsort(grouped + nboth, nonly_a, sizeof *grouped, by_pair_diff);
    qsort(grouped + nboth + nonly_a, nonly_b, sizeof *grouped, by_pair_diff);
    if (top < 0)
        top = json ? 0 : DEFAULT_TOP;

    if (json) {
        fputs("{\"at\": ", stdout);
        json_string(stdout, at);
        fputs(",\n", stdout);
        json_point(stdout, "a", &r[0].p, r[0].input, r[0].device);
        fputs(",\n", stdout);
        json_point(stdout, "b", &r[1].p, r[1].input, r[1].device);
        fputs(",\n", stdout);
        json_change(stdout, &r[0].p, &r[1].p);
        const char *names[3] = {"stacks", "only_in_a", "only_in_b"};
        size_t start[3] = {0, nboth, nboth + nonly_a}, len[3] = {nboth, nonly_a, nonly_b};
        for (int g = 0; g < 3; g++) {
            size_t shown = top > 0 && (size_t)top < len[g] ? (size_t)top : len[g];
            printf(",\n \"%s_total\": %zu, \"%s\": [", names[g], len[g], names[g]);
            for (size_t j = 0; j < shown; j++)
                json_site_pair(&grouped[start[g] + j], j == 0);
            printf(shown ? "\n ]" : "]");
        }
        printf("}\n");
    } else {
        printf("diff of two runs at %s\n  A: %s, device %d, %s\n  B: %s, device %d, %s\n\n", at,
               r[0].input, r[0].device, r[0].p.described, r[1].input, r[1].device,
               r[1].p.described);
        text_totals(stdout, "A", "B", "B - A", &r[0].p, &r[1].p);
        text_pairs(grouped, nboth, top,
                   "live blocks by allocation site, matched by frames (largest difference first)");
        text_pairs(grouped + nboth, nonly_a, top, "sites only in A");
        text_pairs(grouped + nboth + nonly_a, nonly_b, top, "sites only in B");
        if (n == 0)
            printf("\nno live blocks in either run\n");
    }
    free(grouped);
    return status;
}

int diff_check(cli_ctx *ctx) {
    const char *from = ctx->from, *to = ctx->to, *at = ctx->text[0];
    int inputs = ctx->ninputs;
    if (inputs > 2)
        return cli_usage_error(ctx);
    if (inputs == 1 && at)
        return cli_error("diff: --at is for two inputs; with one, use --from and --to");
    if (inputs == 1 && (!from || !to))
        return cli_error("diff: one input needs --from WHEN and --to WHEN (two inputs take --at)");
    if (inputs == 2 && (from || to))
        return cli_error("diff: two inputs are compared --at one WHEN, not --from/--to");
    return 0;
}

int run_diff(cli_ctx *ctx) {
    const char *from = ctx->from, *to = ctx->to, *at = ctx->text[0];
    long device = ctx->device, top = ctx->top;
    int json = ctx->json, all = ctx->flag[0], inputs = ctx->ninputs, status;
    input_options io = ctx->io;
    if (inputs == 1) {
        sqlite3 *db;
        int dev;
        if ((status = cli_open_db(ctx->input, &io, &db)) != 0)
            return status;
        status = pick_device(db, device, ctx->input, &dev);
        if (status == 0)
            status = diff_points(db, dev, from, to, json, top, all);
        sqlite3_close(db);
        return status;
    }
    run r[2];
    memset(r, 0, sizeof r);
    status = 0;
    for (int i = 0; i < 2 && status == 0; i++) {
        r[i].input = ctx->inputs[i];
        if ((status = cli_open_db(r[i].input, &io, &r[i].db)) == 0)
            status = pick_device(r[i].db, device, r[i].input, &r[i].device);
    }
    if (status == 0)
        status = diff_runs(r, at ? at : "end", json, top);
    for (int i = 0; i < 2; i++) {
        free(r[i].sites);
        stack_names_free(r[i].stacks);
        layout_free(r[i].p.l);
        sqlite3_close(r[i].db);
    }
    return status;
}
