/* synth.c — command line for the synthetic trace generator.
 *
 *   synth -o train.zst [--steps N | --events N] [--seed S] [--leak BYTES]
 *         [--fragment] [--devices D] [--streams K] [--layers L] [--hidden H]
 *         [--tokens T] [--device-memory BYTES] [--level Z] [--chunk-bytes B]
 *         [--rank R] [--host NAME] [--spike STEP:BYTES] [--stages] [--names] [--truth FILE]
 *
 * The demo's input and the benchmarks' workload; see training_sim.h. */
#include "training_sim.h"

#include "gmt_size.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
    fprintf(out, "usage: synth -o OUT.zst [options]\n"
                 "Writes a realistic trace of a simulated PyTorch training job.\n"
                 "  --steps N          training steps (default 20)\n"
                 "  --events N         stop after N memory events (overrides --steps)\n"
                 "  --seed S           random seed (default 1); same seed, same bytes\n"
                 "  --leak BYTES       leak BYTES per step at train.py:88 (default 0)\n"
                 "  --rank R           the process's rank, as torchrun's RANK (default none)\n"
                 "  --spike STEP:BYTES one forward of step STEP allocates BYTES more, briefly,\n"
                 "                     at layers.py:70 forward (a planted spike)\n"
                 "  --names            tensor names, as memrec's walk of the model writes\n"
                 "                     them (layers.0.attn.qkv.weight, .grad, .exp_avg)\n"
                 "  --truth FILE       write what was planted (per device: the bytes of each\n"
                 "                     category live at the peak) as JSON\n"
                 "  --stages           NVTX ranges model_creation, data_loading, forward,\n"
                 "                     backward, optimizer, as a program names its phases\n"
                 "  --host NAME        the host it ran on (default synth-host)\n"
                 "  --fragment         variable-length batches that fragment memory\n"
                 "  --devices D        GPUs, 1-8 (default 1)\n"
                 "  --streams K        streams, 1-4 (default 2)\n"
                 "  --layers L         transformer blocks (default 12)\n"
                 "  --hidden H         hidden size (default 1024)\n"
                 "  --tokens T         tokens per step (default 4096)\n"
                 "  --device-memory B  bytes per GPU (default 80 GiB)\n"
                 "  --level Z          zstd level (default 1)\n"
                 "  --chunk-bytes B    uncompressed bytes per zstd frame (default 256 KiB)\n");
}

/* --truth FILE: what the simulation planted, as JSON, for known-answer tests: per device the
 * peak allocated and the block bytes of each category live then. */
static int write_truth(const char *path, const sim_config *cfg, const sim_result *res) {
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\"devices\": [");
    for (uint32_t d = 0; d < cfg->devices; d++) {
        const sim_device_truth *t = &res->truth[d];
        fprintf(f,
                "%s\n  {\"device\": %u, \"peak_allocated_bytes\": %llu, "
                "\"categories_at_peak\": {",
                d ? "," : "", d, (unsigned long long)t->peak_allocated);
        for (int c = 0; c < BLOCK_CATEGORY_COUNT; c++)
            fprintf(f, "%s\"%s\": %llu", c ? ", " : "", gmt_category_name((gmt_category)c),
                    (unsigned long long)t->categories_at_peak[c]);
        fprintf(f, "}}");
    }
    fprintf(f, "\n]}\n");
    return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    sim_config cfg = sim_config_default();
    trace_writer_options wopt = {0};
    const char *out = NULL;
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},  {"steps", required_argument, 0, 's'},
        {"events", required_argument, 0, 'e'},  {"seed", required_argument, 0, 'r'},
        {"leak", required_argument, 0, 'l'},    {"fragment", no_argument, 0, 'f'},
        {"devices", required_argument, 0, 'd'}, {"streams", required_argument, 0, 'k'},
        {"layers", required_argument, 0, 'L'},  {"hidden", required_argument, 0, 'H'},
        {"tokens", required_argument, 0, 't'},  {"device-memory", required_argument, 0, 'm'},
        {"level", required_argument, 0, 'z'},   {"chunk-bytes", required_argument, 0, 'c'},
        {"rank", required_argument, 0, 'R'},    {"host", required_argument, 0, 'N'},
        {"spike", required_argument, 0, 'S'},   {"stages", no_argument, 0, 'G'},
        {"names", no_argument, 0, 'A'},         {"truth", required_argument, 0, 'T'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    const char *truth_path = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        uint64_t v = 0;
        if (c == 'h') {
            usage(stdout);
            return 0;
        }
        if (c == 'G') {
            cfg.stages = 1;
            continue;
        }
        if (c == 'A') {
            cfg.names = 1;
            continue;
        }
        if (c == 'T') {
            truth_path = optarg;
            continue;
        }
        if (c == 'N') { /* a text, not a number */
            cfg.host = optarg;
            continue;
        }
        if (c == 'S') { /* STEP:BYTES */
            const char *colon = strchr(optarg, ':');
            uint64_t step = 0;
            char head[32];
            snprintf(head, sizeof head, "%.*s", colon ? (int)(colon - optarg) : 0, optarg);
            if (!colon || gmt_parse_size(head, &step) != 0 ||
                gmt_parse_size(colon + 1, &cfg.spike_bytes) != 0 || step > UINT32_MAX) {
                fprintf(stderr, "synth: bad --spike '%s' (STEP:BYTES, e.g. 7:2GiB)\n", optarg);
                return 2;
            }
            cfg.spike_step = (uint32_t)step;
            continue;
        }
        if (c == '?' || (c != 'o' && c != 'f' && gmt_parse_size(optarg, &v) != 0)) {
            if (c != '?')
                fprintf(stderr, "synth: bad number '%s'\n", optarg);
            usage(stderr);
            return 2;
        }
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 's':
            cfg.steps = (uint32_t)v;
            break;
        case 'e':
            cfg.max_events = v;
            break;
        case 'r':
            cfg.seed = v;
            break;
        case 'l':
            cfg.leak_bytes = v;
            break;
        case 'f':
            cfg.fragment = 1;
            break;
        case 'd':
            cfg.devices = (uint32_t)v;
            break;
        case 'k':
            cfg.streams = (uint32_t)v;
            break;
        case 'L':
            cfg.layers = (uint32_t)v;
            break;
        case 'H':
            cfg.hidden = v;
            break;
        case 't':
            cfg.tokens = v;
            break;
        case 'm':
            cfg.device_memory = v;
            break;
        case 'z':
            wopt.zstd_level = (int)v;
            break;
        case 'c':
            wopt.chunk_bytes = (size_t)v;
            break;
        case 'R':
            cfg.rank = v > INT32_MAX ? INT32_MAX : (int32_t)v;
            break;
        }
    }
    if (!out || optind != argc) {
        fprintf(stderr, "synth: %s\n", out ? "unexpected argument" : "-o OUT.zst is required");
        usage(stderr);
        return 2;
    }
    char err[512];
    trace_writer *w = trace_writer_open(out, &wopt, err, sizeof err);
    if (!w) {
        fprintf(stderr, "synth: %s\n", err);
        return 2;
    }
    sim_result res;
    int rc = sim_run(&cfg, w, &res, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "synth: %s\n", err);
        trace_writer_close(w, NULL, NULL, 0);
        return 2;
    }
    uint64_t events = trace_writer_events(w);
    if (trace_writer_close(w, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "synth: %s\n", err);
        return 2;
    }
    if (truth_path && write_truth(truth_path, &cfg, &res) != 0) {
        fprintf(stderr, "synth: cannot write %s\n", truth_path);
        return 2;
    }
    fprintf(stderr, "synth: wrote %s: %llu events, %llu steps, %llu OOMs, %llu bytes leaked\n", out,
            (unsigned long long)events, (unsigned long long)res.steps_completed,
            (unsigned long long)res.ooms, (unsigned long long)res.leaked_bytes);
    return 0;
}
