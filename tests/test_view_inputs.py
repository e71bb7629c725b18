#!/usr/bin/env python3
"""test_view_inputs.py — `memanalyze view A B …`: several inputs served side by side (issue 31)
without a browser (the page's strip: test_view_inputs_browser.py).

Inputs: two synth ranks of one job (--rank 0 and --rank 1, other seeds, rank 1 leaking, on two
devices), a synth run with no rank, and a real PyTorch snapshot from ../shared/data/pytorch
(when present). Checked:
  - /api/inputs for [rank 0, rank 1, snapshot (or the unranked run)]: "runs" (one names no
    rank), the reason naming it; per input, in the order given, the facts `ranks --json` prints
    for the same inputs, key by key (matched by input), and those `compare --json` prints (its
    runs in order); events and span_ns those of /api/summary?input=I's run and of
    `report --json`; the devices and the peaks' event ids those of /api/summary?input=I; the
    label the file name, "rank N · name" when the trace says its rank;
  - [rank 0, rank 1]: "ranks", one clock (their t0_unix_ns from `sql` meta: offset_ns the
    difference); the same rank twice: "runs", saying which rank;
  - every endpoint with input=1 (summary, steps, marks, timeline whole and zoomed, segments,
    allocations, stacks, window, search, block) answers what a one-input server on that input
    answers, byte for byte; input=0 and no input alike;
  - a bad input (3, -1, x, 1.5, empty, 99999999999999999999): 400 with a one-line {"error"};
  - for every input: no token 401, a wrong one 403, a foreign Host 421;
  - the blocks index of each input in the cache folder (one per input);
  - the time to the printed URL with 1 and with 4 inputs (printed; the 4 at most 3 s more);
  - SIGINT: exit 0.
Skips (77) when memanalyze was built without libmicrohttpd.

argv: synth memanalyze [shared_pytorch_dir]. Python 3 standard library only.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import view_client  # noqa: E402

SYNTH, MEM = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SHARED = sys.argv[3] if len(sys.argv) > 3 else ""
checks = view_client.Checks()
check = checks.check

# the keys /api/inputs shares with `ranks --json` (each input's entry) and `compare --json`
RANK_KEYS = ["device", "rank", "rank_from", "host", "steps", "peak_allocated_bytes",
             "peak_allocated_step", "peak_reserved_bytes", "peak_reserved_step",
             "fragmentation_at_peak", "ooms", "device_memory_bytes", "growth_bytes_per_step",
             "limit_step", "leaking", "input"]
COMPARE_KEYS = ["device", "host", "steps", "peak_allocated_bytes", "peak_allocated_step",
                "peak_reserved_bytes", "peak_reserved_step", "fragmentation_at_peak", "ooms",
                "device_memory_bytes", "growth_bytes_per_step", "limit_step", "input"]


def cli_json(env, *args):
    p = subprocess.run([MEM] + list(args), env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (args, p.stderr)
    return json.loads(p.stdout)


def start(inputs, env, cwd):
    """`view INPUTS --port 0` (tests/view_client.py); .took: seconds to the URL line."""
    return view_client.ViewServer(MEM, inputs, env, cwd, stop_wait_s=10)


def raw(v, path):
    """The body of a 200 answer (503 while the blocks index is built: asked again)."""
    status, _, data = v.get(path, wait_built=True)
    check(status == 200, "%s: %d %s" % (path, status, data[:200]))
    return data


def api(v, path):
    return json.loads(raw(v, path))


def with_input(path, i):
    if i is None:
        return path
    return path + ("&" if "?" in path else "?") + "input=%d" % i


def check_facts(v, names, env, label):
    doc = api(v, "/api/inputs")
    check(doc["count"] == len(names) and len(doc["inputs"]) == len(names),
          label + ": %d inputs answered" % len(doc["inputs"]))
    ranks = {r["input"]: r for r in cli_json(env, "ranks", "--json", *names)["ranks"]}
    runs = cli_json(env, "compare", "--json", *names)["runs"]
    for i, (name, got) in enumerate(zip(names, doc["inputs"])):
        check(got["index"] == i and got["input"] == name, label + ": input %d is %r" % (
            i, got["input"]))
        want = ranks.get(name)
        if not check(want is not None, label + ": ranks says nothing of " + name):
            continue
        for k in RANK_KEYS:
            check(got.get(k) == want.get(k), "%s: input %d %s: %r, ranks says %r" % (
                label, i, k, got.get(k), want.get(k)))
        first = want.get("first_oom")
        check(got["input_ooms"] == (first["ooms"] if first else 0), label + ": input_ooms")
        for k in COMPARE_KEYS:
            check(got.get(k) == runs[i].get(k), "%s: input %d %s: %r, compare says %r" % (
                label, i, k, got.get(k), runs[i].get(k)))
        base = os.path.basename(name)
        check(got["label"] == ("rank %d · %s" % (want["rank"], base)
                               if want["rank_from"] != "order" else base),
              label + ": label %r" % got["label"])
        summary = api(v, with_input("/api/summary", i))
        report = cli_json(env, "report", "--json", name)
        for k in ("events", "span_ns"):
            check(got[k] == summary["run"][k] == report["run"][k],
                  "%s: input %d %s: %r, summary %r, report %r" % (
                      label, i, k, got[k], summary["run"][k], report["run"][k]))
        check(got["devices"] == [d["device"] for d in summary["devices"]],
              label + ": input %d devices %r" % (i, got["devices"]))
        dev = [d for d in summary["devices"] if d["device"] == got["device"]]
        check(dev and dev[0]["peak_allocated_bytes"] == got["peak_allocated_bytes"] and
              dev[0]["peak_allocated_event_id"] == got["peak_allocated_event_id"],
              label + ": input %d peak against the summary" % i)
        check(got["timestamps"] == summary["timestamps"], label + ": timestamps")
    return doc


def check_security(v, n, label):
    wrong = ("0" if v.token[0] != "0" else "1") + v.token[1:]
    for i in range(n):
        for path in ("/api/summary", "/api/timeline", "/api/inputs"):
            p = with_input(path, i)
            check(v.get(p, token=None)[0] == 401, "%s: %s without the token" % (label, p))
            check(v.get(p, token=wrong)[0] == 403, "%s: %s with a wrong token" % (label, p))
            check(v.get(p, host="evil.example:%d" % v.port)[0] == 421,
                  "%s: %s from a foreign Host" % (label, p))


def check_bad_input(v, n, label):
    for bad in (str(n), "-1", "x", "1.5", "", "99999999999999999999", "+1", "1x"):
        for path in ("/api/summary", "/api/timeline", "/api/allocations?t0=0&t1=1",
                     "/api/inputs"):
            p = path + ("&" if "?" in path else "?") + "input=" + bad
            status, _, data = v.get(p)
            ok = status == 400
            try:
                body = json.loads(data)
                ok = ok and list(body) == ["error"] and "\n" not in body["error"] and \
                    "input" in body["error"]
            except ValueError:
                ok = False
            check(ok, "%s: %s: %d %r" % (label, p, status, data[:120]))


def same_as_alone(v, alone, i, label):
    """Every endpoint of input i equals what a server of that input alone answers."""
    whole = api(alone, "/api/timeline?n=64")
    end = whole["axis_end"]
    steps = api(alone, "/api/steps")
    summary = api(alone, "/api/summary")
    dev = summary["devices"][0]["device"]
    paths = ["/api/summary", "/api/steps", "/api/steps?first=0&count=200", "/api/marks",
             "/api/marks?device=%d" % dev, "/api/timeline", "/api/timeline?n=64",
             "/api/timeline?lo=%d&hi=%d&n=50" % (end // 3, end // 3 + max(end // 50, 20)),
             "/api/segments?at=end",
             "/api/segments?at=event:%d&frames=1&first=0&count=4" % max(
                 1, summary["run"]["events"] // 2),
             "/api/allocations?t0=0&t1=%d&k=50" % end,
             "/api/stacks?by=site&n=64", "/api/stacks?by=size&n=64",
             "/api/window?from=event:1&to=end",
             "/api/search?q=py", "/api/search?addr=0x7f0000000000"]
    blocks = api(alone, "/api/allocations?t0=0&t1=%d&k=3" % end)["blocks"]
    for b in blocks[:2]:
        paths.append("/api/block?id=%d" % b[0])  # columns: alloc_id first
    if steps.get("step_count"):
        paths.append("/api/steps?first=1&count=2")
    for p in paths:
        want = raw(alone, p)
        got = raw(v, with_input(p, i))
        if p == "/api/summary":  # the one fact of the server, not of its input: how many it has
            n = v.api("/api/inputs")["count"]
            check(b'"inputs": 1,' in want, "%s: a server of one input says inputs 1" % label)
            want = want.replace(b'"inputs": 1,', b'"inputs": %d,' % n, 1)
        check(got == want, "%s: %s?input=%d differs from a server of that input alone:\n%r\n%r"
              % (label, p, i, got[:300], want[:300]))


def main():
    tmp = tempfile.mkdtemp(prefix="gmt-view-inputs-")
    cache = os.path.join(tmp, "cache")
    env = dict(os.environ, GMT_CACHE_DIR=cache)
    if view_client.built_without_server(MEM, env):
        print("SKIP: memanalyze was built without libmicrohttpd")
        return 77

    def synth(name, *args):
        path = os.path.join(tmp, name)
        subprocess.run([SYNTH, "-o", path, "--steps", "6"] + list(args), check=True,
                       capture_output=True)
        return path

    r0 = synth("job.0.zst", "--rank", "0", "--seed", "1")
    r1 = synth("job.1.zst", "--rank", "1", "--seed", "2", "--leak", "4000000", "--devices", "2")
    r0b = synth("again.zst", "--rank", "0", "--seed", "3")
    plain = synth("plain.zst", "--seed", "4", "--events", "3000")
    snap = os.path.join(SHARED, "train-step-m512.pickle") if SHARED else ""
    if not (snap and os.path.exists(snap)):
        print("note: ../shared/data/pytorch is absent: a synth run without a rank instead")
        snap = plain

    # three inputs: ranks and a run without one
    names = [r0, r1, snap]
    v = start(names, env, tmp)
    try:
        doc = check_facts(v, names, env, "three")
        check(doc["kind"] == "runs" and os.path.basename(snap) in doc["why"] and
              not doc["shared_clock"], "three: kind %r, why %r" % (doc["kind"], doc["why"]))
        check(doc["bottleneck_input"] in range(3), "three: bottleneck_input")
        check_bad_input(v, 3, "three")
        check_security(v, 3, "three")
        for i, name in enumerate(names[1:], 1):
            alone = start([name], env, tmp)
            try:
                same_as_alone(v, alone, i, "three")
            finally:
                check(alone.stop()[0] == 0, "alone: exit")
        # input 0 and no input: one answer
        for p in ("/api/summary", "/api/timeline?n=64", "/api/marks"):
            check(raw(v, p) == raw(v, p + ("&" if "?" in p else "?") + "input=0"),
                  "three: %s with input=0" % p)
    finally:
        check(v.stop()[0] == 0, "three: exit")
    blocks = [f for f in os.listdir(os.path.join(cache)) if f.endswith(".blocks")] \
        if os.path.isdir(cache) else []
    check(len(blocks) >= 3, "a blocks index per input in the cache folder: %r" % blocks)

    # the two ranks of one job: one clock
    v = start([r0, r1], env, tmp)
    try:
        doc = check_facts(v, [r0, r1], env, "ranks")
        check(doc["kind"] == "ranks" and doc["shared_clock"], "ranks: %r" % doc["why"])
        t0 = []
        for name in (r0, r1):
            rows = cli_json(env, "sql", name, "SELECT value FROM meta WHERE key = 't0_unix_ns'",
                            "--json")
            t0.append(int(rows[0]["value"]))
        want = [t - min(t0) for t in t0]
        check([d["offset_ns"] for d in doc["inputs"]] == want,
              "ranks: offsets %r, want %r" % ([d["offset_ns"] for d in doc["inputs"]], want))
        check(doc["bottleneck_input"] == max(range(2), key=lambda i: doc["inputs"][i][
            "peak_allocated_bytes"]), "ranks: bottleneck_input")
    finally:
        check(v.stop()[0] == 0, "ranks: exit")

    # the same rank twice: runs, saying which
    v = start([r0, r0b], env, tmp)
    try:
        doc = api(v, "/api/inputs")
        check(doc["kind"] == "runs" and "rank 0" in doc["why"] and not doc["shared_clock"],
              "rank twice: %r %r" % (doc["kind"], doc["why"]))
        check([d["input"] for d in doc["inputs"]] == [r0, r0b], "rank twice: order")
    finally:
        check(v.stop()[0] == 0, "rank twice: exit")

    # the time to the URL: one input, four
    took = []
    for inputs in ([r0], [r0, r1, r0b, plain]):
        best = None
        for _ in range(3):
            v = start(inputs, env, tmp)
            best = v.took if best is None else min(best, v.took)
            v.stop()
        took.append(best)
    print("test_view_inputs: the URL printed after %.3f s (1 input), %.3f s (4 inputs)" % tuple(
        took))
    check(took[1] < took[0] + 3, "4 inputs: %.2f s to the URL" % took[1])

    shutil.rmtree(tmp, ignore_errors=True)
    return checks.finish("test_view_inputs: ok")


if __name__ == "__main__":
    sys.exit(main())
