/* cmd_symbolize.c — `memanalyze symbolize TRACE...`: names the native frames
 * of traces recorded on this host (memrec does it after every run; this is
 * for a trace whose run was cut short, or a module installed later).
 *
 * The work is schema/trace_symbolize.c's, shared with memrec; this file only
 * parses options and prints one line per trace. Without libdw at build time
 * the command exists and says why it cannot run. */
#include "commands.h"

#ifdef GMT_HAVE_SYMBOLIZE
#include "trace_symbolize.h"
#endif

#include <inttypes.h>
#include <stdio.h>

const char symbolize_usage[] =
    "usage: memanalyze symbolize TRACE...\n"
    "\n"
    "Resolves the native frames of each trace (function, file, line, inlined\n"
    "frames) with the binaries and debug info on this host, and adds the names to\n"
    "the trace. Run it where the trace was recorded. Frames already named are\n"
    "kept; a module missing on disk, or rebuilt since (another build-id), leaves\n"
    "its frames unnamed with a warning. The trace is replaced atomically.\n";

const cli_option symbolize_options[] = {CLI_OPT_END};

#ifdef GMT_HAVE_SYMBOLIZE
static void print_warning(void *ctx, const char *message) {
    (void)ctx;
    fprintf(stderr, "memanalyze: warning: %s\n", message);
}
#endif

int run_symbolize(cli_ctx *ctx) {
#ifdef GMT_HAVE_SYMBOLIZE
    int status = 0;
    for (int i = 0; i < ctx->ninputs; i++) {
        trace_symbolize_result res;
        char err[1024];
        const char *path = ctx->inputs[i];
        if (trace_symbolize_file(path, &res, print_warning, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "memanalyze: %s\n", err);
            status = 2;
            continue;
        }
        printf("%s: %" PRIu64 " native frames: %" PRIu64 " symbolized now, %" PRIu64
               " already, %" PRIu64 " unresolved\n",
               path, res.native_frames, res.symbolized, res.already_symbolized, res.unresolved);
    }
    return status;
#else
    (void)ctx;
    fprintf(stderr, "memanalyze: symbolize needs libdw, which this build lacks "
                    "(apt-get install libdw-dev, then rebuild)\n");
    return 2;
#endif
}
