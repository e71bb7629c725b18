/* units.h — how memanalyze writes bytes and times for people. */
#ifndef GMT_UNITS_H
#define GMT_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Binary units: "512 B", "1.5 KiB", "20.0 MiB", "3.25 GiB". Returns buf. */
const char *units_bytes(uint64_t bytes, char *buf, size_t len);

/* units_bytes of a signed count, a negative one as 0 (a difference that cannot be below zero
 * but might read so from a damaged input). buf holds 32 bytes. */
const char *units_bytes_i64(int64_t bytes, char buf[32]);

/* A change: units_bytes with its sign always written, "+1.00 MiB", "-512 B", "+0 B". buf
 * holds 32 bytes. */
const char *units_bytes_signed(int64_t bytes, char buf[32]);

/* Durations from nanoseconds: "850 ns", "12.5 us", "3.20 ms", "1.234 s", "2m 05s". */
const char *units_duration(uint64_t ns, char *buf, size_t len);

#endif
