/* test_common.c — common/'s small utilities with known answers: gmt_size (sizes with units) and
 * gmt_rank (the rank from the launcher's environment). */
#include "check.h"
#include "gmt_rank.h"
#include "gmt_size.h"

#include <stdlib.h>

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

int main(void) {
    test_size();
    test_rank();
    return check_finish("test_common");
}
