#!/usr/bin/env python3
"""bench_view.py — `memanalyze view` as a user meets it (issue 31), for bench/run_view.sh.

    bench_view.py MEMANALYZE INPUT LABEL [--reps N] [--requests N] [--steps N] [--seed S]
                  [--no-browser] [--memoryviz MemoryViz.js] [--memoryviz-reps N]
                  [--memoryviz-timeout S]

On INPUT, whose database is already cached (run_view.sh builds it first, untimed):
  0. one `view` started until /api/allocations answers 200 (the blocks index made on first use:
     its time printed, apart), then stopped: what follows is warm;
  a. first screen, REPS times: from starting `memanalyze view INPUT --port 0` to the URL printed,
     then the data the page asks on load, in its order (viewer.js main → switchDevice →
     fetchWindow): /api/summary; /api/timeline (the whole run), /api/marks, /api/steps together;
     then /api/timeline and /api/allocations of the window (and /api/marks of it when the
     whole run's steps were strided) together — each phase's end from the start of `view`; and
     in headless Chromium (tests/browser.py, already up) from starting `view` to the page's
     body[data-ready="1"], with the JS heap then (Runtime.getHeapUsage, after a GC) and a
     segment map in the page (setCursor at the middle → drawn);
  (with --memoryviz) PyTorch's MemoryViz.js on the same input in the same browser (memoryviz()):
     navigation → its first view drawn and painted (the pickle's download and unpickle on the
     way), → its segment map ("Allocator State History") drawn and painted, its JS heap and
     its tab's renderer memory (resident, at most);
  b. REQUESTS random requests over one keep-alive connection (http.client), timed at the
     client: zoom/pan (a random window at a random zoom, the whole run down to 1/8^7 of it:
     /api/timeline and /api/allocations of it), clicks (/api/block of a block the last
     allocations answer drew), segment maps (/api/segments at a random event, count=400 as the
     page asks), window summaries (/api/window) and stacks (/api/stacks, a random `by`): per
     endpoint p50/p95/max and the largest body;
  c. the JS heap after STEPS zoom/pan steps in the page (wheel and drag events over the
     timeline, each waited for until its window is drawn), after a GC, with its largest value
     seen before a GC on the way.
Before each timed phase (each first screen, the requests, the zoom/pan steps) every file of
$GMT_CACHE_DIR is read once (warm_cache): "warm" is the database cached, and some VMs reclaim
page cache a process has not touched for a while (dev-2c's kdamond pages out whatever was idle
~60 s: a random request into a 1 GB blocks index then read from disk, 1-4 s).
Prints lines for bench/README.md and, last, one JSON line ("RESULT {...}") for the script.
Python 3 standard library only (the browser over tests/browser.py's pipe).
"""
import argparse
import glob
import http.client
import json
import os
import random
import select
import signal
import subprocess
import sys
import threading
import time
from urllib.parse import urlencode, urlparse, parse_qs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import browser  # noqa: E402

PAGE_STEPS = 200  # viewer.js's PAGE_STEPS
K_BLOCKS = 300  # timeline.js asks /api/allocations with k=300


def warm_cache():
    """Reads every file of $GMT_CACHE_DIR (the databases and their indexes) into the page cache."""
    d = os.environ.get("GMT_CACHE_DIR")
    for f in sorted(glob.glob(os.path.join(d, "*"))) if d else []:
        try:
            with open(f, "rb") as fh:
                while fh.read(1 << 24):
                    pass
        except OSError:
            pass  # a file the server is replacing: the next phase reads it


def warmed(phase, *args):
    """phase(*args) after warm_cache()."""
    warm_cache()
    return phase(*args)


def start_view(mem, inp):
    t0 = time.monotonic()
    p = subprocess.Popen([mem, "view", inp, "--port", "0"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([p.stdout], [], [], 120)
    line = p.stdout.readline() if ready else ""
    t_url = time.monotonic() - t0
    if not line.startswith("memanalyze view: http://"):
        p.kill()
        raise RuntimeError("view printed no URL: %r %s" % (line, p.stderr.read()))
    return p, line.split(": ", 1)[1].strip(), t0, t_url


def stop_view(p):
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    p.stdout.close()
    p.stderr.close()


class Client:
    """One keep-alive connection to the viewer, the token in X-Token."""

    def __init__(self, url):
        u = urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.token = parse_qs(u.query)["token"][0]
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)

    def get(self, path, params=None):
        """(status, body bytes, seconds at the client)."""
        q = path + ("?" + urlencode(params) if params else "")
        t = time.monotonic()
        self.conn.request("GET", q, headers={"X-Token": self.token})
        r = self.conn.getresponse()
        body = r.read()
        return r.status, body, time.monotonic() - t

    def json(self, path, params=None):
        status, body, dt = self.get(path, params)
        if status != 200:
            raise RuntimeError("%s %s: %d %s" % (path, params, status, body[:200]))
        return json.loads(body), len(body), dt

    def close(self):
        self.conn.close()


def together(url, calls):
    """The calls [(path, params)] at once, one connection each, as the page's Promise.all does:
    their answers in order."""
    out = [None] * len(calls)
    errors = []

    def one(i, path, params):
        c = Client(url)
        try:
            out[i] = c.json(path, params)[0]
        except Exception as e:  # reported below
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=one, args=(i, p, q)) for i, (p, q) in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def pick_device(summary):
    devs = summary["devices"]
    if not devs:
        return 0
    if len(devs) > 1:
        return max(devs, key=lambda d: d["peak_allocated_bytes"])["device"]
    return devs[0]["device"]


def build_index(mem, inp):
    """Starts view until /api/allocations answers (the blocks index made or found) and the layout
    index is in the cache: seconds."""
    p, url, t0, _ = start_view(mem, inp)
    try:
        c = Client(url)
        device = pick_device(c.json("/api/summary")[0])
        tl = c.json("/api/timeline", {"device": device, "n": 16})[0]
        while True:
            st, _, _ = c.get("/api/allocations", {"device": device, "t0": 0,
                                                  "t1": tl["axis_end"], "k": 1})
            if st == 200:
                break
            if st != 503:
                raise RuntimeError("/api/allocations: %d" % st)
            time.sleep(0.1)
        # then the layout index (layout_index.h), which the same thread builds next: published
        # under its own name in the cache folder once complete
        cache = os.environ.get("GMT_CACHE_DIR")
        deadline = time.monotonic() + 3600
        while cache and not glob.glob(os.path.join(cache, "**", "*.layouts"), recursive=True):
            if time.monotonic() > deadline:
                raise RuntimeError("no layout index after an hour")
            time.sleep(0.1)
        c.close()
        return time.monotonic() - t0
    finally:
        stop_view(p)


def first_screen_http(mem, inp, n):
    """The page's load requests, timed from starting view: a dict of seconds."""
    p, url, t0, t_url = start_view(mem, inp)
    try:
        c = Client(url)
        summary = c.json("/api/summary")[0]
        t_summary = time.monotonic() - t0
        c.close()
        device = pick_device(summary)
        whole, marks, _ = together(url, [
            ("/api/timeline", {"device": device, "n": n}),
            ("/api/marks", {"device": device}),
            ("/api/steps", {"device": device, "first": 0, "count": PAGE_STEPS})])
        t_whole = time.monotonic() - t0
        end = max(whole["axis_end"], 2)
        calls = [("/api/timeline", {"device": device, "lo": 0, "hi": end, "n": n}),
                 ("/api/allocations", {"device": device, "t0": 0, "t1": end, "k": K_BLOCKS})]
        if marks.get("step_stride", 1) > 1:
            calls.append(("/api/marks", {"device": device, "lo": 0, "hi": end, "ooms": 0}))
        together(url, calls)
        t_window = time.monotonic() - t0
        return {"url": t_url, "summary": t_summary, "whole": t_whole, "first_screen": t_window}
    finally:
        stop_view(p)


def heap(page, timeout=30):
    """The JS heap's used bytes after a GC."""
    page.call("HeapProfiler.collectGarbage", timeout=timeout)
    return page.call("Runtime.getHeapUsage", timeout=timeout)["usedSize"]


def first_screen_browser(b, mem, inp):
    wall0 = time.time()
    p, url, t0, t_url = start_view(mem, inp)
    try:
        page = b.open(url)
        page.wait_for("document.body.dataset.ready", timeout=120, poll=0.01)
        t_ready = time.monotonic() - t0
        # the page's own clock: when its navigation began, when its last request was answered
        nav, last = page.eval("[performance.timeOrigin, Math.max(0, ...performance"
                              ".getEntriesByType('resource').map((e) => e.responseEnd))]")
        t_nav = nav / 1e3 - wall0
        state = page.eval("document.body.dataset.ready")
        if state != "1":
            raise RuntimeError("the page did not draw: " + str(
                page.eval("document.getElementById('error').textContent")))
        n = page.eval("Math.max(16, Math.min(2000, Math.round(plotWidth())))")
        h = heap(page)
        # a segment map, as a click on the timeline asks it: setCursor to the drawn segments,
        # and that frame painted (the next one begins), as for MemoryViz
        t_seg = page.eval("new Promise((done) => { const t = performance.now(), "
                          "k = gmtView.fetched.segments; setCursor(gmtView.end / 2); "
                          "const poll = () => gmtView.fetched.segments > k ? "
                          "requestAnimationFrame(() => requestAnimationFrame(() => "
                          "done(performance.now() - t))) : "
                          "setTimeout(poll, 2); poll(); })", timeout=120) / 1e3
        close_page(b, page)
        return {"url": t_url, "navigation": t_nav, "last_answer": t_nav + last / 1e3,
                "ready": t_ready, "heap": h, "n": n, "segment_map": t_seg}
    finally:
        stop_view(p)


def close_page(b, page):
    """The page's target closed (the next run's page starts alone)."""
    try:
        target = page.call("Target.getTargetInfo")["targetInfo"]["targetId"]
        b.call("Target.closeTarget", targetId=target)
    except browser.PageError:
        page.eval("location.href = 'about:blank'; true")


MEMORYVIZ_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,">%s</head><body>
<script>
// before MemoryViz.js runs: its errors (an exception in its fetch's promise chain is an
// unhandled rejection, nothing else shows it), and a frame watcher: `drawn` is the first frame
// with a view (an svg) in the DOM, `first` the frame after it, once that one was painted
window.gmtMviz = {};
addEventListener("error", (e) => { gmtMviz.error = gmtMviz.error || String(e.message); });
addEventListener("unhandledrejection", (e) => {
  gmtMviz.error = gmtMviz.error || String(e.reason && (e.reason.stack || e.reason)); });
(function watch() {
  requestAnimationFrame(() => {
    if (document.querySelector("body > div svg")) {
      gmtMviz.drawn = performance.now();
      requestAnimationFrame(() => { gmtMviz.first = performance.now(); });
    } else if (!gmtMviz.error) {
      watch();
    }
  });
})();
</script>
<script type="module">
import {add_remote_files} from "./MemoryViz.js";
add_remote_files([{name: "snapshot.pickle", url: "snapshot.pickle"}]);
</script>
</body></html>
"""

# the view select set to the segment map, timed to its first frame with it drawn
# (create_segment_view draws in a frame callback it asks for during the change, before this
# one's) and to the next frame (that one painted); then what it drew: the segment map's
# rectangles and the event list's rows
MEMORYVIZ_SEGMENTS = """new Promise((done) => {
  const t = performance.now();
  const v = document.querySelectorAll("select")[1];
  v.value = "Allocator State History";
  v.dispatchEvent(new Event("change"));
  requestAnimationFrame(() => {
    const drawn = performance.now();
    requestAnimationFrame(() => {
      const div = [...document.querySelectorAll("body > div")].filter(
        (d) => d.style.display !== "none").pop();
      done({drawn: drawn - t, painted: performance.now() - t,
            rects: div ? div.querySelectorAll("svg rect").length : 0,
            rows: div ? div.querySelectorAll("pre").length : 0,
            error: gmtMviz.error || null});
    });
  });
})"""


def renderer_memory(b):
    """The largest Chromium renderer's resident and peak resident memory (VmRSS, VmHWM, bytes):
    the tab's process (the browser's children, by /proc)."""
    kids, best = {}, (0, 0)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(pid))
        except (OSError, ValueError, IndexError):
            continue
    todo, tree = [b.proc.pid], []
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += kids.get(p, [])
    for pid in tree:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if b"--type=renderer" not in f.read():
                    continue
            with open("/proc/%d/status" % pid) as f:
                st = dict(line.split(":", 1) for line in f if ":" in line)
            rss, hwm = (int(st[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM"))
            best = max(best, (rss, hwm))
        except (OSError, KeyError, ValueError):
            continue
    return best


def memoryviz_importmap(path, d):
    """The import map's text for the page in folder d: its entries that are paths relative to
    the map's own folder served from there (that folder linked into d as `importmap/`)."""
    with open(path) as f:
        m = json.load(f)
    os.symlink(os.path.dirname(os.path.abspath(path)), os.path.join(d, "importmap"))
    for k, v in m.get("imports", {}).items():
        if not v.startswith(("http:", "https:", "/")):
            m["imports"][k] = "./importmap/" + v[2:] if v.startswith("./") else "./importmap/" + v
    return json.dumps(m)


def memoryviz(b, js, inp, reps, timeout=600):
    """PyTorch's MemoryViz.js on INPUT in the same browser: a page around it in a temporary
    folder served over HTTP (a module script needs it), the snapshot through its URL loader
    (add_remote_files). First screen: navigation start → its first view ("Active Memory
    Timeline") in the DOM (a frame with it) and that frame painted (the next one begins), with
    the snapshot's download (resource timing) and unpickling (its console.log of the result) on
    the way; segment map: the view select set to "Allocator State History" → drawn, painted.
    MEMORYVIZ_IMPORTMAP (a JSON import map) maps its d3 imports, which name a CDN, to local
    copies on a machine without the network (relative paths: from the map's folder). Its main
    thread is busy for the whole load, so each evaluation here may wait up to `timeout` s. A
    dict, or {"error": why}."""
    import functools
    import http.server
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="gmt-memoryviz-")
    server = None
    try:
        shutil.copy(js, os.path.join(d, "MemoryViz.js"))
        os.symlink(os.path.abspath(inp), os.path.join(d, "snapshot.pickle"))
        imports = os.environ.get("MEMORYVIZ_IMPORTMAP", "")
        head = ('<script type="importmap">%s</script>' % memoryviz_importmap(imports, d)
                if imports else "")
        with open(os.path.join(d, "index.html"), "w") as f:
            f.write(MEMORYVIZ_PAGE % head)

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

        handler = functools.partial(Quiet, directory=d)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = "http://127.0.0.1:%d/index.html" % server.server_address[1]
        runs = []
        for _ in range(reps):
            del b.errors[:]
            t0 = time.monotonic()
            page = b.open(url, timeout=timeout)
            try:
                while True:
                    st = page.eval("[gmtMviz.first || 0, gmtMviz.error || '']", timeout=timeout)
                    if st[0] or st[1]:
                        break
                    if time.monotonic() - t0 > timeout:
                        st = [0, "nothing drawn in %d s" % timeout]
                        break
                    time.sleep(0.05)
            except browser.PageError as e:  # the tab crashed, or did not answer in time
                st = [0, "%s (%.0f s after navigation)" % (e, time.monotonic() - t0)]
            if not st[0]:
                mem = renderer_memory(b)
                close_page(b, page)
                why = (st[1] or "?").splitlines()[0]
                others = [e.splitlines()[0] for e in b.errors if why not in e][:3]
                return {"error": "MemoryViz drew nothing: %s; %s; the tab's renderer %.0f MB "
                        "resident, %.0f MB at most" % (
                            why, "; ".join(others) or "no other console error",
                            mem[0] / 1e6, mem[1] / 1e6)}
            info = page.eval("[performance.timeOrigin, gmtMviz.drawn, gmtMviz.first, "
                             "Math.max(0, ...performance.getEntriesByType('resource').filter("
                             "(e) => e.name.endsWith('snapshot.pickle')).map((e) => "
                             "e.responseEnd))]", timeout=timeout)
            origin = info[0]
            logged = [m["params"]["timestamp"] - origin for m in b.events
                      if m.get("method") == "Runtime.consoleAPICalled"
                      and m.get("sessionId") == page.session
                      and m["params"].get("type") == "log"
                      and m["params"].get("args", [{}])[0].get("type") == "object"]
            del b.events[:]
            h = heap(page, timeout)
            seg = page.eval(MEMORYVIZ_SEGMENTS, timeout=timeout)
            if seg["error"] or not seg["rects"]:
                close_page(b, page)
                return {"error": "MemoryViz's segment map: %s" % (
                    seg["error"] or "no rectangles drawn")}
            h2 = heap(page, timeout)
            mem = renderer_memory(b)
            close_page(b, page)
            runs.append({"first_drawn": info[1] / 1e3, "first_screen": info[2] / 1e3,
                         "downloaded": info[3] / 1e3,
                         "unpickled": logged[0] / 1e3 if logged else None,
                         "segment_map": seg["drawn"] / 1e3, "segment_painted": seg["painted"] / 1e3,
                         "segment_rects": seg["rects"], "event_rows": seg["rows"], "heap": h,
                         "heap_segments": h2, "rss": mem[0], "rss_peak": mem[1]})
        return {"runs": runs}
    finally:
        if server:
            server.shutdown()
        shutil.rmtree(d, ignore_errors=True)


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    i = min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1) + 0.4999))))
    return xs[i]


def random_window(rng, end):
    zoom = rng.randrange(8)
    w = max(2, end >> (3 * zoom))
    lo = rng.randrange(0, max(1, end - min(w, end) + 1))
    return lo, lo + w


def when(axis, t, end):
    t = max(0, min(int(t), end - 1))
    return ("event:%d" if axis == "event" else "time:%dns") % t


def random_requests(mem, inp, n, count, seed):
    """REQUESTS random requests: {endpoint: [(seconds, bytes, status)]}."""
    p, url, _, _ = start_view(mem, inp)
    rng = random.Random(seed)
    out = {}
    try:
        c = Client(url)
        summary = c.json("/api/summary")[0]
        device = pick_device(summary)
        whole = c.json("/api/timeline", {"device": device, "n": n})[0]
        axis, end = whole["axis"], max(whole["axis_end"], 2)
        events = summary["run"]["events"]
        blocks = []
        done = 0

        def ask(name, path, params):
            nonlocal done
            st, body, dt = c.get(path, params)
            out.setdefault(name, []).append((dt, len(body), st))
            done += 1
            return json.loads(body) if st == 200 else None

        while done < count:
            r = rng.random()
            lo, hi = random_window(rng, end)
            if r < 0.45 or (r < 0.65 and not blocks):
                ask("timeline", "/api/timeline", {"device": device, "lo": lo, "hi": hi, "n": n})
                a = ask("allocations", "/api/allocations",
                        {"device": device, "t0": lo, "t1": hi, "k": K_BLOCKS})
                if a and a["blocks"]:
                    blocks = [b[0] for b in a["blocks"]]
            elif r < 0.65:
                ask("block", "/api/block", {"id": rng.choice(blocks)})
            elif r < 0.80:
                ask("segments", "/api/segments", {"device": device, "count": 400,
                                                  "at": "event:%d" % rng.randrange(events)})
            elif r < 0.90:
                ask("window", "/api/window", {"device": device, "from": when(axis, lo, end),
                                              "to": when(axis, hi - 1, end)})
            else:
                ask("stacks", "/api/stacks", {"device": device, "lo": lo, "hi": hi, "n": n,
                                              "by": rng.choice(["site", "category", "stream",
                                                                "size"])})
        c.close()
        return out
    finally:
        stop_view(p)


def settled(page, timeout=60):
    page.wait_for("gmtView.pending === 0 && gmtView.lastTimeline && "
                  "gmtView.lastTimeline.lo === gmtView.lo && gmtView.lastTimeline.hi === gmtView.hi"
                  " && (!gmtView.lastAllocations || gmtView.lastAllocations.t0 === gmtView.lo)",
                  timeout=timeout, poll=0.01)


def zoom_pan_heap(b, mem, inp, steps, seed):
    """The JS heap after load and after STEPS zoom/pan steps, after a GC each; the largest seen
    before a GC along the way; the seconds per step (event to drawn)."""
    p, url, _, _ = start_view(mem, inp)
    rng = random.Random(seed)
    try:
        page = b.open(url)
        page.wait_for("document.body.dataset.ready", timeout=120)
        settled(page)
        h0 = heap(page)
        box = page.eval("(() => { const c = document.getElementById('timeline'); "
                        "const r = c.getBoundingClientRect(); return {x: r.left + c.clientLeft, "
                        "y: r.top + c.clientTop, w: c.clientWidth, h: c.clientHeight}; })()")
        left, right = 78, 14
        y = box["y"] + box["h"] / 2
        top, times = h0, []
        for i in range(steps):
            x = box["x"] + left + rng.uniform(0.05, 0.95) * (box["w"] - left - right)
            t = time.monotonic()
            if i % 3 == 2:  # a drag pans
                dx = rng.uniform(-300, 300)
                page.mouse("mouseMoved", x, y)
                page.mouse("mousePressed", x, y)
                for k in range(1, 5):
                    page.mouse("mouseMoved", x + dx * k / 4, y, buttons=1)
                page.mouse("mouseReleased", x + dx, y)
            else:  # the wheel zooms, in more often than out (as one explores)
                page.wheel(x, y, rng.choice([-1, -1, 1]) * rng.uniform(200, 900))
            time.sleep(0.04)  # past timeline.js's 30 ms fetch timer
            settled(page)
            times.append(time.monotonic() - t)
            top = max(top, page.call("Runtime.getHeapUsage")["usedSize"])
        h1 = heap(page)
        span = page.eval("[gmtView.lo, gmtView.hi, gmtView.end]")
        close_page(b, page)
        return {"heap_load": h0, "heap_after": h1, "heap_max": top,
                "step_p50": percentile(times, 0.5), "step_max": max(times), "window": span}
    finally:
        stop_view(p)


def ms(s):
    return "%.1f" % (s * 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mem")
    ap.add_argument("input")
    ap.add_argument("label")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--memoryviz", help="PyTorch's MemoryViz.js, timed on the same input")
    ap.add_argument("--memoryviz-reps", type=int, help="its runs (default --reps)")
    ap.add_argument("--memoryviz-timeout", type=int, default=600,
                    help="seconds it may take to draw, and each step after (default 600)")
    a = ap.parse_args()
    res = {"label": a.label}
    print("== %s" % a.label)
    t = build_index(a.mem, a.input)
    res["index_s"] = t
    print("blocks index (first view, untimed in what follows): %.2f s to /api/allocations' "
          "first answer" % t)

    b = None
    n = 1308  # the page's n at 1400 px (replaced by the page's own when there is a browser)
    if not a.no_browser:
        try:
            b = browser.Browser().__enter__()
            close_page(b, b.open("about:blank"))  # the browser's first tab, not timed
        except browser.BrowserMissing as e:
            print("browser: skipped (%s)" % e)
    try:
        if b:
            runs = [warmed(first_screen_browser, b, a.mem, a.input) for _ in range(a.reps)]
            n = runs[0]["n"]
            res["browser"] = runs
            j = lambda k, f="%.3f": " / ".join(f % r[k] for r in runs)  # noqa: E731
            print("browser, start of view → body[data-ready]: %s s (URL printed %s s, the tab's "
                  "navigation began %s s, its last answer %s s); JS heap then %s MB" % (
                      j("ready"), j("url"), j("navigation"), j("last_answer"),
                      " / ".join("%.2f" % (r["heap"] / 1e6) for r in runs)))
            print("browser, a segment map (setCursor at the middle → drawn): %s ms" %
                  " / ".join("%.1f" % (r["segment_map"] * 1e3) for r in runs))
        if a.memoryviz and b:
            mv = memoryviz(b, a.memoryviz, a.input, a.memoryviz_reps or a.reps,
                           a.memoryviz_timeout)
            res["memoryviz"] = mv
            if "error" in mv:
                print("MemoryViz: not measured: " + mv["error"])
            else:
                r = mv["runs"]
                j = lambda k, f="%.3f", m=1: " / ".join(  # noqa: E731
                    "-" if x[k] is None else f % (x[k] * m) for x in r)
                print("MemoryViz (%s), from navigation: snapshot downloaded %s s, unpickled %s s, "
                      "first view (Active Memory Timeline) drawn %s s, painted %s s" % (
                          a.memoryviz, j("downloaded"), j("unpickled"), j("first_drawn"),
                          j("first_screen")))
                print("MemoryViz, segment map (Allocator State History: %s rectangles, %s event "
                      "rows): drawn %s ms, painted %s ms; JS heap %s MB, with the segment map "
                      "%s MB; the tab's renderer %s MB resident, %s MB at most" % (
                          j("segment_rects", "%d"), j("event_rows", "%d"),
                          j("segment_map", "%.0f", 1e3), j("segment_painted", "%.0f", 1e3),
                          j("heap", "%.0f", 1e-6), j("heap_segments", "%.0f", 1e-6),
                          j("rss", "%.0f", 1e-6), j("rss_peak", "%.0f", 1e-6)))
        elif a.memoryviz:
            print("MemoryViz: not measured: no browser")
        runs = [warmed(first_screen_http, a.mem, a.input, n) for _ in range(a.reps)]
        res["http"] = runs
        for k, what in (("url", "URL printed"), ("summary", "/api/summary answered"),
                        ("whole", "+ whole-run timeline, marks, steps"),
                        ("first_screen", "+ window's timeline, allocations (first screen)")):
            print("http, start of view → %s: %s s" % (
                what, " / ".join("%.3f" % r[k] for r in runs)))

        warm_cache()
        reqs = random_requests(a.mem, a.input, n, a.requests, a.seed)
        res["requests"] = {}
        allt, worst_bytes, bad = [], 0, 0
        print("%d random requests, n=%d (client wall, keep-alive):" % (a.requests, n))
        print("| endpoint | requests | p50 | p95 | max | largest body | not 200 |")
        print("|---|---|---|---|---|---|---|")
        for name in ("timeline", "allocations", "block", "segments", "window", "stacks"):
            xs = reqs.get(name, [])
            if not xs:
                continue
            ts = [x[0] for x in xs]
            big = max(x[1] for x in xs)
            nb = sum(1 for x in xs if x[2] != 200)
            allt += ts
            worst_bytes, bad = max(worst_bytes, big), bad + nb
            res["requests"][name] = {"n": len(xs), "p50": percentile(ts, .5),
                                     "p95": percentile(ts, .95), "max": max(ts), "bytes": big,
                                     "not_200": nb}
            print("| %s | %d | %s ms | %s ms | %s ms | %.1f KiB | %d |" % (
                name, len(xs), ms(percentile(ts, .5)), ms(percentile(ts, .95)), ms(max(ts)),
                big / 1024, nb))
        res["all_p95"], res["all_max"], res["max_bytes"] = (percentile(allt, .95), max(allt),
                                                           worst_bytes)
        print("all: p95 %s ms, max %s ms, largest %.1f KiB, %d not 200" % (
            ms(res["all_p95"]), ms(res["all_max"]), worst_bytes / 1024, bad))

        if b:
            warm_cache()
            z = zoom_pan_heap(b, a.mem, a.input, a.steps, a.seed)
            res["zoom_pan"] = z
            print("JS heap: %.2f MB after load, %.2f MB after %d zoom/pan steps (after a GC each), "
                  "%.2f MB the most seen before a GC; a step drawn in %s ms (p50), %s ms max" % (
                      z["heap_load"] / 1e6, z["heap_after"] / 1e6, a.steps,
                      z["heap_max"] / 1e6, ms(z["step_p50"]), ms(z["step_max"])))
    finally:
        if b:
            b.__exit__(None, None, None)
    print("RESULT " + json.dumps(res))


if __name__ == "__main__":
    main()
