/* test_rec_cupti_lib.c FAKE_CUDA — which CUPTI the recorder loads
 * (rec_cupti_lib.c), with the stand-in libraries of fake_cuda.cmake and no
 * real CUPTI: each case runs in a forked child, since "already loaded" is
 * the process's state.
 *
 *   - a 12.4 driver takes libcupti.so.12 (no cuptiSubscribe_v2: the
 *     recorder will use cuptiSubscribe), a 13.0 driver libcupti.so.13
 *     (with cuptiSubscribe_v2), each with the version cuptiGetVersion says;
 *   - a CUPTI already in the process wins over the driver's match (PyTorch's
 *     libcupti.so.12 under a 13.0 driver);
 *   - a candidate that is no library, or no CUPTI, is skipped for the next
 *     (the toolkit's), and said so;
 *   - MEMREC_CUPTI's choice is the only one tried; a minimal CUPTI (no
 *     cuptiGetVersion) is taken with version unknown;
 *   - nothing anywhere: -1 and one line naming what was tried;
 *   - the version numbers map to CUDA majors (24 -> 12, 130001 -> 13). */
#include "check.h"
#include "gmt_env.h"
#include "rec_cupti_lib.h"

#include <dlfcn.h>
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *fake; /* FAKE_CUDA: the folder of the stand-ins */

static void path_of(char *out, size_t len, const char *file) {
    snprintf(out, len, "%s/%s", fake, file);
}

/* Runs `body` in a child; its failed checks fail the test. */
static void in_child(const char *what, void (*body)(void)) {
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        body();
        _exit(check_failures ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "case failed: %s\n", what);
        check_failures++;
    }
}

static const char *const no_toolkit[] = {NULL};

static int load(int driver, const char *major_dir, const char *forced, const char *const *toolkit,
                rec_cupti_lib *lib, char *why, size_t whylen) {
    rec_cupti_search s = {.forced = forced,
                          .driver_version = driver,
                          .major_dir = major_dir,
                          .toolkit = toolkit ? toolkit : no_toolkit};
    return rec_cupti_lib_load(&s, lib, why, whylen);
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* A driver of version `driver` takes FILE from the stand-ins' folder. */
static void check_driver_match(int driver, const char *file, int has_v2, uint32_t version,
                               rec_cupti_lib *lib) {
    char dir[PATH_MAX], why[2048];
    path_of(dir, sizeof dir, "cupti");
    CHECK(load(driver, dir, NULL, NULL, lib, why, sizeof why) == 0);
    CHECK(ends_with(lib->path, file));
    CHECK(lib->subscribe && lib->enable_callback && lib->unsubscribe);
    CHECK(!lib->subscribe_v2 == !has_v2);
    CHECK_EQ_U64(lib->version, version);
    CHECK(!lib->in_process);
}

static void driver_12_takes_12(void) {
    rec_cupti_lib lib;
    check_driver_match(12040, "/cupti/libcupti.so.12", 0, 24, &lib);
    char line[8192];
    rec_cupti_lib_describe(&lib, 12040, line, sizeof line);
    CHECK(strstr(line, "(API version 24, matches the driver, cuptiSubscribe), CUDA driver 12.4"));
}

static void driver_13_takes_13(void) {
    rec_cupti_lib lib;
    check_driver_match(13000, "/cupti/libcupti.so.13", 1, 130001, &lib);
}

static void loaded_one_wins(void) {
    char dir[PATH_MAX], twelve[PATH_MAX], why[2048];
    path_of(dir, sizeof dir, "cupti");
    path_of(twelve, sizeof twelve, "cupti/libcupti.so.12");
    CHECK(dlopen(twelve, RTLD_NOW | RTLD_GLOBAL) != NULL); /* as PyTorch does */
    rec_cupti_lib lib;
    CHECK(load(13000, dir, NULL, NULL, &lib, why, sizeof why) == 0);
    CHECK(ends_with(lib.path, "/cupti/libcupti.so.12") && lib.in_process);
    CHECK(lib.found && strcmp(lib.found, "already loaded") == 0);
    CHECK(dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD) == NULL); /* no second CUPTI */
}

static void garbage_then_toolkit(void) {
    char garbage[PATH_MAX], none[PATH_MAX], thirteen[PATH_MAX], why[2048];
    path_of(garbage, sizeof garbage, "cupti-garbage");
    path_of(none, sizeof none, "cupti-none/libcupti.so.12");
    path_of(thirteen, sizeof thirteen, "cupti/libcupti.so.13");
    const char *const toolkit[] = {none, thirteen, NULL};
    rec_cupti_lib lib;
    CHECK(load(12040, garbage, NULL, toolkit, &lib, why, sizeof why) == 0);
    CHECK(ends_with(lib.path, "/cupti/libcupti.so.13"));
    CHECK(lib.found && strcmp(lib.found, "toolkit") == 0);
    CHECK(strstr(why, "cupti-garbage/libcupti.so.12: ") != NULL); /* said, not fatal */
    CHECK(strstr(why, "not a CUPTI (no cuptiSubscribe)") != NULL);
    CHECK(dlopen(none, RTLD_NOW | RTLD_NOLOAD) == NULL); /* the non-CUPTI was closed again */
}

static void forced_only(void) {
    char minimal[PATH_MAX], dir[PATH_MAX], why[2048];
    path_of(minimal, sizeof minimal, "cupti-min/libcupti.so.12");
    path_of(dir, sizeof dir, "cupti");
    rec_cupti_lib lib;
    CHECK(load(13000, dir, minimal, NULL, &lib, why, sizeof why) == 0);
    CHECK(ends_with(lib.path, "/cupti-min/libcupti.so.12"));
    CHECK(lib.version == 0 && !lib.get_result_string && !lib.subscribe_v2);
    CHECK(lib.found && strcmp(lib.found, GMT_ENV_MEMREC_CUPTI) == 0);
    /* A forced file that is missing: no other candidate is tried. */
    CHECK(load(13000, dir, "/nonexistent/libcupti.so", NULL, &lib, why, sizeof why) == -1);
    CHECK(strstr(why, "/nonexistent/libcupti.so: ") != NULL);
    CHECK(dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD) == NULL);
}

static void nothing_anywhere(void) {
    char empty[PATH_MAX], why[2048];
    path_of(empty, sizeof empty, "driver13"); /* no libcupti there */
    const char *const toolkit[] = {"/nonexistent/libcupti.so", NULL};
    rec_cupti_lib lib;
    CHECK(load(13000, empty, NULL, toolkit, &lib, why, sizeof why) == -1);
    CHECK(strstr(why, "driver13/libcupti.so.13: ") && strstr(why, "/nonexistent/libcupti.so: "));
    CHECK(!strchr(why, '\n'));
    CHECK(load(0, NULL, NULL, NULL, &lib, why, sizeof why) == -1); /* no driver version */
    CHECK_STR_EQ(why, "no CUPTI library found");
}

int main(int argc, char **argv) {
    if (argc < 2)
        CHECK_SKIP("usage: test_rec_cupti_lib FAKE_CUDA");
    fake = argv[1];
    char probe[PATH_MAX];
    path_of(probe, sizeof probe, "cupti/libcupti.so.12");
    if (access(probe, R_OK) != 0)
        CHECK_SKIP("the stand-in CUPTI libraries are not built (%s)", probe);
    in_child("a 12.4 driver takes libcupti.so.12", driver_12_takes_12);
    in_child("a 13.0 driver takes libcupti.so.13", driver_13_takes_13);
    in_child("a CUPTI already loaded wins", loaded_one_wins);
    in_child("no library, no CUPTI: the toolkit's", garbage_then_toolkit);
    in_child("the forced CUPTI only", forced_only);
    in_child("nothing anywhere", nothing_anywhere);
    CHECK_EQ_U64(rec_cupti_version_major(19), 12);
    CHECK_EQ_U64(rec_cupti_version_major(28), 12);
    CHECK_EQ_U64(rec_cupti_version_major(18), 11);
    CHECK_EQ_U64(rec_cupti_version_major(130001), 13);
    CHECK_EQ_U64(rec_cupti_version_major(0), 0);
    return check_finish("test_rec_cupti_lib");
}
