"""test_torch_train.py — samples/pytorch/train.py recorded by memrec on a
real GPU with real PyTorch, checked with memanalyze (issue 6):

  leak      --leak: 12 steps found; `leaks --json` names train.py's LEAK line
            first, growing 1 MiB per step; the blocks came from PyTorch's
            history (source torch) and the segments from both sources are
            joined (no segment_overlap/size warnings); the segments live at
            the end agree with torch.cuda.memory._snapshot() taken there; the
            bridge named every parameter, gradients and AdamW's two states per
            parameter, and the categories at the peak hold at least the
            parameters' bytes as parameter and twice that as optimizer state
            and the trace's PyTorch blocks over the steps' window match
            torch.cuda.memory_stats() exactly (check_torch_window.py: allocs,
            requested bytes, free requests)
  fragment  --fragment: fragmentation is reported (worst > 0)

Skips (77) without torch or a usable GPU, saying which. The ctests gpu_torch_*
run it with the Python CMake found, which on a build made without PyTorch is not
the GPU machine's (they then skip): tests/gpu/run_all.sh runs it there with the
python3 that holds PyTorch, from a package or a build.
Usage: test_torch_train.py [--keep DIR] MEMREC MEMANALYZE SOURCE_DIR SCENARIO
  --keep DIR  copies the trace to DIR/torch_test_<scenario>.zst
  SOURCE_DIR  holds samples/pytorch/train.py (the source tree, or run_all.sh's package)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_torch_window  # noqa: E402  (beside this file)


def skip(why):
    print("SKIP: " + why, file=sys.stderr)
    return 77


def main():
    args = sys.argv[1:]
    keep = None
    if args[:1] == ["--keep"] and len(args) > 1:
        keep, args = args[1], args[2:]
    if len(args) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    memrec, memanalyze, source_dir, scenario = args
    probe = subprocess.run([sys.executable, "-c",
                            "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        return skip("PyTorch is not installed for %s" % sys.executable)
    if probe.stdout.strip() != "True":
        return skip("PyTorch finds no usable CUDA device")
    train = os.path.join(source_dir, "samples", "pytorch", "train.py")
    train_lines = open(train).read().split("\n")
    leak_line = next(i + 1 for i, line in enumerate(train_lines) if line.endswith("# LEAK"))
    failures = []

    def check(cond, what):
        print(("ok: " if cond else "FAILED: ") + what, file=sys.stderr)
        if not cond:
            failures.append(what)

    def analyze(*args):
        out = subprocess.run([memanalyze, *args], capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip())
        return out.stdout

    def sql(trace, query):
        return json.loads(analyze("sql", trace, query, "--json"))

    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "train.zst")
        snap = os.path.join(tmp, "segments.json")
        stats = os.path.join(tmp, "stats.json")
        if scenario == "leak":
            run = subprocess.run([memrec, "-o", trace, "--", sys.executable, train, "--steps",
                                  "12", "--leak", "--snapshot", snap, "--stats", stats],
                                 capture_output=True, text=True, timeout=600)
            print(run.stdout + run.stderr, file=sys.stderr)
            check(run.returncode == 0, "train.py --leak ran under memrec")
            if keep and os.path.exists(trace):
                shutil.copyfile(trace, os.path.join(keep, "torch_test_leak.zst"))
            try:
                window = check_torch_window.checks(memanalyze, trace, stats, 12)
            except (OSError, ValueError, KeyError, RuntimeError) as e:
                window = [(False, "torch window: the trace and the stats could be read", str(e))]
            for ok, name, detail in window:
                check(ok, "%s: %s" % (name, detail))
            steps = sql(trace, "SELECT count(*) AS n FROM steps")
            check(steps == [{"n": 12}], "12 steps found: %r" % steps)
            sites = json.loads(analyze("leaks", trace, "--json"))["sites"]
            top = sites[0] if sites else {}
            check(top.get("site") == "train.py:%d main" % leak_line and
                  top.get("growth_bytes_per_step") == 1 << 20,
                  "the leak at train.py:%d, 1 MiB/step: %r" % (leak_line, top))
            blocks = sql(trace, "SELECT source, count(*) AS n FROM events "
                                "WHERE level = 'block' GROUP BY 1")
            check(any(b["source"] == "torch" and b["n"] > 100 for b in blocks),
                  "PyTorch's blocks recorded: %r" % blocks)
            warnings = sql(trace, "SELECT code, count(*) AS n FROM warnings GROUP BY 1")
            check(not [w for w in warnings if w["code"].startswith("segment_")],
                  "CUPTI's and PyTorch's segments joined: %r" % warnings)
            live = sql(trace, "SELECT device, addr, size FROM segments "
                              "WHERE free_ts_ns IS NULL ORDER BY device, addr")
            with open(snap) as f:
                want = sorted((s["device"], s["address"], s["total_size"]) for s in json.load(f))
            got = [(s["device"], s["addr"], s["size"]) for s in live]
            check(got == want, "segments at the end agree with _snapshot(): %d vs %d"
                  % (len(got), len(want)))
            line = next((l for l in run.stdout.split("\n") if l.startswith("parameters: ")), "")
            nparams = int(line.split()[1]) if line else -1
            param_bytes = int(line.split()[3]) if line else -1
            names = {r["category"]: r["n"] for r in
                     sql(trace, "SELECT category, count(*) AS n FROM tensor_names GROUP BY 1")}
            check(names.get("parameter", 0) >= nparams > 0 and names.get("gradient", 0) > 0 and
                  names.get("optimizer_state", 0) >= 2 * nparams,
                  "tensor names: %r for %d parameters" % (names, nparams))
            cats = json.loads(analyze("report", trace, "--json"))["devices"][0]
            cats = cats.get("categories_at_peak") or {}
            check(cats.get("parameter", 0) >= param_bytes > 0 and
                  cats.get("optimizer_state", 0) >= 2 * param_bytes,
                  "categories at the peak %r hold the %d parameter bytes" % (cats, param_bytes))
        elif scenario == "fragment":
            run = subprocess.run([memrec, "-o", trace, "--", sys.executable, train, "--steps",
                                  "12", "--fragment"], capture_output=True, text=True,
                                 timeout=600)
            print(run.stdout + run.stderr, file=sys.stderr)
            check(run.returncode == 0, "train.py --fragment ran under memrec")
            if keep and os.path.exists(trace):
                shutil.copyfile(trace, os.path.join(keep, "torch_test_fragment.zst"))
            report = json.loads(analyze("report", trace, "--json"))
            worst = report["devices"][0].get("fragmentation_worst") or 0
            check(worst > 0, "fragmentation reported: worst %r" % worst)
        else:
            return skip("unknown scenario " + scenario)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
