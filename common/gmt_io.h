/* gmt_io.h — writing or reading a whole buffer at an offset, written once.
 *
 * pwrite and pread may do less than asked or be interrupted; the files memanalyze writes pages
 * and spills into need every byte at its own offset, whatever an earlier failed call left
 * behind. Header-only. */
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

/* Reads exactly n bytes at offset into p. 0, or -1 (errno set; EIO when the file ends first). */
static inline int gmt_pread_all(int fd, void *p, size_t n, uint64_t offset) {
    char *c = p;
    while (n) {
        ssize_t r = pread(fd, c, n, (off_t)offset);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO;
            return -1;
        }
        c += r;
        n -= (size_t)r;
        offset += (uint64_t)r;
    }
    return 0;
}

#endif
