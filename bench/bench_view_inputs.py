#!/usr/bin/env python3
"""bench_view_inputs.py — `memanalyze view A B …` with several inputs (issue 31): the time to
the printed URL with 1, 4 and N inputs, /api/inputs (its first request, which reads every
input's facts, and a second, kept) and the strip's sparklines (/api/timeline?input=I&n=64 each).

    bench_view_inputs.py MEMANALYZE SYNTH [--inputs N] [--events E] [--reps R] [--dir DIR]

N synth ranks of E events each (default 8 of 1 000 000, `synth --rank I --seed I+1`) are
written to DIR (default a temporary folder; kept when given, so a rerun is warm), cached first
(one `view` of all of them until each input's /api/allocations answers: the databases, their
categories and blocks indexes made), then timed warm: the URL R times (default 3) for each
count, min–max. Prints a Markdown table. Python 3 standard library only.
"""
import argparse
import http.client
import os
import select
import signal
import subprocess
import tempfile
import time


class Viewer:
    def __init__(self, mem, inputs, env):
        t0 = time.monotonic()
        self.p = subprocess.Popen([mem, "view"] + inputs + ["--port", "0"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.p.stdout], [], [], 600)
        line = self.p.stdout.readline() if ready else ""
        self.took = time.monotonic() - t0
        if not line:
            raise RuntimeError("no URL: " + self.p.stderr.read())
        port, self.token = line.split("127.0.0.1:", 1)[1].strip().split("/?token=")
        self.port = int(port)

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        t0 = time.monotonic()
        c.request("GET", path, headers={"Host": "127.0.0.1:%d" % self.port,
                                        "X-Token": self.token})
        r = c.getresponse()
        body = r.read()
        took = time.monotonic() - t0
        c.close()
        return r.status, body, took

    def stop(self):
        self.p.send_signal(signal.SIGINT)
        self.p.wait(timeout=30)
        self.p.stdout.close()
        self.p.stderr.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mem")
    ap.add_argument("synth")
    ap.add_argument("--inputs", type=int, default=8)
    ap.add_argument("--events", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dir")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="gmt-bench-view-inputs-")
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ, GMT_CACHE_DIR=os.path.join(d, "cache"))
    names = []
    for r in range(a.inputs):
        path = os.path.join(d, "job.%d.zst" % r)
        if not os.path.exists(path):
            subprocess.run([a.synth, "-o", path, "--events", str(a.events), "--rank", str(r),
                            "--seed", str(r + 1)], check=True, capture_output=True)
        names.append(path)
    v = Viewer(a.mem, names, env)  # cache everything: databases, categories, blocks indexes
    for i in range(a.inputs):
        while v.get("/api/allocations?input=%d&t0=0&t1=1" % i)[0] == 503:
            time.sleep(0.1)
    v.stop()
    print("| inputs | URL printed (s, %d runs) |" % a.reps)
    print("|---|---|")
    for n in sorted({1, min(4, a.inputs), a.inputs}):
        took = []
        for _ in range(a.reps):
            v = Viewer(a.mem, names[:n], env)
            took.append(v.took)
            v.stop()
        print("| %d | %.3f–%.3f |" % (n, min(took), max(took)))
    v = Viewer(a.mem, names, env)
    status, body, first = v.get("/api/inputs")
    assert status == 200, body[:200]
    _, _, second = v.get("/api/inputs")
    spark = []
    for i in range(a.inputs):
        status, _, t = v.get("/api/timeline?input=%d&n=64" % i)
        assert status == 200
        spark.append(t)
    v.stop()
    print()
    print("/api/inputs, %d inputs of %d events: first %.1f ms, kept %.2f ms, %d bytes; "
          "sparklines (/api/timeline?input=I&n=64) %.1f–%.1f ms each" % (
              a.inputs, a.events, first * 1e3, second * 1e3, len(body), min(spark) * 1e3,
              max(spark) * 1e3))


if __name__ == "__main__":
    main()
