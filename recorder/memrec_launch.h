/* memrec_launch.h — the parts of the memrec launcher (not of libmemrec.so):
 *   memrec_main.c    options, the environment the library reads, the order
 *   memrec_child.c   the driver probe, running the command, its exit status
 *   memrec_traces.c  after the run: the manifest, symbolization, one line
 *                    per trace
 * The launcher never loads CUPTI or the recorder; it talks to the library
 * only through MEMREC_* variables and the manifest file. */
#ifndef GMT_MEMREC_LAUNCH_H
#define GMT_MEMREC_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

/* ---- memrec_child.c ---- */

/* Whether a CUDA driver with at least one device is usable here (dlopen of
 * libcuda.so.1, cuInit(0), cuDeviceGetCount). Returns 1, or 0 with the
 * reason ("libcuda.so.1 not found", "cuInit failed: 100", ...) in why. */
int memrec_cuda_usable(char *why, size_t whylen);

/* How the command ended. */
typedef struct memrec_child_status {
    int exited; /* 1: exit(code); 0: killed by `signal` */
    int code;   /* exit status when exited */
    int signal; /* the signal that killed it otherwise */
    int core_dumped;
} memrec_child_status;

/* Runs argv (PATH lookup as execvp) with the current environment and waits
 * for it. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to memrec by a process
 * (kill, a job scheduler) are passed on to it; those a terminal sends reach
 * the whole foreground group, the command included, and are not sent twice.
 * Returns 0, or -1 with err filled when the command could not be started
 * (then st says exit code 127 for "not found", 126 for "not executable",
 * as a shell would). */
int memrec_run(char **argv, memrec_child_status *st, char *err, size_t errlen);

/* The exit status memrec ends with: the command's own code, or 128 + the
 * signal that killed it (printing the shell's description of it first
 * unless `quiet` or it was SIGINT or SIGPIPE, which shells do not report).
 * A command
 * killed by SIGINT makes memrec die of SIGINT too, so a shell loop around
 * memrec stops on Ctrl-C as it would without it. */
int memrec_exit_status(const memrec_child_status *st, const char *command, int quiet);

/* ---- memrec_traces.c ---- */

/* Creates an empty manifest file (the library appends each trace's path to
 * it). Returns 0 with its path in `path`, -1 with err filled. */
int memrec_manifest_create(char *path, size_t pathlen, char *err, size_t errlen);

/* Reads the manifest, prints each distinct note the processes left in it
 * ("memrec: CUPTI PATH (...), CUDA driver X.Y"), symbolizes each trace
 * listed (unless `symbolize` is 0) and prints one line per trace on stderr
 * ("memrec: trace written: PATH (N events, X MiB)"), or that none was
 * written (not when
 * `quiet_if_none`: the driver warning already said why). Paths under `cwd`
 * are shown relative to it. Removes the manifest. Returns the number of
 * traces. */
int memrec_report_traces(const char *manifest, const char *cwd, int symbolize, int quiet,
                         int quiet_if_none);

#endif
