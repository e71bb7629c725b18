/* commands.h — the memanalyze subcommands, one file each (cmd_*.c): what memanalyze.c's command
 * table needs of each, its option table (which also writes --help), the --help lines above the
 * options, a check of the options before the setup where a command has one, and its run
 * function. A run function receives the parsed options and the setup's results (cli_ctx, cli.h)
 * and returns the exit status: 0 success, 2 for a user error (bad input, bad option), with the
 * one-line message already printed to stderr. */
#ifndef GMT_COMMANDS_H
#define GMT_COMMANDS_H

#include "cli.h"

extern const cli_option steps_options[], stages_options[], leaks_options[], tensors_options[],
    segments_options[], info_options[], symbolize_options[], import_options[], sql_options[],
    report_options_table[], picture_options[], diff_options[], simulate_options[],
    compare_options[], ranks_options[], export_options[], view_options[], watch_options[];
extern const char steps_usage[], stages_usage[], leaks_usage[], tensors_usage[], segments_usage[],
    info_usage[], symbolize_usage[], import_usage[], sql_usage[], report_usage[], timeline_usage[],
    heatmap_usage[], fragmentation_usage[], diff_usage[], simulate_usage[], compare_usage[],
    ranks_usage[], export_usage[], view_usage[], watch_usage[];
int run_steps(cli_ctx *ctx);
int run_stages(cli_ctx *ctx);
int run_leaks(cli_ctx *ctx);
int run_tensors(cli_ctx *ctx);
int run_segments(cli_ctx *ctx);
int run_info(cli_ctx *ctx);
int run_symbolize(cli_ctx *ctx);
int run_import(cli_ctx *ctx);
int run_sql(cli_ctx *ctx);
int run_report(cli_ctx *ctx);
int picture_check(cli_ctx *ctx); /* -o given, --by known, Cairo there: before the database */
int run_timeline(cli_ctx *ctx);
int run_heatmap(cli_ctx *ctx);
int run_fragmentation(cli_ctx *ctx);
int diff_check(cli_ctx *ctx); /* one input with --from/--to, or two with --at */
int run_diff(cli_ctx *ctx);
int run_simulate(cli_ctx *ctx);
int compare_check(cli_ctx *ctx); /* two runs or more, as many labels at most */
int run_compare(cli_ctx *ctx);
int run_ranks(cli_ctx *ctx);
int export_check(cli_ctx *ctx); /* a known --to, -o replaceable, --what: before the database */
int run_export(cli_ctx *ctx);
int view_check(
    cli_ctx *ctx); /* at most VIEW_MAX_INPUTS, --port and --bind parsed, the server built in */
int run_view(cli_ctx *ctx);
int run_watch(cli_ctx *ctx); /* follows a growing trace: exit 0, 2, 3 (stale) or 4 (--exit-on) */

/* report --plots DIR: the four pictures of one device as DIR/NAME-deviceN.png. */
#include <sqlite3.h>
#include <stddef.h>
int picture_write_all(sqlite3 *db, const char *input, int device, const char *dir, char *err,
                      size_t errlen);

#endif
