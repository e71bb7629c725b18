"""rec_testlib.py — what the recorder's Python tests (test_rec_api_ctypes.py,
test_rec_python.py, test_rec_torch.py) share: the list of failed checks and
the exit status it ends in, the environment a recorded child starts from
(no MEMREC_* variable, no LD_PRELOAD), and memanalyze's `sql` read back as
CSV lines or JSON rows.

It holds no expectation of its own: every check stays in its test. Each test
runs as a script from this folder, so `import rec_testlib` finds it.
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


class Checks:
    """check(cond, what) records and prints a failure; finish() is the
    test's exit status."""

    def __init__(self, name):
        self.name = name
        self.failures = []

    def __call__(self, cond, what):
        if not cond:
            self.failures.append(what)
            print("FAILED: " + what, file=sys.stderr)

    def finish(self):
        if self.failures:
            print("%s: %d check(s) failed" % (self.name, len(self.failures)), file=sys.stderr)
            return 1
        print("%s: ok" % self.name)
        return 0


def clean_env(drop=()):
    """os.environ without the recorder's variables, LD_PRELOAD and `drop`."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("MEMREC_") and k != "LD_PRELOAD" and k not in drop}


_cache_dir = None


def _own_cache(env):
    """env with a database cache of this test process's own: tests never share one."""
    global _cache_dir
    env = dict(os.environ if env is None else env)
    if "GMT_CACHE_DIR" not in env:
        if _cache_dir is None:
            _cache_dir = tempfile.mkdtemp(prefix="gmt-cache-")
            atexit.register(shutil.rmtree, _cache_dir, True)
        env["GMT_CACHE_DIR"] = _cache_dir
    return env


def _sql(memanalyze, trace, query, form, env):
    out = subprocess.run([memanalyze, "sql", trace, query, *form], env=_own_cache(env),
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return out.stdout


def sql_lines(memanalyze, trace, query, env=None):
    """The result's CSV lines (raw values), header left out."""
    return _sql(memanalyze, trace, query, ("--csv", "--raw"), env).strip().split("\n")[1:]


def sql_json(memanalyze, trace, query, env=None):
    """The result as a list of {column: value}."""
    return json.loads(_sql(memanalyze, trace, query, ("--json",), env))
