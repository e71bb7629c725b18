#!/usr/bin/env python3
"""test_view_start.py — `memanalyze view`'s start and first screen read a few chunks of the event
store, not the run (issue 31: the first screen in a time independent of the run's length), and
the shortcut that makes it so answers what the whole computation answers.

  - /api/steps?device=D&first=K&count=N (step_table_part: the rows asked for, from the summary
    tables and those steps' events) equal to the rows [K, K + N) of `steps --device D --json`,
    with "step_count" its length and "first_row" K (or the length, past the end): the page's
    first 200, one row, the second and third, a few from the fourth, 50 in the middle, the last
    ones, none past the end; on a synth trace of two devices with a planted spike (an anomaly in
    the first page) and ~4 700 steps, on a history that begins mid-run (make_pickles.py
    --mid-run: steps cut before it, one partial) and on the shared PyTorch snapshots (implicit
    steps: the whole table, cut) when present; the synth device's first page holds the spike's
    anomaly, the mid-run input cut steps and a partial one (what the parts must get right);
  - on the synth trace (~730 chunks of 4096 events), with its blocks index made first:
    GMT_CHUNK_COUNT=1 `view`, then the page's load requests in its order (viewer.js main →
    switchDevice → fetchWindow: /api/summary; the whole run's /api/timeline, /api/marks and the
    first 200 steps; the window's /api/timeline, /api/allocations and, when the marks are
    strided, its /api/marks), then SIGINT: the chunks decoded before the URL and in all are at
    most twice per device those that hold the events of the first 205 steps (the page's rows
    and the 5 after them that their anomalies compare with: scanned, and read again for their
    end states' segments) and a few more, and under a quarter of the store;
    a pass over the run (the whole steps table at the start, as before) decodes all of them;
  - /api/window's steps (step_table_overlap's range, then step_table_part's rows of it) against
    `steps --json` filtered here by overlap with the window (a step holds (begin, end], its ends
    from `sql`; the rows from the first that overlaps to the last): "steps_in_window",
    "steps_listed", the rows, "first_row", "step_count" and the history, for the whole run, its
    start and end, windows inside a step, on its ends, between steps, empty ones and random
    ones, on every device of the synth trace, of the mid-run input (before its history too), of
    a snapshot whose steps nest and overlap (a range holding several, one inside another, one
    across three: begins out of the table's order) and of the shared snapshots (implicit steps:
    the whole table, as before);
  - GMT_CHUNK_COUNT=1 on the synth trace (its blocks and layout indexes made first, and opened
    by the fresh server before it is asked): its first /api/window of the whole run, then one in
    the middle, decode under a quarter
    of the store (no pass over every step's events: the whole table, 2 x 733 chunks and more,
    before this change).
  - SIGINT at once after the URL on a fresh cache (the builder at the start of the synth
    trace's blocks index, seconds of work): view exits 0 saying it stopped before its 2 indexes
    (blocks, layouts) were made, and the cache folder holds the database alone (no index, no
    temporary: the build was given up, not finished first); the next view makes them (the checks
    above).
Skips (77) when memanalyze was built without libmicrohttpd.

argv: synth memanalyze [shared_pytorch_dir]. Python 3 standard library only.
"""
import glob
import http.client
import json
import os
import pickle
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from urllib.parse import urlencode

SYNTH, MEM = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SHARED = sys.argv[3] if len(sys.argv) > 3 else ""
HERE = os.path.dirname(os.path.abspath(__file__))
PAGE_STEPS = 200  # viewer.js's PAGE_STEPS
WINDOW_STEPS = 200  # endpoints_window.c's WINDOW_MAX_STEPS
NEIGHBOURS = 5  # step_table.c: the anomalies compare a step with 5 on each side
CHUNK_ROWS = 4096  # event_store.h
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def run(args, env):
    p = subprocess.run([MEM] + args, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("memanalyze %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


class Viewer:
    def __init__(self, inp, env):
        self.p = subprocess.Popen([MEM, "view", inp, "--port", "0"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.p.stdout], [], [], 120)
        line = self.p.stdout.readline() if ready else ""
        m = re.match(r"memanalyze view: http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]+)$",
                     line.strip())
        if not m:
            self.p.kill()
            raise RuntimeError("view printed no URL: %r %s" % (line, self.p.stderr.read()))
        self.port, self.token = int(m.group(1)), m.group(2)

    def get(self, path, params=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        c.request("GET", path + ("?" + urlencode(params) if params else ""),
                  headers={"X-Token": self.token})
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, body

    def api(self, path, params=None):
        status, body = self.get(path, params)
        if status != 200:
            raise RuntimeError("%s %r: %d %s" % (path, params, status, body[:200]))
        return json.loads(body)

    def stop(self):
        """SIGINT; its stderr."""
        self.p.send_signal(signal.SIGINT)
        _, err = self.p.communicate(timeout=30)
        return err


def check_stop_mid_build(inp, env):
    """SIGINT while the builder makes the first index: given up, nothing of it left."""
    v = Viewer(inp, env)
    err = v.stop()
    check(v.p.returncode == 0, "view stopped mid-build: exit %s %r" % (v.p.returncode, err))
    check("stopped (SIGINT) before 2 of its indexes were made" in err,
          "view stopped mid-build does not say it gave its indexes up: %r" % err)
    left = sorted(os.listdir(env["GMT_CACHE_DIR"]))
    check(len(left) == 1 and left[0].endswith(".db"),
          "view stopped mid-build left more than its database: %s" % left)


def check_parts(inp, env, label):
    """/api/steps' parts against `steps --json`, every device."""
    v = Viewer(inp, env)
    try:
        summary = v.api("/api/summary")["devices"]
        cut = False  # a device's history begins mid-run: steps cut before it, one partial
        for dev in [d["device"] for d in summary] or [0]:
            want = json.loads(run(["steps", inp, "--device", str(dev), "--json"], env))
            n = len(want["steps"])
            if label == "synth":  # what the parts must get right is there
                check(any(r["anomaly"] for r in want["steps"][:PAGE_STEPS]),
                      "synth device %d: no anomaly in the first page (the spike)" % dev)
            cut |= want["history"]["steps_before"] > 0 and any(r["partial"] for r in want["steps"])
            for first, count in [(0, PAGE_STEPS), (0, 1), (1, 2), (3, 7), (n // 2, 50),
                                 (max(n - 3, 0), 10), (n, 5), (n + 10, 5)]:
                got = v.api("/api/steps", {"device": dev, "first": first, "count": count})
                what = "%s device %d: /api/steps first=%d count=%d" % (label, dev, first, count)
                check(got.pop("step_count") == n, what + ": step_count")
                check(got.pop("first_row") == min(first, n), what + ": first_row")
                exp = dict(want, steps=want["steps"][first:first + count])
                check(got == exp, what + " differs from steps --json: %r" % (next(
                    (("row", a, b) for a, b in zip(got["steps"], exp["steps"]) if a != b),
                    ("history", got["history"], exp["history"], len(got["steps"]))),))
        check(cut or label != "mid-run", "mid-run: no steps cut before the history")
        return summary
    finally:
        v.stop()


def first_screen(v, device):
    """The page's load requests, in its order."""
    v.api("/api/summary")
    n = 1251  # the timeline's buckets at a 1400 px wide page
    whole = v.api("/api/timeline", {"device": device, "n": n})
    marks = v.api("/api/marks", {"device": device})
    v.api("/api/steps", {"device": device, "first": 0, "count": PAGE_STEPS})
    end = max(whole["axis_end"], 2)
    v.api("/api/timeline", {"device": device, "lo": 0, "hi": end, "n": n})
    status, _ = v.get("/api/allocations", {"device": device, "t0": 0, "t1": end, "k": 300})
    check(status == 200, "/api/allocations after the index was made: %d" % status)
    if marks["step_stride"] > 1:
        v.api("/api/marks", {"device": device, "lo": 0, "hi": end, "ooms": 0})
    return marks


def chunk_counts(err):
    """GMT_CHUNK_COUNT's two counts on a stopped server's stderr: (before the URL, in all)."""
    start = re.search(r"(\d+) event chunks decoded before the URL", err)
    end = re.search(r"(\d+) event chunks decoded in all", err)
    check(start and end, "GMT_CHUNK_COUNT: no counts on stderr: %r" % err)
    return (int(start.group(1)), int(end.group(1))) if start and end else None


def check_chunks(inp, env, device, ndevices):
    # the blocks index first (made on the first view's first use): the run's events, once
    v = Viewer(inp, env)
    try:
        for _ in range(600):
            status, _ = v.get("/api/allocations", {"device": device, "t0": 0, "t1": 1, "k": 1})
            if status != 503:
                break
            time.sleep(0.1)
        check(status == 200, "the blocks index: /api/allocations %d" % status)
    finally:
        v.stop()
    total = json.loads(run(["sql", inp, "SELECT count(*) AS n FROM event_chunks", "--json"],
                           env))[0]["n"]
    last = json.loads(run(["sql", inp, "SELECT max(end_event_id) AS e FROM (SELECT end_event_id "
                           "FROM steps ORDER BY end_event_id, step LIMIT %d)" %
                           (PAGE_STEPS + NEIGHBOURS), "--json"], env))[0]["e"]
    needed = last // CHUNK_ROWS + 1  # the chunks that hold events 1 .. last
    v = Viewer(inp, dict(env, GMT_CHUNK_COUNT="1"))
    try:
        marks = first_screen(v, device)
    finally:
        err = v.stop()
    counts = chunk_counts(err)
    if not counts:
        return
    at_url, in_all = counts
    print("chunks decoded: %d before the URL, %d after the first screen; the first %d steps' "
          "events are in %d chunks, the store has %d (%d steps)" %
          (at_url, in_all, PAGE_STEPS + NEIGHBOURS, needed, total, marks["steps_total"]))
    check(total >= 700, "the synth trace has only %d chunks: too few to tell" % total)
    # per device at the start: those chunks scanned (the steps' peaks and counts) and read
    # again through event_rows (their end states' segments)
    bound = 2 * ndevices * needed + 16
    check(at_url <= in_all <= bound, "the first screen decoded %d chunks (%d before the URL): "
          "more than %d, twice the %d that hold the first steps' events per device and a few" %
          (in_all, at_url, bound, needed))
    check(in_all * 4 < total, "the first screen decoded %d of %d chunks" % (in_all, total))


def step_windows(bounds, last):
    """Windows (a, b] of event ids to ask: the whole run, its start and end, empty ones, and at a
    sample of the steps (in end order) the step itself, inside it, across its end, its end
    alone, just before its begin, just after its end; the gaps between consecutive steps; a few
    random ones. Clipped to [0, last]."""
    steps = sorted(bounds.values(), key=lambda be: (be[1], be[0]))
    w = [(0, last), (0, 0), (0, 1), (0, 2), (last, last), (last - 1, last), (last // 2, last // 2),
         (last // 3, 2 * last // 3), (last // 2, last)]
    pick = steps[:4] + steps[len(steps) // 2 - 2:len(steps) // 2 + 2] + steps[-4:]
    pick += steps[::max(1, len(steps) // 12)]
    for b, e in pick:
        w += [(b, e), (b + 1, e - 1), (e - 1, e + 1), (e, e), (b - 3, b), (e, e + 2), (b, b + 1)]
    for (_, e), (b, _) in zip(steps, steps[1:]):
        if b > e:
            w.append((e, b))
    rnd = random.Random(31)
    for _ in range(12):
        a = rnd.randrange(0, last + 1)
        w.append((a, min(last, a + rnd.randrange(0, last // 4 + 2))))
    return sorted({(max(0, a), min(last, b)) for a, b in w if max(0, a) <= min(last, b)})


def check_windows(inp, env, label, nested=False):
    """/api/window's steps against `steps --json` filtered here by overlap, every device;
    nested: the input's steps overlap (begins out of the table's order), checked first."""
    bounds = {r["step"]: (r["b"], r["e"]) for r in json.loads(run(
        ["sql", inp, "SELECT step, ifnull(begin_event_id, 0) AS b, end_event_id AS e FROM steps",
         "--json"], env))}
    by_end = sorted(bounds.items(), key=lambda kv: (kv[1][1], kv[0]))
    inverted = sum(1 for (_, x), (_, y) in zip(by_end, by_end[1:]) if y[0] < x[0])
    check(not nested or inverted >= 3, "%s: %d begins out of the table's order" % (label, inverted))
    last = json.loads(run(["sql", inp, "SELECT max(event_id) AS m FROM event_rows", "--json"],
                          env))[0]["m"] or 0
    v = Viewer(inp, env)
    asked = 0
    try:
        summary = v.api("/api/summary")["devices"]
        for dev in [d["device"] for d in summary] or [0]:
            want_doc = json.loads(run(["steps", inp, "--device", str(dev), "--json"], env))
            rows = want_doc["steps"]
            implicit = any(r["implicit"] for r in rows)
            for a, b in step_windows(bounds, last) if bounds else [(0, last), (0, last // 2)]:
                got = v.api("/api/window", {"device": dev, "from": "event:%d" % a,
                                            "to": "event:%d" % b})
                asked += 1
                what = "%s device %d: /api/window (%d, %d]" % (label, dev, a, b)
                if implicit:  # no bounds in steps: the whole table's rows, as before
                    check(got["steps"]["steps"] == rows[got["steps"]["first_row"]:][
                        :len(got["steps"]["steps"])], what + ": implicit rows")
                    continue
                inside = [i for i, r in enumerate(rows)
                          if bounds[r["step"]][0] < b and bounds[r["step"]][1] > a]
                count = inside[-1] - inside[0] + 1 if inside else 0
                want = rows[inside[0]:inside[-1] + 1][:WINDOW_STEPS] if inside else []
                st = got["steps"]
                check(got["steps_in_window"] == count, what + ": steps_in_window %d, want %d" %
                      (got["steps_in_window"], count))
                check(got["steps_listed"] == len(want), what + ": steps_listed %d, want %d" %
                      (got["steps_listed"], len(want)))
                check(st["steps"] == want, what + ": steps %s, want %s" % (
                    [r["step"] for r in st["steps"]][:8], [r["step"] for r in want][:8]))
                check(st["first_row"] == (inside[0] if inside else 0) and
                      st["step_count"] == len(rows), what + ": first_row %d step_count %d" %
                      (st["first_row"], st["step_count"]))
                check(st["history"] == want_doc["history"], what + ": history")
    finally:
        v.stop()
    print("%s: %d windows' steps checked (%d steps, %d begins out of the table's order)" %
          (label, asked, len(bounds), inverted))
    return asked


def nested_snapshot(path):
    """make_pickles.py's realistic training loop (ProfilerStep#0..#N) with more step ranges that
    nest and overlap the loop's: #900 from the middle of step 1 to the middle of step 6 (holds
    2..5), #901 from the middle of step 9 to just after step 12 ends, #902 inside step 15, #903
    from step 3's begin to the middle of the last step."""
    sys.path.insert(0, HERE)
    import make_pickles  # noqa: E402
    snap = make_pickles.realistic_snapshot(24000, seed=6)
    ann = snap["external_annotations"]
    start = {a["name"]: a["time_us"] for a in ann if a["stage"] == "START"}
    end = {a["name"]: a["time_us"] for a in ann if a["stage"] == "END"}
    n = len(start)
    assert n >= 20, n

    def at(k, f):  # a moment inside step k, f of the way
        s, e = start["ProfilerStep#%d" % k], end["ProfilerStep#%d" % k]
        return s + int((e - s) * f)

    for num, t0, t1 in [(900, at(1, .5), at(6, .5)), (901, at(9, .5), end["ProfilerStep#12"] + 1),
                        (902, at(15, .3), at(15, .6)), (903, at(3, 0), at(n - 1, .5))]:
        ann += [{"device": 0, "stage": "START", "name": "ProfilerStep#%d" % num, "time_us": t0},
                {"device": 0, "stage": "END", "name": "ProfilerStep#%d" % num, "time_us": t1}]
    ann.sort(key=lambda a: a["time_us"])
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)


def layouts_made(inp, env):
    """Whether the input's layout index is in the cache (the builder thread makes it after the
    blocks index): waited for under a server of its own when it is not yet."""
    pattern = os.path.join(env["GMT_CACHE_DIR"], os.path.basename(inp) + "-*.db.layouts")
    if glob.glob(pattern):
        return True
    v = Viewer(inp, env)
    try:
        for _ in range(1200):
            if glob.glob(pattern):
                return True
            time.sleep(0.1)
    finally:
        v.stop()
    return False


def check_window_chunks(inp, env):
    """A fresh server's first /api/window (the whole run, then the middle): few chunks."""
    check(layouts_made(inp, env), "no layout index made for %s" % inp)
    total = json.loads(run(["sql", inp, "SELECT count(*) AS n FROM event_chunks", "--json"],
                           env))[0]["n"]
    last = json.loads(run(["sql", inp, "SELECT max(event_id) AS m FROM event_rows", "--json"],
                          env))[0]["m"]
    v = Viewer(inp, dict(env, GMT_CHUNK_COUNT="1"))
    try:
        # as the page's first screen has it: the builder thread has opened the blocks index
        # (/api/allocations answers) and then the layout index (a moment later: without it the
        # window's diff and categories are a pass from the first event, this change or not)
        for _ in range(600):
            status, _ = v.get("/api/allocations", {"t0": 0, "t1": 1, "k": 1})
            if status != 503:
                break
            time.sleep(0.1)
        time.sleep(1)
        whole = v.api("/api/window", {"from": "start", "to": "end"})
        mid = v.api("/api/window", {"from": "event:%d" % (last // 2),
                                    "to": "event:%d" % (last // 2 + 100000)})
    finally:
        err = v.stop()
    counts = chunk_counts(err)
    if not counts:
        return
    at_url, in_all = counts
    print("the first two windows (%d and %d steps in them, %d and %d listed) decoded %d chunks "
          "(%d before the URL) of %d" % (whole["steps_in_window"], mid["steps_in_window"],
                                          whole["steps_listed"], mid["steps_listed"],
                                          in_all - at_url, at_url, total))
    check(whole["steps_in_window"] > WINDOW_STEPS and mid["steps_in_window"] > 0,
          "the windows hold %d and %d steps" % (whole["steps_in_window"], mid["steps_in_window"]))
    check((in_all - at_url) * 4 < total, "the first /api/window decoded %d of %d chunks: a pass "
          "over the run" % (in_all - at_url, total))


def main():
    if not os.access(MEM, os.X_OK):
        print("SKIP: no memanalyze at", MEM)
        return 77
    tmp = tempfile.mkdtemp(prefix="gmt-view-start-")
    try:
        return checks(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def checks(tmp):
    env = dict(os.environ, GMT_CACHE_DIR=os.path.join(tmp, "cache"))
    env.pop("GMT_CHUNK_COUNT", None)
    trace = os.path.join(tmp, "t.zst")
    subprocess.run([SYNTH, "-o", trace, "--events", "3000000", "--devices", "2", "--spike",
                    "7:4000000000"], check=True, capture_output=True)
    probe = subprocess.run([MEM, "view", trace, "--port", "0", "--bind", "not-an-address"],
                           env=env, capture_output=True, text=True)
    if "built without libmicrohttpd" in probe.stderr:
        print("SKIP: memanalyze was built without libmicrohttpd:", probe.stderr.strip())
        return 77
    check_stop_mid_build(trace, env)
    devices = check_parts(trace, env, "synth")
    check(len(devices) == 2, "synth --devices 2: %d devices" % len(devices))
    # the device the page opens on: the highest peak
    device = max(devices, key=lambda d: d["peak_allocated_bytes"])["device"]
    check_chunks(trace, env, device, len(devices))
    check_windows(trace, env, "synth")
    check_window_chunks(trace, env)
    mid = os.path.join(tmp, "mid.pickle")
    subprocess.run([sys.executable, os.path.join(HERE, "make_pickles.py"), "--mid-run", mid],
                   check=True, capture_output=True)
    check_parts(mid, env, "mid-run")
    check_windows(mid, env, "mid-run")
    nested = os.path.join(tmp, "nested.pickle")
    nested_snapshot(nested)
    check_parts(nested, env, "nested")
    check_windows(nested, env, "nested", nested=True)
    if SHARED and os.path.isdir(SHARED):
        for name in ("train-step-m512.pickle", "lm-small-forward.pickle"):
            if os.path.exists(os.path.join(SHARED, name)):
                check_parts(os.path.join(SHARED, name), env, name)
                check_windows(os.path.join(SHARED, name), env, name)
    else:
        print("note: no shared PyTorch snapshots (%r): the implicit steps not checked" % SHARED)
    if failures:
        print("%d failure(s)" % len(failures), file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
