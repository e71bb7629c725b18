#!/usr/bin/env python3
"""test_view_inputs_browser.py — `memanalyze view A B C`'s strip of inputs in a real browser
(issue 31; headless Chromium through tests/browser.py). Inputs: two synth ranks of one job and
a real PyTorch snapshot from ../shared/data/pytorch (a synth run without a rank when absent).
  - the strip shows one row per input, each with its label, its peak (the bytes /api/inputs
    says) and a sparkline drawn from /api/timeline?input=I; the first row is the current one;
    the note says "runs" and "each drawn over its own duration" (one input names no rank);
  - a mouse click on row 2: the page loads again for input 1: location.hash has input=1, the
    title is its label, the line under it says "input 2 of 3", the devices table shows its peak,
    the strip highlights row 2, and the timeline drawn is /api/timeline?input=1's (its axis end
    and its peak); a reload keeps all that; a deep link #input=2 opens the third;
  - two ranks alone: "one time axis"; one input: no strip, the page as before;
  - no console error or uncaught exception throughout; screenshots in view_screens/.
Skips (77) without chromium or libmicrohttpd, saying why.

argv: synth memanalyze shared_pytorch_dir screenshot_dir. Python 3 standard library only.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
import view_client  # noqa: E402

SYNTH, MEM = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SHARED = sys.argv[3] if len(sys.argv) > 3 else ""
SHOTS = sys.argv[4] if len(sys.argv) > 4 else os.path.join(os.getcwd(), "view_screens")
checks = view_client.Checks()
check = checks.check


def start(inputs, env):
    """`view INPUTS --port 0` (tests/view_client.py): api() asserts 200 at once."""
    return view_client.ViewServer(MEM, inputs, env, wait_built=False)


def ready(page):
    page.wait_for("document.body.dataset.ready && gmtView.pending === 0", timeout=30)
    check(page.eval("document.body.dataset.ready") == "1", "the page did not draw: %r" %
          page.eval("document.getElementById('error').textContent"))


def strip(page):
    return page.eval("""[...document.querySelectorAll('#inputs-rows .input-row')].map(r => ({
        index: Number(r.dataset.index), current: r.classList.contains('current'),
        label: r.querySelector('.input-label').textContent,
        peak: r.querySelector('.input-peak').textContent,
        buckets: Number(r.querySelector('canvas').dataset.buckets || 0),
        inked: (() => { const c = r.querySelector('canvas'); if (!c.width) return 0;
          const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
          let n = 0; for (let i = 3; i < d.length; i += 4) n += d[i] > 0; return n; })()}))""")


def page_bytes(page, n):
    return page.eval("bytes(%d)" % n)


def shown_state(page, view, doc, i, label):
    """The page shows input i: hash, title, line, devices table, strip, timeline."""
    d = doc["inputs"][i]
    h = page.eval("location.hash")
    check(("input=%d" % i in h) if i else "input=" not in h, label + ": hash %r" % h)
    title = page.eval("document.title")
    check(title.startswith(d["label"]), label + ": title %r, want %r" % (title, d["label"]))
    line = page.eval("document.getElementById('input').textContent")
    check(line.startswith("input %d of %d: %s" % (i + 1, doc["count"], d["input"])),
          label + ": line %r" % line)
    peak = page_bytes(page, d["peak_allocated_bytes"])
    table = page.eval("document.querySelector('#devices tbody').textContent")
    check(peak in table, label + ": the devices table lacks %s: %r" % (peak, table[:200]))
    rows = strip(page)
    check([r["current"] for r in rows] == [k == i for k in range(doc["count"])],
          label + ": the current row %r" % [r["current"] for r in rows])
    check(peak in rows[i]["peak"], label + ": row %d says %r, want %s" % (i, rows[i]["peak"],
                                                                         peak))
    tl = view.api("/api/timeline?input=%d&device=%d&n=16" % (i, page.eval(
        "gmtView.device")))
    check(page.eval("gmtView.end") == max(tl["axis_end"], 2),
          label + ": the timeline's end %r, input %d's %r" % (page.eval("gmtView.end"), i,
                                                             tl["axis_end"]))
    summary = page.eval("gmtView.summary")
    check(summary["input"] == d["input"], label + ": summary of %r" % summary["input"])


def main():
    if not browser.find_chromium():
        print("SKIP: no chromium on PATH (Debian: apt-get install chromium); the server's "
              "inputs are tested without a browser by test_view_inputs")
        return 77
    tmp = tempfile.mkdtemp(prefix="gmt-view-inputs-browser-")
    env = dict(os.environ, GMT_CACHE_DIR=os.path.join(tmp, "cache"))
    if view_client.built_without_server(MEM, env):
        print("SKIP: memanalyze was built without libmicrohttpd")
        return 77

    def synth(name, *args):
        path = os.path.join(tmp, name)
        subprocess.run([SYNTH, "-o", path, "--steps", "6"] + list(args), check=True,
                       capture_output=True)
        return path

    r0 = synth("job.0.zst", "--rank", "0", "--seed", "1")
    r1 = synth("job.1.zst", "--rank", "1", "--seed", "2", "--leak", "50000000", "--devices", "2")
    third = os.path.join(SHARED, "train-step-m512.pickle") if SHARED else ""
    if not (third and os.path.exists(third)):
        print("note: ../shared/data/pytorch is absent: a synth run without a rank instead")
        third = synth("plain.zst", "--seed", "4", "--layers", "20")
    os.makedirs(SHOTS, exist_ok=True)
    with browser.Browser() as b:
        view = start([r0, r1, third], env)
        url = view.url
        try:
            doc = view.api("/api/inputs")
            page = b.open(url)
            ready(page)
            rows = strip(page)
            check(len(rows) == 3 and page.eval("!document.getElementById('inputs').hidden"),
                  "the strip: %d rows" % len(rows))
            for r, d in zip(rows, doc["inputs"]):
                check(r["label"] == d["label"], "row label %r, want %r" % (r["label"],
                                                                           d["label"]))
                check(page_bytes(page, d["peak_allocated_bytes"]) in r["peak"],
                      "row %d peak %r" % (r["index"], r["peak"]))
                check(r["buckets"] > 0 and r["inked"] > 0,
                      "row %d: no sparkline (%d buckets, %d pixels)" % (r["index"],
                                                                        r["buckets"],
                                                                        r["inked"]))
            note = page.eval("document.getElementById('inputs-note').textContent")
            check("runs" in note and "own duration" in note, "the note %r" % note)
            shown_state(page, view, doc, 0, "input 0")
            page.screenshot(os.path.join(SHOTS, "inputs-1-strip.png"))

            # a click on row 2, as a person would
            page.eval("document.querySelectorAll('#inputs-rows .input-row')[1]"
                      ".scrollIntoView({block: 'center'}); true")
            time.sleep(0.05)
            box = page.eval("(() => { const r = document.querySelectorAll('#inputs-rows "
                            ".input-row')[1].querySelector('.input-label')"
                            ".getBoundingClientRect(); return {x: r.left + r.width / 2, "
                            "y: r.top + r.height / 2}; })()")
            page.click(box["x"], box["y"])
            b.wait_event("Page.loadEventFired", page.session, timeout=30)
            ready(page)
            shown_state(page, view, doc, 1, "after the click")
            page.screenshot(os.path.join(SHOTS, "inputs-2-rank1.png"))
            page.call("Page.reload")
            b.wait_event("Page.loadEventFired", page.session, timeout=30)
            ready(page)
            shown_state(page, view, doc, 1, "after a reload")
            deep = b.open(url + "#input=2")
            ready(deep)
            shown_state(deep, view, doc, 2, "a deep link")
            check(b.errors == [], "errors: %r" % b.errors)
        finally:
            check(view.stop()[0] == 0, "three: exit")

        view = start([r0, r1], env)
        url = view.url
        try:
            page = b.open(url)
            ready(page)
            note = page.eval("document.getElementById('inputs-note').textContent")
            check("ranks of one job" in note and "one time axis" in note, "ranks: %r" % note)
            check(len(strip(page)) == 2, "ranks: rows")
            page.screenshot(os.path.join(SHOTS, "inputs-3-ranks.png"))
        finally:
            check(view.stop()[0] == 0, "ranks: exit")

        view = start([r0], env)
        url = view.url
        try:
            page = b.open(url)
            ready(page)
            check(page.eval("document.getElementById('inputs').hidden") and not strip(page),
                  "one input: a strip shown")
            check(page.eval("document.title") == "memanalyze view", "one input: the title")
        finally:
            check(view.stop()[0] == 0, "one: exit")
        check(b.errors == [], "errors: %r" % b.errors)
    shutil.rmtree(tmp, ignore_errors=True)
    return checks.finish("test_view_inputs_browser: ok (screenshots in %s)" % SHOTS)


if __name__ == "__main__":
    sys.exit(main())
