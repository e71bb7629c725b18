// viewer.js — memanalyze view's page logic (compiled into memanalyze, served at /viewer.js).
// It asks the server's JSON endpoints (the token from the page's URL in an X-Token header; the
// page's cookie carries it too) and draws, on canvases:
//   - the timeline: allocated and reserved of one device over a window, each bucket's min–max as
//     a band and its last value as a line (/api/timeline, one bucket per pixel), the steps along
//     the top and the OOMs (/api/marks; a window's steps asked again when there are too many
//     to send at once), the peak and the device limit (/api/summary); wheel to
//     zoom around the cursor, drag to pan, shift-drag to select a window, click for the cursor;
//   - "stack by" (site, category, stream, size class): the allocated bytes at each bucket's max
//     stacked by series under the allocated line (/api/stacks, the timeline's own grid: the
//     stack's top is the bucket's max allocated exactly), a legend of the series;
//   - the allocations in view: the K largest blocks live in the window (/api/allocations) as
//     rectangles, x their lifetime, y their address (address ranges packed, gaps cut), coloured
//     by allocation stack; click one for its detail (/api/block);
//   - the segments at the cursor (/api/segments): one row per segment, its blocks, free gaps
//     trapped (in a segment that holds blocks) or releasable (a segment wholly free);
//   - the window summary (/api/window: `diff` from the window's start to its end, by site; the
//     steps and OOMs in it from /api/marks), for a brushed window or on asking;
//   - the search (search.js: /api/search, its marks on the timeline and outlines on the blocks);
//   - with several inputs, the strip of them (inputs.js: /api/inputs), every request above for
//     the input shown (input=I).
// The state (input, device, window, cursor, block, summary, stack by, search) lives in
// location.hash and is read back on load.
// In a share file (memanalyze view --html: no server) share.js sets window.gmtShare and
// api() asks it instead of the server; what the file lacks is said in a note.
// The page keeps only what one window needs: its memory does not grow with the trace. Text goes
// in through textContent only, never as HTML. window.gmtView exposes the state for the tests.
"use strict";

const token = new URLSearchParams(location.search).get("token");
const COLORS = {
  allocated: "#2f6fd6", allocatedBand: "rgba(47, 111, 214, 0.30)",
  reserved: "#e07b1f", reservedBand: "rgba(224, 123, 31, 0.22)",
  peak: "#b8322a", oom: "#d6336c", cursor: "#222", limit: "#6a3d9a",
  trapped: "rgba(214, 64, 54, 0.35)", releasable: "rgba(60, 170, 90, 0.40)",
  pending: "#9467bd", grid: "rgba(128, 128, 128, 0.22)", text: "#555",
};
const M = { left: 78, right: 14, top: 24, bottom: 30 }; // the timeline's and blocks' margins
const PAGE_STEPS = 200; // the steps table's rows (the server keeps this answer ready)
const STACK_BY = ["site", "category", "stream", "size"];
const SERIES_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
  "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"];

const S = {
  summary: null, device: 0, axis: "time", end: 1, lo: 0, hi: 1,
  cursor: null, at: null, block: null,
  tl: null, allocs: null, marks: null, seg: null, detail: null,
  stepMarks: null, rects: [], segRects: [], brush: null, drag: null,
  fetched: { timeline: 0, allocations: 0, segments: 0, block: 0, window: 0, stacks: 0, search: 0 },
  summary_: null, summaryOn: false,
  stackBy: "", stacks: null, stackTop: null, // stackTop: the drawn top of each bucket's stack
  lastTimeline: null, lastAllocations: null, pending: 0, ready: false,
  searchQ: "", search: null, searchSite: null, searchMarks: null, searchOutlined: [], // search.js
  input: inputsFromHash(), inputs: null, // inputs.js
};
window.gmtView = S;

// ---- helpers ----------------------------------------------------------------------------

// GET an endpoint's JSON (of the input shown, unless params name one); throws with the
// server's {"error"} text. In a share file: share.js's embedded answers (the server's own,
// for the arguments share_file.c asked them with).
async function api(path, params) {
  if (window.gmtShare) return window.gmtShare.answer(path, params);
  const url = new URL(path, location.origin);
  if (S.input) url.searchParams.set("input", S.input);
  for (const [k, v] of Object.entries(params || {})) url.searchParams.set(k, v);
  const headers = token ? { "X-Token": token } : {};
  S.pending++;
  try {
    const r = await fetch(url, { headers, credentials: "same-origin" });
    const body = await r.json().catch(() => ({ error: r.statusText }));
    if (!r.ok) {
      const e = new Error(path + ": " + (body.error || r.statusText));
      e.status = r.status;
      throw e;
    }
    return body;
  } finally {
    S.pending--;
  }
}

// Bytes as memanalyze prints them (KiB, MiB, GiB).
function bytes(n) {
  if (n === null || n === undefined) return "?";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = Math.abs(n), i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (n < 0 ? "-" : "") + (i ? v.toFixed(v < 10 ? 2 : 1) : String(v)) + " " + units[i];
}

// A place on the axis as text: a duration since the first event, or an event id.
function place(t) {
  if (S.axis === "event") return "event " + Math.round(t);
  const a = Math.abs(t);
  if (a >= 1e9) return (t / 1e9).toFixed(a >= 1e10 ? 1 : 3) + " s";
  if (a >= 1e6) return (t / 1e6).toFixed(a >= 1e7 ? 1 : 2) + " ms";
  if (a >= 1e3) return (t / 1e3).toFixed(1) + " µs";
  return Math.round(t) + " ns";
}

function cell(tr, text, num) {
  const td = document.createElement("td");
  td.textContent = text;
  if (num) td.className = "num";
  tr.appendChild(td);
}

function showError(e) {
  if (e && e.share && window.gmtShare) { // not in the share file: said, not a failure
    window.gmtShare.note(String(e.message));
    console.warn(e);
    return;
  }
  const p = document.getElementById("error");
  p.textContent = String(e.message || e);
  p.hidden = false;
  console.warn(e);
}

// A colour per allocation stack (the same stack, the same colour everywhere).
function stackColor(id) {
  if (id === null || id === undefined || id < 0) return "#8a94a6";
  const h = (Math.imul(id + 1, 2654435761) >>> 0) % 360;
  return "hsl(" + h + ", 58%, 52%)";
}

// 1, 2 or 5 times a power of ten, near span / count.
function niceStep(span, count) {
  const raw = span / Math.max(1, count), p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

// The canvas sized to its CSS box at the device's pixel ratio; its 2D context in CSS pixels.
function context(canvas, cssHeight) {
  const dpr = window.devicePixelRatio || 1;
  if (!canvas.dataset.h) canvas.dataset.h = canvas.getAttribute("height");
  const h = cssHeight || Number(canvas.dataset.h);
  canvas.style.height = h + "px";
  const w = canvas.clientWidth;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  g.font = "12px system-ui, sans-serif";
  return { g, w, h, pw: w - M.left - M.right };
}

function plotWidth() {
  return document.getElementById("timeline").clientWidth - M.left - M.right;
}
function X(t) { return M.left + (t - S.lo) / (S.hi - S.lo) * plotWidth(); }
function T(x) { return S.lo + (x - M.left) / plotWidth() * (S.hi - S.lo); }

// ---- the state in the URL ---------------------------------------------------------------

function writeHash() {
  const p = new URLSearchParams();
  inputsHash(p);
  p.set("device", S.device);
  p.set("lo", Math.round(S.lo));
  p.set("hi", Math.round(S.hi));
  if (S.at) p.set("at", S.at);
  if (S.block !== null) p.set("block", S.block);
  if (S.summaryOn) p.set("summary", 1);
  if (S.stackBy) p.set("stack", S.stackBy);
  searchHash(p);
  history.replaceState(null, "", location.pathname + location.search + "#" + p.toString());
}

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  const num = (k) => (p.has(k) && /^-?\d+$/.test(p.get(k)) ? Number(p.get(k)) : null);
  return { device: num("device"), lo: num("lo"), hi: num("hi"), at: p.get("at"),
           block: num("block"), summary: p.get("summary") === "1",
           stack: STACK_BY.includes(p.get("stack")) ? p.get("stack") : "",
           q: p.get("q") || "", site: num("site") };
}

function describeWindow() {
  document.getElementById("window").textContent = S.axis === "event" ?
    "window: events " + S.lo + " – " + S.hi + " of " + S.end :
    "window: " + place(S.lo) + " – " + place(S.hi) + " of " + place(S.end);
}

// ---- the window: zoom, pan, fetch ---------------------------------------------------------

function minSpan() { return S.axis === "event" ? 8 : 1000; }

function setWindow(lo, hi) {
  let span = Math.min(Math.max(hi - lo, minSpan()), S.end * 1.05 + minSpan());
  let a = Math.round(lo);
  a = Math.max(Math.min(a, Math.round(S.end - span * 0.05)), Math.round(-span * 0.05));
  S.lo = a;
  S.hi = a + Math.max(2, Math.round(span));
  if (S.summaryOn && S.summary_ && (S.summary_.lo !== S.lo || S.summary_.hi !== S.hi)) {
    S.summaryOn = false; // it was of another window
    document.getElementById("summary").hidden = true;
  }
  writeHash();
  describeWindow();
  drawTimeline();
  drawBlocks();
  scheduleFetch();
}

let fetchTimer = 0, fetchSeq = 0;
function scheduleFetch() {
  clearTimeout(fetchTimer);
  fetchTimer = setTimeout(fetchWindow, 30);
}

async function fetchWindow() {
  const seq = ++fetchSeq, lo = S.lo, hi = S.hi, device = S.device;
  const n = Math.max(16, Math.min(2000, Math.round(plotWidth())));
  const whole = S.marks;
  fetchStacks(seq, device, lo, hi, n);
  const [tl, allocs, marks] = await Promise.all([
    api("/api/timeline", { device, lo, hi, n }),
    api("/api/allocations", { device, t0: lo, t1: hi, k: 300 }) // share_file.c embeds k=300
      .catch((e) => (e.status === 503 ? null : Promise.reject(e))), // the index is being built
    whole.step_stride > 1 ? api("/api/marks", { device, lo, hi, ooms: 0 }) : whole,
  ]);
  if (seq !== fetchSeq) return; // a newer window was asked for
  S.stepMarks = { steps: marks.steps, stride: marks.step_stride };
  S.tl = tl;
  S.fetched.timeline++;
  S.lastTimeline = { lo: tl.lo, hi: tl.hi, n: tl.n, width: tl.width };
  if (allocs) {
    S.allocs = allocs;
    S.fetched.allocations++;
    S.lastAllocations = { t0: allocs.t0, t1: allocs.t1, n: allocs.blocks.length };
  } else {
    S.allocs = null;
    document.getElementById("blocks-note").textContent =
      "(the server is building its index of the blocks' lifetimes: a moment)";
    setTimeout(scheduleFetch, 500);
  }
  drawTimeline();
  drawBlocks();
}

// The window's stacks, apart from the timeline (a pass over the events: slower), drawn when they
// come if the window is still the one shown; until then the previous ones are drawn only where
// their buckets are the timeline's (drawStacks).
async function fetchStacks(seq, device, lo, hi, n) {
  const by = S.stackBy;
  if (!by) { S.stacks = null; return; }
  const st = await api("/api/stacks", { device, lo, hi, n, by })
    .catch((e) => ({ error: e.message, by }));
  if (seq !== fetchSeq || by !== S.stackBy) return;
  S.stacks = st;
  if (!st.error) S.fetched.stacks++;
  drawTimeline();
}

function deviceSummary() {
  return S.summary.devices.find((d) => d.device === S.device) || null;
}

// ---- the timeline ----------------------------------------------------------------------------

function drawTimeline() {
  const canvas = document.getElementById("timeline");
  const { g, w, h, pw } = context(canvas);
  const top = M.top, bottom = h - M.bottom, ph = bottom - top;
  const tl = S.tl, d = S.summary ? deviceSummary() : null;
  let ymax = 1;
  if (tl) for (let i = tl.first_known; i < tl.n; i++) ymax = Math.max(ymax, tl.max_reserved[i]);
  const limit = d && d.total_bytes ? d.total_bytes : null;
  if (limit && limit <= ymax * 1.3) ymax = Math.max(ymax, limit);
  ymax *= 1.08;
  const Y = (v) => bottom - v / ymax * ph;

  // the grid and the byte axis
  const unit = ymax >= 2 ** 30 ? 2 ** 30 : ymax >= 2 ** 20 ? 2 ** 20 : ymax >= 2 ** 10 ? 2 ** 10 : 1;
  const step = niceStep(ymax / unit, 5) * unit;
  g.textAlign = "right";
  g.textBaseline = "middle";
  for (let v = 0; v <= ymax; v += step) {
    g.strokeStyle = COLORS.grid;
    g.beginPath(); g.moveTo(M.left, Y(v)); g.lineTo(w - M.right, Y(v)); g.stroke();
    g.fillStyle = COLORS.text;
    g.fillText(bytes(v), M.left - 6, Y(v));
  }
  // the steps along the top
  g.save();
  g.beginPath(); g.rect(M.left, 0, pw, h); g.clip();
  const steps = S.stepMarks;
  if (steps && steps.stride === 1) { // every step of the window: bands
    g.textAlign = "center";
    let labelEnd = -1e9; // labels never overlap: one that would is left out
    for (const [step, begin, end] of steps.steps) {
      const x0 = X(begin), x1 = X(end === null ? S.end : end);
      if (x1 < M.left || x0 > w - M.right) continue;
      g.fillStyle = step % 2 ? "rgba(128,128,128,0.10)" : "rgba(128,128,128,0.22)";
      g.fillRect(x0, 2, x1 - x0, M.top - 6);
      g.fillStyle = step % 2 ? "rgba(128,128,128,0.035)" : "rgba(128,128,128,0.07)";
      g.fillRect(x0, top, x1 - x0, ph);
      g.fillStyle = COLORS.text;
      const label = x1 - x0 > 60 ? "step " + step : x1 - x0 > 18 ? String(step) : "";
      const mid = (Math.max(x0, M.left) + Math.min(x1, w - M.right)) / 2;
      const half = g.measureText(label).width / 2;
      if (label && mid - half > labelEnd + 4 && mid - half >= M.left && mid + half <= w - M.right) {
        g.fillText(label, mid, 11);
        labelEnd = mid + half;
      }
    }
  } else if (steps) { // too many to tell apart: every k-th step's start as a tick
    g.textAlign = "left";
    let lastLabel = -1e9, lastTick = -1e9;
    for (const [step, begin] of steps.steps) {
      const x = X(begin);
      if (x - lastTick >= 4) { // ticks closer than that would make a grey bar
        g.fillStyle = "rgba(128,128,128,0.5)";
        g.fillRect(x, 2, 1, 6);
        lastTick = x;
      }
      if (x - lastLabel > 70) {
        g.fillStyle = COLORS.text;
        g.fillText("step " + step, x + 3, 14);
        lastLabel = x;
      }
    }
  }
  searchDrawTimeline(g, top);
  drawStacks(g, X, Y);
  // reserved and allocated: each bucket's min–max band, the last value as a line
  if (tl) {
    for (const [band, line, lo, hi, last] of [
      [COLORS.reservedBand, COLORS.reserved, tl.min_reserved, tl.max_reserved, tl.last_reserved],
      [COLORS.allocatedBand, COLORS.allocated, tl.min_allocated, tl.max_allocated,
        tl.last_allocated]]) {
      g.fillStyle = band;
      for (let i = tl.first_known; i < tl.n; i++) {
        const x0 = X(tl.start + i * tl.width), x1 = X(tl.start + (i + 1) * tl.width);
        g.fillRect(x0, Y(hi[i]), Math.max(1, x1 - x0), Math.max(1, Y(lo[i]) - Y(hi[i])));
      }
      g.strokeStyle = line;
      g.lineWidth = 1.5;
      g.beginPath();
      for (let i = tl.first_known; i < tl.n; i++) {
        const x0 = X(tl.start + i * tl.width), x1 = X(tl.start + (i + 1) * tl.width);
        if (i === tl.first_known) g.moveTo(x0, Y(last[i])); else g.lineTo(x0, Y(last[i]));
        g.lineTo(x1, Y(last[i]));
      }
      g.stroke();
      g.lineWidth = 1;
    }
  }
  // the device limit, the peak, the OOMs, the cursor, the brush
  g.setLineDash([5, 4]);
  if (limit && Y(limit) > top) {
    g.strokeStyle = COLORS.limit;
    g.beginPath(); g.moveTo(M.left, Y(limit)); g.lineTo(w - M.right, Y(limit)); g.stroke();
    g.fillStyle = COLORS.limit; g.textAlign = "left"; g.textBaseline = "bottom";
    g.fillText("device limit " + bytes(limit), M.left + 4, Y(limit) - 2);
  }
  if (d && d.peak_allocated_bytes > 0) {
    const t = S.axis === "event" ? d.peak_allocated_event_id : d.peak_allocated_ts_ns;
    const x = X(t);
    g.strokeStyle = COLORS.peak;
    g.beginPath(); g.moveTo(x, top); g.lineTo(x, bottom); g.stroke();
    g.fillStyle = COLORS.peak; g.textBaseline = "top";
    const label = "peak " + bytes(d.peak_allocated_bytes);
    g.textAlign = x > w - 140 ? "right" : "left";
    g.fillText(label, x + (x > w - 140 ? -4 : 4), top + 2);
  }
  g.setLineDash([]);
  if (S.marks) {
    g.fillStyle = COLORS.oom;
    for (const o of S.marks.ooms) {
      const x = X(o.at);
      g.fillRect(x - 0.5, top, 1.5, ph);
      g.beginPath(); g.moveTo(x - 5, top); g.lineTo(x + 5, top); g.lineTo(x, top + 8);
      g.fill();
    }
  }
  if (S.cursor !== null) {
    g.strokeStyle = COLORS.cursor;
    g.lineWidth = 1.5;
    g.beginPath(); g.moveTo(X(S.cursor), top); g.lineTo(X(S.cursor), bottom); g.stroke();
    g.lineWidth = 1;
  }
  if (S.brush) {
    g.fillStyle = "rgba(47, 111, 214, 0.15)";
    g.fillRect(Math.min(S.brush[0], S.brush[1]), top, Math.abs(S.brush[1] - S.brush[0]), ph);
  }
  g.restore();
  // the time axis
  g.strokeStyle = COLORS.grid;
  g.strokeRect(M.left, top, pw, ph);
  g.fillStyle = COLORS.text;
  g.textAlign = "center";
  g.textBaseline = "top";
  const ts = niceStep(S.hi - S.lo, Math.max(2, Math.floor(pw / 120)));
  for (let t = Math.ceil(S.lo / ts) * ts; t <= S.hi; t += ts) {
    const x = X(t);
    g.fillRect(x, bottom, 1, 4);
    g.fillText(S.axis === "event" ? String(Math.round(t)) : place(t), x, bottom + 6);
  }
  g.textAlign = "left";
  g.fillText(S.axis === "event" ? "event" : "time", 6, bottom + 6);
  drawLegend(d);
  drawStackLegend();
}

function drawLegend(d) {
  const p = document.getElementById("legend");
  p.textContent = "";
  const key = (color, text) => {
    const k = document.createElement("span");
    k.className = "key";
    k.style.background = color;
    p.appendChild(k);
    p.appendChild(document.createTextNode(text));
  };
  key(COLORS.allocated, "allocated (band: min–max in a pixel, line: last)");
  key(COLORS.reserved, "reserved");
  key(COLORS.peak, "peak allocated");
  if (d && d.total_bytes) key(COLORS.limit, "device limit " + bytes(d.total_bytes));
  const ooms = S.marks ? S.marks.ooms_total : 0;
  key(COLORS.oom, ooms + " OOM" + (ooms === 1 ? "" : "s"));
  searchLegend(key);
  if (S.tl) {
    p.appendChild(document.createTextNode(" · buckets of " + (S.axis === "event" ?
      S.tl.width + " events" : place(S.tl.width)) + (S.tl.level_width ? "" : " (read from the events)")));
  }
}

// The series' colour: a category's own, a site's as everywhere else, the others grey.
function seriesColor(s, k) {
  if (s.key === -1) return "#9aa0a8";
  if (s.colour) return s.colour;
  if (S.stacks.by === "site") return stackColor(s.key);
  return SERIES_COLORS[k % SERIES_COLORS.length];
}

// The stacked series under the allocated line, when the answer is of the timeline's grid; each
// bucket's top kept in S.stackTop (bytes), for the tests.
function drawStacks(g, X, Y) {
  const tl = S.tl, st = S.stacks;
  S.stackTop = null;
  if (!tl || !st || st.error || st.refused || st.start !== tl.start || st.width !== tl.width ||
      st.n !== tl.n)
    return;
  // each series one polygon (its top edge forwards, its bottom edge back): no seams between
  // the buckets' pixels
  const top = new Array(st.n).fill(0);
  g.globalAlpha = 0.8;
  for (let k = 0; k < st.series.length; k++) {
    const below = top.slice();
    g.fillStyle = seriesColor(st.series[k], k);
    g.beginPath();
    for (let i = st.first_known; i < st.n; i++) {
      top[i] += st.values[i][k] * st.unit;
      const x0 = X(st.start + i * st.width), x1 = X(st.start + (i + 1) * st.width);
      if (i === st.first_known) g.moveTo(x0, Y(top[i])); else g.lineTo(x0, Y(top[i]));
      g.lineTo(x1, Y(top[i]));
    }
    for (let i = st.n - 1; i >= st.first_known; i--) {
      g.lineTo(X(st.start + (i + 1) * st.width), Y(below[i]));
      g.lineTo(X(st.start + i * st.width), Y(below[i]));
    }
    g.closePath();
    g.fill();
  }
  g.globalAlpha = 1;
  S.stackTop = top;
}

function drawStackLegend() {
  const p = document.getElementById("stack-legend");
  const st = S.stacks;
  p.textContent = "";
  p.hidden = !S.stackBy;
  if (!S.stackBy) return;
  if (!st) { p.textContent = "stacked by " + S.stackBy + ": loading…"; return; }
  if (st.error) { p.textContent = "stacked by " + S.stackBy + ": " + st.error; return; }
  if (st.refused) {
    p.textContent = "stacked by " + S.stackBy + ": not for this window: it ends " +
      st.rows_needed + " events into the run, more than the " + st.rows_limit +
      " a stack reads (zoom into an earlier part)";
    return;
  }
  p.appendChild(document.createTextNode("stacked by " + (st.by === "size" ? "size class" : st.by) +
    " at each bucket's highest allocated:"));
  st.series.forEach((s, k) => {
    const key = document.createElement("span");
    key.className = "key";
    key.style.background = seriesColor(s, k);
    p.appendChild(key);
    p.appendChild(document.createTextNode(s.label + " (" + bytes(s.max_bytes) + ")"));
  });
  if (!st.series.length) p.appendChild(document.createTextNode(" nothing live"));
}

// ---- the allocations in view ------------------------------------------------------------------

// Address ranges of the blocks packed: overlapping or touching ranges make one cluster, drawn
// one after another with a small gap, so far-apart segments do not flatten everything.
function addressClusters(blocks) {
  const iv = blocks.map((b) => [b[1], b[1] + b[2]]).sort((a, b) => a[0] - b[0]);
  const out = [];
  for (const [a, e] of iv) {
    const c = out[out.length - 1];
    if (c && a <= c.end) c.end = Math.max(c.end, e); else out.push({ start: a, end: e });
  }
  return out;
}

function drawBlocks() {
  const canvas = document.getElementById("blocks");
  const { g, w, h, pw } = context(canvas);
  const top = 8, bottom = h - 8;
  S.rects = [];
  g.strokeStyle = COLORS.grid;
  g.strokeRect(M.left, top, pw, bottom - top);
  const note = document.getElementById("blocks-note");
  const a = S.allocs;
  if (!a) return;
  note.textContent = a.share || "(the " + a.blocks.length + " largest of " + a.window_blocks +
    " blocks live in the window, " + bytes(a.window_bytes) + "; " + a.rest_blocks +
    " smaller ones not drawn, " + bytes(a.rest_bytes) + ")";
  const clusters = addressClusters(a.blocks);
  // gaps of 4 px, less when there are many ranges (at most a quarter of the height in all)
  const gap = Math.min(4, (bottom - top) * 0.25 / Math.max(1, clusters.length - 1));
  const total = clusters.reduce((s, c) => s + (c.end - c.start), 0);
  const scale = (bottom - top - gap * Math.max(0, clusters.length - 1)) / Math.max(1, total);
  let y = top;
  for (const c of clusters) {
    c.y = y;
    y += (c.end - c.start) * scale + gap;
  }
  const clusterOf = (addr) => {
    let lo = 0, hi = clusters.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (clusters[mid].start <= addr) lo = mid; else hi = mid - 1;
    }
    return clusters[lo];
  };
  g.save();
  g.beginPath(); g.rect(M.left, top, pw, bottom - top); g.clip();
  for (const b of a.blocks) {
    const [id, addr, size, , t0, t1, , , stack] = b;
    const c = clusterOf(addr);
    const x0 = Math.max(X(t0), M.left - 1);
    const x1 = Math.min(X(t1 === null ? S.end : t1), w - M.right + 1);
    const r = { id, stack, x: x0, y: c.y + (addr - c.start) * scale, w: Math.max(1.5, x1 - x0),
                h: Math.max(1.5, size * scale) };
    g.fillStyle = stackColor(stack);
    g.fillRect(r.x, r.y, r.w, r.h);
    if (r.h > 4 && r.w > 4) {
      g.strokeStyle = "rgba(255,255,255,0.6)";
      g.strokeRect(r.x + 0.5, r.y + 0.5, r.w - 1, r.h - 1);
    }
    S.rects.push(r);
  }
  searchDrawBlocks(g);
  const sel = S.rects.find((r) => r.id === S.block);
  if (sel) {
    g.strokeStyle = "#000";
    g.lineWidth = 2.5;
    g.strokeRect(sel.x, sel.y, sel.w, sel.h);
    g.lineWidth = 1;
  }
  g.restore();
  // each address range's start, inside the plot (addresses are wider than the margin)
  g.textAlign = "left";
  g.textBaseline = "top";
  g.font = "11px ui-monospace, monospace";
  for (const c of clusters) {
    if ((c.end - c.start) * scale < 16) continue;
    const text = "0x" + c.start.toString(16);
    g.fillStyle = "rgba(255, 255, 255, 0.8)";
    g.fillRect(M.left + 2, c.y + 1, g.measureText(text).width + 6, 14);
    g.fillStyle = "#333";
    g.fillText(text, M.left + 5, c.y + 2);
  }
  g.fillStyle = COLORS.text;
  g.font = "12px system-ui, sans-serif";
  g.textAlign = "right";
  g.fillText("address", M.left - 6, top + 2);
}

// The block under (x, y) in the blocks canvas: the smallest holding the point.
function blockAt(x, y) {
  let best = null;
  for (const r of S.rects) {
    if (x >= r.x - 1 && x <= r.x + r.w + 1 && y >= r.y - 1 && y <= r.y + r.h + 1 &&
        (!best || r.w * r.h < best.w * best.h)) best = r;
  }
  return best;
}

function frameList(ol, frames, none) {
  ol.textContent = "";
  if (!frames.length) {
    const li = document.createElement("li");
    li.textContent = none;
    li.className = "file";
    ol.appendChild(li);
  }
  for (const f of frames) {
    const li = document.createElement("li");
    li.className = "frame";
    li.dataset.name = f.name || "";
    li.dataset.line = f.line || 0;
    li.appendChild(document.createTextNode((f.name || "?") + " "));
    const s = document.createElement("span");
    s.className = "file";
    s.textContent = (f.filename || "?") + ":" + (f.line || "?");
    li.appendChild(s);
    ol.appendChild(li);
  }
}

async function selectBlock(id) {
  S.block = id;
  writeHash();
  drawBlocks();
  if (id === null) {
    document.getElementById("detail").hidden = true;
    return;
  }
  const b = await api("/api/block", { id }).catch((e) => {
    document.getElementById("detail").hidden = true; // not another block's facts
    throw e;
  });
  if (S.block !== id) return;
  S.detail = b;
  S.fetched.block++;
  const set = (k, text, value) => {
    const el = document.getElementById("d-" + k);
    el.textContent = text;
    el.dataset.value = value === undefined || value === null ? "" : String(value);
  };
  set("alloc_id", String(b.alloc_id), b.alloc_id);
  set("size", bytes(b.size) + " (" + b.size + " bytes)", b.size);
  set("requested_size", b.requested_size === null ? "not reported" :
    bytes(b.requested_size) + " (" + b.requested_size + " bytes)", b.requested_size);
  set("address", "0x" + b.address.toString(16), b.address);
  set("lifetime", b.alloc_when + " → " + (b.free_when || "live at the end"),
    b.free_event_id === null ? "" : b.free_event_id);
  set("stream", b.stream === null ? "unknown" : String(b.stream), b.stream);
  set("category", b.category || "not computed", b.category);
  set("tensor_name", b.tensor_name || "none", b.tensor_name);
  frameList(document.getElementById("d-alloc_frames"), b.alloc_frames,
    b.alloc_event_id === null ? "(live before the recording began)" : "(no stack recorded)");
  frameList(document.getElementById("d-free_frames"), b.free_frames,
    b.free_event_id === null ? "(live at the end)" : "(no stack recorded)");
  document.getElementById("detail").hidden = false;
}

// ---- the segments at the cursor ----------------------------------------------------------------

function setCursor(t) {
  t = Math.max(0, Math.min(Math.round(t), S.end - 1));
  S.cursor = t;
  S.at = S.axis === "event" ? "event:" + t : "time:" + t + "ns";
  writeHash();
  drawTimeline();
  fetchSegments().catch(showError);
}

let segSeq = 0;
async function fetchSegments() {
  const seq = ++segSeq;
  const doc = await api("/api/segments", { device: S.device, at: S.at, count: 400 });
  if (seq !== segSeq) return;
  S.seg = doc;
  S.fetched.segments++;
  drawSegments();
}

function drawSegments() {
  const doc = S.seg;
  const canvas = document.getElementById("segments");
  const count = document.getElementById("segments-count");
  if (!doc) return;
  const n = doc.segments.length;
  const row = Math.max(3, Math.min(16, Math.floor(640 / Math.max(1, n))));
  const { g, pw } = context(canvas, Math.max(40, n * row + 16));
  count.textContent = "";
  count.classList.remove("muted");
  const strong = document.createElement("strong");
  strong.id = "segment-count";
  strong.dataset.count = doc.segment_count;
  strong.dataset.eventId = doc.event_id;
  strong.textContent = doc.segment_count + " segment" + (doc.segment_count === 1 ? "" : "s");
  count.appendChild(strong);
  count.appendChild(document.createTextNode(
    " at " + doc.description + ": reserved " + bytes(doc.reserved_bytes) + ", allocated " +
    bytes(doc.allocated_bytes) + ", " + doc.live_blocks + " live blocks; free " +
    bytes(doc.free_bytes) + ": releasable " + bytes(doc.releasable_bytes) + ", trapped " +
    bytes(doc.trapped_bytes) + (n < doc.segment_count ? " (the first " + n + " drawn)" : "")));
  const legend = document.createElement("span");
  for (const [color, text] of [[COLORS.allocated, "allocated block"],
    [COLORS.pending, "freed, stream still using it"], [COLORS.trapped, "free, trapped"],
    [COLORS.releasable, "free, releasable (empty_cache)"]]) {
    const k = document.createElement("span");
    k.className = "key";
    k.style.background = color;
    legend.appendChild(k);
    legend.appendChild(document.createTextNode(text));
  }
  count.appendChild(document.createElement("br"));
  count.appendChild(legend);
  const largest = doc.segments.reduce((m, s) => Math.max(m, s.total_size), 1);
  const scale = pw / largest;
  S.segRects = [];
  g.textBaseline = "middle";
  g.textAlign = "right";
  doc.segments.forEach((s, i) => {
    const y = 8 + i * row, hgt = Math.max(2, row - (row > 5 ? 2 : 1));
    const sw = Math.max(2, s.total_size * scale);
    g.fillStyle = s.allocated_size === 0 ? COLORS.releasable : COLORS.trapped;
    g.fillRect(M.left, y, sw, hgt);
    S.segRects.push({ seg: s, block: null, x: M.left, y, w: sw, h: hgt });
    for (const b of s.blocks || []) {
      if (!b.state.startsWith("active")) continue;
      const bx = M.left + (b.address - s.address) * scale;
      g.fillStyle = b.state === "active_pending_free" ? COLORS.pending : COLORS.allocated;
      g.fillRect(bx, y, Math.max(1, b.size * scale - (b.size * scale > 3 ? 1 : 0)), hgt);
      S.segRects.push({ seg: s, block: b, x: bx, y, w: Math.max(1, b.size * scale), h: hgt });
    }
    if (row >= 12) {
      g.fillStyle = COLORS.text;
      g.fillText(bytes(s.total_size), M.left - 6, y + hgt / 2);
    }
  });
}

let tipSeq = 0;
const siteCache = new Map();
async function segmentTip(e) {
  const tip = document.getElementById("tip");
  const rect = e.target.getBoundingClientRect();
  const x = e.clientX - rect.left, y = e.clientY - rect.top;
  let hit = null;
  for (const r of S.segRects)
    if (x >= r.x && x <= r.x + r.w && y >= r.y && y <= r.y + r.h && (!hit || r.block)) hit = r;
  if (!hit) { tip.hidden = true; return; }
  const s = hit.seg, b = hit.block;
  let text = b ? "block " + bytes(b.size) + " (" + b.state.replace("_", " ") + "), allocated at event " +
    b.alloc_event_id : "free in a segment of " + bytes(s.total_size) + " (" +
    (s.allocated_size ? "trapped" : "releasable") + ")";
  text += "\nsegment 0x" + s.address.toString(16) + ", " + bytes(s.total_size) +
    (s.site ? ", made at " + s.site : "");
  tip.textContent = text;
  tip.style.left = e.clientX + 14 + "px";
  tip.style.top = e.clientY + 14 + "px";
  tip.hidden = false;
  if (!b || b.alloc_event_id === null || b.alloc_event_id === undefined) return;
  const seq = ++tipSeq, id = b.alloc_event_id;
  if (!siteCache.has(id)) {
    await new Promise((r) => setTimeout(r, 120));
    if (seq !== tipSeq) return;
    const d = await api("/api/block", { id }).catch(() => null);
    siteCache.set(id, d ? (d.alloc_frames || []).slice(0, 12)
      .map((f) => f.name + " " + (f.filename || "?") + ":" + (f.line || "?")).join("\n") : "");
  }
  if (seq === tipSeq && !tip.hidden && siteCache.get(id))
    tip.textContent = text + "\nallocation stack:\n" + siteCache.get(id);
}

// ---- the window summary -----------------------------------------------------------------------

// A place on the axis as a WHEN the commands take (inside the run: past its end is an error).
function whenAt(t) {
  t = Math.max(0, Math.min(Math.round(t), S.end - 1));
  return S.axis === "event" ? "event:" + t : "time:" + t + "ns";
}

let summarySeq = 0;
async function summarize() {
  const seq = ++summarySeq, device = S.device, lo = S.lo, hi = S.hi;
  S.summaryOn = true;
  writeHash();
  const [win, marks] = await Promise.all([
    api("/api/window", { device, from: whenAt(lo), to: whenAt(hi - 1) }),
    api("/api/marks", { device, lo, hi }),
  ]);
  const doc = win.diff; // `diff --json`'s document; win also has sites, categories, steps, OOMs
  if (seq !== summarySeq) return;
  S.summary_ = Object.assign(doc, { lo, hi });
  S.fetched.window++;
  const sign = (v) => (v > 0 ? "+" : "") + bytes(v);
  document.getElementById("summary-head").textContent =
    "from " + doc.from.description + " to " + doc.to.description + ": allocated " +
    sign(doc.change.allocated_bytes) + ", reserved " + sign(doc.change.reserved_bytes) +
    ", segments " + (doc.change.segments > 0 ? "+" : "") + doc.change.segments + ", live blocks " +
    (doc.change.live_blocks > 0 ? "+" : "") + doc.change.live_blocks + "; " +
    doc.stacks_changed + " sites changed" + (doc.stacks_listed < doc.stacks_changed ?
      " (the " + doc.stacks_listed + " largest listed)" : "");
  const body = document.querySelector("#summary-stacks tbody");
  body.textContent = "";
  for (const st of doc.stacks) {
    const tr = document.createElement("tr");
    tr.dataset.stackId = st.stack_id;
    cell(tr, sign(st.net_bytes), true);
    cell(tr, (st.net_count > 0 ? "+" : "") + st.net_count, true);
    cell(tr, bytes(st.added_bytes) + " (" + st.added_count + ")", true);
    cell(tr, bytes(st.removed_bytes) + " (" + st.removed_count + ")", true);
    cell(tr, st.site || "(no stack)");
    body.appendChild(tr);
  }
  const steps = marks.steps_total ? marks.steps_total + " step" + (marks.steps_total === 1 ?
    "" : "s") + " in it (" + marks.steps[0][0] + " – " + marks.steps[marks.steps.length - 1][0] +
    ")" : "no step in it";
  const ooms = marks.ooms.length ? marks.ooms.length + " OOM" + (marks.ooms.length === 1 ? "" :
    "s") + " or failed driver allocation" + (marks.ooms.length === 1 ? "" : "s") +
    " (first: event " + marks.ooms[0].event_id + ", " + bytes(marks.ooms[0].size) + " asked)" :
    "no OOM";
  document.getElementById("summary-marks").textContent = steps + "; " + ooms + ".";
  document.getElementById("summary").hidden = false;
}

// ---- the tables (the devices, the steps) -------------------------------------------------------

function fillDevices(summary) {
  const body = document.querySelector("#devices tbody");
  body.textContent = "";
  for (const d of summary.devices) {
    const tr = document.createElement("tr");
    cell(tr, String(d.device));
    cell(tr, d.name || "");
    cell(tr, bytes(d.peak_allocated_bytes), true);
    cell(tr, d.peak_allocated_when);
    cell(tr, bytes(d.peak_reserved_bytes), true);
    cell(tr, d.peak_reserved_when);
    cell(tr, bytes(d.end_allocated_bytes), true);
    cell(tr, bytes(d.end_reserved_bytes), true);
    cell(tr, String(d.ooms), true);
    body.appendChild(tr);
  }
}

function fillSteps(doc) {
  document.getElementById("steps-device").textContent = "(device " + doc.device +
    (doc.step_count > doc.steps.length ? "; the first " + doc.steps.length + " of " +
      doc.step_count : "") + ")";
  const body = document.querySelector("#steps tbody");
  body.textContent = "";
  document.getElementById("steps-none").hidden = doc.steps.length > 0;
  for (const s of doc.steps) {
    const tr = document.createElement("tr");
    if (s.anomaly) tr.className = "anomaly";
    cell(tr, String(s.step), true);
    cell(tr, bytes(s.peak_allocated_bytes), true);
    cell(tr, s.peak_phase || "");
    cell(tr, bytes(s.allocated_at_end_bytes), true);
    cell(tr, bytes(s.reserved_at_end_bytes), true);
    cell(tr, s.fragmentation_at_end.toFixed(2), true);
    cell(tr, String(s.segments_at_end), true);
    cell(tr, String(s.allocs), true);
    cell(tr, String(s.frees), true);
    cell(tr, s.growth_bytes === null ? "?" : bytes(s.growth_bytes), true);
    cell(tr, s.anomaly || "");
    body.appendChild(tr);
  }
}

// ---- input --------------------------------------------------------------------------------------

function wheelZoom(e) {
  e.preventDefault();
  const rect = e.currentTarget.getBoundingClientRect();
  const x = Math.max(M.left, Math.min(e.clientX - rect.left, M.left + plotWidth()));
  const t = T(x), span = S.hi - S.lo;
  const f = Math.exp(Math.max(-3, Math.min(3, e.deltaY * 0.0015)));
  const next = Math.max(minSpan(), Math.min(span * f, S.end * 1.05 + minSpan()));
  setWindow(t - (t - S.lo) * next / span, t - (t - S.lo) * next / span + next);
}

function bindInput() {
  searchBind();
  const tl = document.getElementById("timeline");
  const blocks = document.getElementById("blocks");
  const segs = document.getElementById("segments");
  tl.addEventListener("wheel", wheelZoom, { passive: false });
  blocks.addEventListener("wheel", wheelZoom, { passive: false });
  tl.addEventListener("pointerdown", (e) => {
    tl.setPointerCapture(e.pointerId);
    S.drag = { x0: e.offsetX, lo: S.lo, hi: S.hi, shift: e.shiftKey, moved: false };
  });
  tl.addEventListener("pointermove", (e) => {
    const d = S.drag;
    if (!d) return;
    const dx = e.offsetX - d.x0;
    if (Math.abs(dx) > 3) d.moved = true;
    if (!d.moved) return;
    if (d.shift) {
      S.brush = [d.x0, e.offsetX];
      drawTimeline();
    } else {
      const shift = -dx / plotWidth() * (d.hi - d.lo);
      setWindow(d.lo + shift, d.hi + shift);
    }
  });
  tl.addEventListener("pointerup", (e) => {
    const d = S.drag;
    S.drag = null;
    if (!d) return;
    if (!d.moved) {
      setCursor(T(e.offsetX));
    } else if (d.shift && S.brush) {
      const a = T(Math.min(S.brush[0], S.brush[1])), b = T(Math.max(S.brush[0], S.brush[1]));
      S.brush = null;
      setWindow(a, b);
      summarize().catch(showError);
    }
  });
  blocks.addEventListener("click", (e) => {
    const r = blockAt(e.offsetX, e.offsetY);
    selectBlock(r ? r.id : null).catch(showError);
  });
  segs.addEventListener("pointermove", (e) => { segmentTip(e).catch(() => {}); });
  segs.addEventListener("pointerleave", () => { document.getElementById("tip").hidden = true; });
  document.getElementById("reset").addEventListener("click", () => setWindow(0, S.end));
  document.getElementById("summarize").addEventListener("click", () => {
    summarize().catch(showError);
  });
  document.getElementById("stackby").addEventListener("change", (e) => {
    S.stackBy = STACK_BY.includes(e.target.value) ? e.target.value : "";
    S.stacks = null;
    writeHash();
    drawTimeline();
    scheduleFetch();
  });
  document.getElementById("device").addEventListener("change", (e) => {
    switchDevice(Number(e.target.value), null).catch(showError);
  });
  window.addEventListener("resize", () => { drawTimeline(); drawBlocks(); drawSegments(); scheduleFetch(); });
}

// ---- start ----------------------------------------------------------------------------------------

// A device's steps, marks and whole run; then the window (from the URL when it names one).
async function switchDevice(device, state) {
  S.device = device;
  S.block = state ? state.block : null;
  S.seg = null;
  document.getElementById("detail").hidden = true;
  const [whole, marks, steps] = await Promise.all([
    api("/api/timeline", { device, n: Math.max(16, Math.min(2000, Math.round(plotWidth()))) }),
    api("/api/marks", { device }),
    api("/api/steps", { device, first: 0, count: PAGE_STEPS }),
  ]);
  S.axis = whole.axis;
  S.end = Math.max(whole.axis_end, 2);
  S.marks = marks;
  S.stepMarks = { steps: marks.steps, stride: marks.step_stride };
  fillSteps(steps);
  document.getElementById("axis-note").textContent = S.axis === "event" ?
    "(event order: no timestamps in this input)" : "(time since the first event)";
  const lo = state && state.lo !== null ? state.lo : 0;
  const hi = state && state.hi !== null && state.hi > lo ? state.hi : S.end;
  S.lo = lo; S.hi = hi;
  S.tl = lo === 0 && hi === S.end ? whole : null;
  S.stacks = null;
  // a share file opens on the segments at the peak (the moment it holds them for)
  const at = state && state.at ? state.at : window.gmtShare ? "peak" : null;
  S.at = at; S.cursor = null;
  if (at) {
    const m = /^(event|time):(\d+)(ns)?$/.exec(at), d = deviceSummary();
    if (m) S.cursor = Number(m[2]);
    else if (at === "peak" && d)
      S.cursor = S.axis === "event" ? d.peak_allocated_event_id : d.peak_allocated_ts_ns;
  }
  setWindow(lo, hi);
  await fetchWindow();
  // a moment or a block the page cannot show (a share file lacks it) is said, the page drawn
  if (S.at) await fetchSegments().catch(showError);
  if (S.block !== null) await selectBlock(S.block).catch(showError);
  if (state && state.summary) await summarize();
  const q = state ? state.q : S.searchQ; // a device of its own: the same search asked again
  if (q) await runSearch(q, state ? state.site : null);
}

async function main() {
  bindInput();
  const [summary] = await Promise.all([api("/api/summary"), inputsInit()]);
  S.summary = summary;
  const run = summary.run;
  document.getElementById("input").textContent =
    (S.inputs && S.inputs.count > 1 ?
      "input " + (S.input + 1) + " of " + S.inputs.count + ": " : "") +
    summary.input + " — " + (run.input_format || "input") + ", " + run.events + " events, " +
    run.steps + " steps" + (summary.timestamps ? "" : " (untimed: event order)");
  fillDevices(summary);
  const sel = document.getElementById("device");
  for (const d of summary.devices) {
    const o = document.createElement("option");
    o.value = d.device;
    o.textContent = d.device + (d.name ? " " + d.name : "");
    sel.appendChild(o);
  }
  const state = readHash();
  S.stackBy = state.stack;
  document.getElementById("stackby").value = state.stack;
  let device = summary.devices.length ? summary.devices[0].device : 0;
  if (summary.devices.length > 1) { // the device with the highest peak, as the commands pick it
    device = summary.devices.reduce((a, b) => (b.peak_allocated_bytes > a.peak_allocated_bytes ? b : a)).device;
  }
  if (state.device !== null && summary.devices.some((d) => d.device === state.device))
    device = state.device;
  sel.value = device;
  await switchDevice(device, state);
  S.ready = true;
  document.body.dataset.ready = "1";
}

main().catch((e) => {
  showError(e);
  document.body.dataset.ready = "error";
});
