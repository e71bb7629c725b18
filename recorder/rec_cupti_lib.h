/* rec_cupti_lib.h — CUPTI, found and loaded at run time.
 *
 * libmemrec.so does not link CUPTI: a CUPTI newer than the driver fails
 * (CUPTI 13 needs R580; much of the fleet runs R535-R570), and a PyTorch
 * cu12x wheel already brings its own libcupti.so.12, a second CUPTI in one
 * process being the one thing that must not happen. So the CUPTI calls go
 * through a table of function pointers, like the driver calls
 * (rec_cupti_driver.h), and the library is chosen when CUDA starts:
 *
 *   1. MEMREC_CUPTI, when set: that file and nothing else;
 *   2. a CUPTI already in the process (any object named libcupti.so*,
 *      found with dl_iterate_phdr: PyTorch's, the program's own);
 *   3. libcupti.so.<major of cuDriverGetVersion> from the loader's search
 *      path (LD_LIBRARY_PATH, the ld.so cache);
 *   4. the toolkit's: the CUPTI libmemrec.so was built against (its path
 *      at build time), then libcupti.so from the search path and from
 *      /usr/local/cuda.
 * A candidate that does not load or lacks cuptiSubscribe or
 * cuptiEnableCallback is skipped for the next one. cuptiSubscribe_v2
 * (CUPTI 13: it names the other subscriber) is used when the library has
 * it, else cuptiSubscribe. Only the CUDA 12.0 API surface is used; the
 * cuptiSubscribe_v2 parameters are declared here, so this builds against
 * CUDA 12 headers too. A library loaded here is never dlclosed once chosen
 * (the driver keeps calling into it). */
#ifndef GMT_REC_CUPTI_LIB_H
#define GMT_REC_CUPTI_LIB_H

#include <cupti.h>

#include <stddef.h>
#include <stdint.h>

/* cuptiSubscribe_v2's parameters (CUpti_SubscriberParams of CUPTI 13). */
typedef struct rec_cupti_subscriber_params {
    size_t struct_size; /* sizeof up to and including old_name_size */
    const char *name;   /* ours ("memrec") */
    char *old_name;     /* filled with the other subscriber's name on failure */
    size_t old_name_size;
} rec_cupti_subscriber_params;
#define REC_CUPTI_OLD_NAME_MIN 64 /* CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN */

typedef struct rec_cupti_lib {
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                rec_cupti_subscriber_params *); /* NULL before CUPTI 13 */
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                   CUpti_CallbackId);
    CUptiResult (*get_result_string)(CUptiResult, const char **); /* may be NULL */
    void *handle;
    char path[4096];   /* the file it was loaded from */
    uint32_t version;  /* cuptiGetVersion (24: CUDA 12.6, 130001: 13.0 U1); 0: unknown */
    int in_process;    /* 1: found already loaded (step 2) */
    const char *found; /* how: MEMREC_CUPTI, "already loaded", "matches the driver", "toolkit" */
} rec_cupti_lib;

/* Where to look. rec_cupti_search_default fills it for this process. */
typedef struct rec_cupti_search {
    const char *forced;         /* step 1: a path, or NULL */
    int driver_version;         /* cuDriverGetVersion (12040); 0: unknown, no step 3 */
    const char *major_dir;      /* tests: step 3 looks in this folder, not the search path */
    const char *const *toolkit; /* step 4, NULL-terminated */
} rec_cupti_search;

void rec_cupti_search_default(rec_cupti_search *s, int driver_version);

/* Loads the first usable CUPTI. Returns 0 with *out filled, or -1 with why
 * filled (what was tried and why each failed, in one line). */
int rec_cupti_lib_load(const rec_cupti_search *s, rec_cupti_lib *out, char *why, size_t whylen);

/* "CUPTI PATH (version V), CUDA driver X.Y" into out: the launcher's line. */
void rec_cupti_lib_describe(const rec_cupti_lib *lib, int driver_version, char *out, size_t outlen);

/* The major version a CUPTI version number stands for (24 -> 12,
 * 130001 -> 13); 0 when unknown. */
int rec_cupti_version_major(uint32_t version);

#endif
