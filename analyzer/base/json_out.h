/* json_out.h — the few JSON primitives memanalyze's --json outputs need.
 * Output goes straight to a FILE; structure (commas, nesting) is the
 * caller's, which keeps each command's JSON readable next to its text. */
#ifndef GMT_JSON_OUT_H
#define GMT_JSON_OUT_H

#include <stdio.h>

/* Writes s as a JSON string (quoted, escaped); NULL becomes null. */
void json_string(FILE *out, const char *s);

/* Writes a double as JSON (non-finite values become null). */
void json_number(FILE *out, double v);

#endif
