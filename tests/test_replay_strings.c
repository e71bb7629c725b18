/* test_replay_strings.c — analyzer/replay/replay_strings.h: the trace's strings by id, recent
 * ones in memory and older ones in a file.
 *
 * With a window of 64 bytes nearly every string goes to the file, and with one page of the
 * index in memory every lookup away from the last page reads one back: every id must still
 * read back its text (the empty string, strings longer than the window, redefined ids),
 * undefined ids none (in a page that exists or not), and REPLAY_STRINGS_HELD old strings read
 * one after another must all hold. */
#include "check.h"

#include "replay_strings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDS 5000

static void text_of(uint32_t id, int version, char *buf, size_t cap) {
    size_t len = id % 7 == 0 ? 0 : id % 101 == 0 ? 300 : id % 13; /* some longer than the window */
    if (len >= cap)
        len = cap - 1;
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)('a' + (id * 7 + i + (size_t)version) % 26);
    buf[len] = 0;
    if (len > 4)
        snprintf(buf, 5, "%04u", id % 10000); /* its id in front: a mix-up shows */
    if (len > 4)
        buf[4] = version ? 'V' : '-';
}

int main(void) {
    static const size_t pages[] = {1, 2, 0};
    for (size_t window = 64; window <= (1u << 20); window *= 16384)
        for (size_t k = 0; k < sizeof pages / sizeof pages[0]; k++) {
            replay_strings *s = replay_strings_new(window, pages[k]);
            CHECK(s != NULL);
            char want[400];
            for (uint32_t id = 1; id <= IDS; id++) {
                text_of(id, 0, want, sizeof want);
                CHECK(replay_strings_put(s, id * 2, want) == 0); /* even ids only */
            }
            for (uint32_t id = 1; id <= IDS; id += 3) { /* redefined: the new text wins */
                text_of(id, 1, want, sizeof want);
                CHECK(replay_strings_put(s, id * 2, want) == 0);
            }
            int bad = 0;
            for (uint32_t id = 1; id <= IDS; id++) {
                text_of(id, id % 3 == 1, want, sizeof want);
                const char *got = replay_strings_get(s, id * 2);
                bad += !got || strcmp(got, want) != 0;
                bad += replay_strings_get(s, id * 2 + 1) != NULL; /* never defined */
            }
            CHECK(bad == 0);
            CHECK(replay_strings_get(s, 0) == NULL);
            CHECK(replay_strings_get(s, 4 * IDS) == NULL);
            CHECK(replay_strings_get(s, UINT32_MAX) == NULL); /* far past every page */
            /* ids far apart: pages made between, and the old ones read back after */
            CHECK(replay_strings_put(s, 3000000, "far") == 0);
            CHECK(replay_strings_put(s, 3000001, "farther") == 0);
            text_of(17, 0, want, sizeof want);
            const char *near = replay_strings_get(s, 34);
            CHECK(near && strcmp(near, want) == 0);
            const char *far = replay_strings_get(s, 3000001);
            CHECK(far && strcmp(far, "farther") == 0);
            CHECK(replay_strings_get(s, 3000002) == NULL);
            /* the last id there is, and its neighbour: a page of their own, found by number */
            CHECK(replay_strings_put(s, UINT32_MAX, "top") == 0);
            const char *top = replay_strings_get(s, UINT32_MAX);
            CHECK(top && strcmp(top, "top") == 0);
            CHECK(replay_strings_get(s, UINT32_MAX - 1) == NULL);
            CHECK(replay_strings_get(s, UINT32_MAX - 5000) == NULL);
            /* the last REPLAY_STRINGS_HELD lookups hold together */
            _Static_assert(REPLAY_STRINGS_HELD == 8, "eight ids below");
            const uint32_t ids[REPLAY_STRINGS_HELD] = {11, 202, 505, 1, 4001, 37, 202, 2999};
            const char *held[REPLAY_STRINGS_HELD];
            for (int i = 0; i < REPLAY_STRINGS_HELD; i++)
                held[i] = replay_strings_get(s, ids[i] * 2);
            for (int i = 0; i < REPLAY_STRINGS_HELD; i++) {
                text_of(ids[i], ids[i] % 3 == 1, want, sizeof want);
                CHECK(held[i] && strcmp(held[i], want) == 0);
            }
            /* one served again from the ring holds as long as one just read: 7 more reads of
             * other old ids leave it (a ring taken in turn gave its buffer to the next) */
            const char *again_held = replay_strings_get(s, ids[0] * 2);
            for (uint32_t id = 100; id < 100 + REPLAY_STRINGS_HELD - 1; id++)
                (void)replay_strings_get(s, id * 2);
            text_of(ids[0], ids[0] % 3 == 1, want, sizeof want);
            CHECK(again_held && strcmp(again_held, want) == 0);
            /* id 0 is an id like another, spilled or not */
            CHECK(replay_strings_put(s, 0, "zero-string") == 0);
            for (uint32_t id = 1; id <= 40; id++) /* past any window of 64 bytes */
                CHECK(replay_strings_put(s, 20000 + id, "a string to push id 0 out") == 0);
            const char *zero = replay_strings_get(s, 0);
            CHECK(zero && strcmp(zero, "zero-string") == 0);
            /* a held old string, its id redefined: the new text, not the held copy */
            CHECK(replay_strings_put(s, 22, "redefined") == 0);
            const char *again = replay_strings_get(s, 22);
            CHECK(again && strcmp(again, "redefined") == 0);
            CHECK(!replay_strings_failed(s));
            replay_strings_free(s);
        }
    return check_finish("test_replay_strings");
}
