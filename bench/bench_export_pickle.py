#!/usr/bin/env python3
"""bench_export_pickle.py — CPython's baseline for `export --to pytorch` (bench/run_export.sh):
reads the snapshot our export wrote with a restricted Unpickler (untimed: no class is found),
then times pickle.dump(obj, f, protocol=4) of that same structure to a file, flushed and fsynced
as memanalyze's file is, and the json.dump of it too. Standard library only.

    bench_export_pickle.py EXPORTED.pickle OUT.pickle"""
import io
import json
import os
import pickle
import resource
import sys
import time


class Refuse(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"class {module}.{name} refused")


def timed_dump(obj, path, dump):
    start = time.perf_counter()
    with open(path, "wb" if dump is pickle.dump else "w") as f:
        if dump is pickle.dump:
            pickle.dump(obj, f, protocol=4)
        else:
            json.dump(obj, f, separators=(",", ":"))
        f.flush()
        os.fsync(f.fileno())
    return time.perf_counter() - start, os.path.getsize(path)


def main():
    src, out = sys.argv[1], sys.argv[2]
    start = time.perf_counter()
    with open(src, "rb") as f:
        obj = Refuse(io.BufferedReader(f, 1 << 20)).load()
    load = time.perf_counter() - start
    entries = sum(len(t) for t in obj["device_traces"])
    secs, size = timed_dump(obj, out, pickle.dump)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  python: restricted load {load:.2f} s (untimed); {entries} entries; "
          f"pickle.dump protocol 4: {secs:.2f} s, {size} bytes; peak RSS {rss:.0f} MiB")
    secs, size = timed_dump(obj, out, json.dump)
    print(f"  python: json.dump: {secs:.2f} s, {size} bytes")


main()
