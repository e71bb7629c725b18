#!/usr/bin/env python3
"""test_view_stacks.py — `memanalyze view`'s stacked timeline, /api/stacks (issue 31), against
known answers.

On a synth trace (two devices, three streams, named tensors), its `import -o` database (a plain
event table; by=category answers 404 when it has no block categories) and on the real PyTorch snapshots
of ../shared/data/pytorch (when present; pt21-no-timestamps has the event axis), for by = site,
category, stream and size, the whole run and 12 random windows per input (down to below the
finest level of detail):
  - the grid is /api/timeline's (start, width, n, first_known);
  - exactness: in every bucket from first_known on, the sum of the series times "unit" equals
    /api/timeline's max_allocated of that bucket (the stack reaches the allocated line), and
    before first_known every value is 0;
  - each value equals a brute force over `sql`'s allocations: the blocks live after the bucket's
    at_event (alloc_id <= E < free_event_id), grouped by the series' key (the stack id, the
    category's name, the stream, the size class), the ones not named summed into "others";
    and at_event's allocated_bytes (`sql`'s event_rows) is the bucket's max;
  - at most 12 series and an "others", ranked by their highest value;
  - n=2000 on the largest input: the answer under the 256 KiB cap;
  - bad arguments (no by, an unknown one, top=13): 400 with {"error"}.
200 requests over random windows of a larger synth trace are timed (p95 printed, not asserted).
Skips (77) when memanalyze was built without libmicrohttpd.

argv: synth memanalyze [shared_pytorch_dir]. Python 3 standard library only.
"""
import bisect
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import view_client  # noqa: E402

SYNTH, MEM = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SHARED = sys.argv[3] if len(sys.argv) > 3 else ""
CAP = 256 * 1024
MIB = 1 << 20
checks = view_client.Checks()
check = checks.check


def start(inp, env):
    """`view INP --port 0` (tests/view_client.py): api() asserts 200 at once (no 503 waited)."""
    return view_client.ViewServer(MEM, [inp], env, stop_wait_s=10, wait_built=False)


def stop(v):
    rc, _, err = v.stop(signal.SIGTERM)
    assert rc is not None, "view did not end in 10 s of SIGTERM: " + err


def sql(inp, query, env):
    p = subprocess.run([MEM, "sql", inp, query, "--json"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, (query, p.stderr)
    return json.loads(p.stdout)


def size_class(size):
    return 0 if size < MIB else 1 if size < 16 * MIB else 2 if size < 256 * MIB else 3


class Truth:
    """One device's blocks as `sql` lists them, to say what is live after any event."""

    def __init__(self, inp, device, env):
        self.blocks = sql(inp, "SELECT alloc_id, coalesce(free_event_id, 1 << 62) AS f, size, "
                          "coalesce(stream, 0) AS stream, coalesce(alloc_stack_id, 0) AS st, "
                          "category FROM allocations WHERE device = %d AND kind = 'device'"
                          % device, env)
        self.allocated = {}
        self.inp, self.device, self.env = inp, device, env

    def key(self, b, by):
        return {"site": b["st"], "stream": b["stream"], "size": size_class(b["size"]),
                "category": b["category"]}[by]

    def live(self, event, by):
        out = {}
        for b in self.blocks:
            if b["alloc_id"] <= event < b["f"]:
                k = self.key(b, by)
                out[k] = out.get(k, 0) + b["size"]
        return out

    def allocated_at(self, events):
        need = [e for e in events if e not in self.allocated]
        for i in range(0, len(need), 400):
            part = need[i:i + 400]
            rows = sql(self.inp, "SELECT event_id, allocated_bytes FROM event_rows WHERE event_id "
                       "IN (%s)" % ",".join(str(e) for e in part), self.env)
            for r in rows:
                self.allocated[r["event_id"]] = r["allocated_bytes"]
        return [self.allocated.get(e) for e in events]


def check_answer(v, truth, label, device, by, lo, hi, n, brute):
    q = "device=%d&n=%d" % (device, n) + ("&lo=%d&hi=%d" % (lo, hi) if lo is not None else "")
    t = v.api("/api/timeline?" + q)
    what = "%s dev %d by %s [%s, %s) n=%d" % (label, device, by, lo, hi, n)
    status, _, data = v.get("/api/stacks?%s&by=%s" % (q, by))
    if by == "category" and status == 404:  # a database given without block categories
        check("no block categories" in json.loads(data)["error"] and not sql(
            truth.inp, "SELECT 1 FROM block_categories LIMIT 1", truth.env), what + ": 404")
        return None
    check(status == 200, "%s: %d %r" % (what, status, data[:200]))
    s = json.loads(data)
    for k in ("start", "width", "n", "first_known"):
        check(s[k] == t[k], "%s: %s %r != timeline's %r" % (what, k, s[k], t[k]))
    check(not s["refused"], what + ": refused")
    series = s["series"]
    check(len(series) <= 13 and len([x for x in series if x["key"] == -1]) <= 1 and
          (len(series) <= 12 or series[-1]["key"] == -1), what + ": at most 12 series + others")
    named = [x for x in series if x["key"] != -1]
    check(all(named[i]["max_bytes"] >= named[i + 1]["max_bytes"] for i in range(len(named) - 1)),
          what + ": series ranked by their highest value")
    unit = s["unit"]
    bad = []
    for i in range(s["n"]):
        total = sum(s["values"][i]) * unit
        want = t["max_allocated"][i] if i >= t["first_known"] else 0
        if total != want:
            bad.append((i, total, want))
    check(not bad, "%s: %d buckets whose stack is not their max allocated, e.g. %r" % (
        what, len(bad), bad[:3]))
    if not brute:
        return s
    # every value against the blocks live after the bucket's event
    keys = [x["label"] if by == "category" else x["key"] for x in named]
    truth.allocated_at([e for e in s["at_event"] if e])  # one query for them all
    wrong = []
    for i in range(t["first_known"], s["n"]):
        e = s["at_event"][i]
        if not e:  # carried: the state after the last event before the bucket
            continue
        live = truth.live(e, by)
        want = [live.pop(k, 0) for k in keys]
        if series and series[-1]["key"] == -1:
            want.append(sum(live.values()))
            live = {}
        got = [x * unit for x in s["values"][i]]
        if got != want or any(live.values()):
            wrong.append((i, e, got, want))
        if truth.allocated_at([e])[0] != t["max_allocated"][i]:
            wrong.append((i, e, "allocated", truth.allocated_at([e])[0], t["max_allocated"][i]))
    check(not wrong, "%s: %d buckets differ from the live blocks, e.g. %r" % (
        what, len(wrong), wrong[:2]))
    return s


def one_input(inp, env, label, rnd, brute=True):
    v = start(inp, env)
    try:
        devices = [d["device"] for d in v.api("/api/summary")["devices"]]
        truths = {d: Truth(inp, d, env) for d in devices}
        for d in devices:
            whole = v.api("/api/timeline?device=%d&n=50" % d)
            a, b = whole["lo"], whole["hi"]
            for by in ("site", "category", "stream", "size"):
                check_answer(v, truths[d], label, d, by, None, None, 300, brute)
                for _ in range(3):
                    lo = rnd.randrange(a, b)
                    hi = lo + max(1, int((b - lo) * rnd.choice([1, 0.1, 0.01, 0.0005])))
                    check_answer(v, truths[d], label, d, by, lo, hi, rnd.choice([7, 200, 640]),
                                 brute)
        return v
    except BaseException:
        stop(v)
        raise


def main():
    tmp = tempfile.mkdtemp(prefix="gmt-stacks-")
    env = dict(os.environ, GMT_CACHE_DIR=os.path.join(tmp, "cache"))
    trace = os.path.join(tmp, "t.zst")
    subprocess.run([SYNTH, "-o", trace, "--steps", "6", "--devices", "2", "--names",
                    "--streams", "3"], check=True, capture_output=True)
    without = view_client.built_without_server(MEM, env, trace)
    if without:
        print("SKIP: memanalyze was built without libmicrohttpd:", without)
        return 77
    rnd = random.Random(31)
    v = one_input(trace, env, "synth", rnd)
    for path, code in (("/api/stacks?device=0", 400), ("/api/stacks?device=0&by=colour", 400),
                       ("/api/stacks?device=0&by=site&top=13", 400),
                       ("/api/stacks?device=9&by=site", 404)):
        status, _, data = v.get(path)
        check(status == code and "error" in json.loads(data), "%s: %d %r" % (path, status, data))
    stop(v)
    # a database the user gave (`import -o`: event_rows a plain table)
    db = os.path.join(tmp, "t.db")
    subprocess.run([MEM, "import", trace, "-o", db], env=env, check=True, capture_output=True)
    stop(one_input(db, env, "import -o", rnd))
    if SHARED and os.path.exists(os.path.join(SHARED, "train-step-m512.pickle")):
        for name in ("lm-small-forward.pickle", "pt21-no-timestamps.pickle",
                     "train-step-m512.pickle", "cache-mostly-free.pickle"):
            if os.path.exists(os.path.join(SHARED, name)):
                stop(one_input(os.path.join(SHARED, name), env, name, rnd))
    else:
        print("note: ../shared/data/pytorch is absent: the real snapshots are not served")

    # a larger run: the cap at n=2000 and the time of 200 windows
    big = os.path.join(tmp, "big.zst")
    subprocess.run([SYNTH, "-o", big, "--events", "200000", "--names", "--streams", "4",
                    "--fragment"], check=True, capture_output=True)
    v = start(big, env)
    whole = v.api("/api/timeline?device=0&n=50")
    a, b = whole["lo"], whole["hi"]
    for by in ("site", "category", "stream", "size"):
        status, _, data = v.get("/api/stacks?device=0&by=%s&n=2000" % by)
        doc = json.loads(data)
        check(status == 200 and len(data) <= CAP and doc["n"] > 1000,
              "n=2000 by %s: %d, %d bytes" % (by, status, len(data)))
        print("n=2000 by %s: %d series, %d bytes" % (by, len(doc.get("series", [])), len(data)))
    times = []
    for i in range(200):
        lo = rnd.randrange(a, b)
        hi = lo + max(1, int((b - lo) * rnd.random()))
        t0 = time.perf_counter()
        status, _, _ = v.get("/api/stacks?device=0&by=%s&lo=%d&hi=%d&n=1000" % (
            ("site", "category", "stream", "size")[i % 4], lo, hi))
        times.append(time.perf_counter() - t0)
        check(status == 200, "a random window: %d" % status)
    times.sort()
    print("/api/stacks on 200 random windows of 200 k events: p50 %.1f ms, p95 %.1f ms" % (
        times[100] * 1e3, times[189] * 1e3))
    stop(v)
    return checks.finish("ok")


if __name__ == "__main__":
    sys.exit(main())
