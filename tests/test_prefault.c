/* test_prefault.c — the helper faults pages in ahead of the owner, never further than its
 * lead, all of them once the owner has filled the region, and stops when asked. Resident
 * pages are read with mincore(); waits poll for up to 30 s, so a loaded machine only makes the
 * test slower. */
#include "check.h"
#include "prefault.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static size_t page;

/* Pages of [p, p + len) resident. */
static size_t resident(char *p, size_t len) {
    size_t n = len / page, count = 0;
    unsigned char vec[4096];
    for (size_t i = 0; i < n; i += sizeof vec) {
        size_t k = n - i < sizeof vec ? n - i : sizeof vec;
        if (mincore(p + i * page, k * page, vec) != 0)
            return 0;
        for (size_t j = 0; j < k; j++)
            count += vec[j] & 1;
    }
    return count;
}

/* Waits until at least `want` pages of the region are resident; 0 when they never were. */
static int wait_resident(char *p, size_t len, size_t want) {
    for (int i = 0; i < 3000; i++) {
        if (resident(p, len) >= want)
            return 1;
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    return 0;
}

int main(void) {
    page = (size_t)sysconf(_SC_PAGESIZE);
    CHECK(prefault_start(NULL, 64 * MIB, 8 * MIB) == NULL);
    prefault_stop(NULL); /* a no-op */
    size_t len = 48 * MIB;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    if (p == MAP_FAILED)
        return check_finish("test_prefault");
#ifdef MADV_NOHUGEPAGE
    madvise(p, len, MADV_NOHUGEPAGE); /* pages of the size mincore counts */
#endif
    CHECK(prefault_start(p, MIB, MIB) == NULL); /* too small to be worth a thread */
    CHECK(resident(p, len) == 0);

    prefault *pf = prefault_start(p, len, 8 * MIB);
    if (!pf) { /* a kernel without MADV_POPULATE_WRITE, or no thread: nothing else to see */
        munmap(p, len);
        CHECK_SKIP("no prefault here (MADV_POPULATE_WRITE unknown, or no thread)");
    }
    /* the lead: 8 MiB made ready, and nothing past it while the owner has filled nothing */
    CHECK(wait_resident(p, len, 8 * MIB / page));
    struct timespec nap = {0, 100 * 1000 * 1000};
    nanosleep(&nap, NULL);
    CHECK(resident(p, len) == 8 * MIB / page);
    CHECK(resident(p + 8 * MIB, len - 8 * MIB) == 0);
    /* the owner moves on: the lead follows */
    memset(p, 1, 16 * MIB);
    prefault_progress(pf, 16 * MIB);
    CHECK(wait_resident(p, len, 24 * MIB / page));
    nanosleep(&nap, NULL);
    CHECK(resident(p + 24 * MIB, len - 24 * MIB) == 0);
    /* all of it, then the helper ends on its own; stop joins it */
    prefault_progress(pf, len);
    CHECK(wait_resident(p, len, len / page));
    prefault_stop(pf);
    CHECK(p[0] == 1 && p[16 * MIB - 1] == 1 && p[16 * MIB] == 0); /* it wrote nothing */
    /* marks that are not whole pages: the helper goes on (it once stopped at the first one) */
    munmap(p, len);
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    if (p == MAP_FAILED)
        return check_finish("test_prefault");
#ifdef MADV_NOHUGEPAGE
    madvise(p, len, MADV_NOHUGEPAGE);
#endif
    pf = prefault_start(p, len, 2 * MIB);
    CHECK(pf != NULL);
    prefault_progress(pf, 1000);
    CHECK(wait_resident(p, len, 2 * MIB / page - 1));
    nanosleep(&nap, NULL);
    prefault_progress(pf, 16 * MIB + 1000);
    CHECK(wait_resident(p, len, 18 * MIB / page));
    prefault_stop(pf);
    /* stopped early, with the region still mapped: no trouble */
    pf = prefault_start(p, len, 8 * MIB);
    prefault_stop(pf);
    munmap(p, len);
    return check_finish("test_prefault");
}
