/* units.c — binary byte units and durations, the one spelling used by every
 * text report so numbers line up and compare across commands. */
#include "units.h"

#include <stdio.h>

const char *units_bytes(uint64_t bytes, char *buf, size_t len) {
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024.0 && u + 1 < sizeof names / sizeof names[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, names[u]);
    return buf;
}

const char *units_bytes_i64(int64_t bytes, char buf[32]) {
    return units_bytes(bytes > 0 ? (uint64_t)bytes : 0, buf, 32);
}

const char *units_bytes_signed(int64_t bytes, char buf[32]) {
    buf[0] = bytes < 0 ? '-' : '+';
    units_bytes(bytes < 0 ? (uint64_t)0 - (uint64_t)bytes : (uint64_t)bytes, buf + 1, 31);
    return buf;
}

const char *units_duration(uint64_t ns, char *buf, size_t len) {
    if (ns < 1000)
        snprintf(buf, len, "%llu ns", (unsigned long long)ns);
    else if (ns < 1000000)
        snprintf(buf, len, "%.1f us", ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, len, "%.2f ms", ns / 1e6);
    else if (ns < 120000000000ULL)
        snprintf(buf, len, "%.3f s", ns / 1e9);
    else {
        uint64_t s = ns / 1000000000ULL;
        if (s < 3600)
            snprintf(buf, len, "%llum %02llus", (unsigned long long)(s / 60),
                     (unsigned long long)(s % 60));
        else
            snprintf(buf, len, "%lluh %02llum", (unsigned long long)(s / 3600),
                     (unsigned long long)(s / 60 % 60));
    }
    return buf;
}
