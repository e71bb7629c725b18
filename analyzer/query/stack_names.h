/* stack_names.h — what people call an allocation stack: its frames, the
 * short "site" label every report and picture shows, and the key that
 * matches the same code across two runs.
 *
 * One rule names sites for report, leaks, diff, JSON and every picture, so
 * the same allocation reads the same everywhere. Stacks are read from the
 * database's stack_frames view, once per stack (stack_names caches them). */
#ifndef GMT_STACK_NAMES_H
#define GMT_STACK_NAMES_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct named_frame {
    const char *name, *file, *module; /* NULL: unknown (module: a Python/imported frame) */
    int64_t line;                     /* 0: unknown */
    uint64_t ip;                      /* native instruction pointer; 0: none */
} named_frame;

typedef struct named_stack {
    int64_t stack_id;
    int known;           /* the stack id has rows (0 for id 0 and lost ids) */
    named_frame *frames; /* innermost first */
    size_t frame_count;
    const char *site; /* the short label, see stack_label */
    const char *key;  /* the frames' (function, file name) sequence: equal in two runs of
                         the same code, whatever the ids, addresses and directories */
} named_stack;

/* A cache of stacks read from one database. */
typedef struct stack_names stack_names;
stack_names *stack_names_new(sqlite3 *db);
/* The stack (frames, site, key); NULL only when out of memory. Valid until
 * stack_names_free. */
const named_stack *stack_names_get(stack_names *cache, int64_t stack_id);
void stack_names_free(stack_names *cache);
/* A copy of text the cache owns (a list's label), valid until stack_names_free; NULL when out
 * of memory. */
const char *stack_names_keep(stack_names *cache, const char *text);

/* The short "site" label of a stack: the innermost frame that is user code
 * (a .py file not under site-packages/, dist-packages/, torch/ or
 * lib/python, '\\' as '/': a Windows path reads as a Linux one), else the innermost Python frame,
 * else the innermost native frame that is not allocator/ATen/c10/CUDA runtime/interpreter plumbing
 * (PyTorch's own recording frames, torch::unwind and CapturedTraceback, never are a site),
 * else the innermost frame; written "train.py:88 train_step" (file name,
 * line, function) or "function (libfoo.so)" when the file is unknown.
 * "no stack" for stack id 0, "unknown stack" when the id has no rows.
 * Returns 0, or -1 when the stack is unknown or absent (buf is set anyway). */
int stack_label(sqlite3 *db, int64_t stack_id, char *buf, size_t len);
/* The same label from frames at hand (innermost first; n 0: "unknown stack"): memanalyze
 * watch's, from the live replay's stacks. */
void stack_site_label(const named_frame *frames, size_t n, char *buf, size_t len);

/* The key of frames at hand (innermost first), as named_stack.key: (function, file name) per
 * frame; memanalyze watch matches the live replays' sites of several ranks by it. malloc'd;
 * NULL when out of memory. */
char *stack_key_of(const named_frame *frames, size_t n);

/* stack_label, followed by what tells apart two stacks with the same site: " via " the
 * innermost frame inside it that is not allocator plumbing (an optimizer's exp_avg and
 * exp_avg_sq, both made at the loop's optimizer.step()), else " from " the next user frame
 * outside it (one layer's forward called from different lines). */
int stack_label_via(sqlite3 *db, int64_t stack_id, char *buf, size_t len);

/* The labels of a list's stacks, the one rule every list uses (report, leaks, diff, compare,
 * ranks, the pictures' legends): each its site, and where two stacks of different code read
 * the same, each gets the frame at the first place where they differ: " via " a frame inside
 * the site (innermost first, allocator and interpreter plumbing skipped), else " from " one
 * outside it (outwards), else any named frame; until no two read the same (" (stack N)" when
 * their frames are alike wherever a label looks). stacks[i] NULL: "no stack"; the same stack
 * twice keeps one label. labels[i]: len bytes each. 0, or -1 when out of memory (each label
 * still its site). */
int stack_labels_distinct(const named_stack *const *stacks, size_t n, char *const *labels,
                          size_t len);
/* The same for stack ids of one database (a cache of its own). */
int stack_labels_of(sqlite3 *db, const int64_t *stack_ids, size_t n, char *const *labels,
                    size_t len);

/* A frame as every label writes it: "train.py:88 train_step" (file name, line, function; a C++
 * name without its return type and parameters, an autograd node as "GatherBackward0::apply"),
 * "function (libfoo.so)", "0x1234 (libfoo.so)", or "unknown frame". */
void stack_frame_label(const named_frame *f, char *buf, size_t len);

/* The frames of a whole stack a flame graph shows (export), innermost first, by their index in
 * s->frames, into shown[] (room for s->frame_count): the site's frame, every Python frame, and
 * every other frame a label may tell two stacks apart by (named, or of a module, and not
 * plumbing: the allocator, c10, ATen and its dispatcher, the CUDA runtime, torch's bindings, the
 * interpreter's C frames, the C/C++ runtime and thread starts, PyTorch's own recording frames).
 * Returns how many; 0 for a stack without frames. */
size_t stack_frames_shown(const named_stack *s, size_t *shown);

/* Writes the frames as PyTorch's snapshot does: [{"name", "filename", "line"}, ...],
 * innermost first. */
void stack_json_frames(FILE *out, const named_stack *stack);

#endif
