/* replay_strings.c — recent strings in memory, the older ones in a temporary file (see
 * replay_strings.h).
 *
 * The strings form one stream, each NUL-terminated, in the order they were defined; an id
 * keeps its text's offset in it. The stream's tail [window_start, window_start + window_len)
 * is in memory; when a string does not fit there, the window is appended to the file and
 * starts over empty. A lookup below the window reads the file from the offset until the NUL,
 * into the next buffer of a small ring. */
#include "replay_strings.h"

#include "gmt_grow.h"
#include "gmt_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_WINDOW (1u << 20)
#define FIRST_READ 256 /* bytes read back at first; doubled until the NUL is in */

struct replay_strings {
    uint64_t *at; /* 1 + the offset of id's text in the stream; 0: not defined */
    size_t cap;
    char *window; /* the stream from window_start on */
    size_t window_len, window_cap;
    uint64_t window_start;
    FILE *spill; /* the stream before window_start (a temporary file, gone with the process) */
    char *held[REPLAY_STRINGS_HELD];
    size_t held_cap[REPLAY_STRINGS_HELD];
    uint32_t held_id[REPLAY_STRINGS_HELD]; /* whose text each holds; 0: none */
    unsigned next_held;
    int failed; /* a read-back failed */
};

replay_strings *replay_strings_new(size_t window) {
    replay_strings *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->window_cap = window ? window : DEFAULT_WINDOW;
    if (!(s->window = malloc(s->window_cap))) {
        free(s);
        return NULL;
    }
    return s;
}

void replay_strings_free(replay_strings *s) {
    if (!s)
        return;
    free(s->at);
    free(s->window);
    for (unsigned i = 0; i < REPLAY_STRINGS_HELD; i++)
        free(s->held[i]);
    if (s->spill)
        fclose(s->spill);
    free(s);
}

/* The window goes to the file; it starts over empty, with room for at least `need` bytes. */
static int spill_window(replay_strings *s, size_t need) {
    if (s->window_len) {
        if (!s->spill && !(s->spill = tmpfile()))
            return -1;
        /* at the stream's own offset, whatever an earlier failed write left */
        if (gmt_pwrite_all(fileno(s->spill), s->window, s->window_len, s->window_start) != 0)
            return -1;
        s->window_start += s->window_len;
        s->window_len = 0;
    }
    if (need > s->window_cap) { /* a string longer than the window: a window of its own */
        char *w = realloc(s->window, need);
        if (!w)
            return -1;
        s->window = w;
        s->window_cap = need;
    }
    return 0;
}

int replay_strings_put(replay_strings *s, uint32_t id, const char *text) {
    size_t len = strlen(text) + 1;
    if (gmt_grow((void **)&s->at, &s->cap, id, sizeof *s->at) != 0)
        return -1;
    if (s->window_len + len > s->window_cap && spill_window(s, len) != 0)
        return -1;
    memcpy(s->window + s->window_len, text, len);
    for (unsigned i = 0; i < REPLAY_STRINGS_HELD; i++)
        if (s->held_id[i] == id) /* redefined: a held copy is stale */
            s->held_id[i] = 0;
    s->at[id] = 1 + s->window_start + s->window_len;
    s->window_len += len;
    return 0;
}

/* An old string: read from the file at `offset` until its NUL, into the ring's next buffer
 * (unless a buffer holds it from a recent lookup). */
static const char *read_back(replay_strings *s, uint32_t id, uint64_t offset) {
    for (unsigned i = 0; i < REPLAY_STRINGS_HELD; i++)
        if (s->held_id[i] == id)
            return s->held[i];
    unsigned slot = s->next_held++ % REPLAY_STRINGS_HELD;
    s->held_id[slot] = 0;
    size_t have = 0, want = FIRST_READ;
    for (;;) {
        if (have + want + 1 > s->held_cap[slot]) {
            char *b = realloc(s->held[slot], have + want + 1);
            if (!b)
                break;
            s->held[slot] = b;
            s->held_cap[slot] = have + want + 1;
        }
        ssize_t got = pread(fileno(s->spill), s->held[slot] + have, want, (off_t)(offset + have));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break; /* the file lost it */
        char *nul = memchr(s->held[slot] + have, '\0', (size_t)got);
        have += (size_t)got;
        if (nul) {
            s->held_id[slot] = id;
            return s->held[slot];
        }
        want *= 2;
    }
    s->failed = 1; /* no text rather than a wrong one; the replay stops on it */
    return "";
}

int replay_strings_failed(const replay_strings *s) { return s->failed; }

const char *replay_strings_get(replay_strings *s, uint32_t id) {
    if (id >= s->cap || !s->at[id])
        return NULL;
    uint64_t offset = s->at[id] - 1;
    if (offset >= s->window_start)
        return s->window + (offset - s->window_start);
    return s->spill ? read_back(s, id, offset) : NULL;
}
