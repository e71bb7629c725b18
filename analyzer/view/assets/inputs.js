// inputs.js — memanalyze view's strip of inputs (compiled into memanalyze, served at
// /inputs.js), shown when the server has several (`memanalyze view A B …`): one row per input
// (/api/inputs: its label, its peak allocated and when, its OOMs and steps) with a sparkline of
// its allocated bytes over time (/api/timeline?input=I with few buckets: each bucket's max; the
// ranks of one job on one vertical scale, runs each on its own peak).
// Ranks of one job on one clock share one time axis (each placed by its offset_ns); otherwise
// each row is drawn over its own duration, and the strip says so. The input shown is
// highlighted; a click on a row (or Enter on it) opens that input: input=I in location.hash,
// the rest of the state dropped (another input has its own axis), the page loaded again so that
// every view (timeline, allocations, segments, window, search) asks for it. With one input the
// strip stays hidden. Loaded before the page's other scripts, only functions here: they use
// state.js's globals (S, api, bytes, place, context, COLORS) when called; state.js calls
// inputsFromHash (making S) and inputsHash, viewer.js inputsInit. Text goes in through
// textContent only.
"use strict";

const INPUTS_SPARK = { width: 320, height: 26, buckets: 64 };

// input=I from location.hash (0 when absent or not a number).
function inputsFromHash() {
  const v = new URLSearchParams(location.hash.slice(1)).get("input");
  return v !== null && /^\d+$/.test(v) ? Number(v) : 0;
}

// The state's input into the hash's parameters (only when it is not the first).
function inputsHash(p) {
  if (S.input) p.set("input", S.input);
}

function inputsOpen(i) {
  if (i === S.input) return;
  history.replaceState(null, "", location.pathname + location.search + (i ? "#input=" + i : "#"));
  location.reload();
}

// A row's sparkline: the max allocated of each bucket, as a line over [0, span) of the strip's
// axis; the input's own part of it from offset to offset + its end.
function inputsSpark(canvas, tl, offset, span, peak) {
  const { g, w, h } = context(canvas, INPUTS_SPARK.height);
  if (!tl.n || peak <= 0) return;
  g.strokeStyle = COLORS.allocated;
  g.fillStyle = COLORS.allocatedBand;
  g.lineWidth = 1.2;
  g.beginPath();
  let first = true, lastX = 0;
  for (let k = 0; k < tl.n; k++) {
    const t0 = tl.start + k * tl.width;
    if (t0 >= tl.axis_end) break;
    const x = (offset + t0) / span * w;
    const y = h - 1 - tl.max_allocated[k] / peak * (h - 3);
    if (first) { g.moveTo(x, h); first = false; }
    g.lineTo(x, y);
    const x1 = (offset + Math.min(t0 + tl.width, tl.axis_end)) / span * w;
    g.lineTo(x1, y);
    lastX = x1;
  }
  g.lineTo(lastX, h);
  g.closePath();
  g.fill();
  g.stroke();
}

// The strip, when the server has several inputs; the page's title names the one shown. A share
// file (window.gmtShare) holds one input: no strip.
async function inputsInit() {
  if (window.gmtShare) return;
  const doc = await api("/api/inputs");
  S.inputs = doc;
  if (doc.count < 2) return;
  const me = doc.inputs[S.input];
  document.title = me.label + " — memanalyze view";
  const strip = document.getElementById("inputs");
  strip.hidden = false;
  const shared = doc.kind === "ranks" && doc.shared_clock;
  document.getElementById("inputs-note").textContent =
    "(" + doc.count + " " + (doc.kind === "ranks" ? "ranks of one job" : "runs") + "; " +
    (shared ? "one time axis, their wall clocks" : "each drawn over its own duration") + ")";
  document.getElementById("inputs-why").textContent = doc.why;
  const rows = document.getElementById("inputs-rows");
  rows.textContent = "";
  let span = 1, top = 1;
  for (const d of doc.inputs) {
    if (d.error) continue;
    span = Math.max(span, d.offset_ns + d.axis_end);
    top = Math.max(top, d.peak_allocated_bytes);
  }
  const drawn = [];
  for (const d of doc.inputs) {
    const row = document.createElement("div");
    row.className = "input-row" + (d.index === S.input ? " current" : "");
    row.dataset.index = d.index;
    row.tabIndex = 0;
    row.setAttribute("role", "button");
    const label = document.createElement("span");
    label.className = "input-label";
    label.textContent = d.label;
    const peak = document.createElement("span");
    peak.className = "input-peak";
    const canvas = document.createElement("canvas");
    canvas.className = "input-spark";
    if (d.error) {
      peak.textContent = "could not be read: " + d.error;
    } else {
      peak.textContent = "peak " + bytes(d.peak_allocated_bytes) +
        (d.peak_allocated_step !== null ? " at step " + d.peak_allocated_step : "") +
        (d.input_ooms ? " · " + d.input_ooms + " OOM" + (d.input_ooms > 1 ? "s" : "") : "") +
        " · " + d.steps + " steps" + (d.index === doc.bottleneck_input ? " · bottleneck" : "");
      drawn.push([canvas, d]);
    }
    row.append(label, peak, canvas);
    row.addEventListener("click", () => inputsOpen(d.index));
    row.addEventListener("keydown", (e) => { if (e.key === "Enter") inputsOpen(d.index); });
    rows.appendChild(row);
  }
  // the sparklines, asked together: ranks of one job on one vertical scale (the highest peak),
  // runs each on its own peak
  await Promise.all(drawn.map(async ([canvas, d]) => {
    const tl = await api("/api/timeline", { input: d.index, device: d.device,
                                            n: INPUTS_SPARK.buckets });
    canvas.dataset.buckets = tl.n;
    const own = shared ? span : Math.max(d.axis_end, 1);
    inputsSpark(canvas, tl, shared ? d.offset_ns : 0, own,
                doc.kind === "ranks" ? top : d.peak_allocated_bytes);
  }));
}
