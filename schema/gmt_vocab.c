/* gmt_vocab.c — the words for the format's enums, generated from gmt_vocab.h.
 *
 * Text reports, JSON and the SQLite tables all say "alloc", "block",
 * "pinned_host": these tables are the single spelling of each, so a query
 * written against one output works against the others. gmt_vocab_code goes
 * the other way, for the `{op:alloc}` tokens of the analyzer's SQL. */
#include "trace_format.h"

#include <string.h>

#define NAME_OF(table, i)                                                                          \
    ((i) < sizeof(table) / sizeof(table[0]) && table[i] ? table[i] : "unknown")
#define NAME_AT(id, code, name, meaning) [code] = name,
#define WARNING_NAME(id, name, meaning) name,

static const char *const op_names[DB_OP_END] = {TRACE_OP_LIST(NAME_AT) DB_OP_LIST(NAME_AT)};
static const char *const level_names[TRACE_LEVEL_COUNT] = {TRACE_LEVEL_LIST(NAME_AT)};
static const char *const kind_names[TRACE_KIND_COUNT] = {TRACE_KIND_LIST(NAME_AT)};
static const char *const source_names[TRACE_SOURCE_COUNT] = {TRACE_SOURCE_LIST(NAME_AT)};
static const char *const marker_names[TRACE_MARK_COUNT] = {TRACE_MARK_LIST(NAME_AT)};
static const char *const counter_names[TRACE_COUNTER_COUNT] = {TRACE_COUNTER_LIST(NAME_AT)};
static const char *const warning_names[DB_WARNING_COUNT] = {DB_WARNING_LIST(WARNING_NAME)};

const char *trace_op_name(unsigned op) { return NAME_OF(op_names, op); }

const char *trace_level_name(unsigned level) { return NAME_OF(level_names, level); }

const char *trace_kind_name(unsigned kind) { return NAME_OF(kind_names, kind); }

const char *trace_source_name(unsigned source) { return NAME_OF(source_names, source); }

const char *trace_marker_kind_name(unsigned kind) { return NAME_OF(marker_names, kind); }

const char *trace_counter_kind_name(unsigned kind) { return NAME_OF(counter_names, kind); }

const char *db_warning_name(unsigned warning) { return NAME_OF(warning_names, warning); }

static const struct vocab_list {
    const char *list;
    const char *const *names;
    size_t count;
} vocab_lists[] = {
    {"op", op_names, DB_OP_END},
    {"level", level_names, TRACE_LEVEL_COUNT},
    {"kind", kind_names, TRACE_KIND_COUNT},
    {"source", source_names, TRACE_SOURCE_COUNT},
    {"marker", marker_names, TRACE_MARK_COUNT},
    {"counter", counter_names, TRACE_COUNTER_COUNT},
    {"warning", warning_names, DB_WARNING_COUNT},
};

int gmt_vocab_code(const char *list, size_t list_len, const char *name, size_t name_len) {
    for (size_t l = 0; l < sizeof vocab_lists / sizeof vocab_lists[0]; l++) {
        const struct vocab_list *v = &vocab_lists[l];
        if (strlen(v->list) != list_len || memcmp(v->list, list, list_len) != 0)
            continue;
        for (size_t i = 0; i < v->count; i++)
            if (v->names[i] && strlen(v->names[i]) == name_len &&
                memcmp(v->names[i], name, name_len) == 0)
                return (int)i;
        return -1;
    }
    return -1;
}

#define BAND_FROM(id, from, name) from,
#define BAND_NAME(id, from, name) name,
static const double band_from[FRAG_BAND_COUNT] = {FRAG_BAND_LIST(BAND_FROM)};
static const char *const band_names[FRAG_BAND_COUNT] = {FRAG_BAND_LIST(BAND_NAME)};

double gmt_frag_band_from(gmt_frag_band b) { return b < FRAG_BAND_COUNT ? band_from[b] : 1.0; }

const char *gmt_frag_band_name(gmt_frag_band b) { return NAME_OF(band_names, (unsigned)b); }

gmt_frag_band gmt_frag_rate(double ratio) {
    gmt_frag_band b = FRAG_BAND_GOOD;
    while (b + 1 < FRAG_BAND_COUNT && ratio >= band_from[b + 1])
        b++;
    return b;
}

#define CATEGORY_NAME(id, name, colour, meaning) name,
#define CATEGORY_COLOUR(id, name, colour, meaning) colour,
static const char *const category_names[BLOCK_CATEGORY_COUNT] = {
    BLOCK_CATEGORY_LIST(CATEGORY_NAME)};
static const unsigned category_colours[BLOCK_CATEGORY_COUNT] = {
    BLOCK_CATEGORY_LIST(CATEGORY_COLOUR)};

const char *gmt_category_name(gmt_category c) { return NAME_OF(category_names, (unsigned)c); }

unsigned gmt_category_colour(gmt_category c) {
    return (unsigned)c < BLOCK_CATEGORY_COUNT ? category_colours[c] : 0x808080;
}

int gmt_category_from_name(const char *name, size_t len) {
    for (int c = 0; c < BLOCK_CATEGORY_COUNT; c++)
        if (strlen(category_names[c]) == len && memcmp(category_names[c], name, len) == 0)
            return c;
    return -1;
}

const char *trace_record_kind_name(unsigned kind) {
    switch (kind) {
    case TRACE_REC_PROCESS:
        return "process";
    case TRACE_REC_DEVICE:
        return "device";
    case TRACE_REC_MODULE:
        return "module";
    case TRACE_REC_STRING:
        return "string";
    case TRACE_REC_FRAME:
        return "frame";
    case TRACE_REC_SYMBOL:
        return "symbol";
    case TRACE_REC_STACK:
        return "stack";
    case TRACE_REC_MARKER:
        return "marker";
    case TRACE_REC_COUNTER:
        return "counter";
    case TRACE_REC_THREAD:
        return "thread";
    case TRACE_REC_END:
        return "end";
    case TRACE_REC_EVENT:
        return "event";
    }
    return "unknown";
}
