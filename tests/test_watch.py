#!/usr/bin/env python3
"""test_watch.py — `memanalyze watch` follows a trace while it is written (issue 32).

A synth trace is copied into a growing file in pieces of random size (frames split anywhere,
so watch sees incomplete frames at the end) with pauses, while `watch --json --interval 0.2`
reads it. Each refresh says how many bytes of complete frames it has read (bytes_read): the
trace cut there is replayed by `report --json`, and the refresh's figures must equal the
report's (peaks and their event ids, end allocated/reserved/trapped, OOMs, the headroom trend
and its risk). The last refresh equals report --json of the whole trace. Then: --once on a
finished trace (text and JSON), a planted OOM (synth's small device), a writer killed mid-frame
(the stale message, exit 3), SIGINT (exit 0), and files that are no trace (exit 2, one line).
A directory of ranks (watch DIR): written at once, one rank starting later (picked up), the
job's figures at the end equal to `ranks --json`'s and each rank's to report's; a rank killed
mid-run among ended ones (exit 3); a file that is no trace among them (exit 2).

argv: synth memanalyze. Python 3 standard library only.
"""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

SYNTH, MEMANALYZE = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="gmt-watch-")
ENV = dict(os.environ, GMT_CACHE_DIR=os.path.join(TMP, "cache"))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def synth(name, *args):
    path = os.path.join(TMP, name)
    subprocess.run([SYNTH, "-o", path, "--chunk-bytes", "8192", *args], check=True,
                   capture_output=True)
    return path


def report(path):
    out = subprocess.run([MEMANALYZE, "report", "--json", path], env=ENV, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def watch(*args, **kw):
    return subprocess.run([MEMANALYZE, "watch", *args], env=ENV, capture_output=True,
                          text=True, timeout=kw.get("timeout", 120))


def compare(refresh, rep, what):
    """A refresh's per-device figures against report --json of the same bytes."""
    check(refresh["events"] == rep["run"]["events"],
          "%s: events %s, report %s" % (what, refresh["events"], rep["run"]["events"]))
    devs = {d["device"]: d for d in rep["devices"] if d.get("peak_allocated_bytes") is not None}
    got = {d["device"]: d for d in refresh["devices"]}
    check(sorted(got) == sorted(devs), "%s: devices %s, report %s" % (what, sorted(got),
                                                                       sorted(devs)))
    pairs = [("peak_allocated_bytes", "peak_allocated_bytes"),
             ("peak_allocated_event_id", "peak_allocated_event_id"),
             ("peak_allocated_ts_ns", "peak_allocated_ts_ns"),
             ("peak_reserved_bytes", "peak_reserved_bytes"),
             ("peak_reserved_event_id", "peak_reserved_event_id"),
             ("allocated_bytes", "end_allocated_bytes"),
             ("reserved_bytes", "end_reserved_bytes"),
             ("trapped_bytes", "end_trapped_bytes"),
             ("ooms", "ooms"), ("alloc_failed", "alloc_failed")]
    for dev, r in devs.items():
        w = got.get(dev)
        if not w:
            continue
        for wk, rk in pairs:
            check(w[wk] == r[rk], "%s: device %d %s %s, report's %s %s" % (what, dev, wk, w[wk],
                                                                         rk, r[rk]))
        h = r["headroom"]
        check(w["growth_bytes_per_step"] == h["growth_bytes_per_step"],
              "%s: device %d growth %s, report %s" % (what, dev, w["growth_bytes_per_step"],
                                                      h["growth_bytes_per_step"]))
        rl = h["limit_step"] if h["limit_step"] is not None and h["limit_step"] >= 0 else None
        check(w["forecast"]["limit_step"] == rl,
              "%s: device %d limit_step %s, report %s" % (what, dev, w["forecast"]["limit_step"],
                                                          h["limit_step"]))
        ls, rs = w["forecast"]["limit_seconds"], h["limit_seconds"]
        check((ls is None and (rs is None or rs < 0)) or (ls is not None and abs(ls - rs) <= 1e-5 * abs(rs) + 1e-6),
              "%s: device %d limit_seconds %s, report %s" % (what, dev, ls, rs))
        check(w["forecast"]["risk"] == h["risk"],
              "%s: device %d risk %s, report %s" % (what, dev, w["forecast"]["risk"], h["risk"]))
        check(w["trend_steps"] == r["steps"],
              "%s: device %d trend over %s steps, report %s" % (what, dev, w["trend_steps"],
                                                                r["steps"]))


def write_slowly(f, data, rng, piece, done=None, delay=0.0, pauses=(), wait=None):
    """The writer of a growing trace: data after its first 40 bytes into f, in random pieces of
    at most `piece` bytes 20-120 ms apart (memrec's writer rounds), until done is set; past each
    offset in `pauses`, wait() (the reader has caught up) before going on."""
    pos = 40
    pauses = sorted(pauses)
    time.sleep(delay)
    while pos < len(data) and not (done and done.is_set()):
        n = min(len(data) - pos, rng.randint(1, piece))
        f.write(data[pos:pos + n])
        f.flush()
        pos += n
        while pauses and pos >= pauses[0]:
            pauses.pop(0)
            wait()
        time.sleep(rng.uniform(0.02, 0.12))
    f.close()


def follow(name, src, seed, piece=6000):
    """watch --json on a growing copy of src: every refresh against report of its cut."""
    rng = random.Random(seed)
    dst = os.path.join(TMP, name)
    data = open(src, "rb").read()
    f = open(dst, "wb")
    f.write(data[:40])  # the magic and a little: no complete frame yet, watch waits
    f.flush()
    proc = subprocess.Popen([MEMANALYZE, "watch", "--json", "--interval", "0.2", "--stale",
                             "20", dst], env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)

    t = threading.Thread(target=write_slowly, args=(f, data, rng, piece, None, 0.3))
    t.start()
    out, err = proc.communicate(timeout=180)
    t.join()
    check(proc.returncode == 0, "%s: exit %s (%s)" % (name, proc.returncode, err.strip()))
    refreshes = [json.loads(line) for line in out.splitlines() if line.strip()]
    check(len(refreshes) >= 3, "%s: %d refreshes" % (name, len(refreshes)))
    if not refreshes:
        return None
    last = refreshes[-1]
    check(last["state"] == "ended" and last["ended"] and last["clean_end"] is True,
          "%s: the last refresh says %s" % (name, last["state"]))
    check(last["bytes_read"] == len(data), "%s: read %s of %s bytes" % (name, last["bytes_read"],
                                                                        len(data)))
    cuts = sorted({r["bytes_read"] for r in refreshes if r["started"]})
    check(len(cuts) >= 3, "%s: only %d distinct cuts" % (name, len(cuts)))
    by_cut = {}
    for r in refreshes:
        by_cut[r["bytes_read"]] = r  # the last refresh of each cut
    sample = cuts if len(cuts) <= 8 else [cuts[i * (len(cuts) - 1) // 7] for i in range(8)]
    for cut in sample:
        path = os.path.join(TMP, "%s.cut%d.zst" % (name, cut))
        with open(path, "wb") as c:
            c.write(data[:cut])
        compare(by_cut[cut], report(path), "%s cut at %d bytes" % (name, cut))
    compare(last, report(src), "%s whole" % name)
    print("%s: %d refreshes, %d cuts, %d compared with report" % (name, len(refreshes), len(cuts),
                                                                 len(sample) + 1))
    return refreshes


def grow(name, src, seed, args, piece=2500, pauses=()):
    """watch --json ARGS on a growing copy of src: (exit status, refreshes, file size, its
    length, stderr). `pauses`: fractions of the file where the writer waits until watch has
    refreshed twice on what is there (a refresh that reads nothing new, whatever the machine's
    load: how fast watch refreshes against the writer is not what is tested)."""
    rng = random.Random(seed)
    dst = os.path.join(TMP, name)
    data = open(src, "rb").read()
    f = open(dst, "wb")
    f.write(data[:40])
    f.flush()
    err_file = open(os.path.join(TMP, name + ".stderr"), "w+")
    proc = subprocess.Popen([MEMANALYZE, "watch", "--json", "--interval", "0.2", "--stale", "20",
                             *args, dst], env=ENV, stdout=subprocess.PIPE, stderr=err_file,
                            text=True)
    lines, arrived = [], threading.Condition()

    def read_refreshes():
        for line in proc.stdout:
            if line.strip():
                with arrived:
                    lines.append(json.loads(line))
                    arrived.notify_all()

    def caught_up():
        deadline = time.time() + 120
        with arrived:
            first = len(lines)
            while time.time() < deadline and proc.poll() is None:
                seen = lines[first:]
                if len(seen) >= 2 and seen[-1]["bytes_read"] == seen[-2]["bytes_read"]:
                    return
                arrived.wait(timeout=0.5)

    reader = threading.Thread(target=read_refreshes)
    reader.start()
    done = threading.Event()
    t = threading.Thread(target=write_slowly,
                         args=(f, data, rng, piece, done, 0.0,
                               [int(p * len(data)) for p in pauses], caught_up))
    t.start()
    proc.wait(timeout=300)
    written_then = os.path.getsize(dst)
    done.set()
    t.join()
    reader.join()
    err_file.seek(0)
    err = err_file.read()
    err_file.close()
    return proc.returncode, lines, written_then, len(data), err


def alerts_of(r, rule):
    return {a["device"]: a["state"] for a in r["alerts"] if a["rule"] == rule}


def test_alerts(leak, oom):
    # leak>RATE/step: starts at the first refresh whose growth (report's, of the cut) exceeds it
    rule = "leak>500KiB/step"
    rc, rs, _, _, err = grow("alert-leak.zst", leak, 5, ["--alert", rule])
    check(rc == 0, "alert leak: exit %s %s" % (rc, err))
    first = [i for i, r in enumerate(rs) if alerts_of(r, rule).get(0) == "start"]
    check(len(first) == 1, "alert leak: one start on device 0, %d" % len(first))
    if first:
        i = first[0]
        check(rs[i]["devices"][0]["growth_bytes_per_step"] > 500 * 1024 and
              all(r["devices"][0]["growth_bytes_per_step"] <= 500 * 1024
                  for r in rs[:i] if r["devices"]),
              "alert leak: starts where growth first exceeds the rate")
        cut = os.path.join(TMP, "alert-leak.cut.zst")
        with open(cut, "wb") as c:
            c.write(open(leak, "rb").read()[:rs[i]["bytes_read"]])
        compare(rs[i], report(cut), "alert leak at its start")
    # oom: holds at a refresh with new OOMs, stops at one without: both said, consistently
    # (the writer waits for watch at 3/5 and 4/5 of the file, where OOMs have begun)
    rc, rs, _, _, err = grow("alert-oom.zst", oom, 6, ["--alert", "oom"], pauses=(0.6, 0.8))
    check(rc == 0, "alert oom: exit %s %s" % (rc, err))
    prev, was, states = 0, False, []
    for r in rs:
        if not r["devices"]:
            continue
        n = r["devices"][0]["ooms"]
        now = n > prev
        want = "start" if now and not was else "holding" if now else "stop" if was else None
        got = alerts_of(r, "oom").get(0)
        check(got == want, "alert oom: %s at %d OOMs (before %d), want %s" % (got, n, prev, want))
        states.append(got)
        prev, was = n, now
    check("start" in states and "stop" in states, "alert oom: start and stop: %s" % states)
    # --exit-on oom: exit 4 at the first OOM, while the writer still writes
    rc, rs, at, size, err = grow("exit-oom.zst", oom, 7, ["--exit-on", "oom"], piece=1500)
    check(rc == 4 and "--exit-on rule" in err, "exit-on oom: exit %s %r" % (rc, err))
    check(at < size, "exit-on oom: exit before the writer finished (%d of %d)" % (at, size))
    check(rs and rs[-1]["devices"][0]["ooms"] > 0 and
          all(r["devices"][0]["ooms"] == 0 for r in rs[:-1] if r["devices"]),
          "exit-on oom: at the first refresh with an OOM")
    # text lines
    r = watch("--once", "--alert", "oom", "--alert", "reserved>50%", oom)
    check(r.returncode == 0 and "ALERT device 0: oom (" in r.stdout and
          "ALERT device 0: reserved>50% (reserved " in r.stdout, "alert text: %r" % r.stdout)
    # bad rules: one line, exit 2
    for bad in ["foo>1", "reserved>", "risk>=dire", "leak>1MiB/hour", "trapped>1GiB", "oom>1"]:
        r = watch("--once", "--alert", bad, oom)
        check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and
              "bad rule" in r.stderr, "bad rule %s: %d %r" % (bad, r.returncode, r.stderr))


def test_screen(leak):
    import pty
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(MEMANALYZE, [MEMANALYZE, "watch", "--once", leak], ENV)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    text = out.decode("utf-8", "replace")
    rep = report(leak)["devices"][0]
    from_once = watch("--once", leak).stdout
    alloc = [x for x in from_once.splitlines() if "device 0: allocated" in x]
    check(os.WEXITSTATUS(status) == 0 and "\x1b[H\x1b[2J" in text and
          "memanalyze watch" in text and alloc and alloc[0].strip() in text and
          rep["end_allocated_bytes"] is not None,
          "terminal screen: %r" % text[:300])


def test_ranks():
    """watch DIR: ranks written at once, one starting later; the job's figures at the end
    equal `ranks --json` of the finished traces, each rank's report --json's; a rank that stops
    without its end record (exit 3) and a file that is no trace (exit 2) among good ones."""
    srcs = [synth("rank%d-src.zst" % r, "--rank", str(r), "--seed", str(r + 5), "--steps", "40",
                  "--layers", "2", *(["--leak", "8000000"] if r == 1 else [])) for r in range(3)]
    job = os.path.join(TMP, "job")
    os.mkdir(job)
    # --stale 4: in a folder the end waits that long for a rank that starts late
    proc = subprocess.Popen([MEMANALYZE, "watch", "--json", "--interval", "0.2", "--stale", "4",
                             job], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    threads, first = [], ""
    for r, src in enumerate(srcs):
        data = open(src, "rb").read()
        if r == 2:  # rank 2 starts once watch has refreshed without it: picked up then
            first = proc.stdout.readline()
        f = open(os.path.join(job, "trace.%d.zst" % r), "wb")
        f.write(data[:40])
        f.flush()
        t = threading.Thread(target=write_slowly, args=(f, data, random.Random(r), 3000))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    written = time.monotonic()
    out, err = proc.communicate(timeout=180)
    waited = time.monotonic() - written
    out = first + out
    check(proc.returncode == 0, "watch DIR: exit %s (%s)" % (proc.returncode, err.strip()))
    check(waited >= 3, "watch DIR: ended %.1f s after the last write (--stale 4: a late rank's "
          "grace)" % waited)
    refreshes = [json.loads(x) for x in out.splitlines() if x.strip()]
    counts = [r["job"]["traces"] for r in refreshes]
    check(counts and counts[0] <= 2 and counts[-1] == 3 and counts == sorted(counts),
          "watch DIR: the traces seen per refresh %s (rank 2 picked up as it starts)" % counts)
    if not refreshes:
        return
    last = refreshes[-1]
    check(last["job"]["ended"] == 3, "watch DIR: the last refresh %s" % last["job"])
    want = json.loads(subprocess.run([MEMANALYZE, "ranks", "--json", job], env=ENV, check=True,
                                     capture_output=True, text=True).stdout)
    got = last["job"]
    check(abs(got["imbalance"] - want["imbalance"]) < 1e-4 and
          got["spread_bytes"] == want["spread_bytes"] and
          got["mean_peak_allocated_bytes"] == want["mean_peak_allocated_bytes"],
          "watch DIR: imbalance %s, ranks %s" % (got["imbalance"], want["imbalance"]))
    check(got["bottleneck"]["rank"] == want["bottleneck_rank"] == 1,
          "watch DIR: bottleneck %s, ranks %s" % (got["bottleneck"], want["bottleneck_rank"]))
    check(got["bottleneck"]["sites_over_median"] == want["bottleneck_sites"][:3] and
          got["bottleneck"]["sites_over_median"][0]["site"] == "train.py:88 train_step",
          "watch DIR: the bottleneck's sites %s, ranks %s" %
          (got["bottleneck"]["sites_over_median"], want["bottleneck_sites"][:3]))
    check(got["leaking_ranks"] == want["leaking_ranks"] == [1] and
          got["first_to_run_out"]["rank"] == want["first_to_run_out"] and
          got["median_growth_bytes_per_step"] == want["median_growth_bytes_per_step"],
          "watch DIR: leaking %s first %s, ranks %s %s" %
          (got["leaking_ranks"], got["first_to_run_out"], want["leaking_ranks"],
           want["first_to_run_out"]))
    ranks = {r["rank"]: r for r in last["ranks"]}
    check(sorted(ranks) == [0, 1, 2] and all(r["rank_from"] == "trace" for r in ranks.values()),
          "watch DIR: the ranks %s" % [(r["rank"], r["rank_from"]) for r in last["ranks"]])
    for r, src in enumerate(srcs):
        if r in ranks:
            compare(ranks[r], report(src), "watch DIR: rank %d" % r)
    print("watch DIR: %d refreshes, traces seen %s" % (len(refreshes), sorted(set(counts))))

    # the alerts say the rank: only rank 1 leaks
    r = watch("--once", "--alert", "leak>4MiB/step", job)
    alerts = [x for x in r.stdout.splitlines() if x.startswith("ALERT")]
    check(r.returncode == 0 and len(alerts) == 1 and
          alerts[0].startswith("ALERT rank 1 device 0: leak>4MiB/step"),
          "watch DIR --alert: exit %d %s" % (r.returncode, alerts))

    # a folder that is not there yet (named with its '/'): looked at again until it is
    later = os.path.join(TMP, "job-later")
    p = subprocess.Popen([MEMANALYZE, "watch", "--json", "--interval", "0.1", "--stale", "3",
                          later + "/"], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    time.sleep(0.5)
    os.mkdir(later)
    with open(os.path.join(later, "trace.0.zst"), "wb") as f:
        f.write(open(srcs[0], "rb").read())
    out, err = p.communicate(timeout=60)
    lines = [json.loads(x) for x in out.splitlines() if x.strip()]
    check(p.returncode == 0 and lines and lines[-1]["job"]["ended"] == 1,
          "a folder made later: exit %s %r, last %s" % (p.returncode, err,
                                                        lines[-1]["job"] if lines else None))

    # a rank killed mid-run among finished ones: exit 3 once the others have ended
    killed = os.path.join(TMP, "job-killed")
    os.mkdir(killed)
    data = open(srcs[0], "rb").read()
    with open(os.path.join(killed, "trace.0.zst"), "wb") as f:
        f.write(data)
    with open(os.path.join(killed, "trace.1.zst"), "wb") as f:
        f.write(open(srcs[1], "rb").read()[:len(data) // 2])
    r = watch("--json", "--interval", "0.2", "--stale", "1", killed)
    check(r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1 and
          "1 of 2 traces stopped without an end record" in r.stderr,
          "a killed rank: exit %d %r" % (r.returncode, r.stderr))
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    check(lines and lines[-1]["job"]["stale"] == 1 and lines[-1]["job"]["ended"] == 1,
          "a killed rank: the last refresh %s" % (lines[-1]["job"] if lines else None))

    # a file that is no trace among two traces: said per refresh, exit 2 at the end
    bad = os.path.join(TMP, "job-bad")
    os.mkdir(bad)
    for i in range(2):
        with open(os.path.join(bad, "trace.%d.zst" % i), "wb") as f:
            f.write(open(srcs[i], "rb").read())
    with open(os.path.join(bad, "notes.zst"), "wb") as f:
        f.write(b"not a trace at all" * 100)
    r = watch("--once", bad)
    check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and
          "1 of 3 traces could not be read" in r.stderr and "[failed]" in r.stdout and
          "bottleneck rank 1" in r.stdout,
          "a file that is no trace: exit %d %r %r" % (r.returncode, r.stderr, r.stdout[-300:]))


def main():
    leak = synth("leak.zst", "--steps", "30", "--leak", "1000000", "--devices", "2",
                 "--seed", "3")
    follow("leak-grow.zst", leak, 1)

    # --once on a finished trace: the end state, the run's end said
    r = watch("--once", "--json", leak)
    check(r.returncode == 0, "--once --json: exit %d %s" % (r.returncode, r.stderr))
    once = json.loads(r.stdout)
    compare(once, report(leak), "--once")
    top = once["devices"][0]["top_site"]
    check(top and top["site"] == "train.py:88 train_step" and
          top["growth_bytes_per_step"] == 1000448,
          "the fastest-growing site is the planted leak: %s" % top)
    r = watch("--once", leak)
    check(r.returncode == 0 and "device 1: allocated" in r.stdout and
          "the run ended: an orderly shutdown's end record" in r.stdout and
          "fastest-growing site: train.py:88 train_step" in r.stdout,
          "--once text: %d %r" % (r.returncode, r.stdout))

    # a planted OOM: synth's device too small for its leak
    oom = synth("oom.zst", "--steps", "20", "--leak", "20000000", "--device-memory",
                "2600000000")
    refreshes = follow("oom-grow.zst", oom, 2, piece=2500)
    if refreshes:
        last = refreshes[-1]["devices"][0]
        check(last["ooms"] > 0 and last["forecast"]["risk"] == "critical",
              "the planted OOM: %s OOMs, risk %s" % (last["ooms"], last["forecast"]["risk"]))
        counts = [x["devices"][0]["ooms"] for x in refreshes if x["started"] and x["devices"]]
        check(counts == sorted(counts) and len(set(counts)) >= 2,
              "OOMs counted as they come: %s" % counts)

    test_alerts(leak, oom)
    test_screen(leak)
    test_ranks()

    # a writer killed mid-frame: no end record, the stale message, exit 3
    data = open(leak, "rb").read()
    stale = os.path.join(TMP, "killed.zst")
    with open(stale, "wb") as f:
        f.write(data[:len(data) // 2])
    t0 = time.monotonic()
    r = watch("--json", "--interval", "0.2", "--stale", "1", stale)
    took = time.monotonic() - t0
    check(r.returncode == 3, "killed writer: exit %d" % r.returncode)
    check("the writer stopped without an end record (killed?)" in r.stderr and
          len(r.stderr.strip().splitlines()) == 1, "killed writer: %r" % r.stderr)
    check(0.9 <= took < 10, "killed writer: said after %.1f s (--stale 1)" % took)
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    check(lines and lines[-1]["state"] == "stale" and not lines[-1]["ended"],
          "killed writer: last refresh %s" % (lines[-1]["state"] if lines else None))

    # SIGINT: a clean exit 0
    p = subprocess.Popen([MEMANALYZE, "watch", "--interval", "0.1", "--stale", "60", stale],
                         env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.6)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    check(p.returncode == 0 and "device 0: allocated" in out and not err,
          "SIGINT: exit %s, %r" % (p.returncode, err))

    # not traces: one line, exit 2
    bad = {"garbage": os.urandom(5000), "empty": b"", "first-frame-cut": data[:60]}
    for name, content in bad.items():
        path = os.path.join(TMP, name)
        with open(path, "wb") as f:
            f.write(content)
        r = watch("--once", path)
        check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and
              "watch: " in r.stderr,
              "%s: exit %d %r" % (name, r.returncode, r.stderr))
    r = watch("--once", os.path.join(TMP, "missing.zst"))
    check(r.returncode == 2 and "cannot open" in r.stderr, "missing file: %r" % r.stderr)
    r = watch("--interval", "0", leak)
    check(r.returncode == 2 and "bad --interval" in r.stderr, "--interval 0: %r" % r.stderr)

    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")


main()
