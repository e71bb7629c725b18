#!/usr/bin/env python3
"""check_torch_window.py — the trace's PyTorch blocks against PyTorch's own counters.

    check_torch_window.py MEMANALYZE TRACE STATS_JSON STEPS

STATS_JSON is what samples/pytorch/train.py --stats wrote: torch.cuda.memory_stats() at the
start of step 0 and at the end of the last step ({"start": {...}, "end": {...}}). Over that
window (the trace's steps: begin of the first to end of the last) the trace must hold exactly
as many PyTorch block allocs as PyTorch counted (allocation.all.allocated), exactly as many
free requests (allocation.all.freed), and its requested bytes must add up to PyTorch's
(requested_bytes.all.allocated, where this PyTorch keeps it): every entry of PyTorch's history
reached the trace once, none twice, none lost. Also STEPS steps in the trace.

Prints one line per check, "PASS name: detail" or "FAIL name: detail" (run_all.sh turns them
into verdicts; test_torch_train.py into its checks). Exit 0 when all passed, 1 otherwise.
"""
import json
import subprocess
import sys


def sql(memanalyze, trace, query):
    r = subprocess.run([memanalyze, "sql", trace, query, "--json"], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("memanalyze sql %r: exit %d: %s" % (query, r.returncode,
                                                              r.stderr.strip()))
    return json.loads(r.stdout)


def checks(memanalyze, trace, stats_path, steps):
    """[(ok, name, detail)]"""
    out = []
    with open(stats_path) as f:
        stats = json.load(f)
    start, end = stats["start"], stats["end"]

    def delta(key):
        if key not in start or key not in end:
            return None
        return end[key] - start[key]

    got = sql(memanalyze, trace, "SELECT count(*) AS n, min(begin_ts_ns) AS b, "
                                 "max(end_ts_ns) AS e FROM steps")[0]
    out.append((got["n"] == steps, "torch window: %d steps" % steps,
                "%s steps in the trace" % got["n"]))
    if got["b"] is None or got["e"] is None:
        out.append((False, "torch window: the steps span a window", "no step with both ends"))
        return out
    window = "source = 'torch' AND level = 'block' AND ts_ns >= %d AND ts_ns <= %d" % (
        got["b"], got["e"])
    row = sql(memanalyze, trace, "SELECT count(*) AS n, sum(requested_size) AS req, "
                                 "count(requested_size) AS with_req FROM events "
                                 "WHERE op = 'alloc' AND " + window)[0]
    want = delta("allocation.all.allocated")
    out.append((want is not None and row["n"] == want,
                "torch window: block allocs = memory_stats allocation.all.allocated",
                "trace %s, PyTorch %s" % (row["n"], want)))
    want = delta("requested_bytes.all.allocated")
    if want is not None:
        out.append((row["with_req"] == row["n"] and (row["req"] or 0) == want,
                    "torch window: requested bytes = memory_stats requested_bytes.all.allocated",
                    "trace %s (%s of %s allocs with a request), PyTorch %s"
                    % (row["req"], row["with_req"], row["n"], want)))
    freed = sql(memanalyze, trace, "SELECT count(*) AS n FROM events WHERE "
                                   "op = 'free_requested' AND " + window)[0]["n"]
    want = delta("allocation.all.freed")
    out.append((want is not None and freed == want,
                "torch window: free requests = memory_stats allocation.all.freed",
                "trace %s, PyTorch %s" % (freed, want)))
    return out


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    memanalyze, trace, stats_path, steps = sys.argv[1:]
    try:
        results = checks(memanalyze, trace, stats_path, int(steps))
    except (OSError, ValueError, KeyError, RuntimeError, subprocess.SubprocessError) as e:
        results = [(False, "torch window: the trace and the stats could be read", str(e))]
    for ok, name, detail in results:
        print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail))
    return 0 if all(ok for ok, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
