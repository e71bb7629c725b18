/* test_torch_history.c — model/torch_history.h: what each PyTorch history
 * action becomes (op, level, size, requested, address, the oom counter),
 * and that recorder/python/memrec_torch.py numbers the actions as the C
 * table does (its ACTIONS dict is read from the source tree, argv[1]). */
#include "check.h"
#include "torch_history.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const gmt_torch_entry base = {.addr = 0x7f0000001000ull,
                                     .size = 1000,
                                     .stream = 7,
                                     .device_free = 123456,
                                     .ts_ns = 42000,
                                     .device = 1,
                                     .stack_id = 9};

static trace_event event_of(unsigned action, uint64_t size, int *made) {
    gmt_torch_entry e = base;
    e.action = action;
    e.size = size;
    trace_event ev;
    memset(&ev, 0xAB, sizeof ev);
    *made = gmt_torch_event(&e, &ev);
    return ev;
}

static void check_action(unsigned action, const char *name, trace_op op, trace_level level,
                         uint64_t size, uint64_t want_size, uint64_t want_requested) {
    CHECK_STR_EQ(gmt_torch_action_name(action), name);
    CHECK(gmt_torch_action_named(name) == (int)action);
    int made;
    trace_event ev = event_of(action, size, &made);
    CHECK(made == 1);
    CHECK_EQ_U64(ev.op, op);
    CHECK_EQ_U64(ev.level, level);
    CHECK_EQ_U64(ev.size, want_size);
    CHECK_EQ_U64(ev.requested, want_requested);
    CHECK_EQ_U64(ev.addr, action == GMT_TORCH_OOM ? 0 : base.addr);
    CHECK_EQ_U64(ev.stream, base.stream);
    CHECK_EQ_U64(ev.ts_ns, base.ts_ns);
    CHECK_EQ_U64(ev.device, base.device);
    CHECK_EQ_U64(ev.stack_id, base.stack_id);
    CHECK_EQ_U64(ev.kind, TRACE_KIND_DEVICE);
    CHECK_EQ_U64(ev.source, TRACE_SOURCE_TORCH);
    CHECK_EQ_U64(ev.tid, 0);
    CHECK_EQ_U64(ev.pool, 0);
    CHECK(gmt_torch_rules[action].emits == 1);
    CHECK(gmt_torch_rules[action].op == op && gmt_torch_rules[action].level == level);
}

static void test_rules(void) {
    enum { MIB = 1 << 20 };
    /* blocks: the request rounded to 512, requested = the request */
    check_action(GMT_TORCH_ALLOC, "alloc", TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, 1000, 1024, 1000);
    check_action(GMT_TORCH_FREE_REQUESTED, "free_requested", TRACE_OP_FREE_REQUESTED,
                 TRACE_LEVEL_BLOCK, 1000, 1024, 1000);
    check_action(GMT_TORCH_FREE_COMPLETED, "free_completed", TRACE_OP_FREE, TRACE_LEVEL_BLOCK, 1000,
                 1024, 1000);
    check_action(GMT_TORCH_ALLOC, "alloc", TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, 512, 512, 512);
    check_action(GMT_TORCH_ALLOC, "alloc", TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, 513, 1024, 513);
    check_action(GMT_TORCH_ALLOC, "alloc", TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, 1, 512, 1);
    /* a zero request counts as 1 */
    check_action(GMT_TORCH_ALLOC, "alloc", TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, 0, 512, 1);
    check_action(GMT_TORCH_FREE_REQUESTED, "free_requested", TRACE_OP_FREE_REQUESTED,
                 TRACE_LEVEL_BLOCK, 0, 512, 1);
    check_action(GMT_TORCH_FREE_COMPLETED, "free_completed", TRACE_OP_FREE, TRACE_LEVEL_BLOCK, 0,
                 512, 1);
    /* segments: the size as it is, 0 too */
    check_action(GMT_TORCH_SEGMENT_ALLOC, "segment_alloc", TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT,
                 2 * MIB, 2 * MIB, 2 * MIB);
    check_action(GMT_TORCH_SEGMENT_FREE, "segment_free", TRACE_OP_FREE, TRACE_LEVEL_SEGMENT,
                 2 * MIB + 3, 2 * MIB + 3, 2 * MIB + 3);
    check_action(GMT_TORCH_SEGMENT_MAP, "segment_map", TRACE_OP_MAP, TRACE_LEVEL_SEGMENT, 2 * MIB,
                 2 * MIB, 2 * MIB);
    check_action(GMT_TORCH_SEGMENT_UNMAP, "segment_unmap", TRACE_OP_UNMAP, TRACE_LEVEL_SEGMENT,
                 2 * MIB, 2 * MIB, 2 * MIB);
    check_action(GMT_TORCH_SEGMENT_ALLOC, "segment_alloc", TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, 0,
                 0, 0);
    /* oom: a block-level event at address 0 for the rounded request */
    check_action(GMT_TORCH_OOM, "oom", TRACE_OP_OOM, TRACE_LEVEL_BLOCK, 3 * MIB + 1, 3 * MIB + 512,
                 3 * MIB + 1);
    check_action(GMT_TORCH_OOM, "oom", TRACE_OP_OOM, TRACE_LEVEL_BLOCK, 0, 512, 1);

    /* snapshot and unknown actions make nothing; *ev is left alone */
    int made;
    trace_event ev = event_of(GMT_TORCH_SNAPSHOT, 1000, &made);
    CHECK(made == 0 && ev.size == 0xABABABABABABABABull);
    CHECK_STR_EQ(gmt_torch_action_name(GMT_TORCH_SNAPSHOT), "snapshot");
    CHECK(gmt_torch_action_named("snapshot") == GMT_TORCH_SNAPSHOT);
    CHECK(gmt_torch_rules[GMT_TORCH_SNAPSHOT].emits == 0);
    ev = event_of(GMT_TORCH_ACTION_COUNT, 1000, &made);
    CHECK(made == 0);
    ev = event_of(99, 1000, &made);
    CHECK(made == 0);
    CHECK(gmt_torch_action_name(GMT_TORCH_ACTION_COUNT) == NULL);
    CHECK(gmt_torch_action_named("user_defined") == -1);
    CHECK(gmt_torch_action_named("Alloc") == -1);
    CHECK(gmt_torch_action_named("") == -1);
    CHECK(gmt_torch_action_named(NULL) == -1);

    /* the counter: an oom's driver_free, at the event's time, nothing else */
    for (unsigned a = 0; a <= GMT_TORCH_ACTION_COUNT; a++) {
        gmt_torch_entry e = base;
        e.action = a;
        trace_counter c;
        memset(&c, 0xAB, sizeof c);
        int has = gmt_torch_counter(&e, &c);
        CHECK(has == (a == GMT_TORCH_OOM));
        if (has) {
            CHECK_EQ_U64(c.ts_ns, base.ts_ns);
            CHECK_EQ_U64(c.device, base.device);
            CHECK_EQ_U64(c.kind, TRACE_COUNTER_DRIVER_FREE);
            CHECK_EQ_U64(c.value, base.device_free);
            CHECK_EQ_U64(c.key, 0);
        }
    }

    /* the size of a block a history entry names */
    CHECK_EQ_U64(gmt_torch_block_size(0), 512);
    CHECK_EQ_U64(gmt_torch_block_size(1), 512);
    CHECK_EQ_U64(gmt_torch_block_size(512), 512);
    CHECK_EQ_U64(gmt_torch_block_size(513), 1024);
    CHECK_EQ_U64(gmt_torch_block_size(20 * MIB + 1), 20 * MIB + 512);
}

/* memrec_torch.py's ACTIONS = {"name": number, ...} (possibly over several
 * lines) must be exactly the C actions that make events, with their numbers. */
static void test_python_numbering(const char *source_dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/recorder/python/memrec_torch.py", source_dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f)
        return;
    char text[4096] = "", line[1024];
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        if (!in && strncmp(line, "ACTIONS = {", 11) == 0)
            in = 1;
        if (in && strlen(text) + strlen(line) < sizeof text)
            strcat(text, line);
        if (in && strchr(line, '}'))
            break;
    }
    fclose(f);
    CHECK(in && strchr(text, '}'));
    int seen[GMT_TORCH_ACTION_COUNT] = {0}, pairs = 0, emitting = 0;
    for (const char *p = strchr(text, '{'); p && (p = strchr(p, '"'));) {
        const char *end = strchr(p + 1, '"');
        if (!end)
            break;
        char name[64];
        size_t len = (size_t)(end - p - 1);
        CHECK(len < sizeof name);
        if (len >= sizeof name)
            break;
        memcpy(name, p + 1, len);
        name[len] = '\0';
        p = end + 1;
        while (*p == ' ' || *p == ':')
            p++;
        CHECK(isdigit((unsigned char)*p));
        long number = strtol(p, NULL, 10);
        int action = gmt_torch_action_named(name);
        if (action < 0 || number != action)
            fprintf(stderr, "memrec_torch.py: ACTIONS[\"%s\"] = %ld, torch_history.h says %d\n",
                    name, number, action);
        CHECK(action >= 0 && number == action);
        if (action >= 0) {
            CHECK(gmt_torch_rules[action].emits); /* only what becomes an event crosses */
            seen[action]++;
        }
        pairs++;
    }
    for (int a = 0; a < GMT_TORCH_ACTION_COUNT; a++) {
        emitting += gmt_torch_rules[a].emits;
        if (seen[a] != gmt_torch_rules[a].emits)
            fprintf(stderr, "memrec_torch.py: ACTIONS has \"%s\" %d times, want %d\n",
                    gmt_torch_rules[a].name, seen[a], gmt_torch_rules[a].emits);
        CHECK(seen[a] == gmt_torch_rules[a].emits);
    }
    CHECK(pairs == emitting && emitting == 8);
}

int main(int argc, char **argv) {
    test_rules();
    if (argc > 1)
        test_python_numbering(argv[1]);
    else
        CHECK(!"the source directory is argv[1]");
    return check_finish("test_torch_history");
}
