// state.js — memanalyze view's shared ground (compiled into memanalyze, served at /state.js),
// what every view of the page uses:
//   - the state S (input, device, window, cursor, block, summary, stack by, the allocations'
//     layout, search), kept in
//     location.hash and read back on load (writeHash, readHash); window.gmtView exposes it for
//     the tests;
//   - api(): the server's JSON endpoints (the token from the page's URL in an X-Token header; the
//     page's cookie carries it too), or in a share file (memanalyze view --html: no server)
//     share.js's window.gmtShare, whose "not in this share file" showError says in a note;
//   - the helpers (bytes, place, cell, stackColor, niceStep, the canvases' context, X and T
//     between the window and the plot's pixels).
// Loaded after search.js and inputs.js (S asks inputsFromHash) and before the views; only
// declarations and S here: nothing asks the server until viewer.js's main().
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
const BLOCK_LAYOUTS = ["address", "stacked"]; // the allocations in view (blocks.js)
const SERIES_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
  "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"];

const S = {
  summary: null, device: 0, axis: "time", end: 1, lo: 0, hi: 1,
  cursor: null, at: null, block: null,
  tl: null, allocs: null, marks: null, seg: null, detail: null,
  stepMarks: null, rects: [], segRects: [], brush: null, drag: null,
  segKeys: null, segSeries: null, // the segment map's blocks' series keys; those coloured
  blocksLayout: "address", // the allocations' layout: "address" or "stacked" (blocks.js)
  rangeMarks: null, rangeBars: [], // the window's NVTX ranges (/api/marks) and the bars drawn
  drawnMarks: null, // the device limit, the peak and the OOMs the timeline drew last (timeline.js)
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
  if (S.blocksLayout !== "address") p.set("layout", S.blocksLayout);
  searchHash(p);
  history.replaceState(null, "", location.pathname + location.search + "#" + p.toString());
}

function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  const num = (k) => (p.has(k) && /^-?\d+$/.test(p.get(k)) ? Number(p.get(k)) : null);
  return { device: num("device"), lo: num("lo"), hi: num("hi"), at: p.get("at"),
           block: num("block"), summary: p.get("summary") === "1",
           stack: STACK_BY.includes(p.get("stack")) ? p.get("stack") : "",
           layout: BLOCK_LAYOUTS.includes(p.get("layout")) ? p.get("layout") : "address",
           q: p.get("q") || "", site: num("site") };
}

function describeWindow() {
  document.getElementById("window").textContent = S.axis === "event" ?
    "window: events " + S.lo + " – " + S.hi + " of " + S.end :
    "window: " + place(S.lo) + " – " + place(S.hi) + " of " + place(S.end);
}
