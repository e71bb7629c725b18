/* gmt_utf8.h — text cut to a buffer must not end inside a UTF-8 character: the JSON that carries
 * it would not be valid. Header-only, for the analyzer's summaries and names. */
#ifndef GMT_UTF8_H
#define GMT_UTF8_H

#include <stddef.h>
#include <string.h>

/* Drops a partial character at the end of `text` (left there by a cut). */
static inline void gmt_utf8_trim(char *text) {
    size_t n = strlen(text), start = n;
    while (start > 0 && ((unsigned char)text[start - 1] & 0xC0) == 0x80)
        start--; /* continuation bytes */
    if (start == 0)
        return;
    unsigned char lead = (unsigned char)text[start - 1];
    size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (n - (start - 1) < want)
        text[start - 1] = 0;
}

#endif
