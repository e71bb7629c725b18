/* rec_internal.h — what the core's own files (rec_core.c, rec_writer.c,
 * rec_log.c) share and nobody else uses: the payloads of buffered items
 * that carry strings, and the session's halt switch. Capture sources
 * include rec_core.h only. */
#ifndef GMT_REC_INTERNAL_H
#define GMT_REC_INTERNAL_H

#include "rec_core.h"

#include <stdint.h>

/* REC_ITEM_MARKER payload; domain bytes then name bytes follow it. */
typedef struct rec_marker_item {
    uint64_t range_id;
    int64_t value;
    uint32_t tid;
    uint8_t kind;
    uint8_t domain_len, name_len;
} rec_marker_item;

/* REC_ITEM_DEVICE payload; name bytes follow it. */
typedef struct rec_device_item {
    uint64_t total_bytes;
    uint32_t device;
    uint8_t name_len;
} rec_device_item;

void rec_log_set_quiet(int quiet);

/* The writer stops the session after a write error or at the size cap:
 * emits become no-ops that count drops, the file is closed properly. */
void rec_session_halt(void);

/* Appends `line` and a newline to the launcher's manifest (one write,
 * O_APPEND, so lines of concurrent processes never mix); nothing when
 * `manifest` is empty or cannot be opened. */
void rec_manifest_append(const char *manifest, const char *line);

#endif
