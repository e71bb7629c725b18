/* text_out.h — text output that cannot take over a terminal. Host names, command lines, frames,
 * stage and tensor names come from the program that was recorded, or from whoever made the
 * input: an ESC, BEL or CR among them printed raw can set a window title, or overwrite a report's
 * lines with \r. So every byte of a command's text output, and every error line, passes through
 * one filter that writes control characters as git quotes them (C-style: \r, \a, \b, \v, \f, else
 * \ooo octal; DEL and the C1 controls U+0080..U+009F too), leaving newlines, tabs and other
 * UTF-8 as they are. JSON needs none of it (json_string escapes them) and CSV is data: those
 * outputs stay raw. */
#ifndef GMT_TEXT_OUT_H
#define GMT_TEXT_OUT_H

#include <stddef.h>
#include <stdio.h>

/* Writes s[0..n) to out with control characters quoted. *pending carries a lone 0xC2 (the start
 * of a C1 control, or of other UTF-8) across calls: 0 at first; text_quoted_end writes one
 * left at the end. Returns 0, or -1 on a write error. */
int text_quoted_write(FILE *out, const char *s, size_t n, int *pending);
int text_quoted_end(FILE *out, int *pending);

/* Replaces stdout by a stream that quotes control characters into the real one, for a command's
 * text output; text_out_end flushes it and puts the real stdout back, returning 0, or -1 when a
 * write failed (errno set; the caller reports it). Harmless when not begun. */
void text_out_begin(void);
int text_out_end(void);

#endif
