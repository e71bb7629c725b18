#!/usr/bin/env python3
"""bench_watch.py — memanalyze watch following a trace written at a steady event rate.

A finished trace (synth) is copied into a growing file at RATE events per second (its bytes at
the trace's own bytes per event, in pieces every 5 ms, so frames complete as they would under
memrec), while `watch --json --interval I` follows it. For every refresh, its latency: the time
the refresh's line arrived minus the time the last byte it had read (bytes_read, the end of a
complete frame) was written. Prints the latency (median, p95, max), watch's CPU time per second
of the run and its peak RSS.

With RANKS > 1 the same bytes are written into RANKS files of one directory at RATE events per
second each (trace.R.zst: the ranks of a job) while `watch --json DIR` follows them all; a
latency per rank and refresh whose frames are new.

argv: memanalyze TRACE [RATE=50000] [INTERVAL=0.05] [RANKS=1]. Python 3 standard library only.
"""
import bisect
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time

MEMANALYZE, TRACE = sys.argv[1], sys.argv[2]
RATE = float(sys.argv[3]) if len(sys.argv) > 3 else 50000.0
INTERVAL = sys.argv[4] if len(sys.argv) > 4 else "0.05"
RANKS = int(sys.argv[5]) if len(sys.argv) > 5 else 1

info = subprocess.run([MEMANALYZE, "watch", "--once", "--json", TRACE], capture_output=True,
                      text=True, check=True)
events = json.loads(info.stdout)["events"]
data = open(TRACE, "rb").read()
bytes_per_s = len(data) / events * RATE
folder = tempfile.mkdtemp(prefix="gmt-bench-watch-")
# one rank: a growing file; several: a directory of them, trace.R.zst (the rank in the name)
paths = [os.path.join(folder, "growing.zst" if RANKS == 1 else "trace.%d.zst" % r)
         for r in range(RANKS)]
written = [[] for _ in paths]  # per file: (position after the write, time)
first = data.find(b"\x28\xb5\x2f\xfd", 4)  # the first frame, at once: watch starts on it
files = [open(p, "wb") for p in paths]
for i, f in enumerate(files):
    f.write(data[:first])
    f.flush()
    written[i].append((first, time.monotonic()))
proc = subprocess.Popen([MEMANALYZE, "watch", "--json", "--interval", INTERVAL, "--stale", "30",
                         paths[0] if RANKS == 1 else folder], stdout=subprocess.PIPE, text=True,
                        bufsize=1)
arrivals = []


def reader():
    for line in proc.stdout:
        arrivals.append((time.monotonic(), json.loads(line)))


t = threading.Thread(target=reader)
t.start()
start = time.monotonic()
pos = first
while pos < len(data):
    time.sleep(0.005)
    target = first + int((time.monotonic() - start) * bytes_per_s)
    end = min(len(data), max(target, pos))
    if end > pos:
        for i, f in enumerate(files):  # every rank at the same pace
            f.write(data[pos:end])
            f.flush()
            written[i].append((end, time.monotonic()))
        pos = end
for f in files:
    f.close()
run_s = time.monotonic() - start
proc.wait()
t.join()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
lat = []
seen = [set() for _ in paths]
for when, doc in arrivals:
    traces = [doc] if RANKS == 1 else doc["ranks"]
    for r in traces:
        i = paths.index(r["trace"]) if RANKS > 1 else 0
        b = r.get("bytes_read", 0)
        if b in seen[i] or b <= first:
            continue  # a refresh with nothing new of this rank
        seen[i].add(b)
        positions = [p for p, _ in written[i]]
        k = bisect.bisect_left(positions, b)
        lat.append(when - written[i][k][1])
lat.sort()


def pct(p):
    return lat[min(len(lat) - 1, int(p * len(lat)))] * 1e3 if lat else float("nan")


print("%d rank%s x %d events at %.0f ev/s each (%.1f s), --interval %s: %d rank refreshes with "
      "new frames" % (RANKS, "" if RANKS == 1 else "s", events, RATE, run_s, INTERVAL, len(lat)))
print("latency ms: median %.1f, p95 %.1f, max %.1f" % (pct(0.5), pct(0.95), pct(1.0)))
cpu = usage.ru_utime + usage.ru_stime - 0  # the --once run above is in it too: small
print("watch CPU: %.1f%% of a core (incl. the --once probe), peak RSS %.1f MiB" % (
    100 * cpu / run_s, usage.ru_maxrss / 1024))
