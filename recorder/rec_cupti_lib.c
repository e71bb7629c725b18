/* rec_cupti_lib.c — which CUPTI, and its entry points (rec_cupti_lib.h).
 *
 * Runs once, at attach (inside cuInit): a few dlopen calls, no thread of
 * its own. Every failure is a reason in one line, never a crash. */
#include "rec_cupti_lib.h"

#include "gmt_env.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#ifndef GMT_CUPTI_TOOLKIT_PATH
#define GMT_CUPTI_TOOLKIT_PATH "" /* the build system passes the CUPTI it found */
#endif

void rec_cupti_search_default(rec_cupti_search *s, int driver_version) {
    static const char *const toolkit[] = {GMT_CUPTI_TOOLKIT_PATH, "libcupti.so",
                                          "/usr/local/cuda/lib64/libcupti.so",
                                          "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", NULL};
    memset(s, 0, sizeof *s);
    s->driver_version = driver_version;
    s->toolkit = toolkit[0][0] ? toolkit : toolkit + 1;
}

int rec_cupti_version_major(uint32_t version) {
    if (version >= 10000)
        return (int)(version / 10000); /* 130001: 13.0 Update 1 */
    if (version >= 19)
        return 12; /* v19: 12.0 ... v28: 12.9 */
    if (version >= 13)
        return 11;
    return version >= 12 ? 10 : 0;
}

/* ---- the candidates ------------------------------------------------------ */

/* Appends "; " and a formatted part to why (cut when full). */
static void note(char *why, size_t whylen, const char *fmt, const char *a, const char *b) {
    size_t used = strlen(why);
    if (used + 3 >= whylen)
        return;
    snprintf(why + used, whylen - used, "%s", used ? "; " : "");
    used = strlen(why);
    snprintf(why + used, whylen - used, fmt, a, b);
}

#define RESOLVE(field, symbol)                                                                     \
    do {                                                                                           \
        void *sym_ = dlsym(handle, symbol);                                                        \
        memcpy(&out->field, &sym_, sizeof sym_); /* object -> function pointer (POSIX) */          \
    } while (0)

/* Takes `handle` (of `path`) when it is a CUPTI. Returns 0, or -1 with why
 * noted and our reference to the handle dropped. */
static int take(void *handle, const char *path, const char *found, int in_process,
                rec_cupti_lib *out, char *why, size_t whylen) {
    memset(out, 0, sizeof *out);
    RESOLVE(subscribe, "cuptiSubscribe");
    RESOLVE(subscribe_v2, "cuptiSubscribe_v2");
    RESOLVE(unsubscribe, "cuptiUnsubscribe");
    RESOLVE(enable_callback, "cuptiEnableCallback");
    RESOLVE(get_result_string, "cuptiGetResultString");
    CUptiResult (*get_version)(uint32_t *);
    void *sym = dlsym(handle, "cuptiGetVersion");
    memcpy(&get_version, &sym, sizeof sym);
    if (!out->subscribe || !out->enable_callback || !out->unsubscribe) {
        note(why, whylen, "%s: %s", path, "not a CUPTI (no cuptiSubscribe)");
        dlclose(handle); /* drops only our reference when it was loaded before */
        memset(out, 0, sizeof *out);
        return -1;
    }
    out->handle = handle;
    out->in_process = in_process;
    out->found = found;
    snprintf(out->path, sizeof out->path, "%s", path);
    Dl_info info; /* the file the loader really used (a name may be a link) */
    void *any;
    memcpy(&any, &out->subscribe, sizeof any);
    if (dladdr(any, &info) && info.dli_fname && info.dli_fname[0] == '/')
        snprintf(out->path, sizeof out->path, "%s", info.dli_fname);
    uint32_t version = 0;
    if (get_version && get_version(&version) == CUPTI_SUCCESS)
        out->version = version;
    return 0;
}

static int try_open(const char *path, const char *found, rec_cupti_lib *out, char *why,
                    size_t whylen) {
    dlerror();
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *e = dlerror();
        note(why, whylen, "%s: %s", path, e ? e : "cannot be loaded");
        return -1;
    }
    return take(handle, path, found, 0, out, why, whylen);
}

typedef struct loaded_scan {
    char path[4096];
} loaded_scan;

static int find_loaded(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    loaded_scan *scan = data;
    const char *name = info->dlpi_name;
    if (!name || !*name)
        return 0;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libcupti.so", 11) != 0)
        return 0;
    snprintf(scan->path, sizeof scan->path, "%s", name);
    return 1; /* the first one: the one the program's code binds to */
}

int rec_cupti_lib_load(const rec_cupti_search *s, rec_cupti_lib *out, char *why, size_t whylen) {
    why[0] = 0;
    memset(out, 0, sizeof *out);
    if (s->forced && *s->forced) {
        if (try_open(s->forced, GMT_ENV_MEMREC_CUPTI, out, why, whylen) == 0)
            return 0;
        return -1; /* asked for that one: nothing else */
    }
    loaded_scan scan = {""};
    if (dl_iterate_phdr(find_loaded, &scan) && scan.path[0]) {
        void *handle = dlopen(scan.path, RTLD_NOW | RTLD_NOLOAD);
        if (handle && take(handle, scan.path, "already loaded", 1, out, why, whylen) == 0)
            return 0;
        if (!handle)
            note(why, whylen, "%s: %s", scan.path, "loaded, but dlopen refuses it");
    }
    int major = s->driver_version / 1000;
    if (major >= 11) {
        char name[4200];
        snprintf(name, sizeof name, "%s%slibcupti.so.%d", s->major_dir ? s->major_dir : "",
                 s->major_dir ? "/" : "", major);
        if (try_open(name, "matches the driver", out, why, whylen) == 0)
            return 0;
    }
    for (const char *const *t = s->toolkit; t && *t; t++)
        if (**t && try_open(*t, "toolkit", out, why, whylen) == 0)
            return 0;
    if (!why[0])
        snprintf(why, whylen, "no CUPTI library found");
    return -1;
}

void rec_cupti_lib_describe(const rec_cupti_lib *lib, int driver_version, char *out,
                            size_t outlen) {
    char version[32] = "unknown", driver[32] = "unknown";
    if (lib->version)
        snprintf(version, sizeof version, "%u", lib->version);
    if (driver_version > 0)
        snprintf(driver, sizeof driver, "%d.%d", driver_version / 1000, driver_version % 1000 / 10);
    snprintf(out, outlen, "CUPTI %s (API version %s, %s, %s), CUDA driver %s", lib->path, version,
             lib->found ? lib->found : "loaded",
             lib->subscribe_v2 ? "cuptiSubscribe_v2" : "cuptiSubscribe", driver);
}
