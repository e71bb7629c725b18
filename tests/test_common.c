/* test_common.c — common/'s small utilities with known answers: gmt_size (sizes with units),
 * gmt_rank (the rank from the launcher's environment), and GMT_NEVER/GMT_ALWAYS (an abort with
 * the condition where invariants are checked, the condition itself elsewhere). */
#include "check.h"
#include "gmt_assert.h"
#include "gmt_rank.h"
#include "gmt_size.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void check_size(const char *text, uint64_t want) {
    uint64_t got = 12345;
    int rc = gmt_parse_size(text, &got);
    if (rc != 0 || got != want)
        fprintf(stderr, "gmt_parse_size(\"%s\"): rc %d, %" PRIu64 ", want %" PRIu64 "\n", text, rc,
                got, want);
    CHECK(rc == 0 && got == want);
}

static void check_bad_size(const char *text) {
    uint64_t got = 12345;
    int rc = gmt_parse_size(text, &got);
    if (rc != -1 || got != 12345)
        fprintf(stderr, "gmt_parse_size(\"%s\") should fail: rc %d, %" PRIu64 "\n",
                text ? text : "(null)", rc, got);
    CHECK(rc == -1 && got == 12345);
}

static void test_size(void) {
    check_size("0", 0);
    check_size("1000000", 1000000);
    check_size("512", 512);
    check_size("64k", 64 << 10);
    check_size("64K", 64 << 10);
    check_size("512M", 512ull << 20);
    check_size("512m", 512ull << 20);
    check_size("2G", 2ull << 30);
    check_size("2g", 2ull << 30);
    check_size("3T", 3ull << 40);
    check_size("2GiB", 2ull << 30);
    check_size("2GB", 2ull << 30);
    check_size("2gb", 2ull << 30);
    check_size("100B", 100);
    check_size("1.5G", 1610612736);
    check_size("1.5GiB", 1610612736);
    check_size("0.5k", 512);
    check_size(".25k", 256);
    check_size("0.3k", 307); /* 307.2: truncated */
    check_size("5.k", 5 << 10);
    check_size("0x10", 16);
    check_size("0xff", 255);
    check_size("0x10k", 16 << 10);
    check_size("  7", 7);
    check_size("+7", 7);
    check_size("010", 10); /* decimal, not octal */
    check_size("18446744073709551615", UINT64_MAX);
    check_size("0xffffffffffffffff", UINT64_MAX);
    check_size("16777215T", 16777215ull << 40);
    check_size("1.000000000000000000001k", 1024); /* digits past the 18th are ignored */

    check_bad_size(NULL);
    check_bad_size("");
    check_bad_size(" ");
    check_bad_size("k");
    check_bad_size(".");
    check_bad_size("0x");
    check_bad_size("-1");
    check_bad_size(" -1");
    check_bad_size("2Q");
    check_bad_size("2G ");
    check_bad_size("2GiBx");
    check_bad_size("1.5"); /* a fraction needs a unit */
    check_bad_size("1e3"); /* no exponents */
    check_bad_size("nan");
    check_bad_size("inf");
    check_bad_size("2iB"); /* 'i' only after a unit */
    check_bad_size("18446744073709551616");
    check_bad_size("0x10000000000000000");
    check_bad_size("16777216T");
}

static void test_rank(void) {
    unsetenv("RANK");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("SLURM_PROCID");
    CHECK(gmt_rank_text() == NULL);
    CHECK(gmt_rank() == -1);
    setenv("SLURM_PROCID", "5", 1);
    CHECK_STR_EQ(gmt_rank_text(), "5");
    CHECK(gmt_rank() == 5);
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    CHECK_STR_EQ(gmt_rank_text(), "3");
    CHECK(gmt_rank() == 3);
    setenv("RANK", "", 1); /* empty: the next one counts */
    CHECK_STR_EQ(gmt_rank_text(), "3");
    setenv("RANK", "12", 1);
    CHECK_STR_EQ(gmt_rank_text(), "12");
    CHECK(gmt_rank() == 12);
    setenv("RANK", "node7", 1); /* not a number: atoi's 0, the text as it is */
    CHECK_STR_EQ(gmt_rank_text(), "node7");
    CHECK(gmt_rank() == 0);
    unsetenv("RANK");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("SLURM_PROCID");
}

/* Runs GMT_NEVER(1) (never_holds) or GMT_ALWAYS(0) in a child, its stderr into a pipe: the
 * child's wait status and the first bytes it wrote. */
static int broken_in_child(int never_holds, char *said, size_t len) {
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        volatile int yes = 1;
        int r = never_holds ? GMT_NEVER(yes) : GMT_ALWAYS(!yes);
        _exit(r == never_holds ? 3 : 4); /* not checking: the condition came back */
    }
    close(fds[1]);
    ssize_t n = read(fds[0], said, len - 1);
    said[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    int status = 0;
    return pid > 0 && waitpid(pid, &status, 0) == pid ? status : -1;
}

static void test_invariants(void) {
    volatile int yes = 1, no = 0;
    CHECK(GMT_NEVER(no) == 0 && GMT_ALWAYS(yes) == 1);
    CHECK(GMT_NEVER(no + 0) == 0 && GMT_ALWAYS(yes + 1) == 1); /* 0 or 1, whatever X is */
    char said[256];
    for (int never = 0; never <= 1; never++) {
        int status = broken_in_child(never, said, sizeof said);
#ifdef GMT_INVARIANTS_ABORT
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
        CHECK(strstr(said, "test_common.c:") && strstr(said, "invariant broken:"));
        CHECK(strstr(said, never ? "never yes" : "always !yes"));
#else
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
        CHECK(said[0] == '\0');
#endif
    }
}

int main(void) {
    test_size();
    test_rank();
    test_invariants();
    return check_finish("test_common");
}
