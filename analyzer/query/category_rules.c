/* category_rules.c — `--categories FILE` (see category_rules.h). */
#include "category_rules.h"

#include "gmt_grow.h"
#include "phases.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rule {
    regex_t re;
    gmt_category category;
} rule;

struct category_rules {
    rule *rules;
    size_t len, cap;
};

void category_rules_free(category_rules *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->len; i++)
        regfree(&r->rules[i].re);
    free(r->rules);
    free(r);
}

size_t category_rules_count(const category_rules *r) { return r ? r->len : 0; }

/* One line (trailing newline removed): 0 added or skipped, -1 with err set. */
static int parse_line(category_rules *r, char *line, const char *path, size_t number, char *err,
                      size_t errlen) {
    size_t n = strlen(line);
    while (n && isspace((unsigned char)line[n - 1]))
        line[--n] = '\0';
    while (isspace((unsigned char)*line))
        line++, n--;
    if (!n || line[0] == '#')
        return 0;
    char *word = line + n;
    while (word > line && !isspace((unsigned char)word[-1]))
        word--;
    int category = gmt_category_from_name(word, strlen(word));
    if (word == line || category < 0) {
        snprintf(err, errlen,
                 "%s:%zu: a rule is `REGEX CATEGORY`, CATEGORY one of parameter, gradient, "
                 "optimizer_state, activation, temporary, input, other, unknown (got \"%s\")",
                 path, number, word);
        return -1;
    }
    char *end = word;
    while (end > line && isspace((unsigned char)end[-1]))
        end--;
    *end = '\0';
    if (gmt_grow((void **)&r->rules, &r->cap, r->len, sizeof *r->rules) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = regcomp(&r->rules[r->len].re, line, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char why[128];
        regerror(rc, &r->rules[r->len].re, why, sizeof why);
        snprintf(err, errlen, "%s:%zu: bad regular expression \"%s\": %s", path, number, line, why);
        return -1;
    }
    r->rules[r->len++].category = (gmt_category)category;
    return 0;
}

category_rules *category_rules_load(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    category_rules *r = calloc(1, sizeof *r);
    char line[4096];
    size_t number = 0;
    int ok = r != NULL;
    if (!r)
        snprintf(err, errlen, "out of memory");
    while (ok && fgets(line, sizeof line, f)) {
        number++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, errlen, "%s:%zu: line longer than %zu bytes", path, number,
                     sizeof line - 2);
            ok = 0;
        } else
            ok = parse_line(r, line, path, number, err, errlen) == 0;
    }
    if (ok && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        ok = 0;
    }
    fclose(f);
    if (!ok) {
        category_rules_free(r);
        return NULL;
    }
    return r;
}

int category_rules_match(const category_rules *r, const named_stack *stack) {
    if (!r || !stack || !stack->known)
        return -1;
    char text[2048];
    for (size_t k = 0; k < r->len; k++)
        for (size_t i = 0; i < stack->frame_count; i++) {
            const named_frame *f = &stack->frames[i];
            if (phase_frame_is_recording(f))
                continue; /* how PyTorch took the stack, in every stack: it says nothing */
            if (f->line > 0)
                snprintf(text, sizeof text, "%s %s:%lld", f->name ? f->name : "?",
                         f->file ? f->file : "?", (long long)f->line);
            else
                snprintf(text, sizeof text, "%s %s", f->name ? f->name : "?",
                         f->file ? f->file : "?");
            if (regexec(&r->rules[k].re, text, 0, NULL, 0) == 0)
                return (int)r->rules[k].category;
        }
    return -1;
}
