/* alloc_settings.c — PyTorch's allocator settings: the PYTORCH_CUDA_ALLOC_CONF parser, the
 * roundup table, the model's configuration and the JSON text (alloc_settings.h).
 *
 * The parser follows AllocatorConfig::parseArgs (c10/core/AllocatorConfig.cpp) and
 * CUDAAllocatorConfig::parseArgs: the same tokens (',', ':', '[', ']' split, spaces dropped),
 * the same keys, the same checks. */
#include "alloc_settings.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ULL << 20)

am_settings am_settings_default(void) {
    am_settings s;
    memset(&s, 0, sizeof s);
    s.max_split_size = UINT64_MAX;
    s.max_non_split_rounding = AM_LARGE_BUFFER;
    s.large_segment_size = AM_LARGE_BUFFER;
    s.pinned_num_register_threads = 1;
    s.per_process_memory_fraction = 1.0;
    return s;
}

/* ---- the roundup table ---------------------------------------------------------------- */

static unsigned floor_log2(uint64_t v) {
    unsigned r = 0;
    while (v >>= 1)
        r++;
    return r;
}

unsigned am_roundup_interval_of_mib(uint64_t mib) {
    unsigned index = mib ? floor_log2(mib) : 0;
    return index < AM_ROUNDUP_INTERVALS ? index : AM_ROUNDUP_INTERVALS - 1;
}

/* ---- the parser ------------------------------------------------------------------------ */

#define MAX_TOKENS 256
#define TOKEN_MAX 64

typedef struct tokens {
    char text[MAX_TOKENS][TOKEN_MAX];
    size_t count;
    size_t at; /* the token being read */
    char *err;
    size_t errlen;
} tokens;

static int fail(tokens *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(tokens *t, const char *fmt, ...) {
    if (t->err && t->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->err, t->errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* AllocatorConfig::lexArgs */
static int lex(tokens *t, const char *conf) {
    size_t len = 0;
    char word[TOKEN_MAX];
    for (const char *p = conf;; p++) {
        int separator = *p == ',' || *p == ':' || *p == '[' || *p == ']';
        if ((separator || !*p) && len) {
            if (t->count == MAX_TOKENS)
                return fail(t, "allocator settings: too many items");
            word[len] = '\0';
            memcpy(t->text[t->count++], word, len + 1);
            len = 0;
        }
        if (!*p)
            return 0;
        if (separator) {
            if (t->count == MAX_TOKENS)
                return fail(t, "allocator settings: too many items");
            t->text[t->count][0] = *p;
            t->text[t->count++][1] = '\0';
        } else if (*p != ' ') {
            if (len + 1 == TOKEN_MAX)
                return fail(t, "allocator settings: '%.20s...' is too long", p - len);
            word[len++] = *p;
        }
    }
}

static const char *next_token(tokens *t) { return t->at < t->count ? t->text[t->at++] : NULL; }

static int expect(tokens *t, char c, const char *after) {
    const char *tok = next_token(t);
    if (!tok || tok[0] != c || tok[1])
        return fail(t, "allocator settings: expected '%c' after '%s'", c, after);
    return 0;
}

static int number(tokens *t, const char *key, uint64_t *out) {
    const char *tok = next_token(t);
    uint64_t v = 0;
    if (!tok || !*tok)
        return fail(t, "allocator settings: %s: a number is missing", key);
    for (const char *p = tok; *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
            return fail(t, "allocator settings: %s: '%s' is not a number", key, tok);
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return 0;
}

static int boolean(tokens *t, const char *key, bool *out) {
    const char *tok = next_token(t);
    if (tok && (!strcmp(tok, "True") || !strcmp(tok, "true"))) {
        *out = true;
        return 0;
    }
    if (tok && (!strcmp(tok, "False") || !strcmp(tok, "false"))) {
        *out = false;
        return 0;
    }
    return fail(t, "allocator settings: %s: expected True or False", key);
}

static bool is_power_of_2(uint64_t v) { return v && !(v & (v - 1)); }

/* parseRoundUpPower2Divisions */
static int roundup(tokens *t, am_settings *s) {
    const char *key = "roundup_power2_divisions";
    if (t->at < t->count && !strcmp(t->text[t->at], "[")) {
        t->at++;
        bool first = true;
        unsigned last_index = 0;
        while (t->at < t->count && strcmp(t->text[t->at], "]") != 0) {
            const char *interval = next_token(t);
            uint64_t divisions = 0;
            if (expect(t, ':', interval) != 0 || number(t, key, &divisions) != 0)
                return -1;
            if (divisions && !is_power_of_2(divisions))
                return fail(t, "allocator settings: %s: %llu divisions is not a power of 2", key,
                            (unsigned long long)divisions);
            if (divisions > UINT32_MAX)
                divisions = UINT32_MAX;
            if (!strcmp(interval, ">")) {
                /* every interval after the last one given: AllocatorConfig.cpp (PyTorch 2.9 and
                 * later). CUDAAllocatorConfig before it began at the last one given, so that
                 * "[256:1,512:2,>:8]" gave [512, 1024) MiB 8 divisions, not 2. A snapshot's
                 * dict states the table the run used, whatever its version. */
                for (unsigned i = last_index + 1; i < AM_ROUNDUP_INTERVALS; i++)
                    s->roundup_power2_divisions[i] = (uint32_t)divisions;
            } else {
                uint64_t mib = 0;
                for (const char *p = interval; *p; p++) {
                    if (*p < '0' || *p > '9' || mib > UINT64_MAX / 10)
                        return fail(t, "allocator settings: %s: '%s' is not a size", key, interval);
                    mib = mib * 10 + (uint64_t)(*p - '0');
                }
                if (!is_power_of_2(mib))
                    return fail(t, "allocator settings: %s: interval %s is not a power of 2", key,
                                interval);
                unsigned index = am_roundup_interval_of_mib(mib);
                if (first) {
                    for (unsigned i = 0; i < index; i++)
                        s->roundup_power2_divisions[i] = (uint32_t)divisions;
                    first = false;
                }
                s->roundup_power2_divisions[index] = (uint32_t)divisions;
                last_index = index;
            }
            if (t->at < t->count && strcmp(t->text[t->at], "]") != 0 &&
                expect(t, ',', interval) != 0)
                return -1;
        }
        if (t->at == t->count)
            return fail(t, "allocator settings: %s: ']' is missing", key);
        t->at++; /* the ']' */
    } else {
        uint64_t divisions = 0;
        if (number(t, key, &divisions) != 0)
            return -1;
        if (!is_power_of_2(divisions))
            return fail(t, "allocator settings: %s: %llu divisions is not a power of 2", key,
                        (unsigned long long)divisions);
        for (unsigned i = 0; i < AM_ROUNDUP_INTERVALS; i++)
            s->roundup_power2_divisions[i] =
                divisions > UINT32_MAX ? UINT32_MAX : (uint32_t)divisions;
    }
    s->known |= AM_SET_ROUNDUP;
    return 0;
}

/* per_process_memory_fraction (CUDAAllocatorConfig, PyTorch 2.9): a share in [0, 1] */
static int memory_fraction(tokens *t, am_settings *s) {
    const char *tok = next_token(t);
    double v = 0;
    int n = 0;
    if (!tok || sscanf(tok, "%lf%n", &v, &n) != 1 || tok[n] != '\0')
        return fail(t, "allocator settings: per_process_memory_fraction: not a number");
    if (!(v >= 0.0 && v <= 1.0))
        return fail(t, "allocator settings: per_process_memory_fraction must be in [0.0, 1.0]");
    s->per_process_memory_fraction = v;
    s->known |= AM_SET_MEMORY_FRACTION;
    return 0;
}

static int threshold(tokens *t, am_settings *s) {
    const char *tok = next_token(t);
    double v = 0;
    int n = 0;
    if (!tok || sscanf(tok, "%lf%n", &v, &n) != 1 || tok[n] != '\0')
        return fail(t, "allocator settings: garbage_collection_threshold: not a number");
    if (!(v > 0.0 && v < 1.0))
        return fail(t, "allocator settings: garbage_collection_threshold must be in (0.0, 1.0)");
    s->garbage_collection_threshold = v;
    s->known |= AM_SET_GC_THRESHOLD;
    return 0;
}

/* A size in MiB of at least 20 (kLargeBuffer), as bytes. */
static int size_mb(tokens *t, const char *key, uint64_t *out) {
    uint64_t mib = 0;
    if (number(t, key, &mib) != 0)
        return -1;
    if (mib < AM_LARGE_BUFFER / MIB)
        return fail(t, "allocator settings: %s too small, must be >= %llu", key,
                    (unsigned long long)(AM_LARGE_BUFFER / MIB));
    *out = mib > UINT64_MAX / MIB ? UINT64_MAX / MIB * MIB : mib * MIB;
    return 0;
}

static int one_setting(tokens *t, am_settings *s, const char *key) {
    if (expect(t, ':', key) != 0)
        return -1;
    if (!strcmp(key, "max_split_size_mb")) {
        if (size_mb(t, key, &s->max_split_size) != 0)
            return -1;
        s->known |= AM_SET_MAX_SPLIT;
    } else if (!strcmp(key, "max_non_split_rounding_mb")) {
        if (size_mb(t, key, &s->max_non_split_rounding) != 0)
            return -1;
        s->known |= AM_SET_MAX_NON_SPLIT_ROUNDING;
    } else if (!strcmp(key, "large_segment_size_mb")) { /* PyTorch 2.9: above kMinLargeAlloc */
        uint64_t mib = 0;
        if (number(t, key, &mib) != 0)
            return -1;
        if (mib <= AM_MIN_LARGE_ALLOC / MIB)
            return fail(t, "allocator settings: %s must be > %llu", key,
                        (unsigned long long)(AM_MIN_LARGE_ALLOC / MIB));
        s->large_segment_size = mib > UINT64_MAX / MIB ? UINT64_MAX / MIB * MIB : mib * MIB;
        s->known |= AM_SET_LARGE_SEGMENT;
    } else if (!strcmp(key, "garbage_collection_threshold")) {
        return threshold(t, s);
    } else if (!strcmp(key, "roundup_power2_divisions")) {
        return roundup(t, s);
    } else if (!strcmp(key, "per_process_memory_fraction")) {
        return memory_fraction(t, s);
    } else if (!strcmp(key, "expandable_segments")) {
        if (boolean(t, key, &s->expandable_segments) != 0)
            return -1;
        s->known |= AM_SET_EXPANDABLE;
    } else if (!strcmp(key, "release_lock_on_cudamalloc") ||
               !strcmp(key, "release_lock_on_hipmalloc")) {
        if (boolean(t, key, &s->release_lock_on_cudamalloc) != 0)
            return -1;
        s->known |= AM_SET_RELEASE_LOCK;
    } else if (!strcmp(key, "pinned_use_cuda_host_register") ||
               !strcmp(key, "pinned_use_hip_host_register")) {
        if (boolean(t, key, &s->pinned_use_cuda_host_register) != 0)
            return -1;
        s->known |= AM_SET_PINNED_REGISTER;
    } else if (!strcmp(key, "pinned_use_background_threads")) {
        if (boolean(t, key, &s->pinned_use_background_threads) != 0)
            return -1;
        s->known |= AM_SET_PINNED_BACKGROUND;
    } else if (!strcmp(key, "graph_capture_record_stream_reuse")) {
        if (boolean(t, key, &s->graph_capture_record_stream_reuse) != 0)
            return -1;
        s->known |= AM_SET_GRAPH_REUSE;
    } else if (!strcmp(key, "pinned_num_register_threads")) {
        uint64_t n = 0;
        if (number(t, key, &n) != 0)
            return -1;
        if (!is_power_of_2(n) || n > 128)
            return fail(t, "allocator settings: %s must be a power of 2 up to 128", key);
        s->pinned_num_register_threads = n;
        s->known |= AM_SET_PINNED_THREADS;
    } else if (!strcmp(key, "pinned_reserve_segment_size_mb")) {
        uint64_t n = 0;
        if (number(t, key, &n) != 0)
            return -1;
        if (n == 0)
            return fail(t, "allocator settings: %s must be greater than 0", key);
        s->pinned_reserve_segment_size_mb = n;
        s->known |= AM_SET_PINNED_RESERVE;
    } else if (!strcmp(key, "backend")) {
        const char *v = next_token(t);
        if (!v || (strcmp(v, "native") != 0 && strcmp(v, "cudaMallocAsync") != 0 &&
                   strcmp(v, "hipMallocAsync") != 0))
            return fail(t, "allocator settings: backend must be native or cudaMallocAsync");
        s->backend_async = strcmp(v, "native") != 0;
        s->known |= AM_SET_BACKEND;
    } else {
        return fail(t, "allocator settings: unknown key '%s'", key);
    }
    return 0;
}

int am_settings_parse(am_settings *s, const char *conf, char *err, size_t errlen) {
    tokens t; /* 16 KiB: PYTORCH_CUDA_ALLOC_CONF strings are short */
    t.count = t.at = 0;
    t.err = err;
    t.errlen = errlen;
    if (err && errlen)
        err[0] = '\0';
    if (!conf)
        return 0;
    if (lex(&t, conf) != 0)
        return -1;
    while (t.at < t.count) {
        const char *key = next_token(&t);
        if (one_setting(&t, s, key) != 0)
            return -1;
        if (t.at < t.count && expect(&t, ',', key) != 0)
            return -1;
    }
    return 0;
}

/* ---- the model's configuration -------------------------------------------------------- */

am_config am_settings_config(const am_settings *s, am_config base) {
    /* values PyTorch refuses (below 20 MiB) cannot have been in effect: ignored */
    if (s->known & AM_SET_EXPANDABLE)
        base.expandable_segments = s->expandable_segments;
    if ((s->known & AM_SET_MAX_SPLIT) && s->max_split_size >= AM_LARGE_BUFFER)
        base.max_split_size = s->max_split_size;
    if ((s->known & AM_SET_MAX_NON_SPLIT_ROUNDING) && s->max_non_split_rounding >= AM_LARGE_BUFFER)
        base.max_non_split_rounding = s->max_non_split_rounding;
    if (s->known & AM_SET_ROUNDUP)
        memcpy(base.roundup_power2_divisions, s->roundup_power2_divisions,
               sizeof base.roundup_power2_divisions);
    if ((s->known & AM_SET_LARGE_SEGMENT) && s->large_segment_size > AM_MIN_LARGE_ALLOC)
        base.large_segment_size = s->large_segment_size;
    if ((s->known & AM_SET_GC_THRESHOLD) && s->garbage_collection_threshold > 0 &&
        s->garbage_collection_threshold < 1)
        base.garbage_collection_threshold = s->garbage_collection_threshold;
    return base;
}

/* ---- JSON ------------------------------------------------------------------------------ */

typedef struct out_buf {
    char *p;
    size_t len, used;
} out_buf;

static void put(out_buf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out_buf *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->used < o->len ? o->len - o->used : 0;
    int n = vsnprintf(room ? o->p + o->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->used += (size_t)n;
}

static void put_key(out_buf *o, const char *key) {
    put(o, "%s\"%s\": ", o->used > 1 ? ", " : "", key);
}

static void put_string(out_buf *o, const char *text) {
    put(o, "\"");
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p == '"' || *p == '\\')
            put(o, "\\%c", *p);
        else if (*p < 0x20)
            put(o, "\\u%04x", *p);
        else
            put(o, "%c", *p);
    }
    put(o, "\"");
}

static void put_bool(out_buf *o, const char *key, bool v) {
    put_key(o, key);
    put(o, "%s", v ? "true" : "false");
}

size_t am_settings_json(const am_settings *s, char *out, size_t len) {
    out_buf o = {out, len, 0};
    if (out && len)
        out[0] = '\0';
    put(&o, "{");
    if (s->known & AM_SET_CONF) {
        put_key(&o, "PYTORCH_CUDA_ALLOC_CONF");
        put_string(&o, s->alloc_conf);
    }
    if (s->known & AM_SET_EXPANDABLE)
        put_bool(&o, "expandable_segments", s->expandable_segments);
    if (s->known & AM_SET_MAX_SPLIT) {
        put_key(&o, "max_split_size");
        if (s->max_split_size == UINT64_MAX)
            put(&o, "-1");
        else
            put(&o, "%llu", (unsigned long long)s->max_split_size);
    }
    if (s->known & AM_SET_GC_THRESHOLD) { /* a float, written as Python writes it: 0.0 */
        char number[40];
        snprintf(number, sizeof number, "%.17g", s->garbage_collection_threshold);
        put_key(&o, "garbage_collection_threshold");
        put(&o, "%s%s", number, strpbrk(number, ".eEn") ? "" : ".0");
    }
    if (s->known & AM_SET_ROUNDUP) {
        put_key(&o, "roundup_power2_divisions");
        put(&o, "{");
        for (unsigned i = 0; i < AM_ROUNDUP_INTERVALS; i++)
            put(&o, "%s\"%llu\": %u", i ? ", " : "", 1ULL << i, s->roundup_power2_divisions[i]);
        put(&o, "}");
    }
    if (s->known & AM_SET_RELEASE_LOCK)
        put_bool(&o, "release_lock_on_cudamalloc", s->release_lock_on_cudamalloc);
    if (s->known & AM_SET_PINNED_REGISTER)
        put_bool(&o, "pinned_use_cuda_host_register", s->pinned_use_cuda_host_register);
    if (s->known & AM_SET_PINNED_THREADS) {
        put_key(&o, "pinned_num_register_threads");
        put(&o, "%llu", (unsigned long long)s->pinned_num_register_threads);
    }
    if (s->known & AM_SET_PINNED_BACKGROUND)
        put_bool(&o, "pinned_use_background_threads", s->pinned_use_background_threads);
    if (s->known & AM_SET_GRAPH_REUSE)
        put_bool(&o, "graph_capture_record_stream_reuse", s->graph_capture_record_stream_reuse);
    if (s->known & AM_SET_MAX_NON_SPLIT_ROUNDING) {
        put_key(&o, "max_non_split_rounding_mb");
        put(&o, "%llu", (unsigned long long)(s->max_non_split_rounding / MIB));
    }
    if (s->known & AM_SET_PINNED_RESERVE) {
        put_key(&o, "pinned_reserve_segment_size_mb");
        put(&o, "%llu", (unsigned long long)s->pinned_reserve_segment_size_mb);
    }
    if (s->known & AM_SET_BACKEND) {
        put_key(&o, "backend");
        put_string(&o, s->backend_async ? "cudaMallocAsync" : "native");
    }
    if (s->known & AM_SET_LARGE_SEGMENT) {
        put_key(&o, "large_segment_size_mb");
        put(&o, "%llu", (unsigned long long)(s->large_segment_size / MIB));
    }
    if (s->known & AM_SET_MEMORY_FRACTION) {
        put_key(&o, "per_process_memory_fraction");
        put(&o, "%.17g", s->per_process_memory_fraction);
    }
    put(&o, "}");
    return o.used;
}

/* ---- reading the JSON back ------------------------------------------------------------- */

/* The value after "key": in `json` (the text am_settings_json writes: one flat object, the
 * roundup dict inside it), or NULL. A key inside a string value cannot match: its quotes are
 * escaped there. */
static const char *json_value(const char *json, const char *key) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\":", key);
    const char *p = strstr(json, quoted);
    if (!p)
        return NULL;
    p += strlen(quoted);
    while (*p == ' ')
        p++;
    return p;
}

/* A JSON number of MiB as bytes, saturated. */
static uint64_t mib_bytes(const char *v) {
    unsigned long long mib = strtoull(v, NULL, 10);
    return mib > UINT64_MAX / MIB ? UINT64_MAX : mib * MIB;
}

void am_settings_from_json(am_settings *s, const char *json) {
    if (!json)
        return;
    const char *v = json_value(json, "PYTORCH_CUDA_ALLOC_CONF");
    if (v && *v == '"') { /* the string first: the dict's keys are the values in effect */
        size_t n = 0;
        for (v++; *v && *v != '"' && n + 1 < sizeof s->alloc_conf; v++) {
            if (*v == '\\' && v[1])
                v++;
            s->alloc_conf[n++] = *v;
        }
        s->alloc_conf[n] = '\0';
        am_settings_parse(s, s->alloc_conf, NULL, 0);
        s->known |= AM_SET_CONF;
    }
    if ((v = json_value(json, "expandable_segments"))) {
        s->expandable_segments = !strncmp(v, "true", 4);
        s->known |= AM_SET_EXPANDABLE;
    }
    if ((v = json_value(json, "max_split_size"))) {
        long long bytes = strtoll(v, NULL, 10);
        s->max_split_size = bytes > 0 ? (uint64_t)bytes : UINT64_MAX;
        s->known |= AM_SET_MAX_SPLIT;
    }
    if ((v = json_value(json, "garbage_collection_threshold"))) {
        s->garbage_collection_threshold = strtod(v, NULL);
        s->known |= AM_SET_GC_THRESHOLD;
    }
    if ((v = json_value(json, "large_segment_size_mb"))) {
        s->large_segment_size = mib_bytes(v);
        s->known |= AM_SET_LARGE_SEGMENT;
    }
    if ((v = json_value(json, "per_process_memory_fraction"))) {
        s->per_process_memory_fraction = strtod(v, NULL);
        s->known |= AM_SET_MEMORY_FRACTION;
    }
    if ((v = json_value(json, "max_non_split_rounding_mb"))) {
        s->max_non_split_rounding = mib_bytes(v);
        s->known |= AM_SET_MAX_NON_SPLIT_ROUNDING;
    }
    if ((v = json_value(json, "roundup_power2_divisions")) && *v == '{') {
        const char *end = strchr(v, '}');
        for (const char *p = v + 1; end && p < end;) { /* "MiB": divisions, ... */
            const char *key = strchr(p, '"');
            if (!key || key > end)
                break;
            char *after;
            unsigned long long mib = strtoull(key + 1, &after, 10);
            const char *colon = strchr(after, ':');
            if (!colon || colon > end)
                break;
            unsigned long long divisions = strtoull(colon + 1, (char **)&p, 10);
            if (is_power_of_2(mib))
                s->roundup_power2_divisions[am_roundup_interval_of_mib(mib)] =
                    divisions > UINT32_MAX ? UINT32_MAX : (uint32_t)divisions;
        }
        s->known |= AM_SET_ROUNDUP;
    }
}

/* ---- as a PYTORCH_CUDA_ALLOC_CONF -------------------------------------------------------- */

/* The shortest decimal that reads back as v (0.6, not 0.59999999999999998). */
static const char *shortest(double v, char *buf, size_t len) {
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

size_t am_settings_conf_text(const am_settings *s, char *out, size_t len) {
    out_buf o = {out, len, 0};
    if (out && len)
        out[0] = '\0';
    put(&o, "expandable_segments:%s", s->expandable_segments ? "True" : "False");
    if (s->max_split_size != UINT64_MAX)
        put(&o, ",max_split_size_mb:%llu", (unsigned long long)(s->max_split_size / MIB));
    if ((s->known & AM_SET_MAX_NON_SPLIT_ROUNDING) && s->max_non_split_rounding != AM_LARGE_BUFFER)
        put(&o, ",max_non_split_rounding_mb:%llu",
            (unsigned long long)(s->max_non_split_rounding / MIB));
    if ((s->known & AM_SET_LARGE_SEGMENT) && s->large_segment_size != AM_LARGE_BUFFER)
        put(&o, ",large_segment_size_mb:%llu", (unsigned long long)(s->large_segment_size / MIB));
    const uint32_t *t = s->roundup_power2_divisions;
    unsigned runs = 1, nonzero = t[0] != 0;
    for (unsigned i = 1; i < AM_ROUNDUP_INTERVALS; i++) {
        runs += t[i] != t[i - 1];
        nonzero |= t[i] != 0;
    }
    if (nonzero && runs == 1) {
        put(&o, ",roundup_power2_divisions:%u", t[0]);
    } else if (nonzero) { /* each run but the last by its last interval, the last as ">" */
        put(&o, ",roundup_power2_divisions:[");
        for (unsigned i = 0; i + 1 < AM_ROUNDUP_INTERVALS; i++)
            if (t[i] != t[i + 1])
                put(&o, "%llu:%u,", 1ULL << i, t[i]);
        put(&o, ">:%u]", t[AM_ROUNDUP_INTERVALS - 1]);
    }
    char number[32];
    if (s->garbage_collection_threshold > 0)
        put(&o, ",garbage_collection_threshold:%s",
            shortest(s->garbage_collection_threshold, number, sizeof number));
    if (s->known & AM_SET_MEMORY_FRACTION)
        put(&o, ",per_process_memory_fraction:%s",
            shortest(s->per_process_memory_fraction, number, sizeof number));
    return o.used;
}
