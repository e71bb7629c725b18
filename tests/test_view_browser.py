#!/usr/bin/env python3
"""test_view_browser.py — `memanalyze view`'s page in a real browser (issue 31): headless
Chromium (tests/browser.py, the DevTools protocol over a pipe) on the page served for a synth
trace (two devices, named tensors) and for a real PyTorch snapshot without timestamps from
../shared/data/pytorch (when present). For each:
  - the page loads and says it is drawn (body[data-ready="1"]) with no console error or
    uncaught exception (browser.errors stays empty through every step below), in how long from
    starting `view` (printed; at most 5 s asserted, the issue asks 1 s);
  - the axis: time, or "event order (no timestamps in this input)" for the untimed snapshot;
  - the NVTX ranges along the top: a bar per range of /api/marks' answer for the window shown
    (of the rows drawn), on the whole run and zoomed; a hover over one titles it with its name,
    domain and duration; for a snapshot with more ranges than one answer holds, the window's
    asked again and drawn;
  - a wheel zoom over the timeline: the window in location.hash narrows around the cursor, and
    the page fetched and drew /api/timeline and /api/allocations for exactly that window;
  - a drag pans (the span kept, the window moved); shift-drag selects a window, and its summary
    (what grew and was freed, by site) equals `memanalyze diff --from --to --json`'s, and the
    rest of the summary equals /api/window's for the same two WHENs and the command line's: the
    top sites (their labels, blocks and bytes; sql's per stack over the window's allocations),
    the categories (report's at the window's peak), the steps listed and their count (`steps
    --json`'s that overlap the window), the OOM lines (report's, with their verdicts; a synth
    trace that OOMs and has more steps than the summary lists, opened with summary=1 in the URL,
    the whole run summarized), and on that trace the marks drawn: the device limit and the
    peak at report's, the OOM marks report's ooms + alloc_failed (the first 1000);
  - a click on a block rectangle (its place from the page's own state): the detail panel's size,
    requested size, stream, tensor name, lifetime's end, category and the alloc and free stack
    frames equal `memanalyze sql` over allocations, block_categories and stack_frames for that
    alloc_id;
  - a click on the timeline puts the cursor: the segment count shown equals
    `memanalyze segments --at event:N --json` for the event the page says it resolved to;
  - the allocations' stacked layout: a rectangle per block of /api/allocations, no two
    overlapping, the layout in location.hash (kept through a reload), a click on a block opening
    the same detail as in the address layout;
  - "stack by" category: /api/stacks drawn under the allocated line, the drawn top of the stack
    (the page's state) equal to the timeline's max allocated at every bucket, the series' labels
    in the legend, the choice in location.hash;
  - the segment map coloured by the stack-by series (category, site): each live block in its
    series' colour in the timeline's legend, the grey of the rest for the others, the series
    coloured exactly the drawn ones among the blocks' series in /api/segment_series (a key per
    live block of /api/segments, by site each block's allocation stack as `sql` has it);
  - the search (search.js): a frame text typed into the search field (and Enter): the sites
    listed equal /api/search's (fetched by the test itself), their totals `memanalyze sql`'s LIKE
    over stack_frames joined to allocations; the marks drawn along the timeline are the
    histogram's non-empty buckets in the window (whole run and zoomed); a click on a site outlines
    exactly its blocks among those drawn; an address (0x…) from a block the page drew: the blocks
    listed equal `sql` over allocations with addr <= A < addr + size, and a click on the drawn one
    opens its detail and puts the cursor at its alloc;
  - the URL (the state in its hash) opened in a new page shows the same window, block, stack
    choice, segment count and search (a deep link); #device=N of the device that is not the
    default opens its timeline (its peak report's) with the select showing it;
  - screenshots of each state in the test's build folder (view_screens/), looked at by people.
Skips (77) without chromium, or with a memanalyze built without libmicrohttpd, saying why.

argv: synth memanalyze shared_pytorch_dir screenshot_dir. Python 3 standard library only.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from urllib.parse import parse_qs, quote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
import view_client  # noqa: E402

SYNTH, MEM = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SHARED = sys.argv[3] if len(sys.argv) > 3 else ""
SHOTS = sys.argv[4] if len(sys.argv) > 4 else os.path.join(os.getcwd(), "view_screens")
checks = view_client.Checks()
check = checks.check


def cli_json(env, *args):
    p = subprocess.run([MEM] + list(args), env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (args, p.stderr)
    return json.loads(p.stdout)


def hash_state(page):
    h = page.eval("location.hash").lstrip("#")
    return {k: v[0] for k, v in parse_qs(h).items()}


def canvas_box(page, cid):
    return page.eval("(() => { const c = document.getElementById(%r); "
                     "const r = c.getBoundingClientRect(); return {x: r.left + c.clientLeft, "
                     "y: r.top + c.clientTop, w: c.clientWidth, h: c.clientHeight}; })()" % cid)


def settled(page):
    """Waits until no request is in flight and the fetched window is the window shown."""
    page.wait_for("gmtView.pending === 0 && gmtView.lastTimeline && "
                  "gmtView.lastTimeline.lo === gmtView.lo && gmtView.lastTimeline.hi === gmtView.hi"
                  " && gmtView.lastAllocations.t0 === gmtView.lo", timeout=20)


def scroll_to(page, cid):
    page.eval("document.getElementById(%r).scrollIntoView({block: 'center'}); true" % cid)
    time.sleep(0.05)


def frames_of(env, inp, stack_id):
    if stack_id is None:
        return []
    rows = cli_json(env, "sql", inp, "SELECT name, line FROM stack_frames WHERE stack_id = %d "
                    "ORDER BY depth" % stack_id, "--json")
    return [(r["name"] or "", r["line"] or 0) for r in rows]


def type_search(page, text):
    """Types into the search field and presses Enter, as a person would."""
    page.eval("(() => { const q = document.getElementById('search-q'); q.value = ''; q.focus(); "
              "return true; })()")
    page.call("Input.insertText", text=text)
    for kind in ("keyDown", "keyUp"):
        page.call("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter",
                  windowsVirtualKeyCode=13, **({"text": "\r"} if kind == "keyDown" else {}))
    page.wait_for("gmtView.search && gmtView.searchQ === %s && gmtView.pending === 0" %
                  json.dumps(text), timeout=60)


def marks_wanted(page, h):
    """The histogram's non-empty buckets that meet the page's window."""
    lo, hi = page.eval("[gmtView.lo, gmtView.hi]")
    wd = h["bucket_width"]
    return [i for i in range(h["buckets"]) if h["blocks"][i] and i * wd < hi and (i + 1) * wd > lo]


def check_search(b, page, view, inp, env, label, device, text, untimed):
    scroll_to(page, "timeline")
    page.eval("document.getElementById('reset').click(); true")
    settled(page)
    type_search(page, text)
    want = view.api("/api/search?device=%d&q=%s" % (device, quote(text)))
    rows = page.eval("[...document.querySelectorAll('#search-table tbody tr')].map(tr => "
                     "[Number(tr.dataset.stackId), tr.children[0].textContent, "
                     "tr.children[1].textContent, tr.children[2].textContent])")
    check(want["sites"] and len(rows) == len(want["sites"]),
          label + ": search %r lists %d sites, /api/search %d" % (text, len(rows),
                                                                  len(want["sites"])))
    shown = page.eval("gmtView.search.sites.map(s => [s.stack_id, s.blocks, s.bytes])")
    check(shown == [[s["stack_id"], s["blocks"], s["bytes"]] for s in want["sites"]] and
          [r[0] for r in rows] == [s["stack_id"] for s in want["sites"]] and
          all(r[1] == (s["site"] or "(no stack)") and r[2] == str(s["blocks"])
              for r, s in zip(rows, want["sites"])),
          label + ": search %r: the rows %r differ from /api/search's" % (text, rows[:2]))
    like = text.replace("'", "''")
    tot = cli_json(env, "sql", inp, "SELECT count(DISTINCT alloc_stack_id) AS sites, count(*) AS n, "
                   "sum(size) AS b FROM allocations WHERE device = %d AND kind = 'device' AND "
                   "alloc_id >= 1 AND alloc_stack_id IN (SELECT stack_id FROM stack_frames WHERE "
                   "name LIKE '%%%s%%' OR file LIKE '%%%s%%')" % (device, like, like), "--json")[0]
    check((want["sites_total"], want["blocks"], want["bytes"]) == (tot["sites"], tot["n"], tot["b"])
          and tot["n"] > 0, label + ": search %r: %d sites %d blocks %d bytes, sql %r" % (
              text, want["sites_total"], want["blocks"], want["bytes"], tot))
    head = page.eval("document.getElementById('search-head').textContent")
    check(("%d blocks" % tot["n"]) in head, label + ": the search's head %r" % head)
    # the marks: the histogram's buckets in view, at the whole run and zoomed in
    marks = page.eval("gmtView.searchMarks")
    check(marks and marks == marks_wanted(page, want["histogram"]),
          label + ": marks %r, the histogram's buckets in view %r" % (
              (marks or [])[:8], marks_wanted(page, want["histogram"])[:8]))
    box = canvas_box(page, "timeline")
    first = marks_wanted(page, want["histogram"])[0] if marks else 0
    lo, hi = page.eval("[gmtView.lo, gmtView.hi]")
    x = X_of(box, (first + 0.5) * want["histogram"]["bucket_width"], lo, hi)
    for _ in range(2):
        page.wheel(x, box["y"] + box["h"] / 2, -300)
    settled(page)
    marks = page.eval("gmtView.searchMarks")
    check(marks and marks == marks_wanted(page, want["histogram"]) and
          page.eval("gmtView.hi - gmtView.lo") < hi - lo,
          label + ": zoomed marks %r, wanted %r" % ((marks or [])[:8],
                                                    marks_wanted(page, want["histogram"])[:8]))
    check("q=" + quote(text, safe="") in page.eval("location.hash").replace("+", "%20") or
          hash_state(page).get("q") == text, label + ": the query not in the URL")
    page.screenshot(os.path.join(SHOTS, label + "-6-search.png"))
    # a site chosen: its blocks outlined, exactly those drawn with its stack
    drawn = set(page.eval("gmtView.rects.map(r => r.stack)"))
    pick = next((s for s in want["sites"] if s["stack_id"] in drawn), want["sites"][0])
    page.eval("document.querySelector('#search-table tbody tr[data-stack-id=\"%d\"]').click(); "
              "true" % pick["stack_id"])
    got = page.eval("({site: gmtView.searchSite, outlined: gmtView.searchOutlined, ids: "
                    "gmtView.rects.filter(r => r.stack === %d).map(r => r.id)})" % pick["stack_id"])
    check(got["site"] == pick["stack_id"] and sorted(got["outlined"]) == sorted(got["ids"]) and
          hash_state(page).get("site") == str(pick["stack_id"]),
          label + ": site %d chosen: %r" % (pick["stack_id"], got))
    if got["outlined"]:
        ids = ",".join(str(i) for i in got["outlined"])
        st = cli_json(env, "sql", inp, "SELECT DISTINCT alloc_stack_id AS s FROM allocations "
                      "WHERE alloc_id IN (%s)" % ids, "--json")
        check([r["s"] for r in st] == [pick["stack_id"]],
              label + ": the outlined blocks' stacks %r, the site %d" % (st, pick["stack_id"]))
    print("%s: search %r: %d sites listed of %d, %d marks in view, site %d: %d blocks "
          "outlined" % (label, text, len(rows), want["sites_total"], len(marks or []),
                        pick["stack_id"], len(got["outlined"])))
    scroll_to(page, "blocks")
    page.screenshot(os.path.join(SHOTS, label + "-6b-search-site.png"))
    check(b.errors == [], label + ": errors: %r" % b.errors)
    return want


def check_address(b, page, inp, env, label, device, untimed):
    rows = page.eval("gmtView.allocs.blocks.slice(0, 5)")
    if not check(rows, label + ": no block drawn to take an address from"):
        return
    row = next((r for r in rows if r[0] >= 1), rows[0])  # one the recording saw allocated
    bid, addr, size = row[0], row[1], row[2]
    a = addr + size // 2
    scroll_to(page, "timeline")
    type_search(page, "0x%x" % a)
    listed = page.eval("[...document.querySelectorAll('#search-table tbody tr')]"
                       ".map(tr => Number(tr.dataset.allocId))")
    want = cli_json(env, "sql", inp, "SELECT alloc_id, alloc_ts_ns FROM allocations WHERE device = "
                    "%d AND addr <= %d AND %d < addr + size ORDER BY alloc_id" % (device, a, a),
                    "--json")
    check(listed == [r["alloc_id"] for r in want][:100] and bid in listed,
          label + ": address 0x%x lists %r, sql %r" % (a, listed[:6],
                                                       [r["alloc_id"] for r in want][:6]))
    check(hash_state(page).get("q") == "0x%x" % a, label + ": the address not in the URL")
    marks = page.eval("gmtView.searchMarks")
    check(bid in (marks or []) or not page.eval("gmtView.lo <= %d && %d < gmtView.hi" % (
        row[4], row[4])), label + ": block %d's alloc not marked: %r" % (bid, marks))
    # the drawn block's row: its detail, the cursor at its alloc
    page.eval("document.querySelector('#search-table tbody tr[data-alloc-id=\"%d\"]').click(); "
              "true" % bid)
    page.wait_for("gmtView.detail && gmtView.detail.alloc_id === %d && gmtView.pending === 0 && "
                  "!document.getElementById('detail').hidden" % bid)
    t = [r for r in want if r["alloc_id"] == bid][0]
    t = 0 if bid < 1 else bid if untimed else t["alloc_ts_ns"]  # before the recording: its start
    got = page.eval("[gmtView.cursor, gmtView.block, gmtView.lo <= gmtView.cursor && "
                    "gmtView.cursor < gmtView.hi]")
    check(got == [t, bid, True], label + ": block %d picked: cursor, block, in view %r, want "
          "cursor %d" % (bid, got, t))
    check(page.eval("document.getElementById('d-alloc_id').dataset.value") == str(bid),
          label + ": the detail is not block %d's" % bid)
    print("%s: address 0x%x: %d blocks held it, block %d picked, cursor %d" % (
        label, a, len(want), bid, t))
    page.screenshot(os.path.join(SHOTS, label + "-7-address.png"))
    check(b.errors == [], label + ": errors: %r" % b.errors)


def check_summary(b, page, view, inp, env, label, device):
    """The window summary shown (diff's stacks, the top sites, the categories, the steps, the
    OOMs) against /api/window for the same two WHENs and against the command line: diff, sql
    over allocations for the sites, report for the categories and the OOMs, steps (with sql's
    step bounds) for the steps. Returns the window's answer."""
    doc = page.eval("gmtView.summary_")
    fr, to = doc["from"]["when"], doc["to"]["when"]
    win = view.api("/api/window", {"device": device, "from": fr, "to": to})
    check(all(win["diff"][k] == doc[k] for k in win["diff"]),
          label + ": the page's diff is not /api/window's for %s .. %s" % (fr, to))
    a, z = win["from_event_id"], win["to_event_id"]
    fmt = lambda values: page.eval("%s.map(bytes)" % json.dumps(values))  # noqa: E731
    # the top sites: /api/window's, and sql's bytes allocated in (a, z] per stack
    rows = page.eval("[...document.querySelectorAll('#summary-sites tbody tr')].map(tr => "
                     "[Number(tr.dataset.stackId), Number(tr.dataset.bytes), "
                     "...[...tr.children].map(td => td.textContent)])")
    listed = win["sites"]["listed"]
    check(len(rows) == len(listed) and
          [(r[0], r[1], r[3], r[4]) for r in rows] ==
          [(s["stack_id"], s["bytes"], str(s["blocks"]), s["site"] or "(no stack)")
           for s in listed] and [r[2] for r in rows] == fmt([s["bytes"] for s in listed]),
          label + ": the summary's sites %r, /api/window's %r" % (rows[:2], listed[:2]))
    byst = cli_json(env, "sql", inp, "SELECT coalesce(alloc_stack_id, 0) AS s, count(*) AS n, "
                    "sum(size) AS b FROM allocations WHERE device = %d AND kind = 'device' AND "
                    "alloc_id > %d AND alloc_id <= %d GROUP BY 1 ORDER BY 3 DESC, 1" %
                    (device, a, z), "--json")
    check([(s["stack_id"], s["blocks"], s["bytes"]) for s in listed] ==
          [(r["s"], r["n"], r["b"]) for r in byst[:10]] and
          win["sites"]["sites_total"] == len(byst),
          label + ": the window's sites %r, sql %r" % (listed[:2], byst[:2]))
    note = page.eval("document.getElementById('summary-sites-note').textContent")
    check(not byst or ("%d site" % len(byst)) in note, label + ": the sites' note %r" % note)
    # the categories: those with bytes at the window's peak or end, report's at the peak
    rep = cli_json(env, "report", inp, "--device", str(device), "--from", fr, "--to", to,
                   "--json")
    rdev = [d for d in rep["devices"] if d["device"] == device][0]
    cats = win["categories"]
    shown = cat_rows = page.eval("[...document.querySelectorAll('#summary-categories tbody tr')]"
                                 ".map(tr => [tr.dataset.category, ...[...tr.children]"
                                 ".map(td => td.textContent)])")
    if cats is None:
        check(shown == [], label + ": categories shown without the answer's")
    else:
        want = [k for k in cats["at_peak"] if cats["at_peak"][k] or cats["at_end"][k]]
        check([r[0] for r in shown] == want and
              [r[1] for r in shown] == [k.replace("_", " ") for k in want] and
              [r[2] for r in shown] == fmt([cats["at_peak"][k] for k in want]) and
              [r[3] for r in shown] == fmt([cats["at_end"][k] for k in want]),
              label + ": the categories shown %r, /api/window's %r" % (shown, cats))
        check(rdev.get("categories_at_peak") is None or
              cats["at_peak"] == rdev["categories_at_peak"],
              label + ": the window's categories at the peak %r, report's %r" % (
                  cats["at_peak"], rdev.get("categories_at_peak")))
        check(sum(cats["at_end"].values()) == win["diff"]["to"]["allocated_bytes"],
              label + ": the categories at the end do not add up to allocated")
    # the steps: /api/window's, steps --json's rows that overlap (a, z]
    shown = page.eval("[...document.querySelectorAll('#summary-steps tbody tr')].map(tr => "
                      "[Number(tr.dataset.step), ...[...tr.children].map(td => td.textContent)])")
    steps = win["steps"]["steps"]
    check([r[0] for r in shown] == [r["step"] for r in steps] and
          [r[4] for r in shown] == fmt([r["allocated_at_end_bytes"] for r in steps]) and
          [r[5] for r in shown] == fmt([r["reserved_at_end_bytes"] for r in steps]),
          label + ": the steps shown %r, /api/window's %r" % ([r[0] for r in shown],
                                                             [r["step"] for r in steps]))
    whole = cli_json(env, "steps", inp, "--device", str(device), "--json")
    bounds = {r["step"]: (r["begin_event_id"], r["end_event_id"]) for r in cli_json(
        env, "sql", inp, "SELECT step, begin_event_id, end_event_id FROM steps", "--json")}
    inside = [i for i, r in enumerate(whole["steps"]) if r["step"] in bounds and
              bounds[r["step"]][0] < z and bounds[r["step"]][1] > a]
    if bounds:
        want = whole["steps"][inside[0]:inside[-1] + 1] if inside else []
    else:  # implicit steps (no steps table to bound them): a run of steps --json's rows
        at = [i for i, r in enumerate(whole["steps"]) if steps and r == steps[0]]
        want = whole["steps"][at[0]:at[0] + win["steps_in_window"]] if at else []
    count = len(want)
    check(steps == want[:200] and win["steps_in_window"] == count and
          win["steps_listed"] == len(steps),
          label + ": the window's steps %r (%d), steps --json's %r" % (
              [r["step"] for r in steps][:6], win["steps_in_window"],
              [r["step"] for r in want][:6]))
    note = page.eval("document.getElementById('summary-steps-note').textContent")
    check(("no step" in note) if not count else
          ("%d of %d listed" % (len(steps), count) in note) if len(steps) < count else
          ("%d step" % count) in note, label + ": the steps' note %r (%d in the window)" % (
              note, count))
    # the OOMs: report's over the same window, each line with its verdict
    ooms = win["ooms"]
    check(ooms["oom_events"] == rdev["oom_events"] and ooms["count"] == rdev["ooms"],
          label + ": the window's OOMs %r, report's %r" % (ooms["oom_events"][:2],
                                                          rdev["oom_events"][:2]))
    lines = page.eval("[...document.querySelectorAll('#summary-ooms li')].map(li => "
                      "[Number(li.dataset.eventId), li.dataset.verdict, li.textContent])")
    head = page.eval("document.getElementById('summary-ooms-note').textContent")
    check(len(lines) == len(ooms["oom_events"]) and
          all(l[0] == o["event_id"] and l[1] == (o["verdict"] or "") and
              l[2] == "%s [%s]" % (o["text"], o["verdict"] or "no verdict")
              for l, o in zip(lines, ooms["oom_events"])) and
          (head == "no OOM" if not ooms["count"] else head.startswith("%d OOM" % ooms["count"])),
          label + ": the OOM lines %r (%r), /api/window's %r" % (lines[:2], head,
                                                               ooms["oom_events"][:2]))
    print("%s: summary of %s .. %s: %d diff sites, %d top sites of %d, %d categories, %d steps "
          "of %d, %d OOMs %r" % (label, fr, to, len(doc["stacks"]), len(rows),
                                 win["sites"]["sites_total"], len(cat_rows), len(steps), count,
                                 ooms["count"], sorted({l[1] for l in lines})))
    check(b.errors == [], label + ": errors: %r" % b.errors)
    return win


def check_oom_summary(b, inp, env, label):
    """A deep link with summary=1 on a trace that OOMs, with more steps than a window lists: the
    whole run's summary, its OOM lines report's with their verdicts, its steps "N of M listed"."""
    view = view_client.ViewServer(MEM, [inp], env, url_wait_s=60, wait_built=False)
    try:
        page = b.open(view.url + "#summary=1")
        page.wait_for("document.body.dataset.ready", timeout=30)
        check(page.eval("document.body.dataset.ready") == "1", label + ": the page did not draw")
        page.wait_for("gmtView.summary_ && gmtView.pending === 0 && "
                      "!document.getElementById('summary').hidden", timeout=30)
        win = check_summary(b, page, view, inp, env, label, page.eval("gmtView.device"))
        check(win["ooms"]["count"] > 0 and all(o["verdict"] for o in win["ooms"]["oom_events"]),
              label + ": no OOM with a verdict in the whole run: a weak check")
        # the words are report's own: each line the page shows is a line `report` prints
        said = subprocess.run([MEM, "report", inp], env=env, capture_output=True, text=True,
                              timeout=120).stdout.splitlines()
        said = {l.strip() for l in said if l.strip().startswith("OOM at ")}
        shown = page.eval("[...document.querySelectorAll('#summary-ooms li')].map(li => "
                          "li.textContent.replace(/ \\[[a-z_ ]+\\]$/, ''))")
        check(shown and all(t in said for t in shown),
              label + ": OOM lines %r not among report's %r" % (shown[:1], sorted(said)[:1]))
        # the marks the timeline drew (the whole run): report's device limit, peak and OOMs
        rdev = next(d for d in cli_json(env, "report", inp, "--json")["devices"]
                    if d["device"] == page.eval("gmtView.device"))
        drawn = page.eval("gmtView.drawnMarks")
        total = rdev["ooms"] + rdev["alloc_failed"]
        firsts = [o["event_id"] for o in rdev["oom_events"]]
        check(drawn["limit"] == rdev["total_bytes"] and rdev["total_bytes"] == 2500000000 and
              drawn["peak"] == rdev["peak_allocated_ts_ns"] and
              len(drawn["ooms"]) == min(total, 1000) and
              [e for e, op in drawn["ooms"] if op == "oom"][:len(firsts)] == firsts and
              {op for _, op in drawn["ooms"]} == {"oom", "alloc_failed"},
              label + ": drawn limit %r peak %r, %d OOM marks; report's %r %r, %d OOMs %r" % (
                  drawn["limit"], drawn["peak"], len(drawn["ooms"]), rdev["total_bytes"],
                  rdev["peak_allocated_ts_ns"], total, firsts[:3]) + " drawn %r" % drawn["ooms"][:3])
        check(win["steps_listed"] < win["steps_in_window"],
              label + ": all %d steps listed: the \"N of M listed\" note not checked" %
              win["steps_in_window"])
        scroll_to(page, "summary")
        page.screenshot(os.path.join(SHOTS, label + "-summary.png"))
    finally:
        rc = view.stop()[0]
    check(rc == 0, label + ": view exit %r" % rc)


def check_device_link(b, inp, env, label):
    """A deep link naming the device that is not the default one: that device's timeline, with
    its own peak and limit (report's), and the device select showing it."""
    devices = cli_json(env, "report", inp, "--json")["devices"]
    view = view_client.ViewServer(MEM, [inp], env, url_wait_s=60, wait_built=False)
    try:
        first = b.open(view.url)
        first.wait_for("document.body.dataset.ready", timeout=30)
        default = first.eval("gmtView.device")
        other = next(d for d in devices if d["device"] != default)
        page = b.open(view.url + "#device=%d" % other["device"])
        page.wait_for("document.body.dataset.ready", timeout=30)
        settled(page)
        drawn = page.eval("gmtView.drawnMarks")
        check(page.eval("gmtView.device") == other["device"] and
              drawn["peak"] == other["peak_allocated_ts_ns"] and
              drawn["limit"] in (None, other["total_bytes"]) and  # drawn when near the data
              page.eval("document.getElementById('device').value") == str(other["device"]),
              label + ": #device=%d opened device %r, peak %r limit %r select %r (report's %r "
              "%r)" % (other["device"], page.eval("gmtView.device"), drawn["peak"],
                       drawn["limit"], page.eval("document.getElementById('device').value"),
                       other["peak_allocated_ts_ns"], other["total_bytes"]))
        check(b.errors == [], label + ": errors: %r" % b.errors)
    finally:
        rc = view.stop()[0]
    check(rc == 0, label + ": view exit %r" % rc)


def X_of(box, t, lo, hi):
    left, right = 78, 14
    return box["x"] + left + (t - lo) / (hi - lo) * (box["w"] - left - right)


# The page's colours as the browser normalizes them (hex, hsl, rgb alike), the stack legend's
# keys (the timeline's series, in the answer's order) and the segment map's live blocks.
SEG_COLOURS = """(() => {
  const norm = (c) => { const e = document.createElement('i'); e.style.color = c;
    document.body.appendChild(e); const v = getComputedStyle(e).color; e.remove(); return v; };
  const st = gmtView.stacks;
  const legend = [...document.querySelectorAll('#stack-legend .key')]
    .map((k) => getComputedStyle(k).backgroundColor);
  return {by: st.by, keys: st.series.map((s) => s.key), legend,
          rest: norm('#9aa0a8'), event: gmtView.seg.event_id, at: gmtView.at,
          series: gmtView.segSeries, drawnBy: document.getElementById('segments').dataset.by,
          blocks: gmtView.segRects.filter((r) => r.block).map((r) => ({
            key: r.series, colour: norm(r.color), state: r.block.state,
            addr: r.block.address}))};
})()"""


def check_segment_colours(page, view, env, inp, label, device, by):
    """The segment map's blocks coloured as the timeline's series of `by` (issue 31, A)."""
    page.eval("(() => { const s = document.getElementById('stackby'); s.value = %r;"
              " s.dispatchEvent(new Event('change')); return true; })()" % by)
    page.wait_for("gmtView.pending === 0 && gmtView.stacks && gmtView.stacks.by === %r && "
                  "gmtView.segSeries && gmtView.segSeries.by === %r" % (by, by), timeout=20)
    got = page.eval(SEG_COLOURS)
    check(len(got["legend"]) == len(got["keys"]) and got["blocks"] and got["drawnBy"] == by,
          label + ": by %s: %d legend keys for %d series, %d blocks drawn" % (
              by, len(got["legend"]), len(got["keys"]), len(got["blocks"])))
    colour_of = dict((k, c) for k, c in zip(got["keys"], got["legend"]) if k != -1)
    bad = [x for x in got["blocks"] if x["colour"] != (colour_of[x["key"]] if x["key"] is not None
                                                        else got["rest"])]
    check(not bad, label + ": by %s: blocks not in their series' colour: %r" % (by, bad[:3]))
    # the series the blocks have, from the endpoints themselves: a key per live block
    at = {"device": device, "at": "event:%d" % got["event"], "count": 400}
    doc = view.api("/api/segments", at)
    keys = view.api("/api/segment_series", dict(at, by=by))
    live = [[bl for bl in sg["blocks"] if bl["state"].startswith("active")]
            for sg in doc["segments"]]
    check([len(k) for k in keys["keys"]] == [len(x) for x in live] and
          keys["event_id"] == doc["event_id"] and keys["by"] == by,
          label + ": by %s: /api/segment_series' keys are not one per live block" % by)
    flat = [k for ks in keys["keys"] for k in ks]
    check(len(flat) == len(got["blocks"]),
          label + ": by %s: %d live blocks answered, %d drawn" % (by, len(flat),
                                                                  len(got["blocks"])))
    if by == "site":  # a block's key is its allocation's stack (0: none), as /api/stacks' series
        blocks = [bl for x in live for bl in x]
        ids = [bl.get("alloc_event_id") for bl in blocks]
        rows = cli_json(env, "sql", inp, "SELECT alloc_id, alloc_stack_id FROM allocations WHERE "
                        "alloc_id IN (%s)" % ",".join(str(i) for i in ids if i), "--json")
        stack_of = dict((r["alloc_id"], r["alloc_stack_id"] or 0) for r in rows)
        bad = [(i, k, stack_of[i]) for i, k in zip(ids, flat) if i in stack_of and
               k != stack_of[i]]
        check(rows and not bad, label + ": by site: keys not the blocks' stacks: %r" % bad[:3])
    want = set(flat) & set(colour_of)
    shown = set(x["key"] for x in got["blocks"] if x["key"] is not None)
    check(shown == want == set(got["series"]["keys"]) and
          len(set(colour_of[k] for k in want)) == len(want),
          label + ": by %s: series coloured %r, the blocks' series drawn %r" % (by, shown, want))
    check([x["key"] for x in got["blocks"]] == [k if k in colour_of else None for k in flat],
          label + ": by %s: the blocks drawn not in their keys' series" % by)
    # a block's tooltip names its series as the timeline's legend does
    for want_rest in (False, True):
        r = page.eval("(() => { const r = gmtView.segRects.find((r) => r.block && (r.series "
                      "=== null) === %s); if (!r) return null; const s = r.series === null ? "
                      "null : gmtView.stacks.series.find((x) => x.key === r.series); return "
                      "{x: r.x + Math.min(r.w, 4) / 2, y: r.y + r.h / 2, label: s ? s.label : "
                      "null}; })()" % ("true" if want_rest else "false"))
        if r is None:
            continue
        scroll_to(page, "segments")
        box = canvas_box(page, "segments")
        page.mouse("mouseMoved", box["x"] + r["x"], box["y"] + r["y"])
        page.wait_for("!document.getElementById('tip').hidden", timeout=10)
        tip = page.eval("document.getElementById('tip').textContent")
        name = "size class" if by == "size" else by
        line = "%s: %s" % (name, r["label"] if not want_rest else
                           "the rest (not among the series drawn)")
        check(line in tip.split("\n"),
              label + ": by %s: the tooltip %r lacks the line %r" % (by, tip[:200], line))
    rest = sum(1 for x in got["blocks"] if x["key"] is None)
    # a block live at the cursor is live in the window, so its category has bytes there: with
    # fewer categories than the 12 series drawn, none is left for the rest (the seed's blocks,
    # a snapshot's from before its history, came out 'unknown' here while /api/stacks said
    # 'parameter')
    check(by != "category" or len(got["keys"]) >= 12 or rest == 0,
          label + ": by category: %d blocks in the rest, series %r" % (rest, got["keys"]))
    print("%s: segments by %s: %d blocks, %d series coloured, %d of the rest" % (
        label, by, len(got["blocks"]), len(want), rest))


RECTS = "gmtView.rects.map((r) => [r.id, r.x, r.y, r.w, r.h])"


def click_rect(page, rid):
    """Clicks the block rect `rid` drawn in the blocks canvas; waits for its detail."""
    r = page.eval("gmtView.rects.find((r) => r.id === %d)" % rid)
    bb = canvas_box(page, "blocks")
    page.click(bb["x"] + r["x"] + r["w"] / 2, bb["y"] + r["y"] + r["h"] / 2)
    page.wait_for("gmtView.detail && gmtView.detail.alloc_id === %d && "
                  "!document.getElementById('detail').hidden" % rid)


def set_layout(page, layout):
    page.eval("(() => { const s = document.getElementById('blocks-layout'); s.value = %r;"
              " s.dispatchEvent(new Event('change')); return true; })()" % layout)
    page.wait_for("document.getElementById('blocks').dataset.layout === %r" % layout)


def check_stacked(b, page, label):
    """The allocations' stacked layout (issue 31, B): every block drawn, no two overlapping, the
    layout in the URL, a click opening the same block as in the address layout."""
    scroll_to(page, "blocks")
    address = dict((r[0], r) for r in page.eval(RECTS))
    set_layout(page, "stacked")
    rects = page.eval(RECTS)
    n = page.eval("gmtView.allocs.blocks.length")
    check(len(rects) == n and n > 0 and len(set(r[0] for r in rects)) == n,
          label + ": stacked: %d rectangles for %d blocks" % (len(rects), n))
    eps = 1e-6
    over = [(p[0], q[0]) for i, p in enumerate(rects) for q in rects[i + 1:]
            if p[1] < q[1] + q[3] - eps and q[1] < p[1] + p[3] - eps and
            p[2] < q[2] + q[4] - eps and q[2] < p[2] + p[4] - eps]
    check(not over, label + ": stacked: %d pairs overlap, e.g. %r" % (len(over), over[:3]))
    check(hash_state(page).get("layout") == "stacked", label + ": the layout not in the URL")
    page.screenshot(os.path.join(SHOTS, label + "-3b-stacked-blocks.png"))
    # one block big enough to click in both layouts: its detail the same from either
    both = [r for r in rects if r[3] > 6 and r[4] >= 2.5 and r[0] in address and
            address[r[0]][3] > 6 and address[r[0]][4] >= 2.5]
    check(both, label + ": stacked: no block big enough to click in both layouts")
    if both:
        rid = max(both, key=lambda r: r[3] * r[4])[0]
        page.eval("gmtView.detail = null; selectBlock(null); true")
        click_rect(page, rid)
        check(hash_state(page).get("block") == str(rid), label + ": stacked: block not in URL")
        again = b.open(page.eval("location.href"))
        again.wait_for("document.body.dataset.ready && gmtView.pending === 0 && gmtView.allocs "
                       "&& gmtView.detail")
        got = again.eval("[gmtView.blocksLayout, document.getElementById('blocks-layout').value, "
                         "gmtView.rects.length, gmtView.detail.alloc_id]")
        check(got == ["stacked", "stacked", n, rid],
              label + ": stacked after a reload: %r, wanted %r" % (got, ["stacked", "stacked",
                                                                         n, rid]))
        page.call("Page.bringToFront")  # the first page again (a background one draws nothing)
        page.eval("gmtView.detail = null; selectBlock(null); true")
        set_layout(page, "address")
        click_rect(page, rid)
        check(hash_state(page).get("layout") is None, label + ": the address layout in the URL")
        print("%s: stacked: %d blocks, none overlapping, block %d the same in both" % (
            label, n, rid))
    else:
        set_layout(page, "address")


def check_ranges(page, view, label, device, untimed):
    """The NVTX range bars drawn along the top: /api/marks' ranges of the window shown (those
    of the rows drawn, depth < 3), one bar each; a hover over one titles it."""
    lo, hi = page.eval("gmtView.lo"), page.eval("gmtView.hi")
    marks = view.api("/api/marks?device=%d&lo=%d&hi=%d&ooms=0" % (device, lo, hi))
    c = marks["range_columns"]
    want = sorted([r[c.index("begin")], r[c.index("end")], r[c.index("name")]]
                  for r in marks["ranges"] if r[c.index("depth")] < 3)
    drawn = sorted(page.eval("gmtView.rangeBars.map(b => [b.r.begin, b.r.end, b.r.name])"))
    check(drawn == want, label + ": %d range bars drawn in [%d, %d), /api/marks %d: %r != %r" % (
        len(drawn), lo, hi, len(want), drawn[:3], want[:3]))
    check(untimed or marks["ranges_total"] > 0, label + ": no NVTX range in [%d, %d)" % (lo, hi))
    if not drawn:
        return 0
    bar = page.eval("(() => { const b = gmtView.rangeBars.reduce((a, b) => "
                    "b.x1 - b.x0 > a.x1 - a.x0 ? b : a); return [(b.x0 + b.x1) / 2, "
                    "(b.y0 + b.y1) / 2, b.r.name]; })()")
    box = canvas_box(page, "timeline")
    page.mouse("mouseMoved", box["x"] + bar[0], box["y"] + bar[1])
    title = page.eval("document.getElementById('timeline').title")
    check(title.startswith(bar[2] or "(no name)") and "duration: " in title and
          "NVTX domain: " in title, label + ": the hover title of range %r: %r" % (bar[2], title))
    return len(drawn)


def check_many_ranges(b, inp, env, label):
    """An input with more NVTX ranges than one answer holds (a snapshot's record_function
    annotations): the page asks /api/marks again for the window and draws its ranges."""
    view = view_client.ViewServer(MEM, [inp], env, url_wait_s=60, wait_built=False)
    try:
        page = b.open(view.url)
        page.wait_for("document.body.dataset.ready", timeout=30)
        settled(page)
        device = page.eval("gmtView.device")
        whole = view.api("/api/marks?device=%d" % device)
        check(whole["ranges_total"] > len(whole["ranges"]),
              label + ": %d ranges, all in one answer" % whole["ranges_total"])
        n = check_ranges(page, view, label, device, False)
        page.screenshot(os.path.join(SHOTS, label + "-ranges.png"))
        check(b.errors == [], label + ": errors: %r" % b.errors)
        print("%s: %d NVTX ranges, %d bars drawn" % (label, whole["ranges_total"], n))
    finally:
        view.stop()


def check_page(b, inp, env, label, untimed, text):
    view = view_client.ViewServer(MEM, [inp], env, url_wait_s=60, wait_built=False)
    url = view.url
    try:
        page = b.open(url)
        page.wait_for("document.body.dataset.ready", timeout=30)
        first = time.monotonic() - view.started
        ready = page.eval("document.body.dataset.ready")
        check(ready == "1", label + ": the page did not draw: %r %r" % (
            ready, page.eval("document.getElementById('error').textContent")))
        print("%s: first screen %.2f s after starting view (the browser already up)" % (
            label, first))
        check(first < 5, label + ": first screen took %.1f s" % first)
        settled(page)
        check(b.errors == [], label + ": errors on load: %r" % b.errors)
        page.screenshot(os.path.join(SHOTS, label + "-1-loaded.png"))
        note = page.eval("document.getElementById('axis-note').textContent")
        check(("no timestamps" in note) == untimed, label + ": axis note %r" % note)
        device = page.eval("gmtView.device")
        bars = check_ranges(page, view, label, device, untimed)

        # wheel zoom around a point 40% across the plot
        box = canvas_box(page, "timeline")
        lo0, hi0 = page.eval("gmtView.lo"), page.eval("gmtView.hi")
        left = 78
        x = box["x"] + left + 0.4 * (box["w"] - left - 14)
        t_at = lo0 + 0.4 * (hi0 - lo0)
        n0 = page.eval("gmtView.fetched.timeline")
        for _ in range(3):
            page.wheel(x, box["y"] + box["h"] / 2, -400)
        settled(page)
        h = hash_state(page)
        lo, hi = int(h["lo"]), int(h["hi"])
        check(hi - lo < 0.5 * (hi0 - lo0) and lo <= t_at <= hi,
              label + ": the zoom: [%d, %d) -> [%d, %d) around %d" % (lo0, hi0, lo, hi, t_at))
        check(abs((t_at - lo) / (hi - lo) - 0.4) < 0.03,
              label + ": the zoom kept the cursor's place: %.3f" % ((t_at - lo) / (hi - lo)))
        check(page.eval("gmtView.fetched.timeline") > n0 and
              page.eval("[gmtView.lastTimeline.lo, gmtView.lastTimeline.hi]") == [lo, hi],
              label + ": no timeline fetched for the zoomed window")
        page.screenshot(os.path.join(SHOTS, label + "-2-zoomed.png"))
        print("%s: %d NVTX range bars on the whole run, %d zoomed" % (
            label, bars, check_ranges(page, view, label + " zoomed", device, True)))

        # drag pans: the span kept
        y = box["y"] + box["h"] / 2
        page.mouse("mouseMoved", x, y)
        page.mouse("mousePressed", x, y)
        page.mouse("mouseMoved", x - 100, y, buttons=1)
        page.mouse("mouseReleased", x - 100, y)
        settled(page)
        h = hash_state(page)
        check(int(h["hi"]) - int(h["lo"]) == hi - lo and int(h["lo"]) > lo,
              label + ": the drag: [%d, %d) -> [%s, %s)" % (lo, hi, h["lo"], h["hi"]))
        lo, hi = int(h["lo"]), int(h["hi"])
        # shift-drag over the whole run (from its first pixels to the middle) selects a window
        page.eval("document.getElementById('reset').click(); true")
        settled(page)
        lo, hi = page.eval("gmtView.lo"), page.eval("gmtView.hi")
        pw = box["w"] - left - 14
        x = box["x"] + left + 2
        page.mouse("mousePressed", x, y, modifiers=8)
        page.mouse("mouseMoved", x + pw / 2, y, buttons=1, modifiers=8)
        page.mouse("mouseReleased", x + pw / 2, y, modifiers=8)
        settled(page)
        h = hash_state(page)
        want_lo = lo + (x - box["x"] - left) / pw * (hi - lo)
        check(abs(int(h["lo"]) - want_lo) <= max(2, 0.02 * (hi - lo)) and
              int(h["hi"]) - int(h["lo"]) < hi - lo,
              label + ": the brush: [%d, %d) -> [%s, %s), wanted from %d" % (
                  lo, hi, h["lo"], h["hi"], want_lo))
        # the brushed window's summary: diff's answer for the same two moments
        page.wait_for("gmtView.summary_ && gmtView.summary_.lo === gmtView.lo && "
                      "gmtView.summary_.hi === gmtView.hi && gmtView.pending === 0")
        doc = page.eval("gmtView.summary_")
        want = cli_json(env, "diff", inp, "--device", str(device), "--from", doc["from"]["when"],
                        "--to", doc["to"]["when"], "--top", "10", "--json")
        check(want["stacks"], label + ": the brushed window changed nothing: a weak check")
        check(doc["change"] == want["change"] and
              [(x["site"], x["net_bytes"]) for x in doc["stacks"]] ==
              [(x["site"], x["net_bytes"]) for x in want["stacks"]],
              label + ": the window summary differs from diff --json")
        rows = page.eval("document.querySelectorAll('#summary-stacks tbody tr').length")
        check(rows == len(want["stacks"]) and hash_state(page).get("summary") == "1",
              label + ": the summary shows %d sites, diff %d" % (rows, len(want["stacks"])))
        check_summary(b, page, view, inp, env, label, device)
        scroll_to(page, "summary")
        page.screenshot(os.path.join(SHOTS, label + "-2b-summary.png"))
        scroll_to(page, "timeline")
        page.eval("document.getElementById('reset').click(); true")
        settled(page)
        for _ in range(2):
            page.wheel(x, y, -300)
        settled(page)

        # click the largest block drawn (its rectangle from the page's state)
        scroll_to(page, "blocks")
        rects = page.eval("gmtView.rects.filter(r => r.w > 6 && r.h >= 2.5)")
        check(rects, label + ": no block rectangle big enough to click")
        if rects:  # the largest with an allocation stack, when there is one
            r = max(rects, key=lambda r: (r["stack"] >= 0, r["w"] * r["h"]))
            with_stack = r["stack"] >= 0
            bb = canvas_box(page, "blocks")
            page.click(bb["x"] + r["x"] + r["w"] / 2, bb["y"] + r["y"] + r["h"] / 2)
            page.wait_for("gmtView.detail && gmtView.detail.alloc_id === %d && "
                          "!document.getElementById('detail').hidden" % r["id"])
            check(hash_state(page).get("block") == str(r["id"]), label + ": block not in the URL")
            row = cli_json(env, "sql", inp, "SELECT size, requested_size, stream, tensor_name, "
                           "alloc_stack_id, free_stack_id FROM allocations WHERE alloc_id = %d" %
                           r["id"], "--json")[0]
            shown = page.eval("Object.fromEntries(['size', 'requested_size', 'stream', "
                              "'tensor_name'].map(k => [k, document.getElementById('d-' + k)"
                              ".dataset.value]))")
            for k in ("size", "requested_size", "stream", "tensor_name"):
                want = "" if row[k] is None else str(row[k])
                check(shown[k] == want, label + ": block %d %s shown %r, sql %r" % (
                    r["id"], k, shown[k], want))
            check(page.eval("document.getElementById('d-size').textContent")
                  .endswith("(%d bytes)" % row["size"]), label + ": the size's text")
            # its lifetime's end and its category, as sql has them
            more = cli_json(env, "sql", inp, "SELECT a.free_event_id, c.category FROM allocations"
                            " a LEFT JOIN block_categories c ON c.alloc_id = a.alloc_id WHERE "
                            "a.alloc_id = %d" % r["id"], "--json")[0]
            got = page.eval("['lifetime', 'category'].map(k => [document.getElementById('d-' + k)"
                            ".dataset.value, document.getElementById('d-' + k).textContent])")
            check(got[0][0] == ("" if more["free_event_id"] is None else
                                str(more["free_event_id"])) and
                  (("live at the end" in got[0][1]) == (more["free_event_id"] is None)) and
                  got[1][0] == (more["category"] or "") and more["category"],
                  label + ": block %d lifetime/category shown %r, sql %r" % (r["id"], got, more))
            for which in ("alloc", "free"):
                got = page.eval("[...document.querySelectorAll('#d-%s_frames li.frame')]"
                                ".map(li => [li.dataset.name, Number(li.dataset.line)])" % which)
                want = frames_of(env, inp, row[which + "_stack_id"])
                check([tuple(g) for g in got] == want and (which == "free" or want or
                                                         not with_stack),
                      label + ": block %d %s frames: %d shown, sql %d" % (
                          r["id"], which, len(got), len(want)))
            page.screenshot(os.path.join(SHOTS, label + "-3-block.png"))
            check_stacked(b, page, label)

        # the cursor: a click on the timeline at 55%; the segment count against the CLI
        scroll_to(page, "timeline")
        box = canvas_box(page, "timeline")
        page.click(box["x"] + left + 0.55 * (box["w"] - left - 14), box["y"] + box["h"] / 2)
        try:
            page.wait_for("!!(gmtView.seg && document.getElementById('segment-count'))")
        except browser.PageError:
            print(page.eval("[gmtView.at, gmtView.fetched, gmtView.drag, location.hash, "
                            "document.getElementById('error').textContent]"), b.errors)
            raise
        shown = page.eval("(() => { const e = document.getElementById('segment-count'); "
                          "return [Number(e.dataset.count), Number(e.dataset.eventId)]; })()")
        at = hash_state(page).get("at", "")
        check(at.startswith("event:" if untimed else "time:"), label + ": cursor %r" % at)
        want = cli_json(env, "segments", inp, "--device", str(device), "--at",
                        "event:%d" % shown[1], "--json")
        check(shown[0] == len(want["segments"]) and shown[0] > 0,
              label + ": %d segments shown at event %d, segments --json says %d" % (
                  shown[0], shown[1], len(want["segments"])))
        same = cli_json(env, "segments", inp, "--device", str(device), "--at", at, "--json")
        check(same["event_id"] == shown[1], label + ": the cursor %s is event %d, the page "
              "says %d" % (at, same["event_id"], shown[1]))
        scroll_to(page, "segments")
        sb = canvas_box(page, "segments")
        page.mouse("mouseMoved", sb["x"] + left + 3, sb["y"] + 10)
        time.sleep(0.3)
        page.screenshot(os.path.join(SHOTS, label + "-4-segments.png"))
        check(b.errors == [], label + ": errors: %r" % b.errors)

        # stack by category: at every bucket the stack drawn reaches the timeline's max there
        scroll_to(page, "timeline")
        page.eval("(() => { const s = document.getElementById('stackby'); s.value = 'category';"
                  " s.dispatchEvent(new Event('change')); return true; })()")
        page.wait_for("gmtView.pending === 0 && gmtView.stacks && gmtView.stackTop && "
                      "gmtView.stacks.by === 'category'", timeout=20)
        settled(page)
        got = page.eval("(() => { const t = gmtView.tl, top = gmtView.stackTop, bad = []; "
                        "for (let i = t.first_known; i < t.n; i++) if (top[i] !== "
                        "t.max_allocated[i]) bad.push([i, top[i], t.max_allocated[i]]); "
                        "return {bad: bad.slice(0, 3), known: t.n - t.first_known, "
                        "nonzero: top.filter((v) => v > 0).length, hash: location.hash, "
                        "labels: gmtView.stacks.series.map((s) => s.label), legend: "
                        "document.getElementById('stack-legend').textContent}; })()")
        check(got["known"] > 0 and got["nonzero"] > 0 and not got["bad"],
              label + ": the stack's top is not the max allocated: %r" % got["bad"])
        check("stack=category" in got["hash"], label + ": stack not in the hash: %r" % got["hash"])
        check(got["labels"] and all(x in got["legend"] for x in got["labels"]),
              label + ": the legend %r lacks the series %r" % (got["legend"], got["labels"]))
        print("%s: stacked by category, %d buckets, series %r" % (label, got["known"],
                                                                  got["labels"]))
        page.screenshot(os.path.join(SHOTS, label + "-4b-stacked.png"))
        check(b.errors == [], label + ": errors: %r" % b.errors)

        # the segment map coloured as the timeline's series: by site, then category again
        for by in ("category", "site", "category"):
            check_segment_colours(page, view, env, inp, label, device, by)
        scroll_to(page, "segments")
        page.screenshot(os.path.join(SHOTS, label + "-4c-segments-by-category.png"))
        check(b.errors == [], label + ": errors: %r" % b.errors)

        # the search: by frame text, then the deep link below carries it
        check_search(b, page, view, inp, env, label, device, text, untimed)

        # the deep link: the same state in a new page
        probe = ("({lo: gmtView.lo, hi: gmtView.hi, block: gmtView.block, "
                 "count: gmtView.seg.segment_count, stack: gmtView.stackBy, q: gmtView.searchQ, "
                 "site: gmtView.searchSite, sites: gmtView.search.sites.map(s => s.stack_id), "
                 "marks: gmtView.searchMarks, outlined: gmtView.searchOutlined, "
                 "rows: document.querySelectorAll('#search-table tbody tr').length, "
                 "href: location.href})")
        state = page.eval(probe)
        again = b.open(state["href"])
        again.wait_for("document.body.dataset.ready")
        again.wait_for("gmtView.seg && (gmtView.block === null || gmtView.detail) && "
                       "gmtView.stackTop && gmtView.search && gmtView.pending === 0")
        got = again.eval(probe)
        check(got == state, label + ": the deep link: %r != %r" % (got, state))
        check(b.errors == [], label + ": errors: %r" % b.errors)
        again.screenshot(os.path.join(SHOTS, label + "-5-deep-link.png"))

        # the search by an address a drawn block held
        check_address(b, again, inp, env, label, device, untimed)
    finally:
        rc = view.stop()[0]
    check(rc == 0, label + ": view exit %r" % rc)


def main():
    if not browser.find_chromium():
        print("SKIP: no chromium on PATH (Debian: apt-get install chromium); the server is "
              "tested without a browser by test_view_server")
        return 77
    tmp = tempfile.mkdtemp(prefix="gmt-view-browser-")
    env = dict(os.environ, GMT_CACHE_DIR=os.path.join(tmp, "cache"))
    trace = os.path.join(tmp, "t.zst")
    subprocess.run([SYNTH, "-o", trace, "--steps", "6", "--devices", "2", "--names"], check=True,
                   capture_output=True)
    if view_client.built_without_server(MEM, env, trace):
        print("SKIP: memanalyze was built without libmicrohttpd")
        return 77
    os.makedirs(SHOTS, exist_ok=True)
    with browser.Browser() as b:
        check_page(b, trace, env, "synth", False, "model.py")
        check_device_link(b, trace, env, "synth-device")
        oom = os.path.join(tmp, "oom.zst")
        subprocess.run([SYNTH, "-o", oom, "--steps", "210", "--device-memory", "2500000000"],
                       check=True, capture_output=True)
        check_oom_summary(b, oom, env, "synth-oom")
        snap = os.path.join(SHARED, "pt21-no-timestamps.pickle") if SHARED else ""
        if snap and os.path.exists(snap):
            check_page(b, snap, env, "pt21", True, "linear")
            lm = os.path.join(SHARED, "lm-small-forward.pickle")
            if os.path.exists(lm):
                check_many_ranges(b, lm, env, "lm-small")
        else:
            print("note: ../shared/data/pytorch is absent: the real snapshot is not viewed")
    subprocess.run(["rm", "-rf", tmp])
    return checks.finish("test_view_browser: ok (screenshots in %s)" % SHOTS)


if __name__ == "__main__":
    sys.exit(main())
