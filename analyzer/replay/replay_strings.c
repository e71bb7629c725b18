/* replay_strings.c — recent strings in memory, the older ones in a temporary file (see
 * replay_strings.h).
 *
 * The strings form one stream, each NUL-terminated, in the order they were defined; an id
 * keeps its text's offset in it. The stream's tail [window_start, window_start + window_len)
 * is in memory; when a string does not fit there, the window is appended to the file and
 * starts over empty. A lookup below the window reads the file from the offset until the NUL,
 * into the next buffer of a small ring.
 *
 * The offsets themselves are an index of pages of INDEX_PAGE_IDS ids: a few pages stay in
 * memory (those used last), the others go to a second temporary file and come back when an id
 * of theirs is used again. Ids come in order and lookups are of recent ids, so a page is
 * rarely read back; without the paging the index grew by 8 bytes a string (a step's name),
 * the last thing in the replay that grew with the trace.
 *
 * The pages are kept in the order they were made, found by page number through a hash (and
 * the page used last, where nearly every lookup falls): ids are whatever 32-bit numbers the
 * trace names, so a table of pages by number would grow with the largest id (24 MiB for a
 * single string of id 2^32 - 1) rather than with the strings defined. */
#include "replay_strings.h"

#include "addr_map.h"
#include "gmt_assert.h"
#include "gmt_grow.h"
#include "gmt_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_WINDOW (1u << 20)
#define FIRST_READ 256          /* bytes read back at first; doubled until the NUL is in */
#define INDEX_PAGE_IDS 4096u    /* ids in a page of the index: 32 KiB of offsets */
#define DEFAULT_INDEX_PAGES 32u /* pages in memory: 1 MiB, 131072 ids */

typedef struct index_page {
    uint64_t *at;      /* in memory: 1 + the offset of each id's text; 0: not defined. NULL: not */
    uint64_t last_use; /* when it was last used (the index's clock) */
    int in_file;       /* a copy is in the index file, at the place of its index in `pages` */
    int dirty;         /* changed since that copy */
} index_page;

struct replay_strings {
    index_page *pages; /* in the order they were made */
    size_t npages, pages_cap;
    addr_map page_index;           /* page number (id / INDEX_PAGE_IDS) -> index in `pages` */
    uint32_t last_number, last_at; /* the page found last: its number, 1 + its index; 0: none */
    uint32_t *resident; /* the pages in memory (indexes in `pages`), at most max_resident */
    size_t nresident, max_resident;
    uint64_t clock;
    FILE *index_file; /* the pages out of memory (a temporary file, gone with the process) */
    char *window;     /* the stream from window_start on */
    size_t window_len, window_cap;
    uint64_t window_start;
    FILE *spill; /* the stream before window_start (a temporary file, gone with the process) */
    char *held[REPLAY_STRINGS_HELD];
    size_t held_cap[REPLAY_STRINGS_HELD];
    uint64_t held_key[REPLAY_STRINGS_HELD]; /* 1 + the id whose text each holds; 0: none */
    uint64_t held_use[REPLAY_STRINGS_HELD]; /* when each was last handed out (held_clock) */
    uint64_t held_clock;
    int failed; /* a read-back failed */
};

replay_strings *replay_strings_new(size_t window, size_t index_pages) {
    replay_strings *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->window_cap = window ? window : DEFAULT_WINDOW;
    s->max_resident = index_pages ? index_pages : DEFAULT_INDEX_PAGES;
    if (!(s->window = malloc(s->window_cap)) ||
        !(s->resident = malloc(s->max_resident * sizeof *s->resident))) {
        replay_strings_free(s);
        return NULL;
    }
    return s;
}

void replay_strings_free(replay_strings *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->nresident; i++)
        free(s->pages[s->resident[i]].at);
    free(s->pages);
    addr_map_free(&s->page_index);
    free(s->resident);
    if (s->index_file)
        fclose(s->index_file);
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

/* ---- the index ------------------------------------------------------------- */

#define PAGE_BYTES (INDEX_PAGE_IDS * sizeof(uint64_t))

/* Makes room for one more page in memory: the one used longest ago goes to the file (unless
 * an unchanged copy is there already) and its buffer is handed back. NULL when it could not
 * be written (or nothing is in memory: then a new buffer). */
static uint64_t *free_a_page(replay_strings *s) {
    if (s->nresident < s->max_resident)
        return malloc(PAGE_BYTES);
    size_t oldest = 0;
    for (size_t i = 1; i < s->nresident; i++)
        if (s->pages[s->resident[i]].last_use < s->pages[s->resident[oldest]].last_use)
            oldest = i;
    uint32_t index = s->resident[oldest];
    index_page *p = &s->pages[index];
    if (p->dirty || !p->in_file) {
        if (!s->index_file && !(s->index_file = tmpfile()))
            return NULL;
        if (gmt_pwrite_all(fileno(s->index_file), p->at, PAGE_BYTES,
                           (uint64_t)index * PAGE_BYTES) != 0)
            return NULL;
        p->in_file = 1;
        p->dirty = 0;
    }
    uint64_t *buffer = p->at;
    p->at = NULL;
    s->resident[oldest] = s->resident[--s->nresident];
    return buffer;
}

/* The index in `pages` of page `number`; with `create`, a page not made yet is made (all
 * undefined, nothing in memory). -1 when there is none and none is to be made, or out of
 * memory (*failed then says so). */
static int64_t page_of(replay_strings *s, uint32_t number, int create, int *failed) {
    if (s->last_at && s->last_number == number)
        return s->last_at - 1;
    const uint32_t *at = addr_map_get(&s->page_index, 0, number);
    uint32_t index;
    if (at) {
        index = *at;
    } else {
        if (!create)
            return -1;
        if (gmt_grow_uninit((void **)&s->pages, &s->pages_cap, s->npages, sizeof *s->pages, 0) !=
                0 ||
            addr_map_put(&s->page_index, 0, number, (uint32_t)s->npages) != 0) {
            *failed = 1;
            return -1;
        }
        index = (uint32_t)s->npages++;
        memset(&s->pages[index], 0, sizeof s->pages[index]);
    }
    s->last_number = number;
    s->last_at = index + 1;
    return index;
}

/* The offset slot of id, its page brought into memory; with `create`, a page not made yet is
 * made (all undefined). NULL when the id has no page and none is to be made, or on a failure
 * (out of memory, the file): *failed then says so. */
static uint64_t *slot_of(replay_strings *s, uint32_t id, int create, int *failed) {
    *failed = 0;
    int64_t index = page_of(s, id / INDEX_PAGE_IDS, create, failed);
    if (index < 0)
        return NULL;
    index_page *p = &s->pages[index];
    if (!p->at) {
        uint64_t *buffer = free_a_page(s);
        if (!buffer || (p->in_file ? gmt_pread_all(fileno(s->index_file), buffer, PAGE_BYTES,
                                                   (uint64_t)index * PAGE_BYTES)
                                   : (memset(buffer, 0, PAGE_BYTES), 0)) != 0) {
            free(buffer);
            *failed = 1;
            return NULL;
        }
        p->at = buffer;
        s->resident[s->nresident++] = (uint32_t)index;
    }
    p->last_use = ++s->clock;
    return &p->at[id % INDEX_PAGE_IDS];
}

/* ---- the strings ------------------------------------------------------------ */

int replay_strings_put(replay_strings *s, uint32_t id, const char *text) {
    size_t len = strlen(text) + 1;
    int failed;
    uint64_t *slot = slot_of(s, id, 1, &failed);
    if (!slot)
        return -1;
    s->pages[s->last_at - 1].dirty = 1; /* slot_of's page */
    if (s->window_len + len > s->window_cap && spill_window(s, len) != 0)
        return -1;
    memcpy(s->window + s->window_len, text, len);
    for (unsigned i = 0; i < REPLAY_STRINGS_HELD; i++)
        if (s->held_key[i] == (uint64_t)id + 1) /* redefined: a held copy is stale */
            s->held_key[i] = 0;
    *slot = 1 + s->window_start + s->window_len;
    s->window_len += len;
    return 0;
}

/* An old string: read from the file at `offset` until its NUL, into the ring's next buffer
 * (unless a buffer holds it from a recent lookup). */
static const char *read_back(replay_strings *s, uint32_t id, uint64_t offset) {
    for (unsigned i = 0; i < REPLAY_STRINGS_HELD; i++)
        if (s->held_key[i] == (uint64_t)id + 1) {
            s->held_use[i] = ++s->held_clock;
            return s->held[i];
        }
    /* the buffer handed out longest ago: one handed out since (a hit too) holds for
     * REPLAY_STRINGS_HELD - 1 more reads */
    unsigned slot = 0;
    for (unsigned i = 1; i < REPLAY_STRINGS_HELD; i++)
        if (s->held_use[i] < s->held_use[slot])
            slot = i;
    s->held_use[slot] = ++s->held_clock;
    s->held_key[slot] = 0;
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
            s->held_key[slot] = (uint64_t)id + 1;
            return s->held[slot];
        }
        want *= 2;
    }
    s->failed = 1; /* no text rather than a wrong one; the replay stops on it */
    return "";
}

int replay_strings_failed(const replay_strings *s) { return s->failed; }

const char *replay_strings_get(replay_strings *s, uint32_t id) {
    int failed;
    uint64_t *slot = slot_of(s, id, 0, &failed);
    if (failed) {
        s->failed = 1; /* no text rather than a wrong one; the replay stops on it */
        return "";
    }
    if (!slot || !*slot)
        return NULL;
    uint64_t offset = *slot - 1;
    if (offset >= s->window_start)
        return s->window + (offset - s->window_start);
    /* below the window: spill_window wrote it out (the window starts past 0 only then) */
    return GMT_ALWAYS(s->spill) ? read_back(s, id, offset) : NULL;
}
