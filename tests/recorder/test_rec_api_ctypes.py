"""test_rec_api_ctypes.py — memrec.h's Python snippet, taken verbatim from
the header's comment and run in a child Python:

  1. without libmemrec.so: the snippet leaves `memrec` None, nothing breaks;
  2. with the environment the memrec launcher sets (CUDA_INJECTION64_PATH,
     MEMREC_OUTPUT; no CUPTI) and the library not loaded yet (memrec
     preloads nothing; no CUDA here): the snippet loads it, and the calls
     reach the trace; memanalyze reads it back: the markers, the step and the
     block events of source memrec, exactly.

Usage: test_rec_api_ctypes.py SOURCE_DIR LIBMEMREC MEMANALYZE (exit 77: skip).
"""
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
from rec_testlib import SKIP, Checks, clean_env, sql_lines  # noqa: E402

CALLS = """
print("found" if memrec else "absent")
if memrec:
    memrec.memrec_step_begin(3)
    memrec.memrec_mark(b"eval")
    memrec.memrec_region_alloc(0x7000, 128, 1)
    memrec.memrec_region_free(0x7000)
    memrec.memrec_step_end(3)
"""


def header_snippet(source_dir):
    """The lines of memrec.h's comment between 'Python (ctypes)' and the
    next blank comment line, without the comment's indentation."""
    with open(os.path.join(source_dir, "recorder", "memrec.h")) as f:
        text = f.read()
    block = text.split("Python (ctypes)", 1)[1].split("\n *\n", 1)[0]
    lines = block.split("\n")[1:]
    return "\n".join(re.sub(r"^ \*     ", "", line) for line in lines) + "\n"


def run_python(code, env):
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)


def main():
    if len(sys.argv) < 4:
        print("usage: test_rec_api_ctypes.py SOURCE_DIR LIBMEMREC MEMANALYZE", file=sys.stderr)
        return SKIP
    source_dir, library, memanalyze = sys.argv[1:4]
    if not os.path.exists(library) or not os.path.exists(memanalyze):
        print("SKIP: libmemrec.so or memanalyze not built", file=sys.stderr)
        return SKIP
    check = Checks("test_rec_api_ctypes")

    code = header_snippet(source_dir) + CALLS
    check("memrec = ctypes.CDLL(" in code, "the snippet is in memrec.h")
    env = clean_env()

    absent = run_python(code, env)
    check(absent.returncode == 0 and absent.stdout.strip() == "absent",
          "without libmemrec.so: %r %r" % (absent.stdout, absent.stderr))

    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "py.zst")
        injected = dict(env, CUDA_INJECTION64_PATH=os.path.abspath(library), MEMREC_OUTPUT=trace,
                        MEMREC_NO_CUPTI="1", MEMREC_QUIET="1")
        found = run_python(code, injected)
        check(found.returncode == 0 and found.stdout.strip() == "found",
              "under memrec's environment: %r %r" % (found.stdout, found.stderr))
        check(os.path.exists(trace), "the trace was written")
        if os.path.exists(trace):
            analyze_env = dict(env, GMT_CACHE_DIR=os.path.join(tmp, "cache"))
            markers = sql_lines(memanalyze, trace,
                          "SELECT kind, name, domain FROM markers ORDER BY marker_id", analyze_env)
            check(markers == ["step_begin,step 3,memrec", "mark,eval,memrec",
                              "step_end,step 3,memrec"], "markers: %r" % markers)
            steps = sql_lines(memanalyze, trace, "SELECT step, name FROM steps", analyze_env)
            check(steps == ["3,step 3"], "steps: %r" % steps)
            events = sql_lines(memanalyze, trace,
                         "SELECT op, level, source, addr, size, device FROM events "
                         "WHERE event_id > 0 ORDER BY event_id", analyze_env)
            check(events == ["alloc,block,memrec,28672,128,1", "free,block,memrec,28672,128,1"],
                  "events: %r" % events)

    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
