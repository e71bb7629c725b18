"""check_modules.py — a program under memrec imports exactly what it imports without memrec,
but for memrec's own Python hook: the rule that a recorded program behaves as it would
without memrec, held on the modules it ends with (the H200 run of 2026-12-04 found memrec's
drains importing torch._inductor and torch._dynamo into PyTorch programs).

    check_modules.py BARE.json MEMREC.json HOOK_DIR

BARE.json, MEMREC.json: the sorted names in sys.modules at the program's end, bare and under
memrec (samples/pytorch/train.py --modules FILE). HOOK_DIR: memrec's Python folder
(sitecustomize.py, memrec_torch.py). Allowed beyond the bare run's modules: sitecustomize,
memrec_torch and what importing memrec_torch adds to a fresh interpreter of this Python (run
here, to know it). Prints one line, "PASS: ..." or "FAIL: ..." (what memrec added, what it
took away), and exits 0 or 1; 2 when an input cannot be read.
"""
import json
import subprocess
import sys

PROBE = ("import json, sys; before = set(sys.modules); sys.path.insert(0, sys.argv[1]); "
         "import memrec_torch; print(json.dumps(sorted(set(sys.modules) - before)))")


def hook_modules(hook_dir):
    """What `import memrec_torch` adds to a fresh interpreter, and the hook's own two."""
    out = subprocess.run([sys.executable, "-c", PROBE, hook_dir], capture_output=True,
                         text=True, timeout=60, check=True)
    return set(json.loads(out.stdout)) | {"memrec_torch", "sitecustomize"}


def main(argv):
    if len(argv) != 4:
        print("usage: check_modules.py BARE.json MEMREC.json HOOK_DIR", file=sys.stderr)
        return 2
    try:
        bare = set(json.load(open(argv[1])))
        rec = set(json.load(open(argv[2])))
        allowed = hook_modules(argv[3])
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        print("FAIL: cannot read the module lists: %s" % e)
        return 2
    added, lost = sorted(rec - bare - allowed), sorted(bare - rec)
    if added or lost:
        def said(names, how):
            return "%d %s %s%s" % (len(names), "module" if len(names) == 1 else "modules", how,
                                   " (%s)" % ", ".join(names[:8]) if names else "")
        print("FAIL: under memrec %s and %s than without" % (said(added, "more"),
                                                             said(lost, "fewer")))
        return 1
    print("PASS: %d modules, the same as without memrec but for memrec's hook (%d of its %d)" %
          (len(rec), len(rec & allowed - bare), len(allowed)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
