/* gmt_env.h — the name of every environment variable of the project, spelled once.
 *
 * What each one does, who reads it and its default: docs/ENVIRONMENT.md (the one place they
 * are documented; tests/test_env_vars.py keeps this list, that page and the code in step).
 * C code writes getenv(GMT_ENV_CACHE_DIR), never the string; an error message names a
 * variable by concatenation (GMT_ENV_MEMREC_OUTPUT " is too long"). The macro for a variable
 * is GMT_ENV_ + its name without a leading GMT_. Python and shell code cannot include this
 * header: the test checks that every GMT_ / MEMREC_ variable they use is listed here.
 *
 * Test and bench knobs are read once (start-up, open, attach), never per event or per row. */
#ifndef GMT_ENV_H
#define GMT_ENV_H

/* ---- memanalyze (analyzer/) ---------------------------------------------------------------- */
#define GMT_ENV_CACHE_DIR "GMT_CACHE_DIR"             /* user: where databases are cached */
#define GMT_ENV_NO_HUGEPAGES "GMT_NO_HUGEPAGES"       /* user: no re-exec for huge pages */
#define GMT_ENV_HUGEPAGES_ASKED "GMT_HUGEPAGES_ASKED" /* internal: set for the re-exec */
#define GMT_ENV_TIMING "GMT_TIMING"                   /* bench: import timings on stderr */
#define GMT_ENV_NO_SUMMARIES "GMT_NO_SUMMARIES"       /* test: ignore the replay's summaries */
#define GMT_ENV_SQL_PROFILE "GMT_SQL_PROFILE"         /* bench: each statement's time on stderr */
#define GMT_ENV_TEST_KILL_AT "GMT_TEST_KILL_AT"       /* test: SIGKILL at a named point */
#define GMT_ENV_VIEW_SHARE_MAX_BYTES "GMT_VIEW_SHARE_MAX_BYTES" /* test: view --html's bound */
#define GMT_ENV_CHUNK_COUNT "GMT_CHUNK_COUNT"         /* test: `view`'s chunks decoded */

/* ---- memrec launcher -> libmemrec.so (recorder/) ------------------------------------------- */
#define GMT_ENV_MEMREC_LIB "MEMREC_LIB"                 /* user: the library memrec injects */
#define GMT_ENV_MEMREC_OUTPUT "MEMREC_OUTPUT"           /* -o: trace path pattern */
#define GMT_ENV_MEMREC_STACK_DEPTH "MEMREC_STACK_DEPTH" /* --stack-depth */
#define GMT_ENV_MEMREC_MAX_BYTES "MEMREC_MAX_BYTES"     /* --max-size */
#define GMT_ENV_MEMREC_START_STEP "MEMREC_START_STEP"   /* --start-step */
#define GMT_ENV_MEMREC_NO_CUPTI "MEMREC_NO_CUPTI"       /* --no-cupti */
#define GMT_ENV_MEMREC_QUIET "MEMREC_QUIET"             /* -q */
#define GMT_ENV_MEMREC_STACKS "MEMREC_STACKS"           /* --stacks */
#define GMT_ENV_MEMREC_TORCH "MEMREC_TORCH"             /* --no-torch sets 0 */
#define GMT_ENV_MEMREC_MANIFEST "MEMREC_MANIFEST"       /* internal: where traces are listed */
#define GMT_ENV_MEMREC_NO_DEVICE "MEMREC_NO_DEVICE"     /* internal: the launcher saw no GPU */
#define GMT_ENV_MEMREC_BUFFER_RECORDS "MEMREC_BUFFER_RECORDS" /* tuning/bench: ring size */
#define GMT_ENV_MEMREC_CALLBACK_LOG "MEMREC_CALLBACK_LOG"     /* test: raw CUPTI callback log */
#define GMT_ENV_MEMREC_CUPTI "MEMREC_CUPTI"                   /* user: the libcupti to use */

/* ---- the PyTorch drain (recorder/python/memrec_torch.py; read in Python only) ------------- */
#define GMT_ENV_MEMREC_TORCH_DRAIN_MS "MEMREC_TORCH_DRAIN_MS"           /* tuning/test */
#define GMT_ENV_MEMREC_TORCH_DRAIN_PERCENT "MEMREC_TORCH_DRAIN_PERCENT" /* tuning/test */
#define GMT_ENV_MEMREC_TORCH_RING "MEMREC_TORCH_RING"                   /* tuning/test */
#define GMT_ENV_MEMREC_TORCH_STACKS "MEMREC_TORCH_STACKS" /* all: PyTorch C++ frames */
#define GMT_ENV_MEMREC_TENSOR_NAMES "MEMREC_TENSOR_NAMES" /* 0: no tensor names */

/* ---- tests (tests/gpu/test_cuda_samples.py; read in Python only) --------------------------- */
#define GMT_ENV_SAVE_CALLBACK_LOGS "GMT_SAVE_CALLBACK_LOGS" /* test: keep the callback logs */

#endif
