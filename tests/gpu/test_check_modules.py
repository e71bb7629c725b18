"""test_check_modules.py — check_modules.py (run_all.sh's "the modules imported as without
memrec") on made-up module lists, no GPU needed: the same lists pass; memrec's hook's own
modules (sitecustomize, memrec_torch and what importing it adds here) pass; a module memrec
added (torch._inductor, as its drains did on the H200) or took away fails, naming it.

Usage: test_check_modules.py HOOK_DIR (recorder/python)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(bare, rec, hook):
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, mods in (("bare", bare), ("rec", rec)):
            paths.append(os.path.join(tmp, name + ".json"))
            with open(paths[-1], "w") as f:
                json.dump(sorted(mods), f)
        p = subprocess.run([sys.executable, os.path.join(HERE, "check_modules.py")] + paths +
                           [hook], capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout.strip()


def main():
    hook = sys.argv[1]
    bare = ["sys", "os", "json", "torch", "torch.cuda", "torch.optim.optimizer"]
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)
            print("FAIL: " + what, file=sys.stderr)
    rc, out = run(bare, bare, hook)
    check(rc == 0 and out.startswith("PASS: 6 modules"), "the same lists: %d %r" % (rc, out))
    rc, out = run(bare, bare + ["sitecustomize", "memrec_torch", "ctypes", "_ctypes"], hook)
    check(rc == 0 and out.startswith("PASS:"), "memrec's hook's modules: %d %r" % (rc, out))
    rc, out = run(bare, bare + ["memrec_torch", "torch._inductor", "torch._dynamo"], hook)
    check(rc == 1 and "2 modules more (torch._dynamo, torch._inductor)" in out,
          "modules memrec added: %d %r" % (rc, out))
    rc, out = run(bare, [m for m in bare if m != "json"], hook)
    check(rc == 1 and "1 module fewer (json)" in out, "a module memrec took away: %d %r" % (rc, out))
    rc, out = run(bare, bare, os.path.join(hook, "nonexistent"))
    check(rc == 2 and out.startswith("FAIL: cannot read"), "no hook: %d %r" % (rc, out))
    print("test_check_modules: %s" % ("%d failures" % len(failures) if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
