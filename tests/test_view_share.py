#!/usr/bin/env python3
"""test_view_share.py — `memanalyze view INPUT --html FILE`, the share file (issue 31): one
self-contained page, opened from disk with no server and no network.

On a synth trace (two devices, named tensors) and on real PyTorch snapshots from
../shared/data/pytorch (a timed one and one without timestamps, when present):
  - the file is written, the one line printed names it and its size (equal to the file's), exit 0,
    nothing left beside it (no temporary);
  - it is self-contained: no src= or href= anywhere (the CSS and the scripts inline), no
    http:// or https:// URL but the SVG namespace, a Content-Security-Policy of
    default-src 'none' (connect-src too: no fetch can leave the page);
  - the embedded JSON block parses, holds no "</" (every '<' written \\u003c), and is at most
    8 MiB with the page;
  - its answers equal the server's (`view --port 0`, as test_view_server.py starts it) for the
    same arguments, field by field: /api/summary, each device's whole-run /api/timeline and
    /api/allocations, /api/marks, /api/steps, /api/segments at the peak and its blocks' series
    keys by each stack-by (/api/segment_series), one /api/block, and a
    tile (a part of the run at the finest depth): /api/timeline and /api/allocations;
  - the tiles: at each depth d, every device's 2^(d+1) - 1 windows of 1/2^d of the run, each
    starting half a window after the last, the last ending at the run's end;
  - a smaller bound (GMT_VIEW_SHARE_MAX_BYTES): the file stays within it, with fewer depths;
  - a bad path (a missing folder, a directory, a write past RLIMIT_FSIZE as a full disk would
    fail): a one-line error, exit != 0, no FILE and no temporary left; --html with --port,
    --bind or --open: refused, exit 2;
  - in headless Chromium (tests/browser.py; skipped, saying so, without chromium): file://FILE
    opens with no console error, body[data-ready="1"], no fetch() or XMLHttpRequest made (both
    counted by a script run before the page's); the segments at the peak drawn, and coloured
    by category when stacked by it; a wheel zoom
    answered from a tile (gmtShare.last.depth > 0) and redrawn; a click on a block with embedded
    facts shows them (its size and frames those of the embedded /api/block), one on a block
    without says "not in this share file"; the whole run's window summary drawn from the
    embedded /api/window (its diff, sites, categories, steps and OOM lines, nothing missed); a
    search says it too; the load time printed.
Never skips as a whole: the file checks need neither a browser nor a server; the browser checks
skip (saying so) without chromium, the server comparisons without libmicrohttpd.

argv: synth memanalyze shared_pytorch_dir. Python 3 standard library only.
"""
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
import view_client  # noqa: E402

SYNTH, MEM = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SHARED = sys.argv[3] if len(sys.argv) > 3 else ""
BOUND = 8 * 1024 * 1024
MISSING = "not in this share file"
checks = view_client.Checks()
check = checks.check


def run(args, env, **kw):
    return subprocess.run([MEM] + args, env=env, capture_output=True, text=True, timeout=300, **kw)


def share_doc(path):
    """The page's text and its embedded document."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r'<script type="application/json" id="gmt-share">(.*?)</script>', text, re.S)
    assert m, "no gmt-share block"
    check("</" not in m.group(1) and "<!--" not in m.group(1), path + ": '</' in the block")
    return text, json.loads(m.group(1))


def answers(doc, path, **args):
    """The embedded entries of path whose args include these."""
    return [e for e in doc["answers"] if e["path"] == path and
            all(e["args"].get(k) == str(v) for k, v in args.items())]


def server_api(srv, path, any_status=False):
    """The server's answer to compare (tests/view_client.py; 503 while the blocks index is made:
    asked again); any_status: (status, JSON) of whatever it answers."""
    status, _, data = srv.get(path, wait_built=True)
    if any_status:
        return status, json.loads(data)
    check(status == 200, "server %s: %d" % (path, status))
    return json.loads(data)


def query(args):
    return "&".join("%s=%s" % kv for kv in args.items())


def check_file(out, label, res):
    """The line, the file, its self-containedness and its document's shape."""
    check(res.returncode == 0, label + ": exit %d: %s" % (res.returncode, res.stderr))
    lines = res.stdout.splitlines()
    size = os.path.getsize(out) if os.path.exists(out) else -1
    check(len(lines) == 1 and out in lines[0] and ("%d bytes" % size) in lines[0],
          label + ": the line %r (file %d bytes)" % (res.stdout, size))
    left = [n for n in os.listdir(os.path.dirname(out)) if ".tmp-" in n]
    check(not left, label + ": temporaries left: %r" % left)
    text, doc = share_doc(out)
    check(size <= BOUND, label + ": %d bytes, over 8 MiB" % size)
    check(not re.search(r"\b(src|href)\s*=", text, re.I), label + ": a src= or href= in the page")
    urls = set(re.findall(r"https?://[^\s\"'<>)]*", text)) - {"http://www.w3.org/2000/svg"}
    check(not urls, label + ": URLs in the page: %r" % sorted(urls)[:5])
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"', text)
    check(csp and "default-src 'none'" in csp.group(1) and "connect-src" not in csp.group(1),
          label + ": no CSP of default-src 'none'")
    # the answers' JSON block and the page's seven scripts (share_file.c scripts[])
    check(text.count("<script") == 8 and "<style>" in text and 'rel="stylesheet"' not in text,
          label + ": the scripts and the style not inline")
    check(doc["format"] == "memanalyze-share" and doc["answers"], label + ": the document")
    # the tiles: every device's windows at each depth, half a window apart, the last at the end
    summary = answers(doc, "/api/summary")[0]["body"]
    devices = [d["device"] for d in summary["devices"]]
    check(doc["devices"] == len(devices), label + ": %d devices embedded, the summary has %d" % (
        doc["devices"], len(devices)))
    for dev in devices:
        whole = [e for e in answers(doc, "/api/timeline", device=dev) if e["depth"] == 0]
        check(len(whole) == 1, label + ": device %d: no whole-run timeline" % dev)
        if not whole:
            continue
        end = whole[0]["hi"]
        for d in range(1, doc["depth"] + 1):
            for path in ("/api/timeline", "/api/allocations"):
                t = sorted((e["lo"], e["hi"]) for e in answers(doc, path, device=dev)
                           if e["depth"] == d)
                parts = 2 ** (d + 1)
                want = [(end * k // parts, end * (k + 2) // parts) for k in range(parts - 1)]
                check(len(t) == parts - 1 and all(abs(a - c) <= 1 and abs(b - e) <= 1
                                                  for (a, b), (c, e) in zip(t, want)),
                      label + ": device %d depth %d %s tiles %r..." % (dev, d, path, t[:3]))
    tiles = sum(1 for e in doc["answers"] if e["path"] == "/api/timeline" and e["depth"] > 0)
    check(tiles == doc["tiles"], label + ": %d tiles, the document says %d" % (tiles, doc["tiles"]))
    return doc, size


def compare_server(doc, inp, env, label):
    try:
        srv = view_client.ViewServer(MEM, [inp], env, stop_wait_s=10)
    except view_client.ViewStartError as e:
        print("%s: the server comparisons skipped: %s" % (label, e.stderr.strip()))
        return
    try:
        e = answers(doc, "/api/summary")[0]
        check(e["body"] == server_api(srv, "/api/summary"), label + ": /api/summary differs")
        for path, keys in (("/api/timeline", ("device", "n")), ("/api/marks", ("device",)),
                           ("/api/steps", ("device", "first", "count")),
                           ("/api/allocations", ("device", "t0", "t1", "k")),
                           ("/api/segments", ("device", "at", "count")),
                           ("/api/segment_series", ("device", "at", "by", "count")),
                           ("/api/window", ("device", "from", "to"))):
            whole = [x for x in doc["answers"] if x["path"] == path and x.get("depth", 0) == 0]
            check(whole, label + ": no whole-run %s" % path)
            for x in whole:
                check(sorted(x["args"]) == sorted(keys), label + ": %s args %r" % (path, x["args"]))
                status, got = server_api(srv, path + "?" + query(x["args"]), any_status=True)
                # an answer over the response cap: the server refuses it, the file says so too
                check(x.get("body") == got if status == 200 else
                      x.get("status") == status and got["error"].startswith(x["error"]),
                      label + ": %s?%s differs from the server's (%d)" % (
                          path, query(x["args"]), status))
        # the finest tiles, each device's middle one; one block's facts
        for path in ("/api/timeline", "/api/allocations"):
            deep = [x for x in doc["answers"] if x["path"] == path and x["depth"] == doc["depth"]]
            x = deep[len(deep) // 2]
            check(x["body"] == server_api(srv, path + "?" + query(x["args"])),
                  label + ": the tile %s?%s differs" % (path, query(x["args"])))
        blocks = answers(doc, "/api/block")
        if check(blocks, label + ": no block embedded"):
            x = blocks[len(blocks) // 2]
            check(x["body"] == server_api(srv, "/api/block?id=" + x["args"]["id"]),
                  label + ": /api/block?id=%s differs" % x["args"]["id"])
        print("%s: the embedded answers equal the server's" % label)
    finally:
        srv.stop()


def check_bad(inp, env, tmp, label):
    for args, what in ((["--html", os.path.join(tmp, "no", "such", "dir", "x.html")],
                        "a missing folder"),
                       (["--html", tmp], "a directory")):
        res = run(["view", inp] + args, env)
        check(res.returncode != 0 and len(res.stderr.strip().splitlines()) == 1 and
              not os.path.isfile(args[1]), label + ": %s: exit %d, %r" % (
                  what, res.returncode, res.stderr))
    for extra in (["--port", "0"], ["--bind", "127.0.0.1"], ["--open"]):
        out = os.path.join(tmp, "refused.html")
        res = run(["view", inp, "--html", out] + extra, env)
        check(res.returncode == 2 and "--html" in res.stderr and not os.path.exists(out),
              label + ": --html with %s: exit %d %r" % (extra[0], res.returncode, res.stderr))
    # a write that fails part-way (a full disk): RLIMIT_FSIZE, its signal ignored
    d = os.path.join(tmp, "full")
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, "x.html")

    def small():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    res = run(["view", inp, "--html", out], env, preexec_fn=small)
    check(res.returncode == 1 and "write error" in res.stderr and
          len(res.stderr.strip().splitlines()) == 1 and os.listdir(d) == [],
          label + ": a write error: exit %d %r, left %r" % (res.returncode, res.stderr,
                                                           os.listdir(d)))


def check_bound(inp, env, tmp, label, full_depth):
    out = os.path.join(tmp, "small.html")
    bound = 700 * 1024
    res = run(["view", inp, "--html", out], dict(env, GMT_VIEW_SHARE_MAX_BYTES=str(bound)))
    check(res.returncode == 0, label + ": bound: %r" % res.stderr)
    if not os.path.exists(out):
        return
    _, doc = share_doc(out)
    size = os.path.getsize(out)
    check(size <= bound and doc["max_bytes"] == bound and doc["depth"] < full_depth,
          label + ": a bound of %d: %d bytes, depth %d (unbounded %d)" % (
              bound, size, doc["depth"], full_depth))
    print("%s: with a bound of %d bytes: %d bytes, depth %d, %d answers left out" % (
        label, bound, size, doc["depth"], doc["left_out"]))


COUNT_FETCH = """
window.__gmtRequests = 0;
const __fetch = window.fetch;
window.fetch = function () { window.__gmtRequests++; return __fetch.apply(this, arguments); };
const __open = XMLHttpRequest.prototype.open;
XMLHttpRequest.prototype.open = function () { window.__gmtRequests++;
  return __open.apply(this, arguments); };
"""


def canvas_box(page, cid):
    page.eval("document.getElementById(%r).scrollIntoView({block: 'center'}); true" % cid)
    time.sleep(0.05)
    return page.eval("(() => { const c = document.getElementById(%r); "
                     "const r = c.getBoundingClientRect(); return {x: r.left + c.clientLeft, "
                     "y: r.top + c.clientTop, w: c.clientWidth, h: c.clientHeight}; })()" % cid)


def check_browser(b, out, doc, label):
    embedded = {int(e["args"]["id"]): e["body"] for e in answers(doc, "/api/block")}
    t0 = time.monotonic()
    page = b.open("file://" + out, init_script=COUNT_FETCH)
    page.wait_for("document.body.dataset.ready", timeout=60)
    load = time.monotonic() - t0
    check(page.eval("document.body.dataset.ready") == "1", label + ": not ready: %r" %
          page.eval("document.getElementById('error').textContent"))
    check(b.errors == [], label + ": errors on load: %r" % b.errors)
    seg = page.eval("gmtView.seg && [gmtView.seg.segment_count, gmtView.at]")
    peak = answers(doc, "/api/segments", at="peak")
    if peak and "body" in peak[0]:
        check(seg == [peak[0]["body"]["segment_count"], "peak"],
              label + ": the segments at the peak: %r" % (seg,))
    else:  # over the response cap: the server's error for it embedded, shown as the server's
        shown = page.eval("document.getElementById('error').textContent")
        check(not seg and peak and shown == "/api/segments: " + peak[0]["error"],
              label + ": no segments, the error shown %r" % shown)
    # stacked by category: the segments at the peak coloured by the embedded series keys, a
    # colour per category drawn, as the server's page does
    series = [e for e in answers(doc, "/api/segment_series") if e["args"]["by"] == "category"]
    if seg and series and "body" in series[0]:
        page.eval("(() => { const s = document.getElementById('stackby'); s.value = 'category';"
                  " s.dispatchEvent(new Event('change')); return true; })()")
        page.wait_for("gmtView.pending === 0 && gmtView.segSeries && "
                      "gmtView.segSeries.by === 'category'", timeout=20)
        got = page.eval("({keys: gmtView.segSeries.keys.length, coloured: "
                        "gmtView.segRects.filter((r) => r.block && r.series !== null).length, "
                        "blocks: gmtView.segRects.filter((r) => r.block).length})")
        check(got["keys"] > 0 and got["coloured"] > 0,
              label + ": the segments at the peak not coloured by category: %r" % got)
        print("%s: segments at the peak by category: %d of %d blocks coloured, %d series" % (
            label, got["coloured"], got["blocks"], got["keys"]))
        check(b.errors == [], label + ": errors stacked by category: %r" % b.errors)
        page.eval("(() => { const s = document.getElementById('stackby'); s.value = '';"
                  " s.dispatchEvent(new Event('change')); return true; })()")
    # a wheel zoom: redrawn from a tile
    box = canvas_box(page, "timeline")
    n0 = page.eval("gmtView.fetched.timeline")
    span0 = page.eval("gmtView.hi - gmtView.lo")
    x, y = box["x"] + 78 + 0.3 * (box["w"] - 92), box["y"] + box["h"] / 2
    for _ in range(4):
        page.wheel(x, y, -400)
    page.wait_for("gmtView.fetched.timeline > %d && gmtShare.last && gmtShare.last.depth > 0 && "
                  "gmtView.lastTimeline.lo === gmtShare.last.lo" % n0, timeout=20)
    got = page.eval("({span: gmtView.hi - gmtView.lo, lo: gmtView.lo, hi: gmtView.hi, "
                    "last: gmtShare.last, drawn: gmtView.tl.n})")
    check(got["span"] < span0 / 4 and got["last"]["lo"] <= max(got["lo"], 0) and
          got["last"]["hi"] >= got["hi"] - 1 or got["last"]["depth"] == doc["depth"],
          label + ": the zoom: %r" % got)
    print("%s: zoomed to %.3f of the run: a depth-%d tile [%d, %d)" % (
        label, got["span"] / span0, got["last"]["depth"], got["last"]["lo"], got["last"]["hi"]))
    page.screenshot(os.path.join(os.path.dirname(out), label + "-share-zoomed.png"))
    # a click on a block: its facts when embedded, else the note
    page.eval("document.getElementById('reset').click(); true")
    page.wait_for("gmtShare.last && gmtShare.last.depth === 0 && gmtView.allocs && "
                  "gmtView.allocs.t0 === 0")
    # the whole run's window summary: drawn from the embedded /api/window, nothing missed
    device = page.eval("gmtView.device")
    win = answers(doc, "/api/window", device=device)
    missed = page.eval("gmtShare.missed")
    page.eval("document.getElementById('summarize').click(); true")
    page.wait_for("gmtView.summary_ && gmtView.summary_.lo === gmtView.lo && "
                  "!document.getElementById('summary').hidden", timeout=20)
    shown = page.eval("({stacks: document.querySelectorAll('#summary-stacks tbody tr').length, "
                      "sites: [...document.querySelectorAll('#summary-sites tbody tr')].map(tr => "
                      "Number(tr.dataset.stackId)), cats: [...document.querySelectorAll("
                      "'#summary-categories tbody tr')].map(tr => tr.dataset.category), "
                      "steps: [...document.querySelectorAll('#summary-steps tbody tr')].map(tr => "
                      "Number(tr.dataset.step)), ooms: [...document.querySelectorAll("
                      "'#summary-ooms li')].map(li => li.dataset.verdict), "
                      "head: document.getElementById('summary-ooms-note').textContent, "
                      "missed: gmtShare.missed, hash: location.hash})")
    if check(win and "body" in win[0], label + ": no /api/window embedded for device %d" % device):
        w = win[0]["body"]
        cats = w["categories"] or {"at_peak": {}, "at_end": {}}
        check(shown["stacks"] == len(w["diff"]["stacks"]) and
              shown["sites"] == [x["stack_id"] for x in w["sites"]["listed"]] and
              shown["cats"] == [k for k in cats["at_peak"] if cats["at_peak"][k] or
                                cats["at_end"][k]] and
              shown["steps"] == [r["step"] for r in w["steps"]["steps"]] and
              shown["ooms"] == [o["verdict"] or "" for o in w["ooms"]["oom_events"]] and
              (shown["head"] == "no OOM") == (w["ooms"]["count"] == 0) and
              shown["missed"] == missed and "summary=1" in shown["hash"],
              label + ": the share file's summary %r, the embedded window's %d stacks, sites %r, "
              "steps %r, %d OOMs" % (shown, len(w["diff"]["stacks"]),
                                     [x["stack_id"] for x in w["sites"]["listed"]],
                                     [r["step"] for r in w["steps"]["steps"]], w["ooms"]["count"]))
        print("%s: the share file's summary: %d diff sites, %d top sites, %d categories, %d steps, "
              "%d OOMs" % (label, shown["stacks"], len(shown["sites"]), len(shown["cats"]),
                           len(shown["steps"]), len(shown["ooms"])))
    page.screenshot(os.path.join(os.path.dirname(out), label + "-share-summary.png"))
    bb = canvas_box(page, "blocks")
    rects = page.eval("gmtView.rects.filter(r => r.w >= 3 && r.h >= 3)")
    inside = [r for r in rects if r["id"] in embedded]
    if check(inside, label + ": no embedded block drawn big enough to click"):
        r = max(inside, key=lambda r: r["w"] * r["h"])
        page.click(bb["x"] + r["x"] + r["w"] / 2, bb["y"] + r["y"] + r["h"] / 2)
        page.wait_for("gmtView.detail && gmtView.detail.alloc_id === %d && "
                      "!document.getElementById('detail').hidden" % r["id"])
        want = embedded[r["id"]]
        shown = page.eval("[document.getElementById('d-size').dataset.value, "
                          "[...document.querySelectorAll('#d-alloc_frames li.frame')]"
                          ".map(li => li.dataset.name)]")
        check(shown == [str(want["size"]), [f["name"] or "" for f in want["alloc_frames"]]],
              label + ": block %d shown %r" % (r["id"], shown))
    # a block that is not embedded (asked as a click would ask it)
    page.eval("selectBlock(-987654321).catch(showError); true")
    page.wait_for("document.getElementById('share-note') && "
                  "!document.getElementById('share-note').hidden")
    msg = page.eval("document.getElementById('share-note').textContent")
    check(MISSING in msg and page.eval("document.getElementById('detail').hidden"),
          label + ": a block not embedded: %r" % msg)
    page.eval("document.getElementById('search-q').value = 'forward'; "
              "document.getElementById('search-form').requestSubmit(); true")
    page.wait_for("document.getElementById('search-note').textContent.length > 0 && "
                  "!document.getElementById('search-note').textContent.startsWith('search')")
    note = page.eval("document.getElementById('search-note').textContent")
    check(MISSING in note, label + ": the search says %r" % note)
    check(page.eval("window.__gmtRequests") == 0, label + ": the page made %d requests" %
          page.eval("window.__gmtRequests"))
    check(b.errors == [], label + ": errors: %r" % b.errors)
    print("%s: file:// page ready in %.2f s (%d bytes)" % (label, load, os.path.getsize(out)))


def main():
    tmp = tempfile.mkdtemp(prefix="gmt-share-")
    env = dict(os.environ, GMT_CACHE_DIR=os.path.join(tmp, "cache"))
    trace = os.path.join(tmp, "two.zst")
    subprocess.run([SYNTH, "-o", trace, "--devices", "2", "--names", "--steps", "12"],
                   check=True, capture_output=True)
    inputs = [("synth", trace)]
    for name in ("train-step-m512.pickle", "pt21-no-timestamps.pickle"):
        p = os.path.join(SHARED, name)
        if SHARED and os.path.exists(p):
            inputs.append((name.split(".")[0], p))
        else:
            print("skipped %s: not in %r" % (name, SHARED))
    docs = []
    for label, inp in inputs:
        out = os.path.join(tmp, label, "share.html")
        os.makedirs(os.path.dirname(out))
        t = time.monotonic()
        res = run(["view", inp, "--html", out], env)
        print("%s: %s (%.2f s, the database built too)" % (label, res.stdout.strip(),
                                                             time.monotonic() - t))
        doc, size = check_file(out, label, res)
        compare_server(doc, inp, env, label)
        if label == "synth":
            check_bad(inp, env, tmp, label)
            check_bound(inp, env, tmp, label, doc["depth"])
        docs.append((label, out, doc))
    try:
        with browser.Browser() as b:
            for label, out, doc in docs:
                check_browser(b, out, doc, label)
    except browser.BrowserMissing as e:
        print("the browser checks skipped:", e)
    return checks.finish("ok: %d inputs" % len(inputs))


if __name__ == "__main__":
    sys.exit(main())
