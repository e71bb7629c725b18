/* stack_names.c — frames, site labels and cross-run keys of allocation
 * stacks (see stack_names.h), and the labels of a list of them. The rule that
 * picks a stack's site skips the frames of the allocator, the runtime, the
 * interpreter and PyTorch's own recording; paths read alike with '/' or '\'. */
#include "stack_names.h"

#include "addr_map.h"
#include "db_query.h"
#include "gmt_grow.h"
#include "json_out.h"

#include <stdlib.h>
#include <string.h>

#define MAX_STACK_DEPTH 65536 /* frames read per stack at most */

/* The file name part of a path: after the last '/' or '\\' (a Windows snapshot's
 * "D:\\proj\\model.py" reads as Linux's "/home/me/proj/model.py" does). */
static const char *base_name(const char *path) {
    if (!path)
        return NULL;
    const char *s = path;
    for (const char *p = path; *p; p++)
        if (*p == '/' || *p == '\\')
            s = p + 1;
    return s;
}

/* A path's characters, the separators '/' and '\\' alike (and case alike with `fold`). */
static int same_char(char a, char b, int fold) {
    if ((a == '/' || a == '\\') && (b == '/' || b == '\\'))
        return 1;
    if (fold && a >= 'A' && a <= 'Z')
        a = (char)(a - 'A' + 'a');
    if (fold && b >= 'A' && b <= 'Z')
        b = (char)(b - 'A' + 'a');
    return a == b;
}

static int path_prefix(const char *path, const char *part, int fold) {
    for (; *part; path++, part++)
        if (!*path || !same_char(*path, *part, fold))
            return 0;
    return 1;
}

/* Where `part` occurs in path, a '/' of part matching either separator; NULL if nowhere. */
static const char *path_find(const char *path, const char *part, int fold) {
    for (const char *p = path; p && *p; p++)
        if (path_prefix(p, part, fold))
            return p;
    return NULL;
}

static int path_has(const char *path, const char *part) { return path_find(path, part, 0) != NULL; }

/* The interpreter's own library: "lib/python3.11/" on Linux, "Python311\\Lib\\" on Windows
 * (a directory named python... and its Lib). */
static int in_python_lib(const char *path) {
    if (path_has(path, "lib/python"))
        return 1;
    for (const char *p = path_find(path, "/lib/", 1); p; p = path_find(p + 1, "/lib/", 1)) {
        const char *dir = p; /* the component before "Lib" */
        while (dir > path && dir[-1] != '/' && dir[-1] != '\\')
            dir--;
        if (path_prefix(dir, "python", 1))
            return 1;
    }
    return 0;
}

static int starts_with(const char *s, const char *prefix) {
    return s && !strncmp(s, prefix, strlen(prefix));
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = s ? strlen(s) : 0, k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static int is_python(const named_frame *f) { return ends_with(f->file, ".py"); }

/* A Python file of the program itself, not of a library or the interpreter. */
/* Code torch.compile generated (named by a hash that changes between runs). */
static int is_generated(const char *file) { return file && strstr(file, "torchinductor_"); }

/* A Python file of the program itself, not of a library, the interpreter or
 * torch.compile's generated code. */
static int is_user_python(const named_frame *f) {
    const char *file = f->file;
    return is_python(f) && !path_has(file, "site-packages/") && !path_has(file, "dist-packages/") &&
           !in_python_lib(file) && !path_prefix(file, "torch/", 0) && !path_has(file, "/torch/") &&
           !is_generated(file);
}

/* The file part of a frame's key: the file name, without directories (they
 * differ between machines and checkouts); generated code has none. */
static const char *key_file(const named_frame *f) {
    if (is_generated(f->file))
        return "<generated>";
    return f->file ? base_name(f->file) : f->module ? base_name(f->module) : "";
}

char *stack_key_of(const named_frame *frames, size_t n) {
    size_t klen = 16;
    for (size_t i = 0; i < n; i++)
        klen += (frames[i].name ? strlen(frames[i].name) : 1) + strlen(key_file(&frames[i])) + 2;
    char *key = malloc(klen), *k = key;
    for (size_t i = 0; key && i < n; i++)
        k +=
            sprintf(k, "%s\x1f%s\x1e", frames[i].name ? frames[i].name : "?", key_file(&frames[i]));
    if (key)
        *k = 0;
    return key;
}

/* A C++ function name without its return type: "void at::meta::f<T>(int)" and
 * "at::TensorBase at::detail::g(...)" are matched and shown from "at::"
 * on. The return type ends at the last space, outside template arguments,
 * before the parameter list. */
static const char *qualified_name(const char *name) {
    if (!name)
        return NULL;
    const char *start = name;
    int depth = 0;
    for (const char *p = name; *p && !(*p == '(' && depth == 0); p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>' && depth > 0)
            depth--;
        else if (*p == ' ' && depth == 0 && strncmp(p, " [", 2) != 0)
            start = p + 1;
        if (*p == '(' && depth == 0)
            break;
    }
    /* "(anonymous namespace)::" opens a parenthesis that is not the parameter list; a
     * return type comes before a qualified C++ name only ("alloc not recorded" is a name) */
    return strncmp(start, "(anonymous", 10) == 0 || !*start || !strstr(start, "::") ? name : start;
}

static int matches(const named_frame *f, const char *const *names, size_t nnames,
                   const char *const *files, size_t nfiles, const char *const *modules,
                   size_t nmodules) {
    const char *name = qualified_name(f->name);
    for (size_t i = 0; i < nnames; i++)
        if (starts_with(name, names[i]))
            return 1;
    for (size_t i = 0; f->file && i < nfiles; i++)
        if (path_has(f->file, files[i]))
            return 1;
    const char *module = base_name(f->module);
    for (size_t i = 0; i < nmodules; i++)
        if (starts_with(module, modules[i]))
            return 1;
    return 0;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* PyTorch recording the stack itself (the unwinder, CapturedTraceback, the snapshot's
 * gather_with_cpp): in every stack a snapshot keeps with C++ frames, never a site. */
static int is_recording(const named_frame *f) {
    const char *name = qualified_name(f->name);
    return name && (starts_with(name, "torch::unwind::") ||
                    starts_with(name, "torch::CapturedTraceback::") ||
                    strstr(name, "gather_with_cpp") || strstr(name, "CapturedTraceback::gather"));
}

/* How memory is obtained, never why: the allocator, c10, ATen's tensor
 * factories and dispatcher, the CUDA runtime and driver, the recorder. */
static int is_allocation_plumbing(const named_frame *f) {
    static const char *const names[] = {
        "c10::",      "at::detail::", "at::_ops::", "at::TensorBase at::detail::",
        "cudaMalloc", "cudaFree",     "cuMem",      "memrec_",
        "gmt_"};
    static const char *const files[] = {"c10/", "CUDACachingAllocator", "EmptyTensor.cpp",
                                        "ATen/core/dispatch/"};
    static const char *const modules[] = {"libc10", "libcudart", "libcuda.", "libcupti",
                                          "libmemrec"};
    return matches(f, names, COUNT(names), files, COUNT(files), modules, COUNT(modules)) ||
           (f->name && strstr(f->name, "at::detail::")) || is_recording(f);
}

/* Where a thread starts and the C/C++ runtime under it: never why memory
 * was allocated. Snapshot symbolizers often name these frames after a
 * neighbouring libc symbol (`pthread_condattr_setpshared` for the start of
 * autograd's threads), so they go by every name libc and libstdc++ use. */
static int is_runtime(const named_frame *f) {
    static const char *const names[] = {"pthread_", "start_thread", "clone",
                                        "__clone",  "_start",       "__libc_",
                                        "__GI_",    "_dl_",         "execute_native_thread_routine",
                                        "std::",    "__cxa_",       "__gnu_cxx::",
                                        "_Unwind_", "__pthread_",   "thread_start"};
    static const char *const files[] = {"sysdeps/", "nptl/", "libstdc++", "bits/std_thread.h"};
    static const char *const modules[] = {"libc.so",  "libc-",     "libpthread",
                                          "ld-linux", "libstdc++", "libgcc_s"};
    /* libc's internal names (`__xmknodat`, `__GI___clone3`) stand in for the
     * frames under a thread start too; C++ code is qualified (`ns::f`) */
    if (f->name && starts_with(f->name, "__") && !strstr(f->name, "::"))
        return 1;
    return matches(f, names, COUNT(names), files, COUNT(files), modules, COUNT(modules));
}

/* Also ATen's operators, torch's bindings and engine, the interpreter and
 * the runtime: frames every allocation of a PyTorch program passes through. */
static int is_plumbing(const named_frame *f) {
    static const char *const names[] = {"at::", "caffe2::",   "torch::",          "_Py",
                                        "Py",   "cfunction_", "method_vectorcall"};
    static const char *const files[] = {"ATen/",    "aten/src/", "torch/csrc/",    "Python/",
                                        "Objects/", "Modules/",  "Programs/python"};
    static const char *const modules[] = {"libtorch", "libpython", "python"};
    return is_allocation_plumbing(f) || is_runtime(f) ||
           matches(f, names, COUNT(names), files, COUNT(files), modules, COUNT(modules));
}

/* An autograd node's apply (`torch::autograd::generated::GatherBackward0::
 * apply`, `torch::autograd::AccumulateGrad::apply`): in a backward thread's
 * C++-only stack, the node that asked for the memory. */
static int is_autograd_node(const named_frame *f) {
    const char *name = qualified_name(f->name);
    return name && starts_with(name, "torch::autograd::") &&
           !starts_with(name, "torch::autograd::Engine::") &&
           !starts_with(name, "torch::autograd::Node::") && strstr(name, "::apply(");
}

static int is_named(const named_frame *f) { return f->name || f->file; }

static size_t site_frame(const named_frame *frames, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (is_user_python(&frames[i]))
            return i;
    for (size_t i = 0; i < n; i++)
        if (is_python(&frames[i]))
            return i;
    for (size_t i = 0; i < n; i++)
        if ((is_named(&frames[i]) || frames[i].module) && !is_plumbing(&frames[i]))
            return i;
    /* a stack of plumbing only: a backward thread's autograd node, else the
     * operator that allocated, else the innermost frame that is not runtime */
    for (size_t i = 0; i < n; i++)
        if (is_autograd_node(&frames[i]))
            return i;
    for (size_t i = 0; i < n; i++)
        if (is_named(&frames[i]) && !is_allocation_plumbing(&frames[i]) && !is_runtime(&frames[i]))
            return i;
    for (size_t i = 0; i < n; i++)
        if (is_named(&frames[i]) && !is_runtime(&frames[i]) && !is_recording(&frames[i]))
            return i;
    for (size_t i = 0; i < n; i++)
        if (!is_recording(&frames[i]))
            return i;
    return 0;
}

/* A C++ name without its parameter list ("f(int, char)" -> "f"); Python
 * and C names are unchanged. */
static void short_name(const char *name, char *buf, size_t len) {
    size_t n = strlen(name);
    for (const char *p = strchr(name, '('); p; p = strchr(p + 1, '('))
        if (p > name && strncmp(p, "(anonymous namespace)", 21) != 0) {
            n = (size_t)(p - name);
            break;
        }
    snprintf(buf, len, "%.*s", (int)(n < 400 ? n : 400), name);
}

static void frame_label(const named_frame *f, char *buf, size_t len) {
    const char *file = base_name(f->file);
    char name[512] = "";
    if (file && (!*file || !strcmp(file, "??")))
        file = NULL; /* an importer's "unknown" */
    if (f->name)
        short_name(qualified_name(f->name), name, sizeof name);
    if (is_autograd_node(f)) { /* "GatherBackward0::apply", not the namespaces before it */
        char *colon = NULL;
        for (char *p = strstr(name, "::"); p; p = strstr(p + 2, "::"))
            if (strcmp(p, "::apply") != 0)
                colon = p;
        if (colon)
            memmove(name, colon + 2, strlen(colon + 2) + 1);
    }
    const char *sep = *name ? " " : "";
    if (file && f->line > 0)
        snprintf(buf, len, "%s:%lld%s%s", file, (long long)f->line, sep, name);
    else if (file)
        snprintf(buf, len, "%s%s%s", file, sep, name);
    else if (*name && f->module)
        snprintf(buf, len, "%s (%s)", name, base_name(f->module));
    else if (*name)
        snprintf(buf, len, "%s", name);
    else if (f->module)
        snprintf(buf, len, "0x%llx (%s)", (unsigned long long)f->ip, base_name(f->module));
    else
        snprintf(buf, len, "unknown frame");
}

static void stack_release(named_stack *s) {
    for (size_t i = 0; i < s->frame_count; i++) {
        free((char *)s->frames[i].name);
        free((char *)s->frames[i].file);
        free((char *)s->frames[i].module);
    }
    free(s->frames);
    free((char *)s->site);
    free((char *)s->key);
    memset(s, 0, sizeof *s);
}

static char *dup_text(sqlite3_stmt *st, int i, int *oom) {
    const unsigned char *t = sqlite3_column_text(st, i);
    if (!t)
        return NULL;
    char *s = strdup((const char *)t);
    if (!s)
        *oom = 1;
    return s;
}

/* Reads the frames of `stack_id` with `st` (the walk query) and names it.
 * 0, or -1 when out of memory. */
static int stack_load(sqlite3_stmt *st, int64_t stack_id, named_stack *s) {
    memset(s, 0, sizeof *s);
    s->stack_id = stack_id;
    size_t cap = 0;
    int oom = 0;
    int64_t node = stack_id;
    for (int depth = 0; node != 0 && depth < MAX_STACK_DEPTH && !oom; depth++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, node);
        if (sqlite3_step(st) != SQLITE_ROW)
            break; /* a lost node: the stack ends here */
        s->known = 1;
        if (gmt_grow((void **)&s->frames, &cap, s->frame_count, sizeof *s->frames) != 0) {
            oom = 1;
            break;
        }
        named_frame *f = &s->frames[s->frame_count++];
        memset(f, 0, sizeof *f);
        f->name = dup_text(st, 1, &oom);
        f->file = dup_text(st, 2, &oom);
        f->line = db_column_i64(st, 3, 0);
        f->module = dup_text(st, 4, &oom);
        f->ip = (uint64_t)db_column_i64(st, 5, 0);
        node = db_column_i64(st, 0, 0);
    }
    sqlite3_reset(st);
    char label[512];
    if (stack_id == 0)
        snprintf(label, sizeof label, "no stack");
    else if (!s->known || s->frame_count == 0)
        snprintf(label, sizeof label, "unknown stack");
    else
        frame_label(&s->frames[site_frame(s->frames, s->frame_count)], label, sizeof label);
    s->site = strdup(label);
    s->key = stack_id == 0 ? strdup("-")
             : !s->known   ? strdup("?")
                           : stack_key_of(s->frames, s->frame_count);
    if (oom || !s->site || !s->key) {
        db_note_failure("out of memory naming a stack");
        stack_release(s);
        return -1;
    }
    return 0;
}

static const char walk_sql[] =
    "SELECT s.parent_id, f.name, f.file, f.line, f.module, f.ip FROM stacks AS s "
    "LEFT JOIN frames AS f ON f.frame_id = s.frame_id WHERE s.stack_id = ?1";

struct stack_names {
    sqlite3 *db;
    sqlite3_stmt *walk; /* NULL when the query cannot be prepared: every stack is unknown */
    named_stack **stacks;
    size_t len, cap;
    addr_map by_id; /* stack_id -> index */
    char **kept;    /* stack_names_keep's copies */
    size_t nkept, capkept;
};

const char *stack_names_keep(stack_names *c, const char *text) {
    char *copy = strdup(text);
    if (!copy || gmt_grow((void **)&c->kept, &c->capkept, c->nkept, sizeof *c->kept) != 0) {
        free(copy);
        return NULL;
    }
    return c->kept[c->nkept++] = copy;
}

stack_names *stack_names_new(sqlite3 *db) {
    stack_names *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->db = db;
    if (db_prepare(db, walk_sql, &c->walk) != SQLITE_OK)
        c->walk = NULL;
    return c;
}

const named_stack *stack_names_get(stack_names *c, int64_t stack_id) {
    uint32_t *index = addr_map_get(&c->by_id, 0, (uint64_t)stack_id);
    if (index)
        return c->stacks[*index];
    named_stack *s = malloc(sizeof *s);
    if (!s || gmt_grow((void **)&c->stacks, &c->cap, c->len, sizeof *c->stacks) != 0) {
        free(s);
        return NULL;
    }
    int rc;
    if (c->walk)
        rc = stack_load(c->walk, stack_id, s);
    else {
        memset(s, 0, sizeof *s);
        s->stack_id = stack_id;
        s->site = strdup(stack_id ? "unknown stack" : "no stack");
        s->key = strdup(stack_id ? "?" : "-");
        rc = s->site && s->key ? 0 : -1;
        if (rc != 0)
            stack_release(s);
    }
    if (rc != 0 || addr_map_put(&c->by_id, 0, (uint64_t)stack_id, (uint32_t)c->len) != 0) {
        if (rc == 0)
            stack_release(s);
        free(s);
        return NULL;
    }
    c->stacks[c->len++] = s;
    return s;
}

void stack_names_free(stack_names *c) {
    if (!c)
        return;
    for (size_t i = 0; i < c->len; i++) {
        stack_release(c->stacks[i]);
        free(c->stacks[i]);
    }
    free(c->stacks);
    for (size_t i = 0; i < c->nkept; i++)
        free(c->kept[i]);
    free(c->kept);
    addr_map_free(&c->by_id);
    sqlite3_finalize(c->walk);
    free(c);
}

/* Appends to buf what tells s apart from another stack of its site (stack_label_via). */
static void append_difference(const named_stack *s, char *buf, size_t len) {
    size_t site = site_frame(s->frames, s->frame_count), used = strlen(buf);
    char other[512] = "";
    const char *word = " via ";
    for (size_t i = 0; i < site && !*other; i++)
        if (is_named(&s->frames[i]) && !is_plumbing(&s->frames[i]))
            frame_label(&s->frames[i], other, sizeof other);
    if (!*other)
        word = " from ";
    for (size_t i = site + 1; i < s->frame_count && !*other; i++)
        if (is_user_python(&s->frames[i]))
            frame_label(&s->frames[i], other, sizeof other);
    if (*other && used < len)
        snprintf(buf + used, len - used, "%s%s", word, other);
}

/* ---- labels of a list: distinct stacks never read the same -------------------------- */

/* The frames a difference may be told by, in the order they are tried: the inside of the site
 * (innermost first, plumbing skipped), then its outside (outwards, plumbing skipped), then
 * every named frame (innermost first). */
enum { SEEK_INSIDE, SEEK_OUTSIDE, SEEK_ANY, SEEK_KINDS };

/* The frame label of the p-th frame of `kind` in s; 0 when s has no such frame. */
static int nth_frame(const named_stack *s, int kind, size_t p, char *buf, size_t len) {
    size_t site = s && s->frame_count ? site_frame(s->frames, s->frame_count) : 0, seen = 0;
    size_t lo = kind == SEEK_OUTSIDE ? site + 1 : 0;
    size_t hi = !s ? 0 : kind == SEEK_INSIDE ? site : s->frame_count;
    for (size_t i = lo; i < hi; i++) {
        const named_frame *f = &s->frames[i];
        if (!is_named(f) || (kind != SEEK_ANY && is_plumbing(f)))
            continue;
        if (seen++ == p) {
            frame_label(f, buf, len);
            return 1;
        }
    }
    *buf = 0;
    return 0;
}

typedef struct list_entry {
    const named_stack *stack;
    char *label;
    size_t index;
} list_entry;

static int by_label(const void *a, const void *b) {
    const list_entry *x = a, *y = b;
    int c = strcmp(x->label, y->label);
    return c ? c : x->index < y->index ? -1 : x->index > y->index;
}

/* One group of entries reading the same: each gets the frame at the first place where they
 * differ. 1 when that told some apart, 0 when their frames are alike wherever looked. */
static int tell_apart(list_entry *g, size_t n, size_t len) {
    char a[512], b[512];
    for (int kind = 0; kind < SEEK_KINDS; kind++)
        for (size_t p = 0;; p++) {
            int any = 0, differ = 0;
            nth_frame(g[0].stack, kind, p, a, sizeof a);
            for (size_t i = 0; i < n; i++) {
                any |= nth_frame(g[i].stack, kind, p, b, sizeof b);
                differ |= strcmp(a, b) != 0;
            }
            if (!any)
                break;
            if (!differ)
                continue;
            for (size_t i = 0; i < n; i++)
                if (nth_frame(g[i].stack, kind, p, b, sizeof b)) {
                    size_t used = strlen(g[i].label);
                    if (used < len)
                        snprintf(g[i].label + used, len - used, "%s%s",
                                 kind == SEEK_OUTSIDE ? " from " : " via ", b);
                }
            return 1;
        }
    return 0;
}

/* The same code: one stack, or stacks whose frames read alike, each of them. */
static int same_code(const named_stack *x, const named_stack *y) {
    if (x == y)
        return 1;
    if (!x || !y || x->frame_count != y->frame_count)
        return 0;
    char a[512], b[512];
    for (size_t i = 0; i < x->frame_count; i++) {
        frame_label(&x->frames[i], a, sizeof a);
        frame_label(&y->frames[i], b, sizeof b);
        if (strcmp(a, b) != 0)
            return 0;
    }
    return 1;
}

int stack_labels_distinct(const named_stack *const *stacks, size_t n, char *const *labels,
                          size_t len) {
    if (len == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        snprintf(labels[i], len, "%s", stacks[i] && stacks[i]->site ? stacks[i]->site : "no stack");
    if (n < 2)
        return 0;
    list_entry *e = malloc(n * sizeof *e);
    if (!e)
        return -1;
    for (size_t i = 0; i < n; i++)
        e[i] = (list_entry){stacks[i], labels[i], i};
    /* each round tells apart the groups that still read the same, a frame further on */
    for (int round = 0, changed = 1; changed && round < 32; round++) {
        changed = 0;
        qsort(e, n, sizeof *e, by_label);
        for (size_t i = 0, j; i < n; i = j) {
            int distinct = 0;
            for (j = i + 1; j < n && !strcmp(e[i].label, e[j].label); j++)
                distinct |= !same_code(e[i].stack, e[j].stack);
            if (!distinct)
                continue;
            if (tell_apart(e + i, j - i, len))
                changed = 1;
            else /* alike wherever a label looks (a parameter list): the stack's number */
                for (size_t k = i; k < j; k++)
                    if (e[k].stack) {
                        size_t used = strlen(e[k].label);
                        if (used < len)
                            snprintf(e[k].label + used, len - used, " (stack %lld)",
                                     (long long)e[k].stack->stack_id);
                    }
        }
    }
    free(e);
    return 0;
}

int stack_labels_of(sqlite3 *db, const int64_t *stack_ids, size_t n, char *const *labels,
                    size_t len) {
    stack_names *names = stack_names_new(db);
    const named_stack **stacks = malloc((n ? n : 1) * sizeof *stacks);
    int rc = names && stacks ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!(stacks[i] = stack_names_get(names, stack_ids[i])))
            rc = -1;
    if (rc == 0)
        rc = stack_labels_distinct(stacks, n, labels, len);
    else
        for (size_t i = 0; i < n && len; i++)
            snprintf(labels[i], len, "unknown stack");
    free(stacks);
    stack_names_free(names);
    return rc;
}

/* stack_label, and with `difference` stack_label_via: one read of the stack either way. */
static int label_of(sqlite3 *db, int64_t stack_id, int difference, char *buf, size_t len) {
    sqlite3_stmt *st;
    named_stack s;
    if (len == 0)
        return -1;
    if (stack_id == 0 || db_prepare(db, walk_sql, &st) != SQLITE_OK) {
        snprintf(buf, len, "%s", stack_id ? "unknown stack" : "no stack");
        return -1;
    }
    int rc = stack_load(st, stack_id, &s);
    sqlite3_finalize(st);
    if (rc != 0) {
        snprintf(buf, len, "unknown stack");
        return -1;
    }
    snprintf(buf, len, "%s", s.site);
    rc = s.known && s.frame_count ? 0 : -1;
    if (rc == 0 && difference)
        append_difference(&s, buf, len);
    stack_release(&s);
    return rc;
}

void stack_site_label(const named_frame *frames, size_t n, char *buf, size_t len) {
    if (!len)
        return;
    if (!n)
        snprintf(buf, len, "unknown stack");
    else
        frame_label(&frames[site_frame(frames, n)], buf, len);
}

int stack_label(sqlite3 *db, int64_t stack_id, char *buf, size_t len) {
    return label_of(db, stack_id, 0, buf, len);
}

int stack_label_via(sqlite3 *db, int64_t stack_id, char *buf, size_t len) {
    return label_of(db, stack_id, 1, buf, len);
}

void stack_frame_label(const named_frame *f, char *buf, size_t len) {
    if (len)
        frame_label(f, buf, len);
}

size_t stack_frames_shown(const named_stack *s, size_t *shown) {
    if (!s || !s->frame_count)
        return 0;
    size_t site = site_frame(s->frames, s->frame_count), n = 0;
    for (size_t i = 0; i < s->frame_count; i++) {
        const named_frame *f = &s->frames[i];
        if (i == site || is_python(f) || ((is_named(f) || f->module) && !is_plumbing(f)))
            shown[n++] = i;
    }
    return n;
}

void stack_json_frames(FILE *out, const named_stack *stack) {
    fputc('[', out);
    for (size_t i = 0; stack && i < stack->frame_count; i++) {
        const named_frame *f = &stack->frames[i];
        fputs(i ? ", {\"name\": " : "{\"name\": ", out);
        json_string(out, f->name ? f->name : "??");
        fputs(", \"filename\": ", out);
        json_string(out, f->file ? f->file : f->module ? f->module : "??");
        fprintf(out, ", \"line\": %lld}", (long long)f->line);
    }
    fputc(']', out);
}
