/* simulate_search.h — everything `memanalyze simulate` says, as plain structs: the
 * configurations to try (the run's own, read from meta, first; then those given, or by default
 * the run's own with expandable segments switched), the device memory the input shows, each
 * configuration's run under it (simulate.h), the bisection for the smallest device memory it
 * completes in, and the verdicts: how closely the run's own reproduces the recording, what
 * becomes of the recorded OOMs, whether garbage_collection_threshold acts, and one sentence
 * across the configurations.
 *
 * In three steps, so that a caller can say something after each configuration (bench/'s
 * timings): sim_search_begin checks the input and sets the rows up, sim_search_row runs one
 * row and its search, sim_search_end writes the verdict and fills the picture's struct. */
#ifndef GMT_SIMULATE_SEARCH_H
#define GMT_SIMULATE_SEARCH_H

#include "alloc_settings.h"
#include "plots.h"
#include "simulate.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_MAX_CONFIGS 16           /* --config at most */
#define SIM_SEARCH_STEP (2ull << 20) /* the search stops at 2 MiB */
#define SIM_PICTURE_COLUMNS 1000     /* -o: columns of events */

/* One configuration to try. */
typedef struct sim_config {
    char spec[AM_SETTINGS_CONF_MAX]; /* as the user gave it; the run's own: its settings' text */
    am_settings settings;
    sim_options opt; /* the policies beyond PyTorch's settings */
} sim_config;

/* A --config: PYTORCH_CUDA_ALLOC_CONF text, with two policies of its own as keys,
 * empty_cache:step (torch.cuda.empty_cache() after every step) and pools:lifetime (blocks that
 * outlive their step in pools apart from those that do not). 0, or -1 with a one-line message
 * in err (a bad setting; a setting that leaves nothing to simulate). */
int sim_config_parse(const char *text, sim_config *out, char *err, size_t errlen);

/* garbage_collection_threshold under a configuration: PyTorch collects only under a memory
 * fraction (per_process_memory_fraction, or --device-memory taken as the limit
 * set_per_process_memory_fraction sets). */
typedef enum sim_gc {
    SIM_GC_NONE,   /* no threshold set */
    SIM_GC_ACTIVE, /* set, under a memory fraction */
    SIM_GC_INERT,  /* set, and it changes nothing */
} sim_gc;

/* How closely the run's own configuration reproduces the recording. */
typedef enum sim_reproduction {
    SIM_NOT_COMPARED, /* segments other than PyTorch's are on the device */
    SIM_REPRODUCED,   /* reserved equal after every request */
    SIM_DIFFERS,      /* reserved differs: the figures are estimates */
} sim_reproduction;

/* One configuration's answer. */
typedef struct sim_row {
    sim_config config;
    int own;                  /* the run's own (the first row): its start state as recorded */
    int fraction_set;         /* a memory fraction is in effect */
    sim_result r;             /* the run under the device memory */
    uint64_t min_memory;      /* the smallest device memory found to fit */
    uint64_t min_memory_low;  /* ... and the most found too little */
    uint64_t min_memory_gap;  /* min_memory - min_memory_low */
    int min_memory_exact;     /* 1: the bracket is SIM_SEARCH_STEP or less; 0: the search
                                 stopped at its time budget */
    const char *recorded_oom; /* the recording's OOMs here: "still happens", "avoided", or NULL
                                 when it had none */
    sim_gc gc;
    sim_reproduction reproduction; /* the own row's */
    int ran;                       /* the run was made (its search may still have failed) */
    double run_seconds, search_seconds;
} sim_row;

/* What to answer. */
typedef struct sim_search_args {
    const char *input; /* for the messages */
    int device;
    const sim_config *configs; /* those given, none for the default */
    size_t nconfigs;           /* SIM_MAX_CONFIGS at most */
    uint64_t device_memory;    /* --device-memory; 0: the input's */
    int picture;               /* gather the columns of reserved bytes for -o */
} sim_search_args;

/* The whole answer. */
typedef struct sim_search {
    sqlite3 *db; /* borrowed */
    const char *input;
    int device;
    uint64_t device_memory;    /* 0: unlimited */
    const char *memory_source; /* where device_memory comes from, in words */
    uint64_t recorded_memory;  /* the input's own device memory (what --device-memory replaces;
                                  0: unknown): tells PyTorch's release-and-retry from
                                  empty_cache() in the recording */
    sim_row *rows;             /* [nrows], the run's own first */
    size_t nrows;
    /* when the run's own configuration does not reproduce the recording, the words put in
     * front of every verdict built on it (the verdict, each configuration's recorded OOMs and
     * smallest memory): where it departs and by how much; "" when it reproduces (or was not
     * compared) (sim_search_end) */
    char caveat[256];
    char verdict[1024]; /* one sentence, without its full stop, the caveat first (sim_search_end) */
    /* -o: each row's first run (not the search's), in the picture's struct (sim_search_end) */
    int64_t *columns;     /* [nrows * SIM_PICTURE_COLUMNS], NULL without a picture */
    uint8_t *oom_columns; /* [nrows * SIM_PICTURE_COLUMNS] */
    const char **labels;
    int64_t *peaks;
    plot_simulation picture;
} sim_search;

/* Checks that device args->device has something to simulate and sets out's rows up. 0, or -1
 * with a one-line message in err (out freed). */
int sim_search_begin(sqlite3 *db, const sim_search_args *args, sim_search *out, char *err,
                     size_t errlen);

/* Runs row i under the device memory, then searches its smallest memory. 0, or -1 with a
 * one-line message in err. */
int sim_search_row(sim_search *s, size_t i, char *err, size_t errlen);

/* Once every row ran: the verdict and, with a picture, the picture's struct. */
void sim_search_end(sim_search *s);

void sim_search_free(sim_search *s);

#endif
