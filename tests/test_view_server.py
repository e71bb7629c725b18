#!/usr/bin/env python3
"""test_view_server.py — `memanalyze view`'s server without a browser (issue 31): its security,
its endpoints against the command line's answers, and its end.

On a synth trace (two devices, named tensors) and on a real PyTorch snapshot from
../shared/data/pytorch (when present), `view INPUT --port 0` is started and the URL it prints is
parsed; then:
  - the page with the token: 200, text/html, the Content-Security-Policy, nosniff, the cookie
    (HttpOnly, SameSite=Strict); each script (state.js, timeline.js, blocks.js, viewer.js,
    search.js, inputs.js) and viewer.css the same way, each named by the page; HEAD answers
    without a body;
  - no token: 401; a wrong one (or one of another length): 403; the token as ?token=, X-Token,
    Authorization: Bearer and the page's cookie all accepted;
  - a foreign Host (DNS rebinding: `Host: evil.example:PORT`), or none: refused (421);
  - POST, PUT, DELETE: 405; an unknown path: 404 (JSON under /api/);
  - /api/summary: the run and every device's peaks, their moments and the end state equal to
    `report --json`'s;
  - /api/segments?device=D&at=WHEN equal to `segments --device D --at WHEN --json` (without the
    frames, which it leaves to /api/block); a slice with first/count;
  - /api/steps equal to `steps --json`;
  - /api/block?id=N: size, stream, stacks, tensor name and category as `sql` says for the
    allocation, its alloc and free frames those of `sql`'s stack_frames rows;
  - bad arguments: 400 with {"error"}; a device or an allocation that is not there: 404;
  - /api/timeline (the whole run, and windows down to below the finest level of detail): each
    bucket's events, min, max and last of allocated and reserved equal to a brute force over
    `sql`'s event_rows (an event placed at the running max of its device's ts_ns, or event id
    on an untimed input); /api/allocations: with building=1 (the page's) a 200 saying the blocks
    index is being built, never a 503; the K largest blocks live in a window and the
    window's count and bytes equal to a brute force over `sql`'s allocations;
  - /api/marks: the steps overlapping a window equal to `sql`'s steps on the axis; its NVTX
    ranges `sql`'s ranges view's overlapping the window, with their depth (a synth trace with
    --stages: nested ranges, more than the 300 one answer holds, the outermost kept); the OOMs
    and failed driver allocations of a synth device too small equal to `sql`'s events;
  - /api/window?from=WHEN&to=WHEN's diff equal to `diff --from --to --top 10 --json` (no frames);
  - the blocks index (the one file view writes) in the cache folder, for a database the user
    gave too (never beside it);
  - 8 threads asking at once get what one asking alone gets;
  - every response at most 256 KiB (a larger answer refused, saying how to ask for a part); 200 requests timed (p95 printed, nothing asserted);
  - SIGINT: exit 0 within 5 s; SIGTERM too; no file written (the cache folder and the current
    folder as they were, the database's mtime unchanged);
  - a port in use: the one-line error and exit 2; 257 inputs: refused, exit 2; --bind 0.0.0.0
    warns on stderr; --open hands the URL to xdg-open, or says there is none; keep-alive; a
    database the user gave is served and never written.
Skips (77) when memanalyze was built without libmicrohttpd.

argv: synth memanalyze [shared_pytorch_dir]. Python 3 standard library only.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import view_client  # noqa: E402

SYNTH, MEM = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SHARED = sys.argv[3] if len(sys.argv) > 3 else ""
checks = view_client.Checks()
check = checks.check
sizes = view_client.SizeCap(check)  # every answer at most 256 KiB


def run(args, env):
    return subprocess.run([MEM] + args, env=env, capture_output=True, text=True, timeout=120)


MEMO = {}  # the command line's answers, asked once: the second pass over an input asks none


def cli_json(args, env):
    key = tuple(args)
    if key not in MEMO:
        check(not frozen[0], "the command line asked in the pass that watches the cache: %r" %
              (args,))
        p = run(args, env)
        assert p.returncode == 0, (args, p.stderr)
        MEMO[key] = json.loads(p.stdout)
    return MEMO[key]


frozen = [False]


def start(inp, env, cwd, *args):
    """`view INP --port 0 ARGS` (tests/view_client.py), every answer held to the cap."""
    v = view_client.ViewServer(MEM, [inp], env, cwd, args, url_wait_s=60, timeout=30,
                               on_response=sizes)
    assert len(v.token) == 32 and all(c in "0123456789abcdef" for c in v.token)
    return v


def api(v, path):
    """An endpoint's JSON: 200 (503 while the blocks index is built as the server starts,
    saying so: asked again), JSON, Cache-Control: no-store."""
    status, headers, data = v.get(path, wait_built=True, tries=201, on_503=lambda d: check(
        "being built" in json.loads(d).get("error", ""), path + ": 503 " + d[:100].decode()))
    check(status == 200, "%s: status %d %s" % (path, status, data[:200]))
    check(headers.get("content-type") == "application/json", path + ": not JSON")
    check(headers.get("cache-control") == "no-store", path + ": no Cache-Control no-store")
    return json.loads(data)


def strip_frames(o):
    if isinstance(o, dict):
        return {k: strip_frames(v) for k, v in o.items() if k != "frames"}
    if isinstance(o, list):
        return [strip_frames(v) for v in o]
    return o


def files_under(d):
    out = {}
    for dp, _, names in os.walk(d):
        for n in names:
            p = os.path.join(dp, n)
            st = os.stat(p)
            out[os.path.relpath(p, d)] = (st.st_size, st.st_mtime_ns)
    return out


def check_security(v, label):
    status, h, data = v.get("/?token=" + v.token, token=None)
    check(status == 200, label + ": the page: %d" % status)
    check(h.get("content-type", "").startswith("text/html"), label + ": the page is not HTML")
    check("default-src 'self'" in h.get("content-security-policy", ""), label + ": no CSP")
    check(h.get("x-content-type-options") == "nosniff", label + ": no nosniff")
    cookie = h.get("set-cookie", "")
    check(cookie.startswith("gmt_token_%d=%s;" % (v.port, v.token)) and "HttpOnly" in cookie
          and "SameSite=Strict" in cookie, label + ": cookie " + cookie)
    scripts = ("state.js", "timeline.js", "blocks.js", "viewer.js", "search.js", "inputs.js")
    check(all(('<script src="%s" defer>' % s).encode() in data for s in scripts)
          and b"<script>" not in data, label + ": page without inline JS")
    for path, kind in tuple(("/" + s, "text/javascript") for s in scripts) + (
            ("/viewer.css", "text/css"),):
        status, h, data = v.get(path)
        check(status == 200 and h.get("content-type", "").startswith(kind) and data,
              label + ": " + path)
        check(b"http://" not in data and b"https://" not in data, label + ": %s fetches" % path)
    status, h, data = v.get("/", method="HEAD")
    check(status == 200 and data == b"", label + ": HEAD: %d, %d bytes" % (status, len(data)))
    # the token
    check(v.get("/", token=None)[0] == 401, label + ": no token accepted")
    check(v.get("/api/summary", token=None)[0] == 401, label + ": API without token")
    wrong = ("0" if v.token[0] != "0" else "1") + v.token[1:]
    check(v.get("/", token=wrong)[0] == 403, label + ": a wrong token accepted")
    check(v.get("/api/summary", token=v.token[:-1])[0] == 403, label + ": a short token")
    check(v.get("/api/summary", token=v.token + "0")[0] == 403, label + ": a long token")
    check(v.get("/api/summary?token=" + wrong, token=None)[0] == 403, label + ": ?token=")
    for how in ({"Authorization": "Bearer " + v.token},
                {"Cookie": "gmt_token_%d=%s" % (v.port, v.token)}):
        check(v.get("/api/summary", token=None, headers=how)[0] == 200,
              label + ": token as %s refused" % list(how)[0])
    check(v.get("/api/summary?token=" + v.token, token=None)[0] == 200, label + ": ?token=")
    check(v.get("/api/summary", token=None,
                headers={"Cookie": "gmt_token_%d=%s" % (v.port, wrong)})[0] == 403,
          label + ": a wrong cookie accepted")
    # the Host header
    for host in ("evil.example:%d" % v.port, "127.0.0.1:%d" % (v.port + 1), "127.0.0.1"):
        check(v.get("/api/summary", host=host)[0] == 421, label + ": Host " + host)
    for host in ("localhost:%d" % v.port, "[::1]:%d" % v.port):
        check(v.get("/api/summary", host=host)[0] == 200, label + ": Host " + host)
    # methods and paths
    for m in ("POST", "PUT", "DELETE", "OPTIONS"):
        status, h, _ = v.get("/api/summary", method=m, body="x=1" if m != "OPTIONS" else None)
        check(status == 405 and "GET" in h.get("allow", ""), label + ": %s: %d" % (m, status))
    check(v.get("/etc/passwd")[0] == 404, label + ": unknown path")
    check(v.get("/../viewer.js")[0] == 404, label + ": a path with ..")
    status, _, data = v.get("/api/nothing")
    check(status == 404 and "error" in json.loads(data), label + ": unknown endpoint")


def check_errors(v, label):
    for path, want in (("/api/segments?at=bogus", 400), ("/api/segments?device=x", 400),
                       ("/api/segments?device=77", 404), ("/api/steps?device=-1", 400),
                       ("/api/block", 400), ("/api/block?id=abc", 400),
                       ("/api/block?id=999999999", 404), ("/api/segments?count=-1", 400),
                       ("/api/segment_series?by=bogus", 400), ("/api/segment_series", 400),
                       ("/api/segment_series?by=site&at=bogus", 400)):
        status, h, data = v.get(path)
        doc = json.loads(data) if h.get("content-type") == "application/json" else {}
        check(status == want and isinstance(doc.get("error"), str) and doc["error"],
              label + ": %s: %d %s" % (path, status, data[:120]))


def check_summary(v, inp, env, label):
    got = api(v, "/api/summary")
    want = cli_json(["report", inp, "--json"], env)
    check(got["input"] == want["input"] and got["timestamps"] == want["timestamps"],
          label + ": summary input/timestamps")
    for k in ("input_format", "producer", "pid", "host", "command_line", "history", "events",
              "span_ns", "steps", "first_step", "last_step", "truncated", "ended"):
        check(got["run"][k] == want["run"][k], label + ": summary run.%s: %r != %r" % (
            k, got["run"][k], want["run"][k]))
    check(got["end_event_id"] == want["to_event_id"], label + ": end_event_id")
    check([d["device"] for d in got["devices"]] == [d["device"] for d in want["devices"]],
          label + ": summary devices")
    for g, w in zip(got["devices"], want["devices"]):
        for k in g:
            if k in w:
                check(g[k] == w[k], label + ": device %d %s: %r != %r" % (w["device"], k, g[k],
                                                                          w[k]))
        for p in ("peak_allocated", "peak_requested", "peak_reserved"):
            for suffix in ("_bytes", "_event_id", "_ts_ns", "_when"):
                check(p + suffix in g, label + ": summary lacks " + p + suffix)
        for k in ("end_allocated_bytes", "end_reserved_bytes", "ooms"):
            check(k in g, label + ": summary lacks " + k)
    return got


def check_layouts(v, inp, env, devices, whens, label):
    for dev in devices:
        for when in whens:
            got = api(v, "/api/segments?device=%d&at=%s" % (dev, when))
            want = cli_json(["segments", inp, "--device", str(dev), "--at", when, "--json"], env)
            check(got.pop("segment_count") == len(want["segments"]) and
                  got.pop("first_segment") == 0, label + ": segment_count")
            check(got == strip_frames(want), label + ": /api/segments device %d at %s differs "
                  "from segments --json" % (dev, when))
        n = len(want["segments"])
        if n >= 3:
            part = api(v, "/api/segments?device=%d&at=%s&first=1&count=2" % (dev, whens[-1]))
            check(part["segments"] == strip_frames(want["segments"][1:3]) and
                  part["first_segment"] == 1 and part["segment_count"] == n,
                  label + ": a slice of the segments")
    got = api(v, "/api/steps?device=%d" % devices[0])
    want = cli_json(["steps", inp, "--device", str(devices[0]), "--json"], env)
    check(got.pop("step_count") == len(want["steps"]) and got.pop("first_row") == 0,
          label + ": step_count")
    check(got == want, label + ": /api/steps differs from steps --json")
    if len(want["steps"]) >= 3:
        part = api(v, "/api/steps?device=%d&first=1&count=2" % devices[0])
        check(part["steps"] == want["steps"][1:3] and part["first_row"] == 1,
              label + ": a slice of the steps")


def frames_by_sql(inp, env, stack_id):
    rows = cli_json(["sql", inp, "SELECT name, file, line FROM stack_frames WHERE stack_id = %d "
                     "ORDER BY depth" % stack_id, "--json"], env)
    return [(r["name"], r["line"] or 0) for r in rows]  # 0: the line is not known


def check_blocks(v, inp, env, label):
    rows = cli_json(["sql", inp, "SELECT alloc_id, size, requested_size, stream, alloc_stack_id, "
                     "free_stack_id, free_event_id, tensor_name, category FROM allocations "
                     "WHERE alloc_stack_id IS NOT NULL ORDER BY free_event_id IS NULL, alloc_id "
                     "LIMIT 3", "--json"], env)
    check(rows, label + ": no allocation with a stack to ask for")
    for r in rows:
        b = api(v, "/api/block?id=%d" % r["alloc_id"])
        for k, bk in (("size", "size"), ("requested_size", "requested_size"),
                      ("stream", "stream"), ("free_event_id", "free_event_id"),
                      ("tensor_name", "tensor_name"), ("alloc_stack_id", "alloc_stack_id"),
                      ("free_stack_id", "free_stack_id"), ("category", "category")):
            check(b[bk] == r[k] and (k != "category" or r[k]), label + ": block %d %s: %r != %r" % (r["alloc_id"], bk, b[bk],
                                                                     r[k]))
        for which in ("alloc", "free"):
            sid = r[which + "_stack_id"]
            want = frames_by_sql(inp, env, sid) if sid else []
            got = [(f["name"], f["line"]) for f in b[which + "_frames"]]
            check(got == want and (which == "free" or got),
                  label + ": block %d %s frames differ from sql's" % (r["alloc_id"], which))


def event_places(inp, env, device, event_axis):
    """The device's event_rows in order, each with its place on the axis: the running max of
    max(ts_ns, 0), or of max(event_id, 0) on the event axis."""
    rows = cli_json(["sql", inp, "SELECT event_id, ts_ns, allocated_bytes, reserved_bytes FROM "
                     "event_rows WHERE device = %d ORDER BY event_id" % device, "--json"], env)
    out, run = [], None
    for r in rows:
        x = max(r["event_id"] if event_axis else r["ts_ns"], 0)
        run = x if run is None else max(run, x)
        out.append((run, r["allocated_bytes"], r["reserved_bytes"]))
    return out


def brute_buckets(places, start, width, n):
    """Per bucket: events, min/max/last allocated, min/max/last reserved; a bucket without
    events holds the state carried in (0s before the first event)."""
    out, j, state = [], 0, (0, 0)
    for i in range(n):
        end = start + (i + 1) * width
        while j < len(places) and places[j][0] < start + i * width:  # before the window
            state = places[j][1:]
            j += 1
        evs = []
        while j < len(places) and places[j][0] < end:
            evs.append(places[j][1:])
            j += 1
        if evs:
            a, r = [e[0] for e in evs], [e[1] for e in evs]
            out.append((len(evs), min(a), max(a), a[-1], min(r), max(r), r[-1]))
            state = evs[-1]
        else:
            out.append((0, state[0], state[0], state[0], state[1], state[1], state[1]))
    return out


def check_timeline(v, inp, env, device, label):
    whole = api(v, "/api/timeline?device=%d&n=50" % device)
    axis_end = whole["axis_end"]
    event_axis = whole["axis"] == "event"
    check(whole["axis"] == ("event" if not cli_json(["report", inp, "--json"], env)["timestamps"]
                            else "time"), label + ": timeline axis")
    places = event_places(inp, env, device, event_axis)
    check(axis_end >= max(p[0] for p in places) + 1, label + ": axis_end %d" % axis_end)
    windows = [None, (axis_end // 3, axis_end // 3 + max(axis_end // 20, 2), 64),
               (axis_end // 2, axis_end // 2 + max(axis_end // 500, 2), 32), (0, axis_end, 7)]
    levels = set()
    for w in windows:
        t = whole if w is None else api(v, "/api/timeline?device=%d&lo=%d&hi=%d&n=%d" % (device,
                                                                                   *w))
        check(t["n"] <= (50 if w is None else w[2]) + 1 and t["start"] <= t["lo"] and
              t["start"] + t["n"] * t["width"] >= t["hi"], label + ": timeline %r: buckets %d x %d "
              "from %d do not cover it" % (w, t["n"], t["width"], t["start"]))
        got = list(zip(t["events"], t["min_allocated"], t["max_allocated"], t["last_allocated"],
                       t["min_reserved"], t["max_reserved"], t["last_reserved"]))
        want = brute_buckets(places, t["start"], t["width"], t["n"])
        bad = [i for i in range(len(want)) if i >= len(got) or got[i] != want[i]]
        check(not bad, label + ": timeline device %d window %r (width %d, level %d): bucket %s: %r "
              "!= brute force %r" % (device, w, t["width"], t["level_width"], bad[:1],
                                     got[bad[0]] if bad and bad[0] < len(got) else None,
                                     want[bad[0]] if bad else None))
        levels.add(t["level_width"] > 0)
    check(levels == {True, False} or len(places) < 200,
          label + ": the windows never read both the levels and the events: %r" % levels)
    status, _, _ = v.get("/api/timeline?lo=10&hi=10")
    check(status == 400, label + ": an empty timeline window: %d" % status)
    return axis_end, event_axis


def check_allocations(v, inp, env, device, axis_end, event_axis, label):
    rows = cli_json(["sql", inp, "SELECT alloc_id, addr, size, alloc_ts_ns, free_ts_ns, "
                     "free_event_id FROM allocations WHERE device = %d AND kind = 'device'" %
                     device, "--json"], env)
    for t0, t1, k in ((0, axis_end, 20), (axis_end // 3, axis_end // 3 + axis_end // 50 + 1, 10),
                      (axis_end // 2, axis_end // 2 + 1, 5), (axis_end - 1, axis_end, 1000)):
        got = api(v, "/api/allocations?device=%d&t0=%d&t1=%d&k=%d" % (device, t0, t1, k))
        live = []
        for r in rows:
            a = r["alloc_id"] if event_axis else r["alloc_ts_ns"]
            f = r["free_event_id"] if event_axis else r["free_ts_ns"]
            if a < t1 and (f is None or max(f, a) >= t0):
                # view_blocks.h's rank: the largest, then the longest-lived, the earliest
                life = float("inf") if f is None else max(f, a) - a
                live.append(dict(r, rank=(-r["size"], -life, a, r["alloc_id"])))
        live.sort(key=lambda r: r["rank"])
        want = [(r["alloc_id"], r["addr"], r["size"]) for r in live[:k]]
        have = [(b[0], b[1], b[2]) for b in got["blocks"]]
        check(have == want, label + ": allocations in [%d, %d) top %d: %r != brute force %r" % (
            t0, t1, k, have[:3], want[:3]))
        check(got["window_blocks"] == len(live) and
              got["window_bytes"] == sum(r["size"] for r in live) and
              got["rest_blocks"] == len(live) - len(want),
              label + ": allocations in [%d, %d): %d blocks, %d bytes != %d, %d" % (
                  t0, t1, got["window_blocks"], got["window_bytes"], len(live),
                  sum(r["size"] for r in live)))
    status, _, _ = v.get("/api/allocations?t0=5&t1=4")
    check(status == 400, label + ": an empty allocations window: %d" % status)


def check_marks(v, inp, env, device, axis_end, event_axis, label):
    """/api/marks: the steps overlapping a window as sql's steps say, on the axis."""
    rows = cli_json(["sql", inp, "SELECT step, begin_ts_ns, end_ts_ns, begin_event_id, "
                     "end_event_id FROM steps ORDER BY step", "--json"], env)
    spans = []
    for r in rows:
        if event_axis:
            spans.append([r["step"], max(r["begin_event_id"] + 1, 0),
                          None if r["end_ts_ns"] is None else r["end_event_id"] + 1])
        else:
            spans.append([r["step"], max(r["begin_ts_ns"], 0), r["end_ts_ns"]])
    for lo, hi in ((0, axis_end), (axis_end // 3, axis_end // 2)):
        got = api(v, "/api/marks?device=%d&lo=%d&hi=%d" % (device, lo, hi))
        want = [s for s in spans if s[1] < hi and (s[2] is None or s[2] > lo)]
        check(got["steps"] == want and got["steps_total"] == len(want) and
              got["step_stride"] == 1, label + ": marks in [%d, %d): %r != %r" % (
                  lo, hi, got["steps"][:2], want[:2]))
    whole = api(v, "/api/marks?device=%d" % device)
    check(whole["steps"] == spans and whole["ooms_total"] == len(whole["ooms"]),
          label + ": the whole run's marks")


def cut_name(s, most=96):
    """view_marks.h's VIEW_MARKS_NAME_MAX: a name over it cut at a UTF-8 boundary, "..." after."""
    if s is None:
        return None
    b = s.encode()
    if len(b) <= most:
        return s
    keep = most
    while keep > 0 and (b[keep] & 0xC0) == 0x80:
        keep -= 1
    return b[:keep].decode() + "..."


def ranges_by_sql(inp, env, lo, hi):
    """The NVTX ranges overlapping [lo, hi) (or an instant in it) by `sql` over the ranges
    view, each [begin, end, depth, name, domain, tid, open] as /api/marks writes them: an open one
    ends at the run's end (meta last_ts_ns), its depth the lowest row free at its begin among
    all the run's ranges (a range keeps its row at every zoom)."""
    last = cli_json(["sql", inp, "SELECT value FROM meta WHERE key = 'last_ts_ns'", "--json"],
                    env)
    last = int(last[0]["value"]) if last else 0
    rows = cli_json(["sql", inp, "SELECT marker_id, tid, name, domain, begin_ts_ns, end_ts_ns "
                     "FROM ranges", "--json"], env)
    out = []
    for r in rows:
        b, e = r["begin_ts_ns"], r["end_ts_ns"]
        e = max(last if e is None else e, b)
        out.append([b, e, 0, cut_name(r["name"]), cut_name(r["domain"]), r["tid"],
                    1 if r["end_ts_ns"] is None else 0, r["marker_id"]])
    out.sort(key=lambda r: (r[0], -r[1], r[7]))
    row_end = []
    for r in out:
        d = next((k for k, end in enumerate(row_end) if end <= r[0]), len(row_end))
        if d == len(row_end):
            row_end.append(r[1])
        row_end[d] = r[1]
        r[2] = d
    return [r[:7] for r in out if r[0] < hi and (r[1] > lo or r[0] >= lo)]


def check_ranges(v, inp, env, device, axis_end, event_axis, label):
    """/api/marks' NVTX ranges: those of `sql`'s ranges view overlapping the window, on the
    axis (none on the event axis); at most 300, the outermost then the longest kept."""
    for lo, hi in ((0, axis_end), (axis_end // 3, axis_end // 2), (-10 ** 15, 10 ** 15)):
        got = api(v, "/api/marks?device=%d&lo=%d&hi=%d&ooms=0" % (device, lo, hi))
        check(got["range_columns"] == ["begin", "end", "depth", "name", "domain", "tid", "open"],
              label + ": range_columns %r" % got["range_columns"])
        want = [] if event_axis else ranges_by_sql(inp, env, lo, hi)
        if len(want) > 300:
            keep = sorted(want, key=lambda r: (r[2], -(r[1] - r[0])))[:300]
            check(len(got["ranges"]) == 300 and all(r in want for r in got["ranges"]) and
                  sorted(r[2] for r in got["ranges"]) == sorted(r[2] for r in keep),
                  label + ": ranges in [%d, %d): the outermost 300 of %d" % (lo, hi, len(want)))
        else:
            check(got["ranges"] == want, label + ": ranges in [%d, %d): %r != sql's %r" % (
                lo, hi, got["ranges"][:3], want[:3]))
        check(got["ranges_total"] == len(want) and
              got["ranges_depth"] == (max(r[2] for r in want) + 1 if want else 0),
              label + ": ranges in [%d, %d): total %d depth %d, sql %d" % (
                  lo, hi, got["ranges_total"], got["ranges_depth"], len(want)))
    return got["ranges_total"]


def check_window(v, inp, env, device, label, whens):
    """/api/window's diff: diff --from --to --top 10 --json, without the frames (the rest of
    its answer: tests/test_view_window.py)."""
    for a, b in zip(whens, whens[1:]):
        want = cli_json(["diff", inp, "--device", str(device), "--from", a, "--to", b, "--top",
                         "10", "--json"], env)
        path = "/api/window?device=%d&from=%s&to=%s" % (device, a, b)
        if want["from"]["event_id"] > want["to"]["event_id"]:  # no window: refused, saying why
            status, _, data = v.get(path)
            check(status == 400 and b"is after its to" in data,
                  label + ": %s: %d %s" % (path, status, data[:120]))
            continue
        got = api(v, path)["diff"]
        check(got == strip_frames(want), label + ": /api/window %s..%s differs from diff" % (a, b))
    status, _, _ = v.get("/api/window?from=bogus&to=end")
    check(status == 400, label + ": /api/window with a bad WHEN: %d" % status)


def check_concurrent(v, label, threads=8, each=15):
    """Requests at once from several threads (the server's pool, a connection per worker): each
    answer the same as alone."""
    import threading
    paths = ["/api/summary", "/api/steps", "/api/segments?at=peak", "/api/segments?at=end"]
    alone = {p: v.get(p)[2] for p in paths}
    bad = []

    def worker(k):
        for i in range(each):
            p = paths[(k + i) % len(paths)]
            status, _, data = v.get(p)
            if status != 200 or data != alone[p]:
                bad.append((p, status))
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(not bad, label + ": concurrent requests differ: %r" % bad[:5])


def time_requests(v, paths, n=200):
    times = []
    for i in range(n):
        t = time.perf_counter()
        v.get(paths[i % len(paths)])
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2], times[int(len(times) * 0.95)], times[-1]


def check_building(v, label):
    """Right after the start, as the page asks (building=1): while the blocks index is built,
    a 200 saying so (a browser logs every 503 as an error), then the blocks; never a 503."""
    building, answer = 0, None
    for _ in range(600):
        status, _, data = v.get("/api/allocations", {"k": 5, "building": 1})
        check(status == 200, label + ": allocations with building=1: %d %s" % (status, data[:100]))
        doc = json.loads(data) if status == 200 else {}
        if not doc.get("building"):
            answer = doc
            break
        check(doc == {"device": 0, "building": True}, label + ": while built: %r" % doc)
        building += 1
        time.sleep(0.05)
    check(answer is not None and "blocks" in answer,
          label + ": allocations with building=1 once built: %r" % answer)
    print("%s: %d answers said the blocks index was being built" % (label, building))


def serve_and_check(inp, env, tmp, label, whens, timed):
    v = start(inp, env, tmp)
    try:
        check_building(v, label)
        check_security(v, label)
        check_errors(v, label)
        summary = check_summary(v, inp, env, label)
        devices = [d["device"] for d in summary["devices"]] or [0]
        check_layouts(v, inp, env, devices, whens, label)
        check_blocks(v, inp, env, label)
        for dev in devices:
            axis_end, event_axis = check_timeline(v, inp, env, dev, label)
            check_allocations(v, inp, env, dev, axis_end, event_axis, label)
            check_marks(v, inp, env, dev, axis_end, event_axis, label)
            check_ranges(v, inp, env, dev, axis_end, event_axis, label)
            check_window(v, inp, env, dev, label, ["start"] + whens)
        check_concurrent(v, label)
        if timed:
            med, p95, worst = time_requests(v, ["/api/summary", "/api/steps", "/api/segments",
                                                "/api/block?id=999999999", "/viewer.js",
                                                "/api/timeline?n=2000", "/api/allocations?k=500",
                                                "/api/timeline?lo=1000&hi=900000&n=1000"])
            print("%s: 200 requests: median %.1f ms, p95 %.1f ms, max %.1f ms; largest response "
                  "so far %d bytes (%s)" % (label, med * 1e3, p95 * 1e3, worst * 1e3, sizes.size,
                                            sizes.path))
    finally:
        rc, took, err = v.stop(signal.SIGINT)
    check(rc == 0 and took < 5, label + ": SIGINT: exit %r after %.1f s: %s" % (rc, took, err))


def one_input(inp, env, tmp, label, whens):
    """Twice: the first pass asks the command line (whose `sql` may add the categories to the
    cache), the second asks only the server, watching that nothing is written."""
    frozen[0] = False
    serve_and_check(inp, env, tmp, label, whens, False)
    cache = env["GMT_CACHE_DIR"]
    before, cwd_before = files_under(cache), sorted(os.listdir(tmp))
    frozen[0] = True
    serve_and_check(inp, env, tmp, label, whens, True)
    frozen[0] = False
    check(files_under(cache) == before, label + ": the cache folder changed: %r -> %r" % (
        before, files_under(cache)))
    check(sorted(os.listdir(tmp)) == cwd_before, label + ": files left in the current folder")


def main():
    if not os.access(MEM, os.X_OK):
        print("SKIP: no memanalyze at", MEM)
        return 77
    tmp = tempfile.mkdtemp(prefix="gmt-view-")
    env = dict(os.environ, GMT_CACHE_DIR=os.path.join(tmp, "cache"))
    trace = os.path.join(tmp, "t.zst")
    subprocess.run([SYNTH, "-o", trace, "--steps", "6", "--devices", "2", "--names"], check=True,
                   capture_output=True)
    probe = run(["view", trace, "--port", "0", "--bind", "not-an-address"], env)
    if "built without libmicrohttpd" in probe.stderr:
        print("SKIP: memanalyze was built without libmicrohttpd:", probe.stderr.strip())
        return 77
    check(probe.returncode == 2 and probe.stderr.count("\n") == 1 and "--bind" in probe.stderr,
          "a bad --bind: %r" % probe.stderr)

    one_input(trace, env, tmp, "synth", ["step:2", "peak", "end"])
    if SHARED and os.path.exists(os.path.join(SHARED, "train-step-m512.pickle")):
        for name in ("lm-small-forward.pickle", "pt21-no-timestamps.pickle"):
            one_input(os.path.join(SHARED, name), env, tmp, name, ["peak", "end"])
        # an answer over 256 KiB is refused, saying how to ask for a part; a part answers
        big = os.path.join(SHARED, "segments-only.pickle")
        if os.path.exists(big):
            v = start(big, env, tmp)
            status, _, data = v.get("/api/segments")
            doc = json.loads(data)
            check(status == 500 and "first=" in doc.get("error", ""),
                  "an answer over the cap: %d %r" % (status, data[:200]))
            part = api(v, "/api/segments?first=0&count=100")
            check(len(part["segments"]) == 100 and part["segment_count"] > 100,
                  "a part of a large layout")
            v.stop()
    else:
        print("note: ../shared/data/pytorch is absent: the real snapshots are not served")

    # a database the user gave: served as it is, never written (its categories stay null)
    db = os.path.join(tmp, "t.db")
    subprocess.run([MEM, "import", trace, "-o", db], env=env, check=True, capture_output=True)
    mtime = os.stat(db).st_mtime_ns
    v = start(db, env, tmp)
    got = api(v, "/api/summary")
    check([d["peak_allocated_bytes"] for d in got["devices"]] ==
          [d["peak_allocated_bytes"] for d in cli_json(["report", trace, "--json"], env)["devices"]],
          "a database input: its summary is the trace's")
    check(api(v, "/api/allocations?k=1")["window_blocks"] > 0, "a database input: allocations")
    rc, _, err = v.stop()
    check(rc == 0 and os.stat(db).st_mtime_ns == mtime, "a database input was written")
    check(sorted(f for f in os.listdir(tmp) if f.startswith("t.db")) == ["t.db"],
          "a database input: files beside it: %r" % os.listdir(tmp))
    check([f for f in files_under(env["GMT_CACHE_DIR"]) if f.startswith("t.db-") and
           f.endswith(".blocks")], "a database input: no blocks index in the cache folder")

    # OOMs: a device too small (synth --device-memory): /api/marks' OOMs are sql's
    small = os.path.join(tmp, "oom.zst")
    subprocess.run([SYNTH, "-o", small, "--steps", "3", "--device-memory", "2000000000"],
                   check=True, capture_output=True)
    v = start(small, env, tmp)
    want = cli_json(["sql", small, "SELECT event_id, ts_ns, size, op FROM events WHERE device = 0 "
                     "AND op IN ('oom', 'alloc_failed') ORDER BY event_id", "--json"], env)
    got = api(v, "/api/marks?device=0")
    check(want and got["ooms_total"] == len(want) and
          [(o["event_id"], o["at"], o["size"], o["op"]) for o in got["ooms"]] ==
          [(r["event_id"], r["ts_ns"], r["size"], r["op"]) for r in want],
          "marks: %d OOMs, sql %d" % (got["ooms_total"], len(want)))
    mid = want[len(want) // 2]["ts_ns"] if want else 0
    part = api(v, "/api/marks?device=0&lo=%d&hi=%d" % (mid, mid + 1))
    check([o["event_id"] for o in part["ooms"]] ==
          [r["event_id"] for r in want if r["ts_ns"] == mid], "marks: the OOMs of a window")
    check(api(v, "/api/marks?device=0&ooms=0")["ooms"] == [], "marks: ooms=0")
    v.stop()

    # NVTX ranges nested in the steps' (synth --stages), more than one answer holds
    staged = os.path.join(tmp, "stages.zst")
    subprocess.run([SYNTH, "-o", staged, "--steps", "70", "--stages"], check=True,
                   capture_output=True)
    v = start(staged, env, tmp)
    whole = api(v, "/api/marks?device=0")
    n = check_ranges(v, staged, env, 0, whole["hi"], False, "stages")
    check(n > 300 and whole["ranges_depth"] == 2 and len(whole["ranges"]) == 300,
          "stages: %d ranges, %d rows, %d in the answer" % (n, whole["ranges_depth"],
                                                            len(whole["ranges"])))
    v.stop()

    # a port in use: the one line and exit 2
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    p = run(["view", trace, "--port", str(port)], env)
    busy.close()
    want = ("memanalyze: cannot listen on 127.0.0.1:%d: Address already in use (--port 0 picks "
            "a free one)\n" % port)
    check(p.returncode == 2 and p.stderr == want and p.stdout == "",
          "a busy port: exit %d, %r" % (p.returncode, p.stderr))
    # more inputs than one server serves: refused in a line (several: test_view_inputs.py)
    p = run(["view"] + [trace] * 257 + ["--port", "0"], env)
    check(p.returncode == 2 and p.stderr == "memanalyze: view: at most 256 inputs (257 given)\n",
          "257 inputs: exit %d, %r" % (p.returncode, p.stderr))
    # an input that cannot be read: report's error
    p = run(["view", os.path.join(tmp, "missing.zst")], env)
    r = run(["report", os.path.join(tmp, "missing.zst")], env)
    check(p.returncode == 2 and p.stderr == r.stderr, "a missing input: %r" % p.stderr)
    # random bytes, text, a directory: report's one line each; a bad second input too
    bad = {"random.zst": os.urandom(4096), "text.zst": b"not a trace\n", "folder.zst": None}
    for name, data in bad.items():
        path = os.path.join(tmp, name)
        if data is None:
            os.mkdir(path)
        else:
            with open(path, "wb") as f:
                f.write(data)
        p = run(["view", path, "--port", "0"], env)
        r = run(["report", path], env)
        check(r.returncode == 2 and p.returncode == 2 and p.stderr == r.stderr and
              p.stderr.count("\n") == 1 and name in p.stderr and p.stdout == "",
              "%s: view exit %d %r, report %r" % (name, p.returncode, p.stderr, r.stderr))
        p = run(["view", trace, path, "--port", "0"], env)
        check(p.returncode == 2 and p.stderr == r.stderr and p.stdout == "",
              "a good input then %s: exit %d %r" % (name, p.returncode, p.stderr))
    # --bind wider warns; SIGTERM ends it too
    v = start(trace, env, tmp, "--bind", "0.0.0.0")
    check(v.get("/api/summary")[0] == 200, "--bind 0.0.0.0: loopback refused")
    check(v.get("/api/summary", host="0.0.0.0:%d" % v.port)[0] == 200, "--bind's Host")
    rc, took, err = v.stop(signal.SIGTERM)
    check(rc == 0 and "warning" in err and "0.0.0.0" in err,
          "--bind 0.0.0.0: exit %r, stderr %r" % (rc, err))

    # --open: xdg-open gets the URL; without one, a line says so
    bindir = os.path.join(tmp, "bin")
    os.mkdir(bindir)
    opened = os.path.join(tmp, "opened")
    with open(os.path.join(bindir, "xdg-open"), "w") as f:
        f.write("#!/bin/sh\necho \"$1\" > '%s'\n" % opened)
    os.chmod(os.path.join(bindir, "xdg-open"), 0o755)
    v = start(trace, dict(env, PATH=bindir + ":/usr/bin:/bin"), tmp, "--open")
    url = "http://127.0.0.1:%d/?token=%s" % (v.port, v.token)
    for _ in range(100):
        if os.path.exists(opened) and open(opened).read().strip():
            break
        time.sleep(0.05)
    check(os.path.exists(opened) and open(opened).read().strip() == url, "--open: xdg-open")
    rc, _, err = v.stop()
    check(rc == 0, "--open: exit %r: %s" % (rc, err))
    v = start(trace, dict(env, PATH="/nonexistent"), tmp, "--open")
    # keep-alive: two requests on one connection
    c = http.client.HTTPConnection("127.0.0.1", v.port, timeout=30)
    for _ in range(2):
        c.request("GET", "/api/summary", headers={"Host": v.host, "X-Token": v.token})
        r = c.getresponse()
        check(r.status == 200 and json.loads(r.read())["devices"], "keep-alive")
    c.close()
    rc, _, err = v.stop()
    check(rc == 0 and "cannot open a browser" in err, "--open without xdg-open: %r" % err)

    subprocess.run(["rm", "-rf", tmp])
    return checks.finish("test_view_server: ok")


if __name__ == "__main__":
    sys.exit(main())
