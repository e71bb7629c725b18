/* gmt_io.h — writing a whole buffer at an offset, written once.
 *
 * pwrite may write less than asked or be interrupted; the files memanalyze writes pages and
 * spills into need every byte at its own offset, whatever an earlier failed call left behind.
 * Header-only. */
#ifndef GMT_IO_H
#define GMT_IO_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/* Writes p[0, n) at offset. 0, or -1 with errno set (ENOSPC when nothing more would go). */
static inline int gmt_pwrite_all(int fd, const void *p, size_t n, uint64_t offset) {
    const char *c = p;
    while (n) {
        ssize_t w = pwrite(fd, c, n, (off_t)offset);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            return -1;
        }
        c += w;
        n -= (size_t)w;
        offset += (uint64_t)w;
    }
    return 0;
}

#endif
