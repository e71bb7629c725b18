/* share_file.c — `memanalyze view --html FILE` (share_file.h): the embedded answers and the file.
 *
 * Every answer is an endpoint function of endpoints.h called in this process with a request
 * made from a list of arguments (request.h), the arguments the page sends: no fact is computed
 * here, and no SQL is (tests/test_layers.py). What is here: which answers, in which order, until
 * the bound; the page's files put together into one (index.html with the CSS and the scripts
 * inlined, the answers in a JSON block with every '<' written \u003c, so that no "</script>"
 * or "<!--" inside a string can end it); the file written beside FILE and renamed into place. */
#include "share_file.h"

#include "db_file.h"
#include "db_open.h"
#include "endpoints.h"
#include "json_out.h"
#include "request.h"
#include "server.h"
#include "view_blocks.h"
#include "view_stacks.h"
#include "view_timeline.h"
#include "when.h"

#include "gmt_vocab.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The page's files (view/assets/, embedded by cmake/embed_text.cmake). */
extern const char view_asset_index_html[], view_asset_state_js[], view_asset_timeline_js[],
    view_asset_blocks_js[], view_asset_viewer_js[], view_asset_search_js[], view_asset_inputs_js[],
    view_asset_viewer_css[], view_asset_share_js[];

/* What the page asks for: its K blocks (k: 300, timeline.js), its segments (count: 400,
 * blocks.js); the buckets of each embedded timeline and stack; the deepest zoom tried; the bytes
 * kept for the document's last keys. */
enum {
    SHARE_BUCKETS = 1000,
    SHARE_BLOCKS = 300,
    SHARE_SEGMENTS = 400,
    SHARE_MAX_DEPTH = 12,
    SHARE_MIN_TILE = 16, /* a narrower tile says nothing a wider one does not */
    SHARE_TAIL = 256,
    SHARE_BLOCKS_SHARE = 4 /* the blocks' facts: at most a quarter of the bound */
};

typedef struct share {
    sqlite3 *db;
    view_blocks_index *ix;
    const char *input;
    FILE *data; /* the answers so far, escaped, joined by ",\n" */
    char *data_buf;
    size_t data_len;
    size_t used;       /* bytes written to data */
    size_t page_bytes; /* the file around the answers */
    size_t max;
    int event_axis;
    int64_t end; /* the whole run's window: [0, end) */
    view_share_stats *st;
} share;

/* ---- one answer ----------------------------------------------------------------------- */

/* text[len] with every '<' as \u003c (inside JSON strings, where alone it can be), into a new
 * buffer. NULL when out of memory. */
static char *escaped(const char *text, size_t len, size_t *out_len) {
    size_t n = len;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '<' ? 5 : 0;
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '<') {
            memcpy(o, "\\u003c", 6);
            o += 6;
        } else {
            *o++ = text[i];
        }
    }
    *o = '\0';
    *out_len = n;
    return out;
}

/* The entry of path's answer (api) to args: {"path", "args", EXTRA, "body"} or, when the
 * endpoint fails or answers more than a response may hold, {"path", "args", EXTRA, "status",
 * "error"}, as the server would answer; escaped, in *text (malloc'd). 0, or -1 out of memory. */
static int entry(share *sh, const char *path, view_endpoint api, const char *const *args,
                 const char *extra, char **text, size_t *len, int *answered) {
    char *body = NULL, *raw = NULL;
    size_t blen = 0, rlen = 0;
    FILE *b = open_memstream(&body, &blen);
    if (!b)
        return -1;
    view_request rq = {.conn = NULL, .s = NULL, .args = args, .input = sh->input, .ix = sh->ix};
    char why[512] = "";
    int status = api(sh->db, &rq, b, why, sizeof why);
    if (fclose(b) != 0) {
        free(body);
        return -1;
    }
    if (status == 200 && blen > VIEW_MAX_RESPONSE) {
        status = 500;
        snprintf(why, sizeof why, "the answer is %zu bytes, over the %d a response may have", blen,
                 VIEW_MAX_RESPONSE);
    }
    if (answered)
        *answered = status;
    FILE *o = open_memstream(&raw, &rlen);
    if (!o) {
        free(body);
        return -1;
    }
    fputs("{\"path\": ", o);
    json_string(o, path);
    fputs(", \"args\": {", o);
    for (const char *const *a = args; a && a[0]; a += 2) {
        fputs(a == args ? "" : ", ", o);
        json_string(o, a[0]);
        fputs(": ", o);
        json_string(o, a[1]);
    }
    fputc('}', o);
    if (extra)
        fputs(extra, o);
    if (status == 200) {
        fputs(", \"body\": ", o);
        fwrite(body, 1, blen, o);
    } else {
        fprintf(o, ", \"status\": %d, \"error\": ", status);
        json_string(o, why[0] ? why : "failed");
    }
    fputc('}', o);
    free(body);
    if (fclose(o) != 0) {
        free(raw);
        return -1;
    }
    *text = escaped(raw, rlen, len);
    free(raw);
    return *text ? 0 : -1;
}

/* Appends text (entries joined by ",\n") when the file stays within its bound: 1 added, 0 not
 * (it would pass the bound). */
static int add(share *sh, const char *text, size_t len, size_t entries) {
    size_t sep = sh->used ? 2 : 0;
    if (sh->page_bytes + sh->used + sep + len + SHARE_TAIL > sh->max)
        return 0;
    fputs(sep ? ",\n" : "", sh->data);
    fwrite(text, 1, len, sh->data);
    sh->used += sep + len;
    sh->st->answers += entries;
    return 1;
}

/* One answer, embedded when it fits (else counted as left out). 0, or -1 out of memory. */
static int one(share *sh, const char *path, view_endpoint api, const char *const *args,
               const char *extra) {
    char *text;
    size_t len;
    if (entry(sh, path, api, args, extra, &text, &len, NULL) != 0)
        return -1;
    if (!add(sh, text, len, 1))
        sh->st->left_out++;
    free(text);
    return 0;
}

/* ---- what is embedded ------------------------------------------------------------------- */

/* `, "device": D, "depth": K, "lo": A, "hi": B`: where a windowed answer lies, for share.js. */
static void window_extra(char *buf, size_t len, int device, int depth, int64_t lo, int64_t hi) {
    snprintf(buf, len, ", \"device\": %d, \"depth\": %d, \"lo\": %" PRId64 ", \"hi\": %" PRId64,
             device, depth, lo, hi);
}

/* The segments at the peak (share.js answers the page's request for them, whatever its count):
 * the page's first SHARE_SEGMENTS, or fewer when that answer is over the response cap (a
 * quarter, then a sixteenth), else the server's error for it; and for the same segments their
 * live blocks' series keys by each stack-by (/api/segment_series: the map coloured as the
 * timeline). 0, or -1 out of memory. */
static int peak_segments(share *sh, const char *device) {
    char *text = NULL, c[16] = "";
    size_t len = 0;
    int status = 0;
    for (int count = SHARE_SEGMENTS; count >= SHARE_SEGMENTS / 16; count /= 4) {
        snprintf(c, sizeof c, "%d", count);
        const char *const args[] = {"device", device, "at", "peak", "count", c, NULL};
        free(text);
        if (entry(sh, "/api/segments", view_api_segments, args, NULL, &text, &len, &status))
            return -1;
        if (status == 200)
            break;
    }
    if (!add(sh, text, len, 1))
        sh->st->left_out++;
    free(text);
    for (int i = 0; status == 200 && i < STACK_BY_COUNT; i++) {
        const char *by = view_stack_by_name((view_stack_by)i);
        const char *const args[] = {"device", device, "at", "peak", "by", by, "count", c, NULL};
        if (one(sh, "/api/segment_series", view_api_segment_series, args, NULL))
            return -1;
    }
    return 0;
}

/* A device's whole-run answers: what the page asks for first. 0, or -1 out of memory. */
static int device_answers(share *sh, int device) {
    char d[16], hi[32], from[48], to[48], extra[160], n[16], k[16];
    snprintf(d, sizeof d, "%d", device);
    snprintf(hi, sizeof hi, "%" PRId64, sh->end);
    snprintf(n, sizeof n, "%d", SHARE_BUCKETS);
    snprintf(k, sizeof k, "%d", SHARE_BLOCKS);
    /* the window summary of the whole run as the page asks it (viewer.js whenAt: the axis'
     * first and last places, its end at least 2) */
    int64_t last = (sh->end > 2 ? sh->end : 2) - 1;
    snprintf(from, sizeof from, "%s", sh->event_axis ? "event:0" : "time:0ns");
    if (sh->event_axis)
        snprintf(to, sizeof to, "event:%" PRId64, last);
    else
        snprintf(to, sizeof to, "time:%" PRId64 "ns", last);
    window_extra(extra, sizeof extra, device, 0, 0, sh->end);
    const char *const timeline[] = {"device", d, "n", n, NULL};
    const char *const marks[] = {"device", d, NULL};
    const char *const steps[] = {"device", d, "first", "0", "count", VIEW_PAGE_STEPS, NULL};
    const char *const allocs[] = {"device", d, "t0", "0", "t1", hi, "k", k, NULL};
    const char *const window[] = {"device", d, "from", from, "to", to, NULL};
    if (one(sh, "/api/timeline", view_api_timeline, timeline, extra) ||
        one(sh, "/api/marks", view_api_marks, marks, NULL) ||
        one(sh, "/api/steps", view_api_steps, steps, NULL) ||
        one(sh, "/api/allocations", view_api_allocations, allocs, extra) ||
        one(sh, "/api/window", view_api_window, window, NULL) || peak_segments(sh, d))
        return -1;
    for (int i = 0; i < STACK_BY_COUNT; i++) { /* every stack-by (gmt_vocab.h's STACK_BY_LIST) */
        const char *by = view_stack_by_name((view_stack_by)i);
        const char *const stacks[] = {"device", d, "by", by, "n", n, NULL};
        if (one(sh, "/api/stacks", view_api_stacks, stacks, extra))
            return -1;
    }
    return 0;
}

/* /api/block of each block the whole run's /api/allocations lists (view_blocks' own answer, so
 * the same blocks), largest first, while the file stays under `limit` bytes (a block's frames
 * can be tens of KiB: the tiles need room too). 0, or -1 (out of memory, or the index failed:
 * the message in err). */
static int block_answers(share *sh, int device, size_t limit, char *err, size_t errlen) {
    view_blocks_result r;
    if (view_blocks(sh->ix, device, 0, sh->end, SHARE_BLOCKS, &r, err, errlen) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < r.n; i++) {
        char id[32];
        snprintf(id, sizeof id, "%" PRId64, r.blocks[i].alloc_id);
        const char *const args[] = {"id", id, NULL};
        if (sh->page_bytes + sh->used >= limit) {
            sh->st->left_out++;
            continue;
        }
        size_t max = sh->max;
        sh->max = limit; /* one() keeps to sh->max */
        rc = one(sh, "/api/block", view_api_block, args, NULL);
        sh->max = max;
        if (rc)
            snprintf(err, errlen, "out of memory");
    }
    view_blocks_free(&r);
    return rc;
}

/* Window k of depth d: [end * k / 2^(d+1), end * (k + 2) / 2^(d+1)), exact for any end. */
static int64_t tile_edge(int64_t end, int64_t k, int d) {
    int64_t parts = (int64_t)1 << (d + 1), q = end / parts, r = end % parts;
    return q * k + r * k / parts;
}

/* The tiles of depth d for every device, as one group: added whole or not at all. 1 added, 0
 * not (the bound, or tiles too narrow), -1 out of memory; *size: the group's bytes. */
static int depth_tiles(share *sh, int d, const int *devices, int ndev, size_t *size) {
    int64_t windows = ((int64_t)1 << (d + 1)) - 1;
    if (tile_edge(sh->end, 2, d) < SHARE_MIN_TILE)
        return 0;
    char *buf = NULL;
    size_t len = 0, entries = 0;
    FILE *g = open_memstream(&buf, &len);
    if (!g)
        return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < ndev; i++) {
        for (int64_t k = 0; rc == 0 && k < windows; k++) {
            int64_t lo = tile_edge(sh->end, k, d), hi = tile_edge(sh->end, k + 2, d);
            char dv[16], l[32], h[32], n[16], kk[16], extra[160];
            snprintf(dv, sizeof dv, "%d", devices[i]);
            snprintf(l, sizeof l, "%" PRId64, lo);
            snprintf(h, sizeof h, "%" PRId64, hi);
            snprintf(n, sizeof n, "%d", SHARE_BUCKETS);
            snprintf(kk, sizeof kk, "%d", SHARE_BLOCKS);
            window_extra(extra, sizeof extra, devices[i], d, lo, hi);
            const char *const timeline[] = {"device", dv, "lo", l, "hi", h, "n", n, NULL};
            const char *const allocs[] = {"device", dv, "t0", l, "t1", h, "k", kk, NULL};
            for (int w = 0; rc == 0 && w < 2; w++) {
                char *text;
                size_t tlen;
                rc = w ? entry(sh, "/api/allocations", view_api_allocations, allocs, extra, &text,
                               &tlen, NULL)
                       : entry(sh, "/api/timeline", view_api_timeline, timeline, extra, &text,
                               &tlen, NULL);
                if (rc == 0) {
                    fputs(entries ? ",\n" : "", g);
                    fwrite(text, 1, tlen, g);
                    entries++;
                    free(text);
                }
            }
        }
    }
    if (fclose(g) != 0 || rc != 0) {
        free(buf);
        return -1;
    }
    *size = len;
    int added = add(sh, buf, len, entries);
    if (added)
        sh->st->tiles += (size_t)windows * (size_t)ndev;
    free(buf);
    return added;
}

/* Every answer, in order of need, into sh->data. 0, or -1 with the message. */
static int gather(share *sh, char *err, size_t errlen) {
    int devices[GMT_MAX_DEVICES], all[GMT_MAX_DEVICES];
    int n = view_devices(sh->db, all, GMT_MAX_DEVICES), ndev = 0;
    int first = when_default_device(sh->db);
    for (int i = 0; i < n; i++) /* the default device first: the page opens on it */
        if (all[i] == first)
            devices[ndev++] = first;
    for (int i = 0; i < n; i++)
        if (all[i] != first)
            devices[ndev++] = all[i];
    sh->st->devices = ndev;
    if (one(sh, "/api/summary", view_api_summary, NULL, NULL) != 0)
        goto oom;
    /* no device with events: the page asks for device 0 all the same; the server's answers to
     * that (404 no device 0) are what the page then shows */
    if (ndev == 0 && device_answers(sh, 0) != 0)
        goto oom;
    for (int i = 0; i < ndev; i++)
        if (device_answers(sh, devices[i]) != 0)
            goto oom;
    /* the blocks' facts in a quarter of the bound, then the zoom depths while the next fits:
     * its size guessed from the last (twice the windows) before it is computed, then measured */
    size_t blocks_limit = sh->page_bytes + sh->used + sh->max / SHARE_BLOCKS_SHARE;
    for (int i = 0; i < ndev; i++)
        if (block_answers(sh, devices[i], blocks_limit < sh->max ? blocks_limit : sh->max, err,
                          errlen) != 0)
            return -1;
    size_t last = 0;
    for (int d = 1; d <= SHARE_MAX_DEPTH && ndev > 0; d++) {
        size_t room = sh->max - (sh->page_bytes + sh->used + SHARE_TAIL);
        if (last && last * ((((size_t)1 << (d + 1)) - 1)) / (((size_t)1 << d) - 1) > room)
            break;
        int rc = depth_tiles(sh, d, devices, ndev, &last);
        if (rc < 0)
            goto oom;
        if (rc == 0)
            break;
        sh->st->depth = d;
    }
    view_step_table_drop();
    return 0;
oom:
    view_step_table_drop();
    snprintf(err, errlen, "out of memory");
    return -1;
}

/* ---- the page ------------------------------------------------------------------------- */

/* Writes from *p up to `marker`, then `with`, and moves *p past the marker. 0, or -1 when the
 * page has no such marker (index.html changed without this file). */
static int splice(FILE *o, const char **p, const char *marker, const char *with) {
    const char *at = strstr(*p, marker);
    if (!at)
        return -1;
    fwrite(*p, 1, (size_t)(at - *p), o);
    fputs(with, o);
    *p = at + strlen(marker);
    return 0;
}

/* Whether an asset holds text that would end its inline element ("</script", "</style"). */
static int ends_inline(const char *text, const char *tag) {
    size_t n = strlen(tag);
    for (const char *p = strstr(text, "</"); p; p = strstr(p + 2, "</"))
        if (!strncasecmp(p + 2, tag, n))
            return 1;
    return 0;
}

/* The page around the answers: head (up to the JSON block's content) and tail (from its end).
 * 0, or -1 with the message. */
static int page_parts(const char *input, char **head, size_t *hlen, char **tail, size_t *tlen,
                      char *err, size_t errlen) {
    /* in index.html's order, share.js before state.js (whose api() asks it) */
    const char *scripts[] = {view_asset_search_js, view_asset_inputs_js,   view_asset_share_js,
                             view_asset_state_js,  view_asset_timeline_js, view_asset_blocks_js,
                             view_asset_viewer_js};
    const size_t nscripts = sizeof scripts / sizeof scripts[0];
    for (size_t i = 0; i < nscripts; i++)
        if (ends_inline(scripts[i], "script")) {
            snprintf(err, errlen, "view --html: a script of the page holds \"</script\"");
            return -1;
        }
    if (ends_inline(view_asset_viewer_css, "style")) {
        snprintf(err, errlen, "view --html: the page's style holds \"</style\"");
        return -1;
    }
    FILE *h = open_memstream(head, hlen);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const char *p = view_asset_index_html;
    /* nothing from anywhere: no fetch, no image, no frame; only the inline script and style */
    int rc = splice(h, &p, "<meta charset=\"utf-8\">",
                    "<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" "
                    "content=\"default-src 'none'; script-src 'unsafe-inline'; style-src "
                    "'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'\">");
    rc = rc ? rc : splice(h, &p, "<link rel=\"stylesheet\" href=\"viewer.css\">", "<style>\n");
    if (rc == 0) {
        fputs(view_asset_viewer_css, h);
        fputs("</style>", h);
    }
    rc =
        rc ? rc
           : splice(h, &p, "<link rel=\"icon\" href=\"favicon.svg\" type=\"image/svg+xml\">\n", "");
    rc = rc ? rc : splice(h, &p, "<script src=\"search.js\" defer></script>\n", "");
    rc = rc ? rc : splice(h, &p, "<script src=\"inputs.js\" defer></script>\n", "");
    rc = rc ? rc : splice(h, &p, "<script src=\"state.js\" defer></script>\n", "");
    rc = rc ? rc : splice(h, &p, "<script src=\"timeline.js\" defer></script>\n", "");
    rc = rc ? rc : splice(h, &p, "<script src=\"blocks.js\" defer></script>\n", "");
    rc = rc ? rc : splice(h, &p, "<script src=\"viewer.js\" defer></script>\n", "");
    const char *body_end = rc ? NULL : strstr(p, "</body>");
    if (body_end) {
        fwrite(p, 1, (size_t)(body_end - p), h);
        fputs("<script type=\"application/json\" id=\"gmt-share\">"
              "{\"format\": \"memanalyze-share\", \"version\": 1, \"input\": ",
              h);
        size_t n;
        char *in = NULL;
        char *quoted = NULL;
        size_t qlen = 0;
        FILE *q = open_memstream(&quoted, &qlen);
        if (q) {
            json_string(q, input);
            if (fclose(q) == 0)
                in = escaped(quoted, qlen, &n);
        }
        free(quoted);
        if (in)
            fwrite(in, 1, n, h);
        else
            rc = -1;
        free(in);
        fputs(",\n\"answers\": [\n", h);
    }
    if (fclose(h) != 0 || rc != 0 || !body_end) {
        free(*head);
        *head = NULL;
        snprintf(err, errlen, "view --html: the page (index.html) is not as share_file.c expects");
        return -1;
    }
    FILE *t = open_memstream(tail, tlen);
    if (!t) {
        free(*head);
        *head = NULL;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    fputs("</script>\n", t);
    for (size_t i = 0; i < nscripts; i++) {
        fputs("<script>\n", t);
        fputs(scripts[i], t);
        fputs("</script>\n", t);
    }
    fputs(body_end, t);
    if (fclose(t) != 0) {
        free(*head);
        free(*tail);
        *head = *tail = NULL;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* ---- the file ------------------------------------------------------------------------- */

static int write_all(FILE *f, const char *p, size_t n) { return fwrite(p, 1, n, f) == n ? 0 : -1; }

int view_share_write(const view_share_config *cfg, view_share_stats *stats, int *write_error,
                     char *err, size_t errlen) {
    *write_error = 0;
    memset(stats, 0, sizeof *stats);
    if (db_file_replaceable(cfg->out, err, errlen) != 0)
        return -1;
    char tmp[PATH_MAX + 64], dir[PATH_MAX], base[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", cfg->out);
    snprintf(base, sizeof base, "%s", cfg->out);
    db_file_sweep(dirname(dir), basename(base)); /* what a killed writer left beside it */
    /* the temporary made first: an unwritable folder is said before any work */
    int fd = db_file_temp(cfg->out, "", 0666, tmp, sizeof tmp, err, errlen);
    if (fd < 0)
        return -1;
    share sh = {.input = cfg->input,
                .max = cfg->max_bytes ? cfg->max_bytes : VIEW_SHARE_MAX_BYTES,
                .st = stats};
    char *head = NULL, *tail = NULL, tail_keys[SHARE_TAIL];
    size_t hlen = 0, tlen = 0;
    int rc = -1;
    FILE *f = NULL;
    if (page_parts(cfg->input, &head, &hlen, &tail, &tlen, err, errlen) != 0)
        goto out;
    sh.page_bytes = hlen + tlen;
    if (sh.page_bytes + SHARE_TAIL > sh.max) {
        snprintf(err, errlen, "view --html: the page alone is %zu bytes, over the bound (%zu)",
                 sh.page_bytes, sh.max);
        goto out;
    }
    if (db_open_readonly(cfg->db_path, &sh.db, err, errlen) != 0)
        goto out;
    if (view_timeline_axis(sh.db, &sh.event_axis, &sh.end, err, errlen) != 0)
        goto out;
    sh.end = sh.end > 0 ? sh.end : 1; /* the endpoints' whole run */
    if (!(sh.ix = view_blocks_index_open(sh.db, cfg->blocks_path, NULL, err, errlen)))
        goto out;
    if (!(sh.data = open_memstream(&sh.data_buf, &sh.data_len))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (gather(&sh, err, errlen) != 0)
        goto out;
    int keys = snprintf(tail_keys, sizeof tail_keys,
                        "\n],\n\"devices\": %d, \"depth\": %d, \"tiles\": %zu, \"left_out\": %zu, "
                        "\"max_bytes\": %zu}",
                        stats->devices, stats->depth, stats->tiles, stats->left_out, sh.max);
    assert(keys > 0 && keys < SHARE_TAIL);
    if (fclose(sh.data) != 0) {
        sh.data = NULL;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    sh.data = NULL;
    stats->bytes = hlen + sh.used + (size_t)keys + tlen;
    assert(sh.used == sh.data_len && stats->bytes <= sh.max);
    if (!(f = fdopen(fd, "w"))) {
        snprintf(err, errlen, "cannot write %s: %s", cfg->out, strerror(errno));
        goto out;
    }
    fd = -1;
    errno = 0;
    int e = 0;
    if (write_all(f, head, hlen) || write_all(f, sh.data_buf, sh.used) ||
        write_all(f, tail_keys, (size_t)keys) || write_all(f, tail, tlen) || fflush(f) != 0)
        e = errno ? errno : EIO;
    else if (fsync(fileno(f)) != 0)
        e = errno;
    if (fclose(f) != 0 && !e)
        e = errno;
    f = NULL;
    if (e) {
        *write_error = 1;
        snprintf(err, errlen, "view --html: write error: %s: %s", cfg->out, strerror(e));
        goto out;
    }
    /* db_file_publish's rule (a regular file or nothing), without its removal of a database's
     * -journal/-wal/-shm beside it: those would be the user's files here */
    if (db_file_replaceable(cfg->out, err, errlen) != 0)
        goto out;
    if (rename(tmp, cfg->out) != 0) {
        snprintf(err, errlen, "cannot move %s into place: %s", cfg->out, strerror(errno));
        goto out;
    }
    tmp[0] = '\0';
    rc = 0;
out:
    if (sh.data)
        fclose(sh.data);
    free(sh.data_buf);
    view_blocks_index_close(sh.ix);
    if (sh.db)
        db_close(sh.db);
    free(head);
    free(tail);
    if (fd >= 0)
        close(fd);
    if (tmp[0])
        unlink(tmp);
    return rc;
}
