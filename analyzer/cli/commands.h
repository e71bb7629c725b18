/* commands.h — the memanalyze subcommands, one file each (cmd_*.c).
 *
 * Each takes the arguments after its name (argv[0] is the command name) and
 * returns the process exit status: 0 success, 2 for a user error (bad input,
 * bad option), with the one-line message already printed to stderr. */
#ifndef GMT_COMMANDS_H
#define GMT_COMMANDS_H

int cmd_info(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_sql(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_leaks(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_segments(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_heatmap(int argc, char **argv);
int cmd_fragmentation(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_ranks(int argc, char **argv);
int cmd_steps(int argc, char **argv);
int cmd_stages(int argc, char **argv);
int cmd_tensors(int argc, char **argv);

/* report --plots DIR: the four pictures of one device as DIR/NAME-deviceN.png. */
#include <sqlite3.h>
#include <stddef.h>
int picture_write_all(sqlite3 *db, const char *input, int device, const char *dir, char *err,
                      size_t errlen);

#endif
