/* test_rec_output.c — where the recorder writes a trace (issue 28), below the launcher that
 * test_memrec_output.sh drives: rec_expand_path puts only digits for %r and only a plain host
 * name for %h, and says what it replaced; processes racing for one trace name (an old file
 * there or none) each keep a whole trace of their own — the name is never handed to a file its
 * writer has not locked, so a trace is never replaced while it is written — and no temporary
 * file is left behind. */
#include "check.h"
#include "rec_core.h"
#include "rec_readback.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};

static void unset_ranks(void) {
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++)
        unsetenv(rank_vars[i]);
}

/* rec_expand_path(pattern) with `var` set to `value` (NULL: no rank at all). */
static int expand_with(const char *var, const char *value, const char *pattern, char *out,
                       size_t len, unsigned *replaced) {
    unset_ranks();
    if (var)
        setenv(var, value, 1);
    int rc = rec_expand_path(pattern, out, len, replaced);
    unset_ranks();
    return rc;
}

static void test_rank_digits_only(void) {
    char out[256];
    unsigned replaced = 99;
    CHECK(expand_with(NULL, NULL, "t.%r.zst", out, sizeof out, &replaced) == 0);
    CHECK_STR_EQ(out, "t.0.zst");
    CHECK(replaced == 0);
    CHECK(expand_with("RANK", "12", "t.%r.zst", out, sizeof out, &replaced) == 0);
    CHECK_STR_EQ(out, "t.12.zst");
    CHECK(replaced == 0);
    CHECK(expand_with("SLURM_PROCID", "007", "%r", out, sizeof out, &replaced) == 0);
    CHECK_STR_EQ(out, "007");
    static const char *const bad[] = {"../../x", "1/2",  "..",  ".",
                                      "abc",     "-1",   "+3",  "3 ",
                                      "1e3",     "0x10", "2\n", "9999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (size_t v = 0; v < sizeof rank_vars / sizeof rank_vars[0]; v++) {
            replaced = 0;
            CHECK(expand_with(rank_vars[v], bad[i], "out/%r.zst", out, sizeof out, &replaced) == 0);
            CHECK_STR_EQ(out, "out/" REC_PATH_NO_RANK ".zst");
            CHECK(replaced == REC_PATH_BAD_RANK);
        }
    }
    CHECK(rec_expand_path("%%r %%h %%p", out, sizeof out, &replaced) == 0); /* no value read */
    CHECK_STR_EQ(out, "%r %h %p");
    CHECK(replaced == 0);
    CHECK(rec_expand_path("0123456789%p", out, 12, NULL) == -1); /* does not fit */
}

static void test_host_plain_name(void) {
    char out[512], host[300] = "";
    unsigned replaced = 99;
    CHECK(rec_expand_path("%h", out, sizeof out, &replaced) == 0);
    CHECK(!strchr(out, '/') && out[0] && out[0] != '.');
    if (gethostname(host, sizeof host - 1) == 0 && strcmp(out, host) != 0) /* this host's */
        CHECK(replaced == REC_PATH_BAD_HOST && strcmp(out, REC_PATH_NO_HOST) == 0);
    else
        CHECK(replaced == 0);
}

/* Each of `n` children records one event at address 0x1000 * (its index + 1) into `path`,
 * all let go at once. With a manifest they share it, as the processes of one memrec run do,
 * and end as they please (the manifest keeps a trace that one of them has finished from being
 * taken for an earlier run's file); without one each holds its trace open until all have made
 * theirs, so nothing but the lock decides who has the name. */
static void race_for(const char path[2048], const char manifest[2048], int n, pid_t *pids) {
    int go[2], made[2], stop[2];
    CHECK(pipe(go) == 0 && pipe(made) == 0 && pipe(stop) == 0);
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            close(go[1]);
            close(stop[1]);
            close(made[0]);
            char byte = 0;
            ssize_t ignored = read(go[0], &byte, 1); /* EOF: go */
            rec_config c;
            rb_config(&c, "unused", 0);
            snprintf(c.path, sizeof c.path, "%s", path);
            snprintf(c.manifest, sizeof c.manifest, "%s", manifest);
            char err[300];
            if (rec_session_start(&c, err, sizeof err) != 0)
                _exit(3);
            trace_event ev = {.addr = 0x1000u * (uint64_t)(i + 1),
                              .size = 64,
                              .requested = 64,
                              .op = TRACE_OP_ALLOC,
                              .level = TRACE_LEVEL_SEGMENT,
                              .kind = TRACE_KIND_DEVICE,
                              .source = TRACE_SOURCE_CUPTI};
            rec_emit_event(&ev); /* the first record makes the file */
            ignored = write(made[1], &byte, 1);
            if (!manifest[0])
                ignored = read(stop[0], &byte, 1);
            (void)ignored;
            _exit(rec_session_stop() == 0 ? 0 : 4);
        }
    }
    close(go[0]);
    close(stop[0]);
    close(made[1]);
    close(go[1]);
    char byte;
    for (int i = 0; i < n; i++)
        CHECK(read(made[0], &byte, 1) == 1);
    close(made[0]);
    close(stop[1]);
    for (int i = 0; i < n; i++) {
        int status = 0;
        CHECK(pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}

/* Reads the events of `file` into seen[] (by index from the address); the file is removed. */
static void take_events(const char *file, int *seen, int n) {
    readback rb;
    if (rb_read(file, &rb) != 0) {
        CHECK(!"a trace is unreadable");
        return;
    }
    for (size_t e = 0; e < rb.n_events; e++) {
        uint64_t i = rb.events[e].addr / 0x1000u;
        CHECK(i >= 1 && i <= (uint64_t)n && rb.events[e].addr % 0x1000u == 0);
        if (i >= 1 && i <= (uint64_t)n)
            seen[i - 1]++;
    }
    rb_free(&rb);
    unlink(file);
}

static void test_racing_writers_keep_their_traces(void) {
    enum { N = 6, ROUNDS = 24 };
    char path[2048], moved[2100], manifest[2048];
    rb_path(path, sizeof path, "shared.zst");
    rb_path(manifest, sizeof manifest, "manifest");
    for (int round = 0; round < ROUNDS; round++) {
        if (round % 2) { /* an earlier run's file is there: replaced, not written into */
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            CHECK(fd >= 0 && write(fd, "old", 3) == 3);
            close(fd);
        }
        pid_t pids[N];
        race_for(path, round < ROUNDS / 2 ? manifest : "", N, pids);
        unlink(manifest);
        int seen[N] = {0};
        take_events(path, seen, N);
        for (int i = 0; i < N; i++) {
            snprintf(moved, sizeof moved, "%s.%d", path, (int)pids[i]);
            if (access(moved, F_OK) == 0)
                take_events(moved, seen, N);
        }
        for (int i = 0; i < N; i++)
            CHECK(seen[i] == 1); /* every child's trace, whole, once */
        DIR *d = opendir(rb_dir);
        struct dirent *de;
        int others = 0;
        while (d && (de = readdir(d)))
            others += de->d_name[0] != '.' || strncmp(de->d_name, ".memrec-", 8) == 0;
        if (d)
            closedir(d);
        CHECK(others == 0); /* no temporary file, no trace unaccounted for */
    }
}

int main(void) {
    rb_tmpdir("test_rec_output");
    test_rank_digits_only();
    test_host_plain_name();
    test_racing_writers_keep_their_traces();
    return rb_finish("test_rec_output");
}
