/* test_alloc_settings.c — PyTorch's allocator settings (model/alloc_settings.h): the
 * PYTORCH_CUDA_ALLOC_CONF parser with PyTorch's own rules and refusals, the roundup table, the
 * model's configuration and the JSON text the database keeps. */
#include "alloc_settings.h"
#include "check.h"

#define MiB (1ULL << 20)

static void test_parse(void) {
    char err[256];
    am_settings s = am_settings_default();
    CHECK(s.known == 0 && s.max_split_size == UINT64_MAX && !s.expandable_segments);
    CHECK_EQ_U64(am_settings_parse(&s, "", err, sizeof err), 0);
    CHECK(s.known == 0);
    CHECK_EQ_U64(am_settings_parse(&s,
                                   "expandable_segments:True, max_split_size_mb:128,"
                                   "roundup_power2_divisions:[256:1,512:2,1024:4,>:8],"
                                   "garbage_collection_threshold:0.6",
                                   err, sizeof err),
                 0);
    CHECK(s.known == (AM_SET_EXPANDABLE | AM_SET_MAX_SPLIT | AM_SET_ROUNDUP | AM_SET_GC_THRESHOLD));
    CHECK(s.expandable_segments);
    CHECK_EQ_U64(s.max_split_size, 128 * MiB);
    CHECK(s.garbage_collection_threshold == 0.6);
    /* the first interval given also sets every interval below it; '>' sets every interval
     * above the last one given (AllocatorConfig::parseRoundUpPower2Divisions, PyTorch 2.9;
     * before it, '>' overwrote 1024's 4 with 8 as well) */
    static const uint32_t divisions[AM_ROUNDUP_INTERVALS] = {1, 1, 1, 1, 1, 1, 1, 1,
                                                             1, 2, 4, 8, 8, 8, 8, 8};
    for (int i = 0; i < AM_ROUNDUP_INTERVALS; i++)
        CHECK_EQ_U64(s.roundup_power2_divisions[i], divisions[i]);
    CHECK_EQ_U64(am_roundup_divisions(s.roundup_power2_divisions, 100), 1);
    CHECK_EQ_U64(am_roundup_divisions(s.roundup_power2_divisions, 600 * MiB), 2);
    CHECK_EQ_U64(am_roundup_divisions(s.roundup_power2_divisions, 1ULL << 40), 8);
    CHECK_EQ_U64(am_roundup_interval_of_mib(1), 0);
    CHECK_EQ_U64(am_roundup_interval_of_mib(1024), 10);
    CHECK_EQ_U64(am_roundup_interval_of_mib(1ULL << 20), AM_ROUNDUP_INTERVALS - 1);

    am_settings t = am_settings_default();
    CHECK_EQ_U64(am_settings_parse(&t,
                                   "roundup_power2_divisions:4,release_lock_on_cudamalloc:True,"
                                   "pinned_use_cuda_host_register:False,"
                                   "pinned_num_register_threads:8,max_non_split_rounding_mb:40,"
                                   "backend:native,graph_capture_record_stream_reuse:true",
                                   err, sizeof err),
                 0);
    for (int i = 0; i < AM_ROUNDUP_INTERVALS; i++)
        CHECK_EQ_U64(t.roundup_power2_divisions[i], 4);
    CHECK(t.release_lock_on_cudamalloc && !t.pinned_use_cuda_host_register);
    CHECK_EQ_U64(t.pinned_num_register_threads, 8);
    CHECK_EQ_U64(t.max_non_split_rounding, 40 * MiB);
    CHECK(!t.backend_async && t.graph_capture_record_stream_reuse);
    CHECK(!(t.known & AM_SET_EXPANDABLE));

    /* PyTorch's refusals */
    static const char *const bad[] = {"max_split_size_mb:19",
                                      "max_split_size_mb:abc",
                                      "expandable_segments:yes",
                                      "roundup_power2_divisions:3",
                                      "large_segment_size_mb:10",
                                      "roundup_power2_divisions:[3:4]",
                                      "roundup_power2_divisions:[256:3]",
                                      "roundup_power2_divisions:[256:4",
                                      "garbage_collection_threshold:1.0",
                                      "pinned_num_register_threads:3",
                                      "backend:cudaMalloc",
                                      "no_such_key:1",
                                      "expandable_segments",
                                      "expandable_segments:True max_split_size_mb:64"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        am_settings u = am_settings_default();
        err[0] = '\0';
        CHECK_EQ_U64(am_settings_parse(&u, bad[i], err, sizeof err), (uint64_t)-1);
        CHECK(strncmp(err, "allocator settings:", 19) == 0);
    }
    am_settings u = am_settings_default(); /* what came before an error is kept */
    CHECK_EQ_U64(am_settings_parse(&u, "expandable_segments:True,bogus:1", err, sizeof err),
                 (uint64_t)-1);
    CHECK(u.expandable_segments && (u.known & AM_SET_EXPANDABLE));
    CHECK(strstr(err, "bogus") != NULL);
    u = am_settings_default();
    CHECK_EQ_U64(am_settings_parse(&u, "max_split_size_mb:20", err, sizeof err), 0);
    CHECK_EQ_U64(u.max_split_size, 20 * MiB); /* PyTorch 2.x accepts 20 */
}

static void test_config_and_json(void) {
    char err[256], json[1024];
    am_settings s = am_settings_default();
    CHECK_EQ_U64(am_settings_json(&s, json, sizeof json), 2);
    CHECK_STR_EQ(json, "{}");
    CHECK_EQ_U64(
        am_settings_parse(&s, "expandable_segments:True,max_split_size_mb:64", err, sizeof err), 0);
    am_config c = am_settings_config(&s, am_config_default());
    CHECK(c.expandable_segments && c.max_split_size == 64 * MiB);
    CHECK_EQ_U64(c.max_non_split_rounding, AM_LARGE_BUFFER);
    CHECK_EQ_U64(c.va_base, AM_DEFAULT_VA_BASE);
    size_t n = am_settings_json(&s, json, sizeof json);
    CHECK_STR_EQ(json, "{\"expandable_segments\": true, \"max_split_size\": 67108864}");
    CHECK_EQ_U64(n, strlen(json));
    char tiny[8];
    CHECK_EQ_U64(am_settings_json(&s, tiny, sizeof tiny), n); /* the length it needs */
    CHECK(strlen(tiny) == sizeof tiny - 1);

    am_settings all = am_settings_default();
    all.known = AM_SET_CONF | AM_SET_MAX_SPLIT | AM_SET_ROUNDUP | AM_SET_GC_THRESHOLD |
                AM_SET_MAX_NON_SPLIT_ROUNDING | AM_SET_BACKEND;
    snprintf(all.alloc_conf, sizeof all.alloc_conf, "a\"b\\c");
    all.roundup_power2_divisions[1] = 2;
    all.backend_async = true;
    am_settings_json(&all, json, sizeof json);
    CHECK_STR_EQ(json, "{\"PYTORCH_CUDA_ALLOC_CONF\": \"a\\\"b\\\\c\", \"max_split_size\": -1, "
                       "\"garbage_collection_threshold\": 0.0, \"roundup_power2_divisions\": "
                       "{\"1\": 0, \"2\": 2, \"4\": 0, \"8\": 0, \"16\": 0, \"32\": 0, \"64\": 0, "
                       "\"128\": 0, \"256\": 0, \"512\": 0, \"1024\": 0, \"2048\": 0, \"4096\": "
                       "0, \"8192\": 0, \"16384\": 0, \"32768\": 0}, "
                       "\"max_non_split_rounding_mb\": 20, \"backend\": \"cudaMallocAsync\"}");
    c = am_settings_config(&all, am_config_default());
    CHECK(c.roundup_power2_divisions[1] == 2 && !c.expandable_segments);
    CHECK_EQ_U64(am_config_round_size(&c, 3 * MiB + 1), 4 * MiB); /* [2, 4) MiB in halves */
}

/* The run's own settings travel as JSON (meta allocator_settings) and are shown as a
 * PYTORCH_CUDA_ALLOC_CONF: both must come back to the same table. */
static void test_round_trips(void) {
    static const char *confs[] = {
        "expandable_segments:False,max_split_size_mb:64,roundup_power2_divisions:[128:4,>:2]",
        "expandable_segments:True,large_segment_size_mb:32,roundup_power2_divisions:4",
        "expandable_segments:False,max_non_split_rounding_mb:64,"
        "roundup_power2_divisions:[1:1,128:0,256:2,512:0,>:8],garbage_collection_threshold:0.6,"
        "per_process_memory_fraction:0.1234567",
        "expandable_segments:False",
    };
    for (size_t k = 0; k < sizeof confs / sizeof confs[0]; k++) {
        char err[256], json[2048], text[AM_SETTINGS_CONF_MAX];
        am_settings s = am_settings_default();
        CHECK_EQ_U64(am_settings_parse(&s, confs[k], err, sizeof err), 0);
        am_settings_conf_text(&s, text, sizeof text);
        CHECK_STR_EQ(text, confs[k]); /* the shortest text for the table, in the same order */
        snprintf(s.alloc_conf, sizeof s.alloc_conf, "%s", "max_split_size_mb:999");
        s.known |= AM_SET_CONF | AM_SET_MAX_SPLIT; /* a stale string: the dict's values win */
        am_settings_json(&s, json, sizeof json);
        am_settings back = am_settings_default();
        am_settings_from_json(&back, json);
        CHECK(memcmp(back.roundup_power2_divisions, s.roundup_power2_divisions,
                     sizeof s.roundup_power2_divisions) == 0);
        CHECK_EQ_U64(back.max_split_size, s.max_split_size);
        CHECK(back.expandable_segments == s.expandable_segments);
        CHECK(back.garbage_collection_threshold == s.garbage_collection_threshold);
        CHECK_EQ_U64(back.max_non_split_rounding, s.max_non_split_rounding);
        CHECK(back.per_process_memory_fraction == s.per_process_memory_fraction);
        CHECK_EQ_U64(back.large_segment_size, s.large_segment_size);
        CHECK_STR_EQ(back.alloc_conf, "max_split_size_mb:999");
    }
    /* a snapshot's dict as PyTorch writes it, the string escaped */
    am_settings s = am_settings_default();
    am_settings_from_json(&s, "{\"PYTORCH_CUDA_ALLOC_CONF\": \"a\\\"b\", \"max_split_size\": -1, "
                              "\"roundup_power2_divisions\": {\"1\": 0, \"2\": 2, \"32768\": 8}}");
    CHECK_STR_EQ(s.alloc_conf, "a\"b");
    CHECK(s.max_split_size == UINT64_MAX && s.roundup_power2_divisions[1] == 2 &&
          s.roundup_power2_divisions[15] == 8 && s.roundup_power2_divisions[0] == 0);
    am_settings_from_json(&s, NULL); /* nothing: unchanged */
    CHECK(s.roundup_power2_divisions[1] == 2);
}

int main(void) {
    test_parse();
    test_config_and_json();
    test_round_trips();
    return check_finish("test_alloc_settings");
}
