/* training_sim.h — a simulated PyTorch training job that writes a trace.
 *
 * The simulation drives the caching-allocator model (model/alloc_model.h)
 * the way a transformer training loop drives PyTorch's allocator: parameters
 * at start, per step forward activations freed during backward, temporaries,
 * gradients freed by zero_grad, optimizer state created in step 0, step
 * ranges as NVTX-style markers, and optionally a planted leak or a
 * fragmenting allocation pattern, and the names memrec gives the model's
 * tensors (--names: "layers.0.attn.qkv.weight", its ".grad", ".exp_avg"). Every block event and
 * every segment event the model reports becomes a trace record, with a realistic stack (native
 * allocator frames, Python frames, interpreter frames).
 *
 * Deterministic: the same config gives byte-identical traces. */
#ifndef GMT_TRAINING_SIM_H
#define GMT_TRAINING_SIM_H

#include "gmt_vocab.h"
#include "trace_format.h"

#include <stdint.h>

typedef struct sim_config {
    uint64_t seed;
    uint64_t max_events;    /* stop after this many memory events (0 = run all steps) */
    uint32_t steps;         /* training steps to run (when max_events is 0 or not reached) */
    uint32_t devices;       /* 1..8, each with its own allocator, interleaved in time */
    uint32_t streams;       /* 1..4: side streams copy inputs and free with free_requested */
    uint32_t layers;        /* transformer blocks */
    uint64_t hidden;        /* hidden size; activations scale with it */
    uint64_t tokens;        /* batch x sequence length per step */
    uint64_t device_memory; /* bytes per device */
    uint64_t leak_bytes;    /* > 0: this many bytes leak per step at the leak site */
    int fragment;           /* 1: variable-length sequences that fragment the large pool */
    int32_t rank;           /* the process's rank (RANK); -1: none */
    uint64_t spike_bytes;   /* > 0: one forward of step spike_step allocates this much more */
    uint32_t spike_step;
    int stages; /* 1: NVTX ranges model_creation, data_loading, forward, backward, optimizer */
    const char *host; /* the host name; NULL: "synth-host" */
    int names; /* 1: tensor names, as memrec's walk of the model writes them at optimizer steps */
} sim_config;

/* The defaults `synth` starts from: 1 device, 2 streams, 12 layers, hidden
 * 1024, 8 x 512 tokens, 80 GiB, 20 steps, no leak, no fragmentation. */
sim_config sim_config_default(void);

/* Where the planted leak is: its Python frame, so tests can look for it. */
#define SIM_LEAK_FILE "train.py"
#define SIM_LEAK_LINE 88
#define SIM_LEAK_FUNCTION "train_step"

/* Where the planted spike is (forward, through the model). */
#define SIM_SPIKE_FILE "layers.py"
#define SIM_SPIKE_LINE 70
#define SIM_SPIKE_FUNCTION "forward"

/* What the simulation planted on a device, for known-answer tests: the block bytes live at its
 * peak allocated (the first event that reaches it), by the category each site's blocks are. */
typedef struct sim_device_truth {
    uint64_t peak_allocated;
    uint64_t categories_at_peak[BLOCK_CATEGORY_COUNT];
} sim_device_truth;

#define SIM_MAX_DEVICES 8

typedef struct sim_result {
    uint64_t events, steps_completed, ooms;
    uint64_t leaked_bytes; /* requested bytes leaked in total */
    sim_device_truth truth[SIM_MAX_DEVICES];
} sim_result;

/* Runs the simulation into `w` (which the caller opened and will close).
 * Returns 0, or -1 with a one-line message in err (a writer error, or a
 * config the simulation cannot run). */
int sim_run(const sim_config *cfg, trace_writer *w, sim_result *result, char *err, size_t errlen);

#endif
