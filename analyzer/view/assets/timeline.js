// timeline.js — memanalyze view's timeline (compiled into memanalyze, served at /timeline.js):
//   - the window: setWindow (zoom, pan; the window summary dropped when it was of another
//     window), its fetch 30 ms after the last change (/api/timeline, one bucket per pixel, and
//     /api/allocations for blocks.js; a window's steps and ranges asked again from /api/marks
//     when there are too many to send at once);
//   - the drawing, on a canvas: allocated and reserved of one device over the window, each
//     bucket's min–max as a band and its last value as a line, the steps along the top, under
//     them the NVTX ranges as bars (a row per nesting depth, at most RANGE_ROWS; a hover title
//     with the name, domain and duration) and the OOMs (/api/marks), the peak and the device
//     limit (/api/summary), the cursor and the brush;
//   - "stack by" (site, category, stream, size class): the allocated bytes at each bucket's max
//     stacked by series under the allocated line (/api/stacks, the timeline's own grid: the
//     stack's top is the bucket's max allocated exactly), a legend of the series.
// Only declarations here (state.js's S and helpers used when called); viewer.js binds the
// wheel, drag and shift-drag to setWindow.
"use strict";

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
    // share_file.c embeds k=300; building=1: while the server builds its blocks index it says
    // so in a 200 (`building`), not a 503, which the browser would log as an error
    api("/api/allocations", { device, t0: lo, t1: hi, k: 300, building: 1 })
      .then((a) => (a.building ? null : a))
      .catch((e) => (e.status === 503 ? null : Promise.reject(e))),
    whole.step_stride > 1 || whole.ranges.length < whole.ranges_total ?
      api("/api/marks", { device, lo, hi, ooms: 0 }) // a share file has the whole run's alone
        .catch((e) => (e.status === 404 ? whole : Promise.reject(e))) : whole,
  ]);
  if (seq !== fetchSeq) return; // a newer window was asked for
  S.stepMarks = { steps: marks.steps, stride: marks.step_stride };
  S.rangeMarks = rangeMarksOf(marks);
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
  drawSegments(); // its blocks coloured by the same series
}

// ---- the NVTX ranges ------------------------------------------------------------------------

const RANGE_ROWS = 3, RANGE_ROW_H = 12; // the rows drawn (deeper ranges are not) and their height
const RANGE_COLORS = ["rgba(118, 183, 178, 0.60)", "rgba(237, 201, 72, 0.55)",
  "rgba(176, 122, 161, 0.50)"];

function rangeMarksOf(marks) {
  const c = marks.range_columns || [];
  const at = (k) => c.indexOf(k);
  const [b, e, d, n, dom, tid, open] = ["begin", "end", "depth", "name", "domain", "tid", "open"]
    .map(at);
  return {
    total: marks.ranges_total || 0, depth: marks.ranges_depth || 0,
    ranges: (marks.ranges || []).map((r) => ({ begin: r[b], end: r[e], depth: r[d], name: r[n],
      domain: r[dom], tid: r[tid], open: r[open] })),
  };
}

// The rows the window's ranges take (0: none, and no band).
function rangeRows() {
  const rm = S.rangeMarks;
  if (!rm || !rm.ranges.length) return 0;
  let rows = 0;
  for (const r of rm.ranges) if (inWindow(r)) rows = Math.max(rows, r.depth + 1);
  return Math.min(rows, RANGE_ROWS);
}

// /api/marks' rule: overlapping [lo, hi), or an instant in it.
function inWindow(r) { return r.begin < S.hi && (r.end > S.lo || r.begin >= S.lo); }

// The bars of the window's ranges from y0 down, a row per depth; each drawn bar kept in
// S.rangeBars (its box and range) for the hover title and the tests.
function drawRanges(g, y0, w) {
  S.rangeBars = [];
  const rm = S.rangeMarks;
  if (!rm) return;
  g.save();
  g.font = "10px system-ui, sans-serif";
  g.textAlign = "left";
  g.textBaseline = "middle";
  for (const r of rm.ranges) {
    if (r.depth >= RANGE_ROWS || !inWindow(r)) continue;
    const x0 = Math.max(X(r.begin), M.left - 1), x1 = Math.min(X(r.end), w - M.right + 1);
    const y = y0 + r.depth * RANGE_ROW_H, bw = Math.max(x1 - x0, 1);
    g.fillStyle = RANGE_COLORS[r.depth % RANGE_COLORS.length];
    g.fillRect(x0, y, bw, RANGE_ROW_H - 2);
    g.fillStyle = "rgba(0, 0, 0, 0.25)";
    g.fillRect(x0, y, 1, RANGE_ROW_H - 2); // where it begins, when bars touch
    const label = r.name === null ? "(no name)" : r.name;
    if (bw > 24) {
      g.save();
      g.beginPath(); g.rect(x0 + 1, y, bw - 2, RANGE_ROW_H - 2); g.clip();
      g.fillStyle = "#333";
      g.fillText(label, x0 + 3, y + (RANGE_ROW_H - 2) / 2);
      g.restore();
    }
    S.rangeBars.push({ x0, x1: x0 + bw, y0: y, y1: y + RANGE_ROW_H - 2, r });
  }
  g.restore();
}

// The hover title of the range bar at (x, y), innermost first; "" where there is none.
function rangeTitle(x, y) {
  let hit = null;
  for (const b of S.rangeBars)
    if (x >= b.x0 && x < b.x1 + 1 && y >= b.y0 && y < b.y1 && (!hit || b.r.depth > hit.r.depth))
      hit = b;
  if (!hit) return "";
  const r = hit.r;
  return (r.name === null ? "(no name)" : r.name) + "\nNVTX domain: " +
    (r.domain === null ? "(default)" : r.domain) + "\nduration: " + place(r.end - r.begin) +
    (r.open ? " (still open at the end of the trace)" : "") + "\nfrom " + place(r.begin) +
    " to " + place(r.end) + (r.tid !== null ? "\nthread " + r.tid : "");
}

function deviceSummary() {
  return S.summary.devices.find((d) => d.device === S.device) || null;
}

// ---- the timeline ----------------------------------------------------------------------------

function drawTimeline() {
  const canvas = document.getElementById("timeline");
  const { g, w, h, pw } = context(canvas);
  const rows = rangeRows(); // the NVTX ranges' band under the steps' (none: no band)
  const top = M.top + rows * RANGE_ROW_H, bottom = h - M.bottom, ph = bottom - top;
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
  drawRanges(g, M.top - 1, w);
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
  // the device limit, the peak, the OOMs, the cursor, the brush (what was drawn kept in
  // S.drawnMarks, for the tests to hold against the CLI)
  const drawn = { limit: null, peak: null, ooms: [] };
  S.drawnMarks = drawn;
  g.setLineDash([5, 4]);
  if (limit && Y(limit) > top) {
    drawn.limit = limit;
    g.strokeStyle = COLORS.limit;
    g.beginPath(); g.moveTo(M.left, Y(limit)); g.lineTo(w - M.right, Y(limit)); g.stroke();
    g.fillStyle = COLORS.limit; g.textAlign = "left"; g.textBaseline = "bottom";
    g.fillText("device limit " + bytes(limit), M.left + 4, Y(limit) - 2);
  }
  if (d && d.peak_allocated_bytes > 0) {
    const t = S.axis === "event" ? d.peak_allocated_event_id : d.peak_allocated_ts_ns;
    const x = X(t);
    drawn.peak = t;
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
      drawn.ooms.push([o.event_id, o.op]);
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
  const rm = S.rangeMarks;
  // all of the answer's ranges: those in view counted; a part (the window's, asked for): its total
  const inView = !rm ? 0 : rm.ranges.length < rm.total ? rm.total : rm.ranges.filter(inWindow).length;
  if (inView) {
    const deeper = rm.depth > RANGE_ROWS ? " (the " + RANGE_ROWS + " outermost rows drawn)" : "";
    key(RANGE_COLORS[0], inView + " NVTX range" + (inView === 1 ? "" : "s") + " in view" +
      deeper + ": hover for name, domain, duration");
  }
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
