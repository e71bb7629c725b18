/* memrec_main.c — `memrec [options] -- COMMAND ARGS...`: runs a command with
 * libmemrec.so injected and reports the traces it left.
 *
 * The launcher configures the library only through the environment (the
 * MEMREC_* variables rec_config_from_env reads, CUDA_INJECTION64_PATH and
 * NVTX_INJECTION64_PATH for the driver and NVTX, PYTHONPATH so Python runs
 * memrec's startup hook from python/ beside the library), because the
 * command may be a shell, a Python interpreter or torchrun whose
 * grandchildren are the CUDA processes: the environment reaches all of
 * them. It sets no LD_PRELOAD: the library is loaded only into processes
 * that start CUDA or NVTX (or call memrec.h), never into the shell, the
 * compiler or torchrun's agent (rec_inject.c says why). Everything the program
 * sees is otherwise untouched: stdin/stdout/stderr are inherited and its exit
 * status is passed through (memrec_child.c). Order of work: options, find
 * the library, probe the driver (one warning line without one), run, then
 * symbolize and report each trace (memrec_traces.c). */
#include "memrec_launch.h"

#include "gmt_env.h"
#include "gmt_size.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GMT_VERSION
#define GMT_VERSION "unknown"
#endif

#define DEFAULT_PATTERN "memrec-%h-%p.zst"
#define DEFAULT_STACK_DEPTH 64
#define MAX_STACK_DEPTH 1024

typedef struct options {
    const char *pattern;
    const char *lib;
    unsigned long stack_depth;
    uint64_t max_bytes;       /* 0: no cap */
    const char *stacks;       /* NULL: the library's default */
    unsigned long start_step; /* with has_start_step: --start-step */
    int has_start_step, no_cupti, no_torch, no_symbolize, quiet;
    char **command;
} options;

static void usage(FILE *out) {
    fprintf(out,
            "usage: memrec [options] [--] COMMAND [ARGS...]\n"
            "\n"
            "Runs COMMAND with libmemrec.so injected and records the GPU memory events of\n"
            "every process that uses CUDA into one trace each, then names the native\n"
            "frames of the traces with this host's binaries. Analyse with memanalyze.\n"
            "\n"
            "options:\n"
            "  -o, --output PATTERN  trace path; %%p pid, %%h host, %%r rank (RANK,\n"
            "                        OMPI_COMM_WORLD_RANK or SLURM_PROCID, digits only),\n"
            "                        %%%% a %%; default %s (one file per\n"
            "                        process); a file there is replaced, a symlink refused\n"
            "      --stack-depth N   native frames per stack, 0 for none (default %d)\n"
            "      --max-size SIZE   stop recording once a trace holds SIZE bytes\n"
            "                        (suffix K, M, G, T: 2G); the program goes on\n"
            "      --start-step N    write nothing before step N (the first NVTX range or\n"
            "                        mark named like \"step N\", or memrec_step_begin(N)):\n"
            "                        the trace starts with what was live then as its seed\n"
            "      --no-cupti        do not subscribe to CUPTI: record only NVTX, memrec.h\n"
            "                        and PyTorch's own history (lets torch.profiler or\n"
            "                        Nsight use CUPTI, which allows one subscriber)\n"
            "      --no-torch        do not record PyTorch's caching-allocator blocks (by\n"
            "                        default a Python startup hook turns on PyTorch's memory\n"
            "                        history when CUDA starts and drains it into the trace\n"
            "                        every second, at each NVTX step range and at exit)\n"
            "      --stacks MODE     python: Python frames only (fast); native: native frames\n"
            "                        only; mixed: Python frames in place of the interpreter's\n"
            "                        inside native stacks (PyTorch then records its C++ frames\n"
            "                        too, which costs much more)\n"
            "      --no-symbolize    leave native frames as raw addresses\n"
            "      --lib PATH        the libmemrec.so to inject (default: beside memrec,\n"
            "                        or $" GMT_ENV_MEMREC_LIB ")\n"
            "  -q, --quiet           print nothing but errors\n"
            "  -h, --help            this text\n"
            "      --version         the version\n"
            "\n"
            "The exit status is COMMAND's (128 + N when a signal N killed it).\n",
            DEFAULT_PATTERN, DEFAULT_STACK_DEPTH);
}

static int usage_error(const char *fmt, const char *arg) {
    fputs("memrec: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (try memrec --help)\n", stderr);
    return 2;
}

/* Returns 0 with o filled, or the exit status to end with (0 for --help). */
static int parse_options(int argc, char **argv, options *o, int *done) {
    enum {
        OPT_STACK = 256,
        OPT_MAX_SIZE,
        OPT_START_STEP,
        OPT_NO_CUPTI,
        OPT_NO_TORCH,
        OPT_STACKS,
        OPT_NO_SYMBOLIZE,
        OPT_LIB,
        OPT_VERSION
    };
    static const struct option longopts[] = {{"output", required_argument, 0, 'o'},
                                             {"stack-depth", required_argument, 0, OPT_STACK},
                                             {"max-size", required_argument, 0, OPT_MAX_SIZE},
                                             {"start-step", required_argument, 0, OPT_START_STEP},
                                             {"no-cupti", no_argument, 0, OPT_NO_CUPTI},
                                             {"no-torch", no_argument, 0, OPT_NO_TORCH},
                                             {"stacks", required_argument, 0, OPT_STACKS},
                                             {"no-symbolize", no_argument, 0, OPT_NO_SYMBOLIZE},
                                             {"lib", required_argument, 0, OPT_LIB},
                                             {"quiet", no_argument, 0, 'q'},
                                             {"help", no_argument, 0, 'h'},
                                             {"version", no_argument, 0, OPT_VERSION},
                                             {0, 0, 0, 0}};
    *o = (options){.pattern = DEFAULT_PATTERN, .stack_depth = DEFAULT_STACK_DEPTH};
    *done = 0;
    opterr = 0; /* our own one-line messages */
    int c;
    /* '+': options end at the command's name, so its own options are its. */
    while ((c = getopt_long(argc, argv, "+:o:qh", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'o':
            if (!*optarg)
                return usage_error("-o needs a path%s", "");
            o->pattern = optarg;
            break;
        case OPT_STACK:
            errno = 0;
            o->stack_depth = strtoul(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-' ||
                o->stack_depth > MAX_STACK_DEPTH)
                return usage_error("--stack-depth takes 0 to 1024, not '%s'", optarg);
            break;
        case OPT_MAX_SIZE:
            if (gmt_parse_size(optarg, &o->max_bytes) != 0 || o->max_bytes == 0)
                return usage_error("--max-size takes a size such as 2G, not '%s'", optarg);
            break;
        case OPT_START_STEP:
            errno = 0;
            o->start_step = strtoul(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-')
                return usage_error("--start-step takes a step number, not '%s'", optarg);
            o->has_start_step = 1;
            break;
        case OPT_NO_CUPTI:
            o->no_cupti = 1;
            break;
        case OPT_NO_TORCH:
            o->no_torch = 1;
            break;
        case OPT_STACKS:
            if (strcmp(optarg, "python") && strcmp(optarg, "native") && strcmp(optarg, "mixed"))
                return usage_error("--stacks takes python, native or mixed, not '%s'", optarg);
            o->stacks = optarg;
            break;
        case OPT_NO_SYMBOLIZE:
            o->no_symbolize = 1;
            break;
        case OPT_LIB:
            o->lib = optarg;
            break;
        case 'q':
            o->quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return *done = 1, 0;
        case OPT_VERSION:
            printf("memrec (gpumemtrace) %s\n", GMT_VERSION);
            return *done = 1, 0;
        case ':':
            return usage_error("%s needs a value", argv[optind - 1]);
        default:
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return usage_error("no command to run%s", "");
    o->command = argv + optind;
    return 0;
}

/* libmemrec.so: --lib, $MEMREC_LIB, beside this binary (the build tree),
 * or ../lib beside it (an install). Absolute, because the command may chdir. */
static int find_library(const options *o, char *out, size_t outlen) {
    const char *given = o->lib ? o->lib : getenv(GMT_ENV_MEMREC_LIB);
    char candidate[PATH_MAX];
    if (given && *given) {
        if (!realpath(given, out) || access(out, R_OK) != 0) {
            fprintf(stderr, "memrec: cannot use %s: %s\n", given, strerror(errno));
            return -1;
        }
        return 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "memrec: cannot find its own path; use --lib\n");
        return -1;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    *slash = 0;
    const char *places[] = {"%s/libmemrec.so", "%s/../lib/libmemrec.so"};
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        snprintf(candidate, sizeof candidate, places[i], self);
        if (access(candidate, R_OK) == 0 && realpath(candidate, out) && strlen(out) < outlen)
            return 0;
    }
    fprintf(stderr, "memrec: libmemrec.so is not beside %s/memrec; use --lib PATH\n", self);
    return -1;
}

/* Puts `dir` first on the colon-separated list in variable `name`.
 * Returns 0, -1 when out of memory. */
static int prepend_path(const char *name, const char *dir) {
    const char *old = getenv(name);
    if (!old || !*old)
        return setenv(name, dir, 1);
    size_t need = strlen(dir) + 1 + strlen(old) + 1;
    char *joined = malloc(need);
    if (!joined)
        return -1;
    snprintf(joined, need, "%s:%s", dir, old);
    int rc = setenv(name, joined, 1);
    free(joined);
    return rc;
}

/* The Python startup hook beside the library: python/ in the build tree,
 * ../share/gpumemtrace/python in an install. Fills hook_dir, or returns -1
 * when there is none (Python programs then run without it). */
static int find_python_hook(const char *lib, char *hook_dir, size_t len) {
    char dir[PATH_MAX], candidate[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s", lib);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -1;
    *slash = 0;
    const char *places[] = {"%s/python", "%s/../share/gpumemtrace/python"};
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        snprintf(candidate, sizeof candidate, places[i], dir);
        char file[PATH_MAX + 96];
        snprintf(file, sizeof file, "%s/sitecustomize.py", candidate);
        if (access(file, R_OK) == 0 && realpath(candidate, hook_dir) && strlen(hook_dir) < len)
            return 0;
    }
    return -1;
}

/* Sets the variables libmemrec.so reads. Returns 0, -1 when they do not fit. */
static int set_environment(const options *o, int have_driver, const char *lib, const char *cwd,
                           const char *manifest) {
    char buf[PATH_MAX + 4096];
    if (o->pattern[0] == '/')
        snprintf(buf, sizeof buf, "%s", o->pattern);
    else if ((size_t)snprintf(buf, sizeof buf, "%s/%s", cwd, o->pattern) >= sizeof buf)
        return -1;
    int rc = setenv(GMT_ENV_MEMREC_OUTPUT, buf, 1);
    snprintf(buf, sizeof buf, "%lu", o->stack_depth);
    rc |= setenv(GMT_ENV_MEMREC_STACK_DEPTH, buf, 1);
    if (o->max_bytes) {
        snprintf(buf, sizeof buf, "%" PRIu64, o->max_bytes);
        rc |= setenv(GMT_ENV_MEMREC_MAX_BYTES, buf, 1);
    } else {
        rc |= unsetenv(GMT_ENV_MEMREC_MAX_BYTES);
    }
    if (o->has_start_step) {
        snprintf(buf, sizeof buf, "%lu", o->start_step);
        rc |= setenv(GMT_ENV_MEMREC_START_STEP, buf, 1);
    } else {
        rc |= unsetenv(GMT_ENV_MEMREC_START_STEP);
    }
    rc |= setenv(GMT_ENV_MEMREC_MANIFEST, manifest, 1);
    /* The launcher said there is no GPU: the library's CUPTI, which cannot
     * subscribe then, says nothing more (one warning). */
    rc |=
        have_driver ? unsetenv(GMT_ENV_MEMREC_NO_DEVICE) : setenv(GMT_ENV_MEMREC_NO_DEVICE, "1", 1);
    rc |= o->no_cupti ? setenv(GMT_ENV_MEMREC_NO_CUPTI, "1", 1) : unsetenv(GMT_ENV_MEMREC_NO_CUPTI);
    rc |= o->quiet ? setenv(GMT_ENV_MEMREC_QUIET, "1", 1) : unsetenv(GMT_ENV_MEMREC_QUIET);
    rc |= setenv(GMT_ENV_MEMREC_TORCH, o->no_torch ? "0" : "1", 1);
    rc |= o->stacks ? setenv(GMT_ENV_MEMREC_STACKS, o->stacks, 1) : unsetenv(GMT_ENV_MEMREC_STACKS);
    char hook_dir[PATH_MAX];
    if (find_python_hook(lib, hook_dir, sizeof hook_dir) == 0)
        rc |= prepend_path("PYTHONPATH", hook_dir);
    rc |= setenv("CUDA_INJECTION64_PATH", lib, 1);
    rc |= setenv("NVTX_INJECTION64_PATH", lib, 1);
    return rc ? -1 : 0;
}

int main(int argc, char **argv) {
    options o;
    int done;
    int rc = parse_options(argc, argv, &o, &done);
    if (rc || done)
        return rc;
    char lib[PATH_MAX], cwd[PATH_MAX], manifest[PATH_MAX], err[PATH_MAX + 256];
    if (find_library(&o, lib, sizeof lib) != 0)
        return 2;
    if (!getcwd(cwd, sizeof cwd)) {
        fprintf(stderr, "memrec: cannot read the current directory: %s\n", strerror(errno));
        return 2;
    }
    char why[256];
    int have_driver = memrec_cuda_usable(why, sizeof why);
    if (!have_driver && !o.quiet)
        fprintf(stderr,
                "memrec: no CUDA driver/GPU found (%s): %s runs unrecorded except NVTX/memrec.h "
                "annotations\n",
                why, o.command[0]);
    if (memrec_manifest_create(manifest, sizeof manifest, err, sizeof err) != 0) {
        fprintf(stderr, "memrec: %s\n", err);
        return 2;
    }
    if (set_environment(&o, have_driver, lib, cwd, manifest) != 0) {
        fprintf(stderr, "memrec: the environment is too large to add memrec's variables\n");
        unlink(manifest);
        return 2;
    }
    memrec_child_status st;
    if (memrec_run(o.command, &st, err, sizeof err) != 0) {
        fprintf(stderr, "memrec: %s\n", err);
        unlink(manifest);
        return st.exited ? st.code : 126;
    }
    memrec_report_traces(manifest, cwd, !o.no_symbolize, o.quiet, !have_driver);
    return memrec_exit_status(&st, o.command[0], o.quiet);
}
