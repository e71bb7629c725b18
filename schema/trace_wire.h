/* trace_wire.h — byte-level constants of the trace format, shared by the
 * writer and the reader (internal to schema/). TRACE_FORMAT.md is the prose
 * version of the same facts; change both together. */
#ifndef GMT_TRACE_WIRE_H
#define GMT_TRACE_WIRE_H

/* The decompressed stream starts with these 8 bytes, then varint version,
 * varint flags. */
#define TRACE_WIRE_MAGIC "GPUMEMTR"
#define TRACE_WIRE_MAGIC_LEN 8

/* Every zstd frame's content starts with a CHUNK record: varint sequence
 * number, varint count of memory events written before this frame. */
#define TRACE_WIRE_TAG_CHUNK 0x01

/* Memory event tag: 1 c r l o o o o
 *   c: context (device, tid, stream, pool, kind) follows
 *   r: requested size differs from size (zigzag difference follows)
 *   l: level (0 segment, 1 block); oooo: op */
#define TRACE_WIRE_TAG_EVENT 0x80
#define TRACE_WIRE_CTX_BIT 0x40
#define TRACE_WIRE_REQ_BIT 0x20
#define TRACE_WIRE_LEVEL_BIT 0x10
#define TRACE_WIRE_OP_MASK 0x0f

/* END record flags: bit 0 is TRACE_END_CLEAN; this bit says the counted
 * calls follow the flags (version 2 on, set exactly when there are some). */
#define TRACE_WIRE_END_CALLS 0x2

/* Strings and byte fields longer than this are cut by the writer. */
#define TRACE_WIRE_MAX_STRING 65536

/* A frame whose content would exceed this is treated as corrupt by the
 * reader, so a hostile header cannot make it allocate without bound. */
#define TRACE_WIRE_MAX_CHUNK (64u << 20)

/* zstd's frame magic, little-endian on disk: 28 B5 2F FD. */
#define TRACE_WIRE_ZSTD_MAGIC "\x28\xb5\x2f\xfd"

#endif
