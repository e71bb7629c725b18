/* category_rules.h — the user's own category rules (`--categories FILE`), for code the
 * built-in rules cannot see: a custom optimizer's state, a KV cache, a pinned buffer pool.
 *
 * A file holds one rule a line, `REGEX CATEGORY`: an extended regular expression (POSIX ERE,
 * unanchored) and, as the line's last word, one of the categories (gmt_vocab.h). Blank lines and
 * lines starting with '#' are skipped. A rule matches a stack when it matches one of its frames,
 * written "function file:line" (e.g. "_init_group torch/optim/adam.py:137"); the first rule
 * that matches wins; PyTorch's recording frames (torch::unwind::unwind, CapturedTraceback::
 * gather, the caching allocator's own, phases.h) are in every stack and never match. Rules
 * decide only what the names and phases left as `other` or `unknown`. */
#ifndef GMT_CATEGORY_RULES_H
#define GMT_CATEGORY_RULES_H

#include "gmt_vocab.h"
#include "stack_names.h"

#include <stddef.h>

typedef struct category_rules category_rules;

/* Reads and compiles FILE. NULL with a one-line message ("FILE:LINE: ...") in err. */
category_rules *category_rules_load(const char *path, char *err, size_t errlen);

/* The category of the first rule matching the stack, or -1 (none, or no frames). */
int category_rules_match(const category_rules *rules, const named_stack *stack);

size_t category_rules_count(const category_rules *rules);
void category_rules_free(category_rules *rules);

#endif
