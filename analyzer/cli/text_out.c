/* text_out.c — control characters quoted in text output (text_out.h), through a glibc cookie
 * stream in front of the real stdout. */
#include "text_out.h"

#include <errno.h>
#include <string.h>

/* The C-style escape of a control byte c (< 0x20 but not \n or \t, or DEL), into buf. */
static const char *escape_of(unsigned char c, char buf[8]) {
    switch (c) {
    case '\a':
        return "\\a";
    case '\b':
        return "\\b";
    case '\v':
        return "\\v";
    case '\f':
        return "\\f";
    case '\r':
        return "\\r";
    default:
        snprintf(buf, 8, "\\%03o", c);
        return buf;
    }
}

static int is_control(unsigned char c) { return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f; }

int text_quoted_write(FILE *out, const char *s, size_t n, int *pending) {
    char buf[8];
    size_t from = 0; /* s[from..i) is plain and not yet written */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (*pending) { /* after 0xC2: 0x80..0x9F makes a C1 control */
            *pending = 0;
            if (c >= 0x80 && c <= 0x9f) {
                if (fprintf(out, "\\302\\%03o", c) < 0)
                    return -1;
            } else if (fputc(0xc2, out) == EOF) {
                return -1;
            } else {
                i--; /* c itself is looked at again */
            }
            from = i + 1;
            continue;
        }
        if (c != 0xc2 && !is_control(c))
            continue;
        if (i > from && fwrite(s + from, 1, i - from, out) != i - from)
            return -1;
        from = i + 1;
        if (c == 0xc2)
            *pending = 1;
        else if (fputs(escape_of(c, buf), out) == EOF)
            return -1;
    }
    if (n > from && fwrite(s + from, 1, n - from, out) != n - from)
        return -1;
    return 0;
}

int text_quoted_end(FILE *out, int *pending) {
    if (!*pending)
        return 0;
    *pending = 0;
    return fputc(0xc2, out) == EOF ? -1 : 0;
}

typedef struct {
    FILE *real;
    int pending;
} quoting;

static ssize_t quoting_write(void *cookie, const char *buf, size_t size) {
    quoting *q = cookie;
    return text_quoted_write(q->real, buf, size, &q->pending) == 0 ? (ssize_t)size : -1;
}

static quoting the_quoting;
static FILE *real_stdout;

void text_out_begin(void) {
    if (real_stdout)
        return;
    the_quoting = (quoting){.real = stdout};
    FILE *f = fopencookie(&the_quoting, "w", (cookie_io_functions_t){.write = quoting_write});
    if (!f)
        return; /* out of memory: the text goes out as it is */
    real_stdout = stdout;
    stdout = f;
}

int text_out_end(void) {
    if (!real_stdout)
        return 0;
    FILE *f = stdout;
    int rc = fflush(f) == 0 && !ferror(f) ? 0 : -1;
    int saved = errno;
    stdout = real_stdout;
    real_stdout = NULL;
    fclose(f);
    if (text_quoted_end(stdout, &the_quoting.pending) != 0)
        rc = -1;
    if (rc)
        errno = saved;
    return rc;
}
