/* gmt_size.h — sizes with units, as people type them ("2G", "512MiB", "1.5g", "64k").
 *
 * memrec's --max-size, the recorder's MEMREC_* variables and synth's options all take a byte
 * count or a count with an optional binary unit; this is their one parser, so "2G" means the same
 * everywhere. Grammar: optional blanks and '+', then a decimal integer, a decimal fraction
 * followed by a unit ("1.5G"), or a 0x hexadecimal integer; then an optional unit k, m, g or t
 * (either case; 1024-based), an optional 'i' after a unit, and an optional 'B' or 'b'. Nothing
 * may follow. A fraction is truncated to whole bytes. Negative numbers, exponents, a fraction
 * without a unit and anything above UINT64_MAX are refused. Callers apply their own range (memrec
 * refuses 0). No allocation, no locale. */
#ifndef GMT_SIZE_H
#define GMT_SIZE_H

#include <stdint.h>

/* Parses `text` into *out. Returns 0, or -1 (with *out unchanged) when it is malformed. */
int gmt_parse_size(const char *text, uint64_t *out);

#endif
