/* rec_modules.c — module map from dl_iterate_phdr (see rec_modules.h).
 *
 * A module is identified by (load bias, path): the same library loaded,
 * unloaded and loaded again at another address is a new module. Lookups
 * are a binary search over ranges sorted by start, rebuilt on each rescan
 * (rescans are rare: only when the loader's add counter moved). */
#include "rec_modules.h"

#include "gmt_grow.h"

#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct module_range {
    uint64_t start, end; /* absolute addresses of the PT_LOAD extent */
    uint32_t id;
} module_range;

struct rec_modules {
    module_range *ranges;
    size_t count, cap;
    uint32_t next_id;
    unsigned long long seen_adds; /* dlpi_adds at the last scan */
    trace_writer *w;
    int failed;
};

rec_modules *rec_modules_new(void) { return calloc(1, sizeof(rec_modules)); }

void rec_modules_free(rec_modules *m) {
    if (!m)
        return;
    free(m->ranges);
    free(m);
}

static size_t build_id_of(const struct dl_phdr_info *info, const unsigned char **out) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        const unsigned char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            size_t name_len = (nh->n_namesz + 3) & ~3u, desc_len = (nh->n_descsz + 3) & ~3u;
            const unsigned char *name = p + sizeof *nh, *desc = name + name_len;
            if (desc + desc_len > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
                *out = desc;
                return nh->n_descsz;
            }
            p = desc + desc_len;
        }
    }
    return 0;
}

static int known(const rec_modules *m, uint64_t start) {
    for (size_t i = 0; i < m->count; i++)
        if (m->ranges[i].start == start)
            return 1;
    return 0;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    rec_modules *m = arg;
    m->seen_adds = info->dlpi_adds;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (ph->p_vaddr < lo)
            lo = ph->p_vaddr;
        if (ph->p_vaddr + ph->p_memsz > hi)
            hi = ph->p_vaddr + ph->p_memsz;
    }
    if (hi == 0 || m->failed)
        return 0;
    uint64_t start = info->dlpi_addr + lo;
    if (known(m, start))
        return 0;
    char exe[4096];
    const char *path = info->dlpi_name;
    if (!path || !*path) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        path = exe;
    }
    if (gmt_grow((void **)&m->ranges, &m->cap, m->count, sizeof *m->ranges) != 0) {
        m->failed = 1;
        return 0;
    }
    const unsigned char *bid = NULL;
    size_t bid_len = build_id_of(info, &bid);
    trace_module rec = {.module_id = ++m->next_id,
                        .base = info->dlpi_addr,
                        .size = hi,
                        .path = {path, (uint32_t)strlen(path)},
                        .build_id = {(const char *)bid, (uint32_t)bid_len}};
    if (trace_writer_module(m->w, &rec) != 0) {
        m->failed = 1;
        return 0;
    }
    m->ranges[m->count++] = (module_range){start, info->dlpi_addr + hi, rec.module_id};
    return 0;
}

static int by_start(const void *a, const void *b) {
    const module_range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

int rec_modules_refresh(rec_modules *m, trace_writer *w) {
    m->w = w;
    dl_iterate_phdr(visit, m);
    qsort(m->ranges, m->count, sizeof *m->ranges, by_start);
    return m->failed ? -1 : 0;
}

static uint32_t lookup(const rec_modules *m, uint64_t ip) {
    size_t lo = 0, hi = m->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->ranges[mid].start <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* A later load may reuse an unloaded module's range: the latest id wins
     * because ranges with equal starts were never added twice. */
    if (lo > 0 && ip < m->ranges[lo - 1].end)
        return m->ranges[lo - 1].id;
    return 0;
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds;
    return 1; /* the first object carries the counter */
}

uint32_t rec_modules_find(rec_modules *m, trace_writer *w, uint64_t ip) {
    uint32_t id = lookup(m, ip);
    if (id)
        return id;
    unsigned long long adds = 0;
    dl_iterate_phdr(count_adds, &adds);
    if (adds == m->seen_adds)
        return 0;
    rec_modules_refresh(m, w);
    return lookup(m, ip);
}
