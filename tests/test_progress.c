/* test_progress.c — the import's progress line (analyzer/input/progress.h) with known answers:
 * the time left from the replay's own rate (not counting what was done before its first
 * report), nothing shown while too early to tell, durations as a person reads them, and the
 * line a terminal gets (redrawn in place, cleared at the end). */
#include "check.h"
#include "progress.h"

#include <stdio.h>
#include <string.h>

static void test_seconds_left(void) {
    /* 40 % of 1000 bytes done, 300 of them in the last 6 s: 600 bytes left at 50 B/s */
    CHECK(progress_seconds_left(400, 1000, 300, 6.0) == 12.0);
    /* too early: under 2 s, under 2 %, nothing measured, or done */
    CHECK(progress_seconds_left(400, 1000, 300, 1.5) < 0);
    CHECK(progress_seconds_left(10, 1000, 10, 5.0) < 0);
    CHECK(progress_seconds_left(400, 1000, 0, 5.0) < 0);
    CHECK(progress_seconds_left(1000, 1000, 900, 5.0) < 0);
    CHECK(progress_seconds_left(5, 0, 5, 5.0) < 0);
}

static void test_text(void) {
    char buf[128];
    progress_duration(buf, sizeof buf, 12.4);
    CHECK_STR_EQ(buf, "12 s");
    progress_duration(buf, sizeof buf, 185);
    CHECK_STR_EQ(buf, "3 min 05 s");
    progress_duration(buf, sizeof buf, 7620);
    CHECK_STR_EQ(buf, "2 h 07 min");
    progress_duration(buf, sizeof buf, -3);
    CHECK_STR_EQ(buf, "0 s");
    progress_format(buf, sizeof buf, "t.zst", 0.456, 12.0);
    CHECK_STR_EQ(buf, "replaying t.zst: 45 % (about 12 s left)");
    progress_format(buf, sizeof buf, "t.zst", 0.01, -1);
    CHECK_STR_EQ(buf, "replaying t.zst: 1 %");
    progress_format(buf, sizeof buf, "t.zst", 1.5, -1);
    CHECK_STR_EQ(buf, "replaying t.zst: 100 %");
}

static void test_line(void) {
    char out[1024] = "";
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    progress p;
    progress_start(&p, f, "t.zst");
    progress_phase(&p, "reading");
    p.last_shown = 1e300;           /* as if just drawn, however slow this machine is */
    progress_update(&p, 100, 1000); /* right after: no redraw yet */
    progress_phase(&p, "building the indexes of");
    progress_clear(&p);
    progress_clear(&p); /* twice: nothing more */
    fclose(f);
    CHECK_STR_EQ(out, "\rmemanalyze: reading t.zst\033[K"
                      "\rmemanalyze: building the indexes of t.zst\033[K"
                      "\r\033[K");
    /* no terminal: nothing at all */
    progress_start(&p, NULL, "t.zst");
    progress_phase(&p, "reading");
    progress_update(&p, 1, 2);
    progress_clear(&p);
    CHECK(!p.shown);
}

int main(void) {
    test_seconds_left();
    test_text();
    test_line();
    return check_finish("test_progress");
}
