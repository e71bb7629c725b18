/* tree_write.c — see tree_write.h. */
#include "tree_write.h"

#include "gmt_assert.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void tree_begin(tree_writer *t, FILE *f, int json) {
    memset(t, 0, sizeof *t);
    t->f = f;
    t->json = json;
    if (!json)
        pickle_write_begin(&t->p, f);
}

void tree_end(tree_writer *t) {
    assert(t->depth == 0);
    if (t->json)
        putc_unlocked('\n', t->f);
    else
        pickle_write_stop(&t->p);
}

/* Before an item of the innermost container (a list's value, a dict's key): JSON's comma;
 * pickle's MARK at a batch's start, APPENDS/SETITEMS when a batch is full. */
static void item(tree_writer *t) {
    if (!t->depth)
        return;
    struct tree_level *l = &t->lv[t->depth - 1];
    if (t->json) {
        if (l->items++)
            putc_unlocked(',', t->f);
        return;
    }
    if (l->items == PICKLE_WRITE_BATCH) {
        if (l->dict)
            pickle_write_setitems(&t->p);
        else
            pickle_write_appends(&t->p);
        l->items = 0;
    }
    if (l->items++ == 0)
        pickle_write_mark(&t->p);
}

/* Before a value: an item of a list (a dict's value follows its key). */
static void value(tree_writer *t) {
    if (t->depth && !t->lv[t->depth - 1].dict)
        item(t);
}

static void open_container(tree_writer *t, int dict) {
    value(t);
    if (GMT_NEVER(t->depth >= TREE_MAX_DEPTH))
        return;
    t->lv[t->depth].dict = (uint8_t)dict;
    t->lv[t->depth++].items = 0;
    if (t->json)
        putc_unlocked(dict ? '{' : '[', t->f);
    else if (dict)
        pickle_write_empty_dict(&t->p);
    else
        pickle_write_empty_list(&t->p);
}

void tree_dict(tree_writer *t) { open_container(t, 1); }
void tree_list(tree_writer *t) { open_container(t, 0); }

void tree_close(tree_writer *t) {
    if (GMT_NEVER(t->depth == 0))
        return;
    struct tree_level *l = &t->lv[--t->depth];
    if (t->json)
        putc_unlocked(l->dict ? '}' : ']', t->f);
    else if (l->items && l->dict)
        pickle_write_setitems(&t->p);
    else if (l->items)
        pickle_write_appends(&t->p);
}

static void json_text(FILE *f, const char *s) {
    static const char hex[] = "0123456789abcdef";
    putc_unlocked('"', f);
    const unsigned char *run = (const unsigned char *)s, *p = run;
    for (;; p++) {
        unsigned char ch = *p;
        if (ch >= 0x20 && ch != '"' && ch != '\\')
            continue;
        fwrite_unlocked(run, 1, (size_t)(p - run), f);
        if (!ch)
            break;
        putc_unlocked('\\', f);
        if (ch == '"' || ch == '\\')
            putc_unlocked((int)ch, f);
        else if (ch == '\n')
            putc_unlocked('n', f);
        else if (ch == '\t')
            putc_unlocked('t', f);
        else if (ch == '\r')
            putc_unlocked('r', f);
        else {
            fwrite_unlocked("u00", 1, 3, f);
            putc_unlocked(hex[ch >> 4], f);
            putc_unlocked(hex[ch & 15], f);
        }
        run = p + 1;
    }
    putc_unlocked('"', f);
}

void tree_key(tree_writer *t, const char *key) {
    assert(t->depth && t->lv[t->depth - 1].dict);
    item(t);
    if (t->json) {
        json_text(t->f, key);
        putc_unlocked(':', t->f);
    } else
        pickle_write_str(&t->p, key);
}

void tree_str(tree_writer *t, const char *s) {
    value(t);
    if (t->json)
        json_text(t->f, s);
    else
        pickle_write_str(&t->p, s);
}

static void json_uint(FILE *f, uint64_t v, int negative) {
    char buf[24];
    int n = sizeof buf;
    do
        buf[--n] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    if (negative)
        buf[--n] = '-';
    fwrite_unlocked(buf + n, 1, sizeof buf - (size_t)n, f);
}

void tree_int(tree_writer *t, int64_t v) {
    value(t);
    if (!t->json)
        pickle_write_int(&t->p, v);
    else if (v < 0)
        json_uint(t->f, (uint64_t)0 - (uint64_t)v, 1);
    else
        json_uint(t->f, (uint64_t)v, 0);
}

void tree_int_pair(tree_writer *t, int64_t a, int64_t b) {
    if (t->json) { /* a list of two */
        tree_list(t);
        tree_int(t, a);
        tree_int(t, b);
        tree_close(t);
        return;
    }
    value(t); /* the tuple is one item of its container; its two values are not */
    pickle_write_int(&t->p, a);
    pickle_write_int(&t->p, b);
    pickle_write_tuple2(&t->p);
}

void tree_uint(tree_writer *t, uint64_t v) {
    value(t);
    if (t->json)
        json_uint(t->f, v, 0);
    else
        pickle_write_uint(&t->p, v);
}

void tree_bool(tree_writer *t, int v) {
    value(t);
    if (t->json)
        fputs(v ? "true" : "false", t->f);
    else
        pickle_write_bool(&t->p, v);
}

void tree_none(tree_writer *t) {
    value(t);
    if (t->json)
        fputs("null", t->f);
    else
        pickle_write_none(&t->p);
}

/* A double as Python's json writes it: the shortest text that reads back as the same double,
 * with a point or an exponent (0.0, not 0: a float stays a float). */
static void json_double(FILE *f, double v) {
    char buf[40];
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (!strpbrk(buf, ".e"))
        strcat(buf, ".0");
    fputs(buf, f);
}

void tree_float(tree_writer *t, double v) {
    value(t);
    if (!t->json)
        pickle_write_float(&t->p, v);
    else if (!isfinite(v))
        fputs("null", t->f);
    else
        json_double(t->f, v);
}

uint32_t tree_memoize(tree_writer *t) { return t->json ? 0 : pickle_write_memoize(&t->p) + 1; }

void tree_get(tree_writer *t, uint32_t memo) {
    value(t);
    if (GMT_NEVER(t->json || memo == 0))
        return;
    pickle_write_get(&t->p, memo - 1);
}
