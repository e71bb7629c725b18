/* trace_symbolize.c — resolves a trace's native frames with libdw and adds
 * SYMBOL records (see trace_symbolize.h for the contract and the safety
 * rule: a copy is written beside the trace and renamed over it).
 *
 * Shape: one pass over the trace collects MODULE records, native FRAME
 * records and the frames that already have a SYMBOL record; the frames left
 * are sorted by module, and each module gets its own Dwfl session (so two
 * modules recorded at overlapping addresses, a dlclose'd library and its
 * successor, never confuse each other). The output copy is created only when
 * the first frame resolves, so a trace with nothing to add is never touched.
 *
 * Frame ips are return addresses (what an unwinder reports for every frame
 * but the one that was interrupted), so each is looked up at ip - 1: the
 * call instruction, whose line is the one a reader expects. */
#include "trace_symbolize.h"
#include "gmt_grow.h"
#include "trace_format.h"
#include "trace_symbolize_dw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct module_rec {
    uint32_t module_id;
    uint64_t base, size;
    char *path;
    uint8_t *build_id;
    uint32_t build_id_len;
} module_rec;

typedef struct native_frame {
    uint32_t frame_id, module_id;
    uint64_t ip;
} native_frame;

/* What the first pass learns about the trace. */
typedef struct trace_scan {
    module_rec *modules;
    size_t modules_len, modules_cap;
    native_frame *frames;
    size_t frames_len, frames_cap;
    uint32_t *symbolized; /* frame ids that already have a SYMBOL record */
    size_t symbolized_len, symbolized_cap;
    trace_append_state append;
    uint64_t events;
    uint64_t complete_bytes; /* end of the last complete zstd frame */
    int truncated;
    int clean_end;
} trace_scan;

/* The output: a copy of the trace with records appended, created lazily. */
typedef struct trace_output {
    const char *path;
    char tmp_path[4096];
    int sync_fd; /* a second descriptor of the copy, for fsync after close */
    trace_writer *writer;
    struct stat original;
} trace_output;

static int set_error(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void warnf(trace_symbolize_warn_fn warn, void *ctx, const char *fmt, ...) {
    if (!warn)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    warn(ctx, line);
}

static void scan_free(trace_scan *s) {
    for (size_t i = 0; i < s->modules_len; i++) {
        free(s->modules[i].path);
        free(s->modules[i].build_id);
    }
    free(s->modules);
    free(s->frames);
    free(s->symbolized);
}

static int keep_module(trace_scan *s, const trace_module *m) {
    if (gmt_grow((void **)&s->modules, &s->modules_cap, s->modules_len, sizeof *s->modules) != 0)
        return -1;
    module_rec *mr = &s->modules[s->modules_len];
    *mr = (module_rec){m->module_id, m->base, m->size, strdup(m->path.ptr), NULL, 0};
    if (m->build_id.len) {
        mr->build_id = malloc(m->build_id.len);
        if (mr->build_id) {
            memcpy(mr->build_id, m->build_id.ptr, m->build_id.len);
            mr->build_id_len = m->build_id.len;
        }
    }
    s->modules_len++;
    return mr->path && (!m->build_id.len || mr->build_id) ? 0 : -1;
}

static int on_record(trace_scan *s, const trace_record *rec) {
    uint32_t *next = NULL, id = 0;
    switch (rec->kind) {
    case TRACE_REC_STRING:
        next = &s->append.next_string_id, id = rec->u.string.string_id;
        break;
    case TRACE_REC_STACK:
        next = &s->append.next_stack_id, id = rec->u.stack.stack_id;
        break;
    case TRACE_REC_FRAME:
        next = &s->append.next_frame_id, id = rec->u.frame.frame_id;
        if (rec->u.frame.kind == TRACE_FRAME_NATIVE) {
            if (gmt_grow((void **)&s->frames, &s->frames_cap, s->frames_len, sizeof *s->frames))
                return -1;
            s->frames[s->frames_len++] =
                (native_frame){id, rec->u.frame.module_id, rec->u.frame.ip};
        }
        break;
    case TRACE_REC_SYMBOL:
        if (gmt_grow((void **)&s->symbolized, &s->symbolized_cap, s->symbolized_len,
                     sizeof *s->symbolized))
            return -1;
        s->symbolized[s->symbolized_len++] = rec->u.symbol.frame_id;
        break;
    case TRACE_REC_MODULE:
        return keep_module(s, &rec->u.module);
    default:
        break;
    }
    if (next && id != UINT32_MAX && id >= *next)
        *next = id + 1;
    return 0;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_frame_by_module(const void *a, const void *b) {
    const native_frame *x = a, *y = b;
    if (x->module_id != y->module_id)
        return x->module_id < y->module_id ? -1 : 1;
    return x->frame_id < y->frame_id ? -1 : x->frame_id > y->frame_id;
}

static const module_rec *find_module(const trace_scan *s, uint32_t module_id) {
    for (size_t i = s->modules_len; i-- > 0;) /* a re-recorded id: the latest wins */
        if (s->modules[i].module_id == module_id)
            return &s->modules[i];
    return NULL;
}

/* A frame recorded without a module: the module whose range holds its ip. */
static uint32_t module_of_ip(const trace_scan *s, uint64_t ip) {
    for (size_t i = 0; i < s->modules_len; i++)
        if (ip - s->modules[i].base < s->modules[i].size)
            return s->modules[i].module_id;
    return 0;
}

/* Reads the whole trace once. Leaves in s->frames the native frames with
 * no SYMBOL record, sorted by module. */
static int scan_trace(const char *path, trace_scan *s, uint64_t *native_total, char *err,
                      size_t errlen) {
    trace_reader *r = trace_reader_open(path, err, errlen);
    if (!r)
        return -1;
    s->append = (trace_append_state){0, 0, 1, 1, 1};
    trace_record rec;
    int rc;
    while ((rc = trace_reader_next(r, &rec)) == 1) {
        s->complete_bytes = trace_reader_position(r); /* the end of rec's frame */
        if (on_record(s, &rec) != 0) {
            trace_reader_close(r);
            return set_error(err, errlen, "out of memory reading %s", path);
        }
    }
    if (rc < 0) {
        set_error(err, errlen, "%s", trace_reader_error(r));
        trace_reader_close(r);
        return -1;
    }
    const trace_reader_stats *st = trace_reader_get_stats(r);
    s->events = st->events;
    s->append.events = st->events + st->lost_events;
    s->append.frames = st->frames + st->corrupt_frames;
    s->truncated = st->truncated;
    s->clean_end = st->clean_end;
    trace_reader_close(r);

    *native_total = s->frames_len;
    if (s->symbolized_len) /* (qsort and bsearch want a non-NULL array) */
        qsort(s->symbolized, s->symbolized_len, sizeof *s->symbolized, cmp_u32);
    size_t kept = 0;
    for (size_t i = 0; i < s->frames_len; i++) {
        native_frame f = s->frames[i];
        if (s->symbolized_len &&
            bsearch(&f.frame_id, s->symbolized, s->symbolized_len, sizeof *s->symbolized, cmp_u32))
            continue;
        if (!f.module_id)
            f.module_id = module_of_ip(s, f.ip);
        s->frames[kept++] = f;
    }
    s->frames_len = kept;
    if (kept)
        qsort(s->frames, s->frames_len, sizeof *s->frames, cmp_frame_by_module);
    return 0;
}

/* ---- the output copy ------------------------------------------------------ */

/* Copies the first `len` bytes of `src` to `dst` (kernel-side when it can). */
static int copy_bytes(int src, int dst, uint64_t len) {
    off_t in_off = 0;
    while ((uint64_t)in_off < len) {
        size_t want = (size_t)(len - (uint64_t)in_off);
        ssize_t n = copy_file_range(src, &in_off, dst, NULL, want, 0);
        if (n > 0)
            continue;
        if (n == 0)
            return -1; /* the file shrank under us */
        if (errno == EINTR)
            continue;
        if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
            return -1;
        char buf[1 << 16];
        while ((uint64_t)in_off < len) {
            size_t chunk =
                len - (uint64_t)in_off < sizeof buf ? (size_t)(len - (uint64_t)in_off) : sizeof buf;
            ssize_t k = pread(src, buf, chunk, in_off);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                return -1;
            for (ssize_t done = 0; done < k;) {
                ssize_t w = write(dst, buf + done, (size_t)(k - done));
                if (w < 0 && errno == EINTR)
                    continue;
                if (w < 0)
                    return -1;
                done += w;
            }
            in_off += k;
        }
    }
    return 0;
}

/* Creates PATH.symbolize-XXXXXX holding the trace's complete frames and a
 * writer that appends to it. */
static int output_open(trace_output *o, const trace_scan *s, char *err, size_t errlen) {
    int src = open(o->path, O_RDONLY | O_CLOEXEC);
    if (src < 0 || fstat(src, &o->original) != 0) {
        set_error(err, errlen, "cannot open %s: %s", o->path, strerror(errno));
        if (src >= 0)
            close(src);
        return -1;
    }
    if ((size_t)snprintf(o->tmp_path, sizeof o->tmp_path, "%s.symbolize-XXXXXX", o->path) >=
        sizeof o->tmp_path) {
        close(src);
        return set_error(err, errlen, "path too long: %s", o->path);
    }
    int fd = mkostemp(o->tmp_path, O_CLOEXEC);
    if (fd < 0) {
        set_error(err, errlen, "cannot create a file beside %s: %s", o->path, strerror(errno));
        o->tmp_path[0] = 0;
        close(src);
        return -1;
    }
    uint64_t keep = s->truncated ? s->complete_bytes : (uint64_t)o->original.st_size;
    int copied = copy_bytes(src, fd, keep);
    int saved = errno;
    close(src);
    o->sync_fd = copied == 0 ? dup(fd) : -1;
    if (copied != 0 || o->sync_fd < 0) {
        close(fd);
        return set_error(err, errlen, "cannot copy %s: %s", o->path, strerror(saved));
    }
    trace_writer_options opt = {.zstd_level = 3};
    o->writer = trace_writer_open_append(fd, &opt, &s->append, err, errlen);
    return o->writer ? 0 : -1;
}

/* Closes the copy, makes it durable and puts it in the trace's place. */
static int output_commit(trace_output *o, char *err, size_t errlen) {
    char werr[256] = "";
    int rc = trace_writer_close(o->writer, NULL, werr, sizeof werr);
    o->writer = NULL;
    if (rc != 0)
        return set_error(err, errlen, "writing %s: %s", o->tmp_path, werr);
    if (fchmod(o->sync_fd, o->original.st_mode & 07777) != 0 || fsync(o->sync_fd) != 0)
        return set_error(err, errlen, "writing %s: %s", o->tmp_path, strerror(errno));
    if (rename(o->tmp_path, o->path) != 0)
        return set_error(err, errlen, "cannot replace %s: %s", o->path, strerror(errno));
    o->tmp_path[0] = 0;
    return 0;
}

/* Whatever happened, nothing but the trace itself is left behind. */
static void output_discard(trace_output *o) {
    if (o->writer)
        trace_writer_close(o->writer, NULL, NULL, 0);
    o->writer = NULL;
    if (o->sync_fd >= 0)
        close(o->sync_fd);
    o->sync_fd = -1;
    if (o->tmp_path[0])
        unlink(o->tmp_path);
    o->tmp_path[0] = 0;
}

/* ---- resolving ------------------------------------------------------------ */

typedef struct symbolize_run {
    trace_scan scan;
    trace_output out;
    trace_symbolize_result res;
    trace_symbolize_warn_fn warn;
    void *warn_ctx;
    char *err;
    size_t errlen;
} symbolize_run;

/* Writes one resolved frame's SYMBOL record (and its strings). */
static int emit_symbol(symbolize_run *run, uint32_t frame_id, const dw_symbol *sym) {
    if (!run->out.writer && output_open(&run->out, &run->scan, run->err, run->errlen) != 0)
        return -1;
    trace_writer *w = run->out.writer;
    trace_symbol_entry entries[TRACE_SYMBOL_MAX_INLINE];
    for (unsigned i = 0; i < sym->count; i++) {
        const dw_symbol_entry *e = &sym->entries[i];
        entries[i].function_id =
            e->function ? trace_writer_string(w, e->function, strlen(e->function)) : 0;
        entries[i].file_id = e->file ? trace_writer_string(w, e->file, strlen(e->file)) : 0;
        entries[i].line = e->line;
    }
    trace_symbol rec = {frame_id, sym->count, entries};
    if (trace_writer_symbol(w, &rec) != 0)
        return set_error(run->err, run->errlen, "writing %s: %s", run->out.tmp_path,
                         trace_writer_error(w));
    run->res.symbolized++;
    return 0;
}

/* Resolves the frames [first, end) of one module. */
static int symbolize_module(symbolize_run *run, size_t first, size_t end) {
    const native_frame *frames = run->scan.frames;
    const module_rec *m = find_module(&run->scan, frames[first].module_id);
    size_t n = end - first;
    if (!m || m->path[0] != '/') { /* no record, or no file: the vDSO */
        run->res.unresolved += n;
        return 0;
    }
    char why[512] = "";
    dw_module *dm = dw_module_open(m->path, m->base, m->build_id, m->build_id_len, why, sizeof why);
    if (!dm) {
        warnf(run->warn, run->warn_ctx, "%s: %zu frame%s stay unsymbolized", why, n,
              n == 1 ? "" : "s");
        run->res.unresolved += n;
        return 0;
    }
    int rc = 0;
    for (size_t i = first; i < end && rc == 0; i++) {
        dw_symbol sym;
        if (dw_module_symbolize(dm, frames[i].ip ? frames[i].ip - 1 : 0, &sym) != 0 ||
            sym.count == 0) {
            run->res.unresolved++;
            continue;
        }
        rc = emit_symbol(run, frames[i].frame_id, &sym);
    }
    dw_module_close(dm);
    return rc;
}

int trace_symbolize_file(const char *path, trace_symbolize_result *res,
                         trace_symbolize_warn_fn warn, void *warn_ctx, char *err, size_t errlen) {
    symbolize_run run = {.warn = warn, .warn_ctx = warn_ctx, .err = err, .errlen = errlen};
    run.out.path = path;
    run.out.sync_fd = -1;
    int rc = scan_trace(path, &run.scan, &run.res.native_frames, err, errlen);
    if (rc == 0) {
        run.res.events = run.scan.events;
        run.res.clean_end = run.scan.clean_end;
        run.res.already_symbolized = run.res.native_frames - run.scan.frames_len;
        const native_frame *f = run.scan.frames;
        for (size_t i = 0; i < run.scan.frames_len && rc == 0;) {
            size_t j = i + 1;
            while (j < run.scan.frames_len && f[j].module_id == f[i].module_id)
                j++;
            rc = symbolize_module(&run, i, j);
            i = j;
        }
    }
    if (rc == 0 && run.out.writer) {
        if (run.scan.truncated)
            warnf(warn, warn_ctx,
                  "%s ended inside a zstd frame (the recording was killed): the incomplete "
                  "frame was dropped",
                  path);
        rc = output_commit(&run.out, err, errlen);
        run.res.rewritten = rc == 0;
    }
    if (rc != 0)
        run.res.symbolized = 0; /* nothing of this run reached the trace */
    output_discard(&run.out);
    struct stat st;
    if (stat(path, &st) == 0)
        run.res.file_bytes = (uint64_t)st.st_size;
    scan_free(&run.scan);
    if (res)
        *res = run.res;
    return rc;
}
