/* rec_writer.c — the writer thread (see rec_writer.h).
 *
 * Shape: one thread sleeps on a semaphore with a timeout; each round it
 * snapshots the rings, merges their items by timestamp (a linear scan over
 * the rings with items: there are few threads that allocate GPU memory) and
 * writes them, then gives the bytes back. Everything that needs memory or a
 * hash lookup — strings, frames, stack translation, module lookups — happens
 * here, off the program's threads. After a write error or at the size cap
 * it warns once, halts the session and closes the file properly, so what was
 * recorded stays readable. */
#include "rec_writer.h"
#include "rec_buffer.h"
#include "rec_internal.h"
#include "rec_modules.h"
#include "rec_stack.h"
#include "rec_window.h"

#include "gmt_grow.h"
#include "gmt_rank.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* What a process that ends without closing its trace (a raw _exit(2), a
 * kill, a crash: nothing of the recorder runs then) loses is what the file
 * does not hold yet, so the writer ends a zstd frame at every round that
 * wrote (flush_ms, 200 ms by default) and once at the start, after the
 * process record: such a trace is readable, lacks only its last round, and
 * the launcher says it ended unclosed. A frame per round costs nothing
 * measurable in size at any rate that matters (bench/README.md). */

static struct {
    trace_writer *w;
    rec_modules *modules;
    pthread_t thread;
    sem_t wake;
    _Atomic int stop_requested;
    _Atomic int running; /* read by producers (rec_writer_wake) without a lock */
    int halted;
    unsigned flush_ms;
    uint64_t max_bytes;
    char path[4096];
    uint32_t *stack_map; /* recorder node id -> trace stack id */
    size_t stack_map_len;
    uint8_t devices_written[256];
    rec_window *window; /* NULL: no --start-step, or open and gone */
    int fd;             /* the trace file (owned by `w`); -1 when none */
    rec_buffer_view *views;
    size_t views_cap;
    _Atomic uint64_t events;
} wr;

static _Atomic int writer_held;

void rec_writer_hold_for_test(int hold) { atomic_store(&writer_held, hold); }

static void halt_with(const char *why) {
    if (wr.halted)
        return;
    wr.halted = 1;
    rec_warn_once(NULL,
                  "%s; recording stopped, the program goes on (the trace keeps what was "
                  "recorded until now: %s)",
                  why, wr.path);
    rec_session_halt();
}

static int check_writer(void) {
    if (wr.halted)
        return -1;
    const char *e = trace_writer_error(wr.w);
    if (e && *e) {
        char why[600];
        snprintf(why, sizeof why, "writing the trace failed: %s", e);
        halt_with(why);
        return -1;
    }
    if (wr.max_bytes && trace_writer_bytes_written(wr.w) >= wr.max_bytes) {
        char why[200];
        snprintf(why, sizeof why, "the trace reached its size cap (%llu bytes)",
                 (unsigned long long)wr.max_bytes);
        halt_with(why);
        return -1;
    }
    return 0;
}

/* A trie token -> trace frame id: a native ip with its module, or a
 * symbolic frame (Python, PyTorch) named by its owner's resolver. */
static uint32_t translate_frame(uint64_t token) {
    trace_frame f = {.kind = TRACE_FRAME_NATIVE};
    if (token & REC_FRAME_SYMBOLIC) {
        rec_symbolic_resolver resolve = rec_stack_symbolic_resolver(token);
        rec_symbolic_frame sf;
        if (!resolve || resolve(token & REC_FRAME_VALUE_MASK, &sf) != 0)
            sf = (rec_symbolic_frame){"<unknown frame>", "", 0, TRACE_FRAME_OTHER};
        f.kind = sf.kind;
        f.function_id = trace_writer_string(wr.w, sf.function, strlen(sf.function));
        f.file_id = trace_writer_string(wr.w, sf.file, strlen(sf.file));
        f.line = sf.line;
    } else {
        f.ip = token;
        f.module_id = rec_modules_find(wr.modules, wr.w, token);
    }
    return trace_writer_frame(wr.w, &f);
}

/* Recorder node -> trace stack id, writing FRAME/STACK records for the
 * nodes the trace has not seen. Iterative: a stack is at most
 * REC_STACK_MAX_DEPTH deep. */
static uint32_t translate_stack(uint32_t node) {
    if (node == 0)
        return 0;
    if (gmt_grow((void **)&wr.stack_map, &wr.stack_map_len, node, sizeof *wr.stack_map) != 0)
        return 0;
    if (wr.stack_map[node])
        return wr.stack_map[node];
    uint32_t chain[REC_STACK_MAX_DEPTH + 1];
    uint64_t ips[REC_STACK_MAX_DEPTH + 1];
    unsigned n = 0;
    uint32_t parent_trace = 0;
    for (uint32_t id = node; id; n++) {
        uint32_t parent;
        if (n > REC_STACK_MAX_DEPTH || rec_stack_node(id, &parent, &ips[n]) != 0)
            return 0;
        chain[n] = id;
        if (parent && parent < wr.stack_map_len && wr.stack_map[parent]) {
            parent_trace = wr.stack_map[parent];
            n++;
            break;
        }
        id = parent;
    }
    for (unsigned i = n; i-- > 0;) {
        uint32_t frame_id = translate_frame(ips[i]);
        if (!frame_id)
            return 0;
        parent_trace = trace_writer_stack(wr.w, parent_trace, frame_id);
        if (!parent_trace)
            return 0;
        wr.stack_map[chain[i]] = parent_trace;
    }
    return parent_trace;
}

static void write_seed_event(void *ctx, const trace_event *ev) {
    (void)ctx;
    trace_event seed = *ev;
    seed.stack_id = translate_stack(seed.stack_id);
    if (trace_writer_event(wr.w, &seed) == 0)
        atomic_fetch_add_explicit(&wr.events, 1, memory_order_relaxed);
}

/* The first marker of the window's step: what is live now becomes the
 * trace's seed, closed by a SEED_END marker. */
static void open_window(uint64_t ts_ns) {
    rec_window_seed(wr.window, write_seed_event, NULL);
    rec_window_free(wr.window);
    wr.window = NULL;
    trace_marker end = {.ts_ns = ts_ns, .kind = TRACE_MARK_SEED_END};
    trace_writer_marker(wr.w, &end);
}

static void write_item(const rec_item *it, uint32_t tid) {
    const void *payload = it + 1;
    switch (it->type) {
    case REC_ITEM_EVENT: {
        trace_event ev;
        memcpy(&ev, payload, sizeof ev);
        if (wr.window) { /* before --start-step: only what stays live counts */
            if (rec_window_absorb(wr.window, &ev) != 0)
                halt_with("out of memory keeping the state before the recording window");
            break;
        }
        ev.stack_id = translate_stack(ev.stack_id);
        if (trace_writer_event(wr.w, &ev) == 0)
            atomic_fetch_add_explicit(&wr.events, 1, memory_order_relaxed);
        break;
    }
    case REC_ITEM_MARKER: {
        const rec_marker_item *m = payload;
        const char *domain = (const char *)(m + 1), *name = domain + m->domain_len;
        if (wr.window) {
            /* a tensor's name ("parameter layers.step3.weight") is no step, whatever it says */
            int names_tensor = m->domain_len == sizeof TRACE_TENSOR_DOMAIN - 1 &&
                               !memcmp(domain, TRACE_TENSOR_DOMAIN, m->domain_len);
            if (names_tensor || !rec_window_opens(wr.window, m->kind, name, m->name_len, m->value))
                break; /* markers before the window are not part of the trace */
            open_window(it->ts_ns);
        }
        trace_marker rec = {.ts_ns = it->ts_ns,
                            .range_id = m->range_id,
                            .value = m->value,
                            .tid = m->tid ? m->tid : tid,
                            .kind = m->kind};
        rec.domain_id = m->domain_len ? trace_writer_string(wr.w, domain, m->domain_len) : 0;
        rec.name_id = m->name_len ? trace_writer_string(wr.w, name, m->name_len) : 0;
        trace_writer_marker(wr.w, &rec);
        break;
    }
    case REC_ITEM_COUNTER: {
        if (wr.window)
            break;
        trace_counter c;
        memcpy(&c, payload, sizeof c);
        trace_writer_counter(wr.w, &c);
        break;
    }
    case REC_ITEM_DEVICE: {
        const rec_device_item *d = payload;
        if (d->device < sizeof wr.devices_written && wr.devices_written[d->device])
            break;
        if (d->device < sizeof wr.devices_written)
            wr.devices_written[d->device] = 1;
        trace_device rec = {.device = d->device,
                            .total_bytes = d->total_bytes,
                            .name = {(const char *)(d + 1), d->name_len}};
        trace_writer_device(wr.w, &rec);
        break;
    }
    default:
        break;
    }
}

static void announce_thread(void *ctx, uint32_t tid, const char *name) {
    (void)ctx;
    trace_thread t = {.tid = tid, .name_id = trace_writer_string(wr.w, name, strlen(name))};
    trace_writer_thread(wr.w, &t);
}

/* One round: everything committed so far, merged by time — unless
 * `final`, only up to the late lane's watermark and to just before the
 * oldest call still open (rec_call_open). */
static void drain(int final) {
    if (wr.halted || atomic_load(&writer_held))
        return;
    size_t want = rec_buffers_count() + 8;
    if (want > wr.views_cap) {
        rec_buffer_view *v = realloc(wr.views, want * 2 * sizeof *v);
        if (!v)
            return;
        wr.views = v;
        wr.views_cap = want * 2;
    }
    /* The limit is read before the snapshot: a call closed (or a late drain
     * completed) after this point has its records in the snapshot already
     * (release on the producer's side, acquire here), so nothing newer can
     * overtake them. Records beyond it wait for the next round (all of them
     * at the final drain); an open call holds them at most
     * REC_LATE_MAX_HOLD_NS, like the late lane, so one free blocked in a hung
     * synchronisation cannot keep the whole trace off the disk. */
    uint64_t limit = final ? UINT64_MAX : rec_late_watermark();
    uint64_t open_call = final ? UINT64_MAX : rec_buffers_oldest_open_call();
    if (open_call <= limit) {
        uint64_t now = rec_clock_ns();
        uint64_t floor = now > REC_LATE_MAX_HOLD_NS ? now - REC_LATE_MAX_HOLD_NS : 0;
        limit = open_call - 1 > floor ? open_call - 1 : floor;
    }
    rec_buffers_new_threads(announce_thread, NULL);
    size_t n = rec_buffers_snapshot(wr.views, wr.views_cap);
    for (;;) {
        rec_buffer_view *best = NULL;
        for (size_t i = 0; i < n; i++) {
            rec_buffer_view *v = &wr.views[i];
            if (v->next && (!best || v->next->ts_ns < best->next->ts_ns))
                best = v;
        }
        if (!best || best->next->ts_ns > limit)
            break;
        write_item(best->next, best->tid);
        rec_buffer_view_advance(best);
    }
    rec_buffers_release(wr.views, n);
    check_writer();
}

static void *writer_main(void *arg) {
    (void)arg;
    while (!atomic_load(&wr.stop_requested) && !wr.halted) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)wr.flush_ms * 1000000ull;
        until.tv_sec += (time_t)(ns / 1000000000ull);
        until.tv_nsec = (long)(ns % 1000000000ull);
        while (sem_timedwait(&wr.wake, &until) != 0 && errno == EINTR) {
        }
        drain(0);
        if (!wr.halted) {
            trace_writer_flush(wr.w); /* nothing to do when the round wrote nothing */
            check_writer();
        }
    }
    return NULL;
}

static void read_cmdline(char *out, size_t cap) {
    out[0] = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0)
        return;
    while (n > 0 && out[n - 1] == 0)
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (out[i] == 0)
            out[i] = ' ';
    out[n] = 0;
}

/* PyTorch's caching-allocator configuration in this process's environment,
 * as a mark "PYTORCH_CUDA_ALLOC_CONF=..." in TRACE_ALLOCATOR_DOMAIN, so the
 * replay models the allocator the run really had (a snapshot carries its
 * allocator_settings; a live trace carries this, and what PyTorch reports
 * once it runs: rec_torch.c). Nothing when unset. */
static void write_allocator_conf(uint64_t ts_ns) {
    static const char *const names[] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (!v || !*v)
            continue;
        char text[600];
        int n = snprintf(text, sizeof text, "%s=%s", names[i], v);
        if (n <= 0 || (size_t)n >= sizeof text)
            return; /* longer than any configuration PyTorch accepts: not ours to cut */
        trace_marker m = {.ts_ns = ts_ns,
                          .kind = TRACE_MARK_MARK,
                          .domain_id = trace_writer_string(wr.w, TRACE_ALLOCATOR_DOMAIN,
                                                           strlen(TRACE_ALLOCATOR_DOMAIN)),
                          .name_id = trace_writer_string(wr.w, text, (size_t)n)};
        trace_writer_marker(wr.w, &m);
        return; /* the CUDA-specific name wins, as in PyTorch */
    }
}

static void write_process_record(void) {
    char host[256] = "", cmdline[4096];
    gethostname(host, sizeof host - 1);
    read_cmdline(cmdline, sizeof cmdline);
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    uint64_t mono = rec_clock_ns();
    trace_process p = {
        .pid = (uint32_t)getpid(),
        .ppid = (uint32_t)getppid(),
        .rank = gmt_rank(),
        .wall_anchor_ns = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec,
        .clock_anchor_ns = mono,
        .host = {host, (uint32_t)strlen(host)},
        .cmdline = {cmdline, (uint32_t)strlen(cmdline)},
        .clock_source = {"CLOCK_MONOTONIC", 15},
        .producer = {"memrec " GMT_VERSION, (uint32_t)strlen("memrec " GMT_VERSION)}};
    trace_writer_process(wr.w, &p);
    write_allocator_conf(mono);
}

void rec_manifest_append(const char *manifest, const char *path) {
    if (!manifest || !*manifest)
        return;
    int fd = open(manifest, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    char line[4200];
    int n = snprintf(line, sizeof line, "%s\n", path);
    if (n > 0 && (size_t)n < sizeof line) {
        ssize_t ignored = write(fd, line, (size_t)n);
        (void)ignored;
    }
    close(fd);
}

/* 1 when the launcher's manifest already lists `path`: a process of this run
 * wrote that trace and has ended (else it would hold the lock). */
static int listed_in_manifest(const char *manifest, const char *path) {
    if (!manifest || !*manifest)
        return 0;
    FILE *f = fopen(manifest, "re");
    if (!f)
        return 0;
    char line[4200];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        found = strcmp(line, path) == 0;
    }
    fclose(f);
    return found;
}

/* flock(LOCK_EX | LOCK_NB): 0 when held, or when the file system has no locks (Lustre without
 * flock: the trace goes on unlocked), -1 when another process holds it. */
static int lock_or_busy(int fd) {
    return flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK ? 0 : -1;
}

/* A new empty file in the folder of `path`, created with O_EXCL (so never through a link) and
 * locked; its name in `tmp`. Returns the fd, or -1 with errno. */
static int create_locked_temp(const char *path, char *tmp, size_t tmplen) {
    static _Atomic unsigned serial;
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    for (int tries = 0; tries < 16; tries++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned salt = (unsigned)ts.tv_nsec ^ (atomic_fetch_add(&serial, 1) * 2654435761u);
        if ((size_t)snprintf(tmp, tmplen, "%.*s.memrec-%d-%08x.tmp", dir_len, path, (int)getpid(),
                             salt) >= tmplen) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 && lock_or_busy(fd) == 0)
            return fd;
        if (fd >= 0) { /* somebody opened our new file and locked it first: not ours to use */
            unlink(tmp);
            close(fd);
        } else if (errno != EEXIST) {
            return -1;
        }
    }
    errno = EEXIST;
    return -1;
}

/* Makes `path` a new trace file, locked, and returns its fd; -1 with err, and *busy set when
 * another process writes that trace (or, per the manifest, wrote it in this run).
 *
 * The name never refers to a file that is not locked by its writer: the file is made under a
 * temporary name, locked, and only then given the name — by link(2) when the name is free
 * (which fails rather than replace what another process has just made), by rename(2) over an
 * old regular file once its own lock shows nobody writes it. So a trace is never written
 * through a symbolic link (the name is refused: following one would write wherever it points,
 * and O_NOFOLLOW alone would still truncate a file another name shares), and an earlier file at
 * the name is replaced as `cp`/`git` replace one, not written into: its other hard links, and a
 * reader holding it open (memanalyze watch), keep what it held. A device or a fifo (/dev/null)
 * is written in place. */
static int claim_trace(const char *path, const char *manifest, int *busy, char *err,
                       size_t errlen) {
    char tmp[4200];
    int e = 0; /* why the name could not be had */
    *busy = 0;
    for (int tries = 0; tries < 8; tries++) { /* the name changed under us: look again */
        struct stat st, held;
        if (lstat(path, &st) != 0) {
            e = errno;
            if (e != ENOENT)
                break;
            int fd = create_locked_temp(path, tmp, sizeof tmp);
            if (fd < 0) {
                e = errno;
                break;
            }
            if (link(tmp, path) == 0) {
                unlink(tmp);
                return fd;
            }
            e = errno;
            unlink(tmp);
            close(fd);
            if (e == EEXIST)
                continue;
            /* no hard links here (vfat, some FUSE): made in place, locked at once */
            fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
            if (fd >= 0 && lock_or_busy(fd) == 0)
                return fd;
            if (fd >= 0) { /* another process locked it between our open and our lock */
                close(fd);
                *busy = 1;
                return -1;
            }
            e = errno;
            if (e == EEXIST)
                continue;
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            snprintf(err, errlen,
                     "%s is a symbolic link: a trace is never written through one (remove it or "
                     "name another file with -o)",
                     path);
            return -1;
        }
        if (S_ISDIR(st.st_mode)) {
            e = EISDIR;
            break;
        }
        if (!S_ISREG(st.st_mode)) { /* /dev/null, /dev/full, a fifo: written where it is */
            int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0) {
                e = errno;
                if (e == ELOOP) /* made a link since */
                    continue;
                break;
            }
            if (fstat(fd, &held) != 0 || S_ISREG(held.st_mode) || S_ISDIR(held.st_mode)) {
                close(fd);
                continue;
            }
            if (lock_or_busy(fd) != 0 || listed_in_manifest(manifest, path)) {
                close(fd);
                *busy = 1;
                return -1;
            }
            return fd;
        }
        /* A regular file: replaced once nobody writes it. */
        int old = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (old < 0) {
            e = errno;
            if (e == ENOENT || e == ELOOP)
                continue;
            break;
        }
        if (lock_or_busy(old) != 0 || listed_in_manifest(manifest, path)) {
            close(old);
            *busy = 1;
            return -1;
        }
        /* Locked: is it still the file at the name? (Another process may have replaced it
         * and let it go between our open and our lock.) While we hold its lock nobody else
         * replaces it. */
        if (fstat(old, &held) != 0 || lstat(path, &st) != 0 || held.st_dev != st.st_dev ||
            held.st_ino != st.st_ino) {
            close(old);
            continue;
        }
        int fd = create_locked_temp(path, tmp, sizeof tmp);
        if (fd < 0) {
            e = errno;
            close(old);
            break;
        }
        if (rename(tmp, path) != 0) {
            e = errno;
            unlink(tmp);
            close(fd);
            close(old);
            snprintf(err, errlen, "cannot replace %s with a new trace: %s", path, strerror(e));
            return -1;
        }
        close(old); /* after the rename: until then its lock kept the name ours */
        return fd;
    }
    snprintf(err, errlen, "cannot create the trace %s: %s", path,
             e && e != EEXIST ? strerror(e) : "it kept changing while memrec looked");
    return -1;
}

/* Creates the trace file (claim_trace), locked for as long as this process writes it. When
 * another live process already writes the same path (`-o trace.zst` without %p and several
 * CUDA processes), or an earlier process of the same run wrote it (the manifest lists it),
 * this one writes PATH.PID instead, with a warning, rather than clobbering that trace.
 * The path written goes to `actual`. Returns the fd, or -1 with err. */
static int open_trace_file(const char *path, const char *manifest, char *actual, size_t actual_len,
                           char *err, size_t errlen) {
    static int warned_shared;
    snprintf(actual, actual_len, "%s", path);
    for (int attempt = 0; attempt < 2; attempt++) {
        int busy;
        err[0] = 0;
        int fd = claim_trace(actual, attempt ? NULL : manifest, &busy, err, errlen);
        if (fd >= 0) {
            if (attempt)
                rec_warn_once(&warned_shared,
                              "%s is another process's trace: this one (pid %d) writes %s "
                              "(use %%p in -o for one file per process)",
                              path, (int)getpid(), actual);
            return fd;
        }
        if (!busy)
            return -1;
        if ((size_t)snprintf(actual, actual_len, "%s.%d", path, (int)getpid()) >= actual_len)
            break;
    }
    snprintf(err, errlen, "cannot lock the trace %s: another process writes it", path);
    return -1;
}

int rec_writer_start(const rec_config *c, char *err, size_t errlen) {
    memset(&wr, 0, sizeof wr);
    snprintf(wr.path, sizeof wr.path, "%s", c->path);
    wr.flush_ms = c->flush_ms ? c->flush_ms : 200;
    wr.max_bytes = c->max_bytes;
    if (c->has_start_step && !(wr.window = rec_window_new(c->start_step))) {
        snprintf(err, errlen, "out of memory starting the trace writer");
        return -1;
    }
    int fd = open_trace_file(c->path, c->manifest, wr.path, sizeof wr.path, err, errlen);
    if (fd < 0)
        return -1;
    wr.fd = fd;
    wr.w = trace_writer_open_fd(fd, NULL, err, errlen);
    wr.modules = rec_modules_new();
    if (!wr.w || !wr.modules || sem_init(&wr.wake, 0, 0) != 0) {
        if (!wr.w)
            close(fd);
        else
            trace_writer_close(wr.w, NULL, NULL, 0);
        rec_modules_free(wr.modules);
        if (!*err)
            snprintf(err, errlen, "out of memory starting the trace writer");
        return -1;
    }
    write_process_record();
    rec_modules_refresh(wr.modules, wr.w);
    rec_manifest_append(c->manifest, wr.path);
    trace_writer_flush(wr.w); /* the file is a readable trace from the start */
    if (pthread_create(&wr.thread, NULL, writer_main, NULL) != 0) {
        snprintf(err, errlen, "cannot start the trace writer thread");
        trace_writer_close(wr.w, NULL, NULL, 0);
        rec_modules_free(wr.modules);
        return -1;
    }
    wr.running = 1;
    return 0;
}

void rec_writer_wake(void) {
    if (atomic_load_explicit(&wr.running, memory_order_acquire))
        sem_post(&wr.wake);
}

int rec_writer_stop(void) {
    if (!wr.running)
        return 0;
    atomic_store(&wr.stop_requested, 1);
    sem_post(&wr.wake);
    pthread_join(wr.thread, NULL);
    wr.running = 0;
    drain(1);
    if (wr.window && !wr.halted) {
        /* --start-step never matched: keep what is live now (as the seed) rather than an
         * empty trace, and say so */
        rec_warn_once(NULL, "--start-step: no step of that number or later was marked; the trace "
                            "holds only what was live at the end");
        open_window(rec_clock_ns());
    }
    trace_call_count calls[REC_COUNT_SLOTS]; /* what the sources saw and did not record */
    size_t n_calls = rec_counted_calls(calls, REC_COUNT_SLOTS);
    trace_end end = {.ts_ns = rec_clock_ns(),
                     .events = trace_writer_events(wr.w),
                     .dropped = rec_buffers_dropped(),
                     .flags = TRACE_END_CLEAN,
                     .n_calls = (uint32_t)n_calls,
                     .calls = calls};
    char err[512] = "";
    int rc = wr.halted ? -1 : 0;
    if (trace_writer_close(wr.w, &end, err, sizeof err) != 0) {
        if (!wr.halted)
            rec_warn_once(NULL, "closing the trace %s failed: %s", wr.path, err);
        rc = -1;
    }
    wr.w = NULL;
    wr.fd = -1; /* closed with the writer */
    rec_modules_free(wr.modules);
    rec_window_free(wr.window); /* after a write error: never opened */
    free(wr.stack_map);
    free(wr.views);
    /* No sem_destroy: a producer that saw `running` just before it was
     * cleared may still post (glibc's sem_destroy does nothing anyway). */
    wr.modules = NULL;
    wr.window = NULL;
    wr.stack_map = NULL;
    wr.views = NULL;
    return rc;
}

uint64_t rec_writer_events_written(void) { return atomic_load(&wr.events); }

void rec_writer_abandon_after_fork(void) {
    /* The thread does not exist in the child and the trace_writer belongs
     * to the parent's file: it is leaked, never written. Its descriptor is
     * closed, though: the child's copy would keep the parent's flock (and so
     * "still being written" for the launcher) for as long as it lives. */
    if (wr.running && wr.fd > 0)
        close(wr.fd);
    wr.fd = -1;
    wr.running = 0;
    wr.w = NULL;
}
