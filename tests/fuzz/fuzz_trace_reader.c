/* fuzz_trace_reader.c — libFuzzer target for the trace reader.
 *
 * The input bytes become a file (a memfd, so nothing touches the disk) and
 * are read to the end through the public reader API, as memanalyze would.
 * Any crash, hang, leak or sanitizer report is a bug in schema/. */
#include "trace_format.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = memfd_create("trace", 0);
    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64], err[256];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    trace_reader *r = trace_reader_open(path, err, sizeof err);
    if (r) {
        trace_record rec;
        uint64_t sum = 0;
        while (trace_reader_next(r, &rec) == 1) {
            if (rec.kind == TRACE_REC_STRING) /* touch the bytes the reader hands out */
                for (uint32_t i = 0; i <= rec.u.string.text.len; i++)
                    sum += (uint8_t)rec.u.string.text.ptr[i];
        }
        for (size_t i = 0; i < trace_reader_warning_count(r); i++)
            if (trace_reader_warning(r, i))
                sum += (uint8_t)trace_reader_warning(r, i)[0];
        trace_reader_close(r);
        (void)sum;
    }
    close(fd);
    return 0;
}
