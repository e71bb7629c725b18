/* step_rule.h — which marker names are training steps (DESIGN.md, "Time,
 * steps and WHEN"): by default a name containing "step" and a number,
 * case-insensitive ("ProfilerStep#3" -> 3, "step 3" -> 3, "train_step_12"
 * -> 12). A custom word may replace "step". */
#ifndef GMT_STEP_RULE_H
#define GMT_STEP_RULE_H

#include <stdint.h>

/* Returns 1 when `name` is a step name; *number gets the number that follows
 * the word (or -1 when the name carries the word but no number, which still
 * counts as a step: such steps are numbered in order of begin). `word` is
 * NULL for the default "step". */
int step_rule_match(const char *name, const char *word, int64_t *number);

#endif
