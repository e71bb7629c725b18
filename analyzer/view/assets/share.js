// share.js — memanalyze view's page opened from a share file (`memanalyze view INPUT --html FILE`,
// analyzer/view/share_file.c), with no server behind it. Compiled into memanalyze with the page;
// only a share file includes it (inline, before state.js), and it does nothing unless the page
// holds the share file's answers (the JSON script element of id gmt-share).
// Then it sets window.gmtShare, whose answer(path, params) state.js's api() calls instead of
// fetch(), answering from the embedded answers, each the server's own for those arguments:
//   - /api/timeline and /api/allocations: the finest embedded tile whose window holds the window
//     asked (the whole run's when none does), the tile's blocks those live in the window asked;
//   - /api/stacks: the whole run's, for the whole run's grid only;
//   - /api/summary, /api/marks (the whole run's), /api/steps (the first rows), /api/segments (at
//     the peak), /api/window (the whole run), /api/block (the whole run's largest blocks): the
//     embedded answer for those arguments; /api/segment_series: the peak's for that device and
//     stack-by, asked for the peak's event;
//   - anything else (another block, another moment, another window, the search): rejected with
//     "not in this share file: run memanalyze view on the trace", shown in the page (a note at the
//     bottom, state.js's showError), never thrown at the page.
// It adds a line under the title saying what the file holds. Text goes in through textContent.
"use strict";

(function () {
  const block = document.getElementById("gmt-share");
  if (!block) return;
  const doc = JSON.parse(block.textContent);
  const MISSING = "not in this share file: run memanalyze view on the trace";
  const byPath = new Map();
  for (const e of doc.answers) {
    if (!byPath.has(e.path)) byPath.set(e.path, []);
    byPath.get(e.path).push(e);
  }
  const list = (path) => byPath.get(path) || [];
  const str = (v) => (v === undefined || v === null ? undefined : String(v));

  // The entry whose arguments `keys` are the request's.
  function exact(path, params, keys) {
    return list(path).find((e) => keys.every((k) => e.args[k] === str(params[k]))) || null;
  }

  // The finest entry of `path` for the device whose window holds the window asked [lo, hi)
  // (clamped to the run), of those the nearest to its middle; the whole run's when none is finer.
  function tile(path, params, loKey, hiKey) {
    const device = Number(params.device);
    const all = list(path).filter((e) => e.device === device);
    const whole = all.find((e) => e.depth === 0);
    if (!whole) return null;
    const a = Number(params[loKey]), b = Number(params[hiKey]);
    const lo = Math.max(Number.isFinite(a) ? a : whole.lo, whole.lo);
    const hi = Math.min(Number.isFinite(b) ? b : whole.hi, whole.hi);
    const mid = (lo + hi) / 2, off = (e) => Math.abs((e.lo + e.hi) / 2 - mid);
    let best = whole;
    for (const e of all) {
      if (e.lo > lo || e.hi < hi) continue;
      if (e.depth > best.depth || (e.depth === best.depth && off(e) < off(best))) best = e;
    }
    return best;
  }

  // An error as api() throws it; `missing`: not in the file (e.share: the page says so in a
  // note), else the server's own error for that request, embedded (the page shows it as such).
  function fail(path, message, status, missing) {
    const e = new Error(path + ": " + message);
    e.status = status;
    e.share = missing;
    return e;
  }

  // The body of an entry (a copy: the page may add to what it gets), or the error it holds.
  function body(path, e) {
    if (!e) throw fail(path, MISSING, 404, true);
    if (e.body === undefined) throw fail(path, e.error || "failed", e.status || 500, false);
    return structuredClone(e.body);
  }

  function allocations(params) {
    const path = "/api/allocations", e = tile(path, params, "t0", "t1");
    const a = body(path, e);
    const t0 = Number(params.t0), t1 = Number(params.t1);
    const all = a.blocks.length;
    // the tile's K largest that are live in the window asked (alloc_t < t1, free_t >= t0)
    a.blocks = a.blocks.filter((r) => r[4] < t1 && (r[5] === null || r[5] >= t0));
    a.share = "(share file: " + a.blocks.length + " blocks drawn, those live in the window of " +
      "the " + all + " largest of the " + a.window_blocks + " live in " + (e.depth ?
        "a 1/" + 2 ** e.depth + " of the run around it" : "the whole run") + "; memanalyze " +
      "view on the trace draws the largest of any window)";
    return a;
  }

  function stacks(params) {
    const path = "/api/stacks", t = tile("/api/timeline", params, "lo", "hi");
    if (t && t.depth > 0)
      throw fail(path, MISSING + " (the stacks of the whole run only: zoom out)", 404, true);
    return body(path, exact(path, params, ["device", "by"]));
  }

  const answers = {
    "/api/summary": () => body("/api/summary", list("/api/summary")[0]),
    "/api/timeline": (p) => {
      const e = tile("/api/timeline", p, "lo", "hi");
      share.last = e ? { path: "/api/timeline", depth: e.depth, lo: e.lo, hi: e.hi } : null;
      return body("/api/timeline", e);
    },
    "/api/allocations": allocations,
    // the blocks' series keys of the segments at the peak (the page asks at "event:N", N the
    // peak's event, the embedded answer says which)
    "/api/segment_series": (p) => body("/api/segment_series", list("/api/segment_series").find(
      (e) => e.args.device === str(p.device) && e.args.by === str(p.by) && e.body &&
        "event:" + e.body.event_id === str(p.at)) || null),
    "/api/stacks": stacks,
    "/api/marks": (p) => body("/api/marks", exact("/api/marks", p, ["device"])),
    "/api/steps": (p) => body("/api/steps", exact("/api/steps", p, ["device"])),
    "/api/segments": (p) => body("/api/segments", exact("/api/segments", p, ["device", "at"])),
    "/api/window": (p) => body("/api/window", exact("/api/window", p, ["device", "from", "to"])),
    "/api/block": (p) => body("/api/block", exact("/api/block", p, ["id"])),
  };

  // What viewer.js's api() returns in a share file: a promise of the answer, or a rejection
  // (e.share set when the file lacks it: the page shows that in the note).
  function answer(path, params) {
    const f = answers[path];
    try {
      if (!f) throw fail(path, MISSING, 404, true);
      return Promise.resolve(f(params || {}));
    } catch (e) {
      share.missed++;
      return Promise.reject(e);
    }
  }

  // A message at the bottom of the window, for a few seconds: what is not in the file.
  let noteTimer = 0;
  function note(text) {
    let p = document.getElementById("share-note");
    if (!p) {
      p = document.createElement("p");
      p.id = "share-note";
      p.className = "share-note";
      document.body.appendChild(p);
    }
    p.textContent = text;
    p.hidden = false;
    clearTimeout(noteTimer);
    noteTimer = setTimeout(() => { p.hidden = true; }, 8000);
  }

  const share = { doc, answer, note, last: null, missed: 0 };
  window.gmtShare = share;

  const line = document.createElement("p");
  line.id = "share-banner";
  line.className = "muted";
  line.textContent = "A share file (memanalyze view --html): the whole run" + (doc.depth ?
    " and " + doc.depth + " zoom depth" + (doc.depth === 1 ? "" : "s") + ", down to 1/" +
    2 ** doc.depth + " of the run," : "") + " and the largest blocks are in it; for any other " +
    "window, block or moment, or a search, run memanalyze view " + doc.input + ".";
  document.querySelector("header").appendChild(line);
})();
