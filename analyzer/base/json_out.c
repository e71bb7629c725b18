/* json_out.c — JSON string escaping and numbers (see json_out.h). */
#include "json_out.h"

#include <math.h>

void json_string(FILE *out, const char *s) {
    if (!s) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

void json_number(FILE *out, double v) {
    if (!isfinite(v))
        fputs("null", out);
    else if (fabs(v) < 9e15 && v == (double)(long long)v) /* the cast only in range */
        fprintf(out, "%lld", (long long)v);
    else
        fprintf(out, "%.6g", v);
}
