#!/usr/bin/env python3
"""test_view_window.py — `memanalyze view`'s window summary and search (issue 31) against the
command line's answers, without a browser.

On synth traces (two devices with a leak and named tensors; one that OOMs) and on real PyTorch
snapshots from ../shared/data/pytorch (one timed, one without timestamps, when present),
`view INPUT --port 0` is started (tests/view_client.py, every answer held to 256 KiB), and
then:
  - /api/window?device=D&from=event:A&to=event:B: "diff" equal to `diff INPUT --device D --from
    event:A --to event:B --top 10 --json` (without the stacks' frames, which it leaves out); "steps" the `steps --json` rows of the steps that
    overlap (A, B] (their events from `sql` over steps); "ooms" equal to `report --from event:A
    --to event:B --json`'s oom_events (verdicts included) and its OOM count; "sites" equal to an
    SQL GROUP BY over allocations (device memory, alloc_id in (A, B]); the categories at the
    window's peak equal report's categories_at_peak for the window, and they add up to the
    allocated bytes at the peak and at the end; t0=/t1= on the axis resolve as time:Nns;
  - /api/search?q=TEXT: the sites (stack ids, blocks, bytes) equal to `sql`'s LIKE over
    stack_frames joined to allocations; the histogram equal to the same rows bucketed by
    alloc_ts_ns (event id without timestamps); the top site's peak_live_bytes equal to a replay
    of its allocations and frees; a text nothing holds: no sites;
  - /api/search?addr=A: the blocks equal to `sql`'s allocations with addr <= A < addr + size, the
    segments to the same over segments, for a block's first and last byte, the byte after it, a
    segment's start and an address nothing held;
  - bad arguments: 400 with {"error"}; a device that is not there: 404;
  - six windows asked at once by six threads, first thing: the same answer (one step table made
    and shared, the other threads waiting for it);
  - every response at most 256 KiB; 200 requests timed (p95 printed, nothing asserted).
Skips (77) when memanalyze was built without libmicrohttpd.

argv: synth memanalyze [shared_pytorch_dir]. Python 3 standard library only.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import view_client  # noqa: E402

SYNTH, MEM = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SHARED = sys.argv[3] if len(sys.argv) > 3 else ""
checks = view_client.Checks()
check = checks.check
sizes = view_client.SizeCap(check)  # every answer at most 256 KiB
timings = []


def cli(args, env):
    p = subprocess.run([MEM] + args, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (args, p.stderr)
    return json.loads(p.stdout)


def sql(inp, env, query):
    return cli(["sql", inp, query, "--json"], env)


def get(v, path):
    t = time.monotonic()
    status, _, data = v.get(path)
    timings.append(time.monotonic() - t)
    return status, json.loads(data) if data else None


def api(v, path):
    status, body = get(v, path)
    check(status == 200, "%s: status %d %s" % (path, status, str(body)[:300]))
    return body


def window_checks(v, inp, env, device, a, b, label):
    q = "/api/window?device=%d&from=event:%d&to=event:%d" % (device, a, b)
    w = api(v, q)
    if not w or "diff" not in w:
        return
    want = cli(["diff", inp, "--device", str(device), "--from", "event:%d" % a, "--to",
                "event:%d" % b, "--top", "10", "--json"], env)
    for st in want["stacks"]:
        st.pop("frames", None)  # the viewer's diff leaves them out: kilobytes per real stack
    check(w["diff"] == want, "%s %s: diff differs from diff --json" % (label, q))
    check((w["from_event_id"], w["to_event_id"]) == (a, b), "%s %s: the window's events" % (label, q))
    # steps overlapping (a, b]: a step holds (begin, end]
    steps_doc = cli(["steps", inp, "--device", str(device), "--json"], env)
    bounds = {r["step"]: (r["begin_event_id"], r["end_event_id"])
              for r in sql(inp, env, "SELECT step, begin_event_id, end_event_id FROM steps")}
    rows = steps_doc["steps"]
    if bounds:
        want_rows = [r for r in rows if r["step"] in bounds and bounds[r["step"]][0] < b and
                     bounds[r["step"]][1] > a][:200]
        check(w["steps"]["steps"] == want_rows,
              "%s %s: steps %s, steps --json's in range %s" %
              (label, q, [r["step"] for r in w["steps"]["steps"]], [r["step"] for r in want_rows]))
        check(w["steps"]["step_count"] == len(rows), "%s %s: step_count" % (label, q))
        check(w["steps"]["history"] == steps_doc["history"], "%s %s: steps' history" % (label, q))
    # OOMs: report's over the same window
    rep = cli(["report", inp, "--device", str(device), "--from", "event:%d" % a, "--to",
               "event:%d" % b, "--json"], env)
    rdev = [d for d in rep["devices"] if d["device"] == device][0]
    check(w["ooms"]["oom_events"] == rdev["oom_events"],
          "%s %s: OOMs differ from report's: %s vs %s" %
          (label, q, w["ooms"]["oom_events"][:2], rdev["oom_events"][:2]))
    check(w["ooms"]["count"] == rdev["ooms"], "%s %s: OOM count %d, report %d" %
          (label, q, w["ooms"]["count"], rdev["ooms"]))
    # categories: report's at the window's peak; both moments add up to allocated
    cats = w["categories"]
    if rdev.get("categories_at_peak") is not None and cats is not None:
        check(cats["at_peak"] == rdev["categories_at_peak"],
              "%s %s: categories at the peak %s, report %s" %
              (label, q, cats["at_peak"], rdev["categories_at_peak"]))
        check(sum(cats["at_peak"].values()) == w["peak_allocated_bytes"] ==
              rdev["peak_allocated_bytes"],
              "%s %s: categories at the peak add up to %d, allocated %d" %
              (label, q, sum(cats["at_peak"].values()), w["peak_allocated_bytes"]))
        check(sum(cats["at_end"].values()) == want["to"]["allocated_bytes"],
              "%s %s: categories at the end add up to %d, allocated %d" %
              (label, q, sum(cats["at_end"].values()), want["to"]["allocated_bytes"]))
    # sites: bytes allocated in the window per stack
    got = [(s["stack_id"], s["blocks"], s["bytes"]) for s in w["sites"]["listed"]]
    rows = sql(inp, env, "SELECT coalesce(alloc_stack_id, 0) AS s, count(*) AS n, sum(size) AS b "
               "FROM allocations WHERE device = %d AND kind = 'device' AND alloc_id > %d AND "
               "alloc_id <= %d GROUP BY 1 ORDER BY 3 DESC, 1" % (device, a, b))
    check(got == [(r["s"], r["n"], r["b"]) for r in rows[:10]],
          "%s %s: sites %s, sql %s" % (label, q, got[:3], rows[:3]))
    check(w["sites"]["sites_total"] == len(rows), "%s %s: sites_total" % (label, q))
    check(w["sites"]["bytes"] == sum(r["b"] for r in rows), "%s %s: sites' bytes" % (label, q))


def search_checks(v, inp, env, device, text, label):
    q = "/api/search?device=%d&q=%s" % (device, urllib.parse.quote(text))
    s = api(v, q)
    if not s:
        return
    like = text.replace("'", "''")
    rows = sql(inp, env,
               "SELECT coalesce(alloc_stack_id, 0) AS s, count(*) AS n, sum(size) AS b FROM "
               "allocations WHERE device = %d AND kind = 'device' AND alloc_id >= 1 AND "
               "alloc_stack_id IN (SELECT DISTINCT stack_id FROM stack_frames WHERE name LIKE "
               "'%%%s%%' OR file LIKE '%%%s%%') GROUP BY 1" % (device, like, like))
    want = {r["s"]: (r["n"], r["b"]) for r in rows}
    got = {x["stack_id"]: (x["blocks"], x["bytes"]) for x in s["sites"] if x["blocks"]}
    if len(want) <= 50:
        check(got == want, "%s %s: sites %s, sql %s" % (label, q, sorted(got.items())[:4],
                                                          sorted(want.items())[:4]))
    check(s["blocks"] == sum(n for n, _ in want.values()) and
          s["bytes"] == sum(b for _, b in want.values()),
          "%s %s: totals %d blocks %d bytes, sql %d %d" %
          (label, q, s["blocks"], s["bytes"], sum(n for n, _ in want.values()),
           sum(b for _, b in want.values())))
    byts = [x["bytes"] for x in s["sites"]]
    check(byts == sorted(byts, reverse=True), "%s %s: sites not by bytes" % (label, q))
    for x in s["sites"]:
        check(x["matched_frames"] and all(
            text.lower() in (f["name"] or "").lower() or text.lower() in (f["filename"] or "").lower()
            for f in x["matched_frames"]), "%s %s: site %d's matched frames" % (label, q, x["stack_id"]))
    # the histogram: the same allocations by bucket
    h = s["histogram"]
    width, timed = h["bucket_width"], h["axis"] == "time_ns"
    col = "alloc_ts_ns" if timed else "alloc_id"
    hist = sql(inp, env,
               "SELECT min(%s / %d, 511) AS k, count(*) AS n, sum(size) AS b FROM allocations "
               "WHERE device = %d AND kind = 'device' AND alloc_id >= 1 AND alloc_stack_id IN "
               "(SELECT DISTINCT stack_id FROM stack_frames WHERE name LIKE '%%%s%%' OR file "
               "LIKE '%%%s%%') GROUP BY 1" % (col, width, device, like, like))
    blocks, byts = [0] * 512, [0] * 512
    for r in hist:
        blocks[r["k"]], byts[r["k"]] = r["n"], r["b"]
    check(h["buckets"] == 512 and h["blocks"] == blocks and h["bytes"] == byts,
          "%s %s: the histogram differs from sql's" % (label, q))
    check(width * 512 > h["axis_end"], "%s %s: the buckets do not cover the axis" % (label, q))
    # the top site's own peak of live bytes, replayed from its rows
    if s["sites"]:
        top = s["sites"][0]
        ev = sql(inp, env, "SELECT alloc_id, free_event_id, size FROM allocations WHERE device = "
                 "%d AND kind = 'device' AND alloc_stack_id = %d" % (device, top["stack_id"]))
        changes = sorted([(r["alloc_id"], r["size"]) for r in ev] +
                         [(r["free_event_id"], -r["size"]) for r in ev if r["free_event_id"]])
        live = peak = 0
        for _, d in changes:
            live += d
            peak = max(peak, live)
        check(top["peak_live_bytes"] == peak, "%s %s: site %d's peak %d, replayed %d" %
              (label, q, top["stack_id"], top["peak_live_bytes"], peak))
    return s


def addr_checks(v, inp, env, device, label):
    rows = sql(inp, env, "SELECT addr, size FROM allocations WHERE device = %d ORDER BY "
               "alloc_id LIMIT 3" % device)
    segs = sql(inp, env, "SELECT addr FROM segments WHERE device = %d ORDER BY segment_id "
               "LIMIT 1" % device)
    addrs = [16]
    for r in rows[:2]:
        addrs += [r["addr"], r["addr"] + r["size"] - 1, r["addr"] + r["size"]]
    addrs += [s["addr"] for s in segs]
    for i, a in enumerate(addrs):
        path = "/api/search?device=%d&addr=%s" % (device, hex(a) if i % 2 else str(a))
        s = api(v, path)
        if not s:
            continue
        want = sql(inp, env, "SELECT alloc_id, size, alloc_ts_ns, free_event_id FROM allocations "
                   "WHERE device = %d AND addr <= %d AND %d < addr + size ORDER BY alloc_id" %
                   (device, a, a))
        got = [(x["alloc_id"], x["size"], x["alloc_ts_ns"], x["free_event_id"]) for x in s["blocks"]]
        check(got == [(r["alloc_id"], r["size"], r["alloc_ts_ns"], r["free_event_id"])
                      for r in want][:100], "%s %s: blocks %s, sql %s" % (label, path, got[:3], want[:3]))
        check(s["blocks_total"] == len(want) and s["address"] == a, "%s %s: blocks_total" % (label, path))
        wseg = sql(inp, env, "SELECT segment_id FROM segments WHERE device = %d AND addr <= %d AND "
                   "%d < addr + size ORDER BY segment_id" % (device, a, a))
        check([x["segment_id"] for x in s["segments"]] == [r["segment_id"] for r in wseg][:20],
              "%s %s: segments" % (label, path))
        if i == 0:
            check(not s["blocks"] and not s["segments"], "%s: address 16 held something" % label)
        if i == 1:
            check(s["blocks"], "%s %s: a block's own address found nothing" % (label, path))


def bad_checks(v, label):
    for path, status in [("/api/search", 400), ("/api/search?q=a&addr=1", 400),
                         ("/api/search?q=", 400), ("/api/search?q=" + "x" * 300, 400),
                         ("/api/search?addr=zz", 400), ("/api/search?addr=-1", 400),
                         ("/api/search?device=x&q=a", 400), ("/api/search?device=7&q=a", 404),
                         ("/api/window?from=bogus", 400), ("/api/window?t0=-5", 400),
                         ("/api/window?from=end&to=start", 400),
                         ("/api/window?from=start&t0=5", 400), ("/api/window?device=7", 404),
                         ("/api/window?to=event:999999999", 400)]:
        got, body = get(v, path)
        check(got == status and isinstance(body, dict) and isinstance(body.get("error"), str),
              "%s %s: %d %s, want %d with an error" % (label, path, got, body, status))


def one_input(inp, env, label, texts):
    # the command line first: `sql` may add what the cache lacks before the viewer opens it
    cli(["sql", inp, "SELECT count(*) FROM allocations WHERE category IS NOT NULL", "--json"], env)
    devices = [d["device"] for d in sql(inp, env, "SELECT DISTINCT device FROM event_rows WHERE "
                                        "event_id > 0 ORDER BY 1")]
    last = sql(inp, env, "SELECT max(event_id) AS m FROM event_rows")[0]["m"] or 0
    timed = sql(inp, env, "SELECT value FROM meta WHERE key = 'timestamps'")
    v = view_client.ViewServer(MEM, [inp], env, os.getcwd(), url_wait_s=60, timeout=30,
                               on_response=sizes)
    try:
        # the first windows asked at once, from several threads: one of them makes the step
        # table they share (endpoints_window.c), the others wait for it; the same answers
        q = "/api/window?from=event:%d&to=event:%d" % (last // 5, last - last // 5)
        answers = [None] * 6
        def ask(i):
            answers[i] = v.get(q)
        threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(answers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(all(a and a[0] == 200 and a[2] == answers[0][2] for a in answers),
              "%s: %d windows asked at once: statuses %s, %d different answers" %
              (label, len(answers), [a and a[0] for a in answers],
               len(set(a[2] for a in answers if a))))
        # the steps of random windows: steps --json's rows from the first that overlaps the
        # window to the last
        bounds = {r["step"]: (r["begin_event_id"], r["end_event_id"])
                  for r in sql(inp, env, "SELECT step, begin_event_id, end_event_id FROM steps")}
        for device in devices[:2]:
            rows = cli(["steps", inp, "--device", str(device), "--json"], env)["steps"]
            for k in range(12 if bounds else 0):
                a = (k * 7919 + 13) % (last + 1)
                b = min(last, a + (k * 104729) % (last // 3 + 2))
                w = api(v, "/api/window?device=%d&from=event:%d&to=event:%d" % (device, a, b))
                inside = [i for i, r in enumerate(rows) if r["step"] in bounds and
                          bounds[r["step"]][0] < b and bounds[r["step"]][1] > a]
                want = rows[inside[0]:inside[-1] + 1][:200] if inside else []
                check(w and w["steps"]["steps"] == want and
                      w["steps_in_window"] == (inside[-1] - inside[0] + 1 if inside else 0),
                      "%s: steps of (%d, %d] on device %d: %s, steps --json %s" %
                      (label, a, b, device, [r["step"] for r in w["steps"]["steps"]][:5] if w
                       else None, [r["step"] for r in want][:5]))
        for device in devices[:2]:
            for a, b in [(0, last), (last // 4, last // 2), (last // 3, last // 3 + 1),
                         (last // 2, last // 2)]:
                window_checks(v, inp, env, device, a, b, label)
            for text in texts:
                search_checks(v, inp, env, device, text, label)
            addr_checks(v, inp, env, device, label)
        s = api(v, "/api/search?q=no-frame-holds-this-text-9f3")
        check(s and s["sites"] == [] and s["blocks"] == 0 and sum(s["histogram"]["blocks"]) == 0,
              "%s: a text nothing holds found sites" % label)
        # the axis' form: t0/t1 are time:Nns (timed), event:N (untimed); past the end: end
        w = api(v, "/api/window?t0=1000&t1=99999999999999")
        ends = api(v, "/api/window?from=%s&to=end" %
                   ("time:1000ns" if not timed or str(timed[0]["value"]) != "0" else "event:1000"))
        if w and ends:
            check(w["diff"]["from"]["event_id"] == ends["diff"]["from"]["event_id"] and
                  w["to_event_id"] == last, "%s: t0/t1 resolve as the WHENs do" % label)
        bad_checks(v, label)
        # 200 requests timed: windows and searches mixed
        for i in range(200):
            a = (i * 7919) % (last + 1)
            b = min(last, a + (i * 104729) % (last // 2 + 1))
            path = ["/api/window?from=event:%d&to=event:%d" % (a, b),
                    "/api/search?q=%s" % texts[i % len(texts)],
                    "/api/search?addr=%d" % (16 + i)][i % 3]
            get(v, path)
        rc, _, err = v.stop()
        check(rc == 0, "%s: view exited %s: %s" % (label, rc, err))
    finally:
        if v.process.poll() is None:
            v.process.kill()


def main():
    if view_client.built_without_server(MEM, dict(os.environ)):
        print("skip: memanalyze was built without libmicrohttpd")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        env.pop("GMT_NO_SUMMARIES", None)
        two = os.path.join(tmp, "two.zst")
        subprocess.run([SYNTH, "-o", two, "--steps", "6", "--devices", "2", "--leak", "1048576",
                        "--names"], check=True, capture_output=True)
        oom = os.path.join(tmp, "oom.zst")
        subprocess.run([SYNTH, "-o", oom, "--steps", "6", "--device-memory", "2500000000"],
                       check=True, capture_output=True)
        one_input(two, env, "synth 2 devices", ["forward", "TRAIN.PY", "adamw"])
        one_input(oom, env, "synth OOMs", ["layers.py", "backward"])
        for name in ["lm-small-forward.pickle", "pt21-no-timestamps.pickle"]:
            path = os.path.join(SHARED, name) if SHARED else ""
            if path and os.path.exists(path):
                one_input(path, env, name, ["forward", "linear"])
            else:
                print("note: %s not found under %r: not checked" % (name, SHARED))
    if timings:
        t = sorted(timings)
        print("%d requests: p50 %.1f ms, p95 %.1f ms, max %.1f ms; largest answer %d bytes (%s)" %
              (len(t), 1000 * t[len(t) // 2], 1000 * t[int(len(t) * 0.95)], 1000 * t[-1],
               sizes.size, sizes.path))
    return checks.finish("ok")


if __name__ == "__main__":
    sys.exit(main())
