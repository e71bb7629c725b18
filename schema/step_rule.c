/* step_rule.c — the step rule (DESIGN.md, "Time, steps and WHEN"), in one
 * place for the analyzer's commands and the recorder's --start-step window.
 *
 * The number is the first run of digits after the word (skipping spaces,
 * '#', '_', ':', '=' and '-' as separators), so "ProfilerStep#3" is 3 and
 * "step 3 of 10" is 3. A name with the word and no number anywhere after it
 * is still a step, numbered by order later. The DESIGN asks for "a name with
 * step and a number"; names like "stepper" without digits are therefore not
 * steps: we require either a number after the word or the word standing
 * alone (the whole name, e.g. "step"). */
#include "step_rule.h"

#include <ctype.h>
#include <string.h>

static const char *find_word(const char *name, const char *word, size_t wlen) {
    for (const char *p = name; *p; p++) {
        size_t i = 0;
        while (i < wlen && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)word[i]))
            i++;
        if (i == wlen)
            return p;
    }
    return NULL;
}

int step_rule_match(const char *name, const char *word, int64_t *number) {
    if (!word || !*word)
        word = "step";
    size_t wlen = strlen(word);
    *number = -1;
    if (!name)
        return 0;
    for (const char *at = find_word(name, word, wlen); at; at = find_word(at + 1, word, wlen)) {
        const char *p = at + wlen;
        while (*p == ' ' || *p == '#' || *p == '_' || *p == ':' || *p == '=' || *p == '-')
            p++;
        if (isdigit((unsigned char)*p)) {
            int64_t n = 0;
            while (isdigit((unsigned char)*p) && n < (INT64_MAX - 9) / 10)
                n = n * 10 + (*p++ - '0');
            *number = n;
            return 1;
        }
    }
    /* The bare word ("step", "Step") is a step without a number. */
    size_t len = strlen(name);
    return len == wlen && find_word(name, word, wlen) == name;
}
