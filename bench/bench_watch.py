#!/usr/bin/env python3
"""bench_watch.py — memanalyze watch following a trace written at a steady event rate.

A finished trace (synth) is copied into a growing file at RATE events per second (its bytes at
the trace's own bytes per event, in pieces every 5 ms, so frames complete as they would under
memrec), while `watch --json --interval I` follows it. For every refresh, its latency: the time
the refresh's line arrived minus the time the last byte it had read (bytes_read, the end of a
complete frame) was written. Prints the latency (median, p95, max), watch's CPU time per second
of the run and its peak RSS.

argv: memanalyze TRACE [RATE=50000] [INTERVAL=0.05]. Python 3 standard library only.
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

info = subprocess.run([MEMANALYZE, "watch", "--once", "--json", TRACE], capture_output=True,
                      text=True, check=True)
events = json.loads(info.stdout)["events"]
data = open(TRACE, "rb").read()
bytes_per_s = len(data) / events * RATE
dst = os.path.join(tempfile.mkdtemp(prefix="gmt-bench-watch-"), "growing.zst")
written = []  # (position after the write, time)
f = open(dst, "wb")
first = data.find(b"\x28\xb5\x2f\xfd", 4)  # the first frame, at once: watch starts on it
f.write(data[:first])
f.flush()
written.append((first, time.monotonic()))
proc = subprocess.Popen([MEMANALYZE, "watch", "--json", "--interval", INTERVAL, "--stale", "30",
                         dst], stdout=subprocess.PIPE, text=True, bufsize=1)
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
        f.write(data[pos:end])
        f.flush()
        pos = end
        written.append((pos, time.monotonic()))
f.close()
run_s = time.monotonic() - start
proc.wait()
t.join()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
positions = [p for p, _ in written]
lat = []
seen = set()
for when, doc in arrivals:
    b = doc["bytes_read"]
    if b in seen or b <= first:
        continue  # a refresh with nothing new
    seen.add(b)
    i = bisect.bisect_left(positions, b)
    lat.append(when - written[i][1])
lat.sort()


def pct(p):
    return lat[min(len(lat) - 1, int(p * len(lat)))] * 1e3 if lat else float("nan")


print("%d events at %.0f ev/s (%.1f s), --interval %s: %d refreshes with new frames" % (
    events, RATE, run_s, INTERVAL, len(lat)))
print("latency ms: median %.1f, p95 %.1f, max %.1f" % (pct(0.5), pct(0.95), pct(1.0)))
cpu = usage.ru_utime + usage.ru_stime - 0  # the --once run above is in it too: small
print("watch CPU: %.1f%% of a core (incl. the --once probe), peak RSS %.1f MiB" % (
    100 * cpu / run_s, usage.ru_maxrss / 1024))
