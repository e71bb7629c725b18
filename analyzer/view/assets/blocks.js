// blocks.js — memanalyze view's blocks (compiled into memanalyze, served at /blocks.js):
//   - the allocations in view: the K largest blocks live in the window (/api/allocations, asked
//     by timeline.js's fetchWindow) as rectangles, x their lifetime, y their address (address
//     ranges packed, gaps cut) or, in the stacked layout, the bytes of the blocks beneath them
//     (MemoryViz's active-memory timeline), coloured by allocation stack; click one for its
//     detail (/api/block);
//   - the segments at the cursor (/api/segments): one row per segment, its blocks coloured by
//     the timeline's stack-by series (their keys from /api/segment_series; the same colour as
//     on the timeline; grey: the rest), free gaps
//     trapped (in a segment that holds blocks) or releasable (a segment wholly free), and a
//     tooltip over them (the block's allocation stack from /api/block, cached).
// Only declarations here (state.js's S and helpers used when called); viewer.js binds the clicks
// and the pointer to blockAt, selectBlock and segmentTip.
"use strict";

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

// A block's x extent in the plot: its lifetime in the window, at least 1.5 px wide.
function blockXs(t0, t1, w) {
  const x0 = Math.max(X(t0), M.left - 1);
  const x1 = Math.min(X(t1 === null ? S.end : t1), w - M.right + 1);
  return [x0, x0 + Math.max(1.5, x1 - x0)];
}

// The stacked layout (PyTorch MemoryViz's active-memory timeline): the blocks in alloc order,
// each placed at the lowest offset (bytes) where it overlaps no block already placed whose
// drawn x extent overlaps its own (first fit), so a band's y is the bytes stacked beneath it.
// Returns each block's offset and the highest top.
function stackedOffsets(blocks, w) {
  const order = blocks.map((b, i) => i).sort((i, j) => blocks[i][4] - blocks[j][4] ||
    blocks[i][0] - blocks[j][0]);
  const xs = blocks.map((b) => blockXs(b[4], b[5], w));
  const off = new Array(blocks.length).fill(0), placed = [];
  let high = 0;
  for (const i of order) {
    const [x0, x1] = xs[i], size = blocks[i][2];
    const under = placed.filter((j) => xs[j][0] < x1 && x0 < xs[j][1])
      .map((j) => [off[j], off[j] + blocks[j][2]]).sort((p, q) => p[0] - q[0]);
    let y = 0;
    for (const [a, e] of under) {
      if (a >= y + size) break; // the gap below this one holds it
      y = Math.max(y, e);
    }
    off[i] = y;
    high = Math.max(high, y + size);
    placed.push(i);
  }
  return { off, high };
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
  canvas.dataset.layout = S.blocksLayout;
  if (!a) return;
  note.textContent = a.share || "(the " + a.blocks.length + " largest of " + a.window_blocks +
    " blocks live in the window, " + bytes(a.window_bytes) + "; " + a.rest_blocks +
    " smaller ones not drawn, " + bytes(a.rest_bytes) + ")";
  if (S.blocksLayout === "stacked") drawStackedBlocks(g, w, top, bottom);
  else drawAddressBlocks(g, w, pw, top, bottom);
}

// A drawn block and, when it is big enough, its light edge; kept in S.rects for blockAt.
function blockRect(g, r) {
  g.fillStyle = stackColor(r.stack);
  g.fillRect(r.x, r.y, r.w, Math.max(1, r.h));
  if (r.h > 4 && r.w > 4) {
    g.strokeStyle = "rgba(255,255,255,0.6)";
    g.strokeRect(r.x + 0.5, r.y + 0.5, r.w - 1, r.h - 1);
  }
  S.rects.push(r);
}

// The selected block outlined, the search's site outlined (search.js).
function blockMarks(g) {
  searchDrawBlocks(g);
  const sel = S.rects.find((r) => r.id === S.block);
  if (sel) {
    g.strokeStyle = "#000";
    g.lineWidth = 2.5;
    g.strokeRect(sel.x, sel.y, sel.w, Math.max(1, sel.h));
    g.lineWidth = 1;
  }
}

// Stacked: x the lifetime, y the bytes stacked beneath (stackedOffsets), from the bottom up.
// The rectangles kept are the exact bands (no two overlap); a band under 1 px is drawn 1 px.
function drawStackedBlocks(g, w, top, bottom) {
  const a = S.allocs;
  const { off, high } = stackedOffsets(a.blocks, w);
  const ymax = Math.max(1, high) * 1.04, scale = (bottom - top) / ymax;
  g.save();
  g.beginPath(); g.rect(M.left, top, w - M.left - M.right, bottom - top); g.clip();
  a.blocks.forEach((b, i) => {
    const [id, , size, , t0, t1, , , stack] = b;
    const [x0, x1] = blockXs(t0, t1, w);
    blockRect(g, { id, stack, x: x0, y: bottom - (off[i] + size) * scale, w: x1 - x0,
                   h: size * scale });
  });
  blockMarks(g);
  g.restore();
  // the byte axis
  const unit = ymax >= 2 ** 30 ? 2 ** 30 : ymax >= 2 ** 20 ? 2 ** 20 :
    ymax >= 2 ** 10 ? 2 ** 10 : 1;
  const step = niceStep(ymax / unit, 4) * unit;
  g.fillStyle = COLORS.text;
  g.textAlign = "right";
  g.textBaseline = "middle";
  for (let v = step; v <= ymax; v += step) g.fillText(bytes(v), M.left - 6, bottom - v * scale);
  g.textBaseline = "bottom";
  g.fillText("stacked", M.left - 6, bottom);
}

function drawAddressBlocks(g, w, pw, top, bottom) {
  const a = S.allocs;
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
    const [x0, x1] = blockXs(t0, t1, w);
    blockRect(g, { id, stack, x: x0, y: c.y + (addr - c.start) * scale, w: x1 - x0,
                   h: Math.max(1.5, size * scale) });
  }
  blockMarks(g);
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

// The block under (x, y) in the blocks canvas: the smallest holding the point, else the
// smallest within a pixel of it (thin bands stacked edge to edge: the one under the pointer).
function blockAt(x, y) {
  let best = null, bestIn = false;
  for (const r of S.rects) {
    if (!(x >= r.x - 1 && x <= r.x + r.w + 1 && y >= r.y - 1 && y <= r.y + r.h + 1)) continue;
    const inside = x >= r.x && x <= r.x + r.w && y >= r.y && y <= r.y + r.h;
    if (!best || (inside && !bestIn) ||
        (inside === bestIn && r.w * r.h < best.w * best.h)) {
      best = r;
      bestIn = inside;
    }
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
  await fetchSegmentSeries();
}

// The series keys of the segments' live blocks by the timeline's stack-by (/api/segment_series:
// apart from /api/segments, whose answer is near the response cap), then the map redrawn in
// their colours. A share file has them at the peak only: elsewhere (or when an answer fails) the
// map stays drawn plain.
let keysSeq = 0;
async function fetchSegmentSeries() {
  const seq = ++keysSeq, doc = S.seg, by = S.stackBy;
  if (!doc || !by) return;
  if (S.segKeys && S.segKeys.by === by && S.segKeys.event_id === doc.event_id &&
      S.segKeys.device === doc.device) return;
  const keys = await api("/api/segment_series", { device: doc.device, at: "event:" + doc.event_id,
                                                   by, count: 400 }).catch(() => null);
  if (!keys || seq !== keysSeq || S.seg !== doc || S.stackBy !== by) return;
  S.segKeys = keys;
  drawSegments();
}

// The segment map's colour of a live block whose series key is `key` (/api/segment_series):
// its series' on the timeline (timeline.js's seriesColor), "the rest"'s grey when its series is
// not among those drawn. Also the key of the series it is coloured as (null: the rest).
function segmentBlockColor(key, st) {
  const k = st.series.findIndex((s) => s.key === key && s.key !== -1);
  if (k < 0) return { color: seriesColor({ key: -1 }, 0), key: null };
  return { color: seriesColor(st.series[k], k), key };
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
  // coloured by series once the timeline's stacks and the blocks' keys of the same by are in
  const sk = S.segKeys;
  const st = S.stackBy && S.stacks && S.stacks.by === S.stackBy && !S.stacks.error &&
    !S.stacks.refused && sk && sk.by === S.stackBy && sk.event_id === doc.event_id &&
    sk.device === doc.device && sk.first_segment === doc.first_segment ? S.stacks : null;
  const items = st ? [[seriesColor({ key: -1 }, 0), "blocks coloured by " +
    (st.by === "size" ? "size class" : st.by) + " as the timeline (grey: the rest)"],
  [COLORS.pending, "outline: freed, stream still using it"]] :
    [[COLORS.allocated, "allocated block"], [COLORS.pending, "freed, stream still using it"]];
  for (const [color, text] of items.concat([[COLORS.trapped, "free, trapped"],
    [COLORS.releasable, "free, releasable (empty_cache)"]])) {
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
  const coloured = new Set(); // the drawn series' keys the blocks are coloured by (for the tests)
  g.textBaseline = "middle";
  g.textAlign = "right";
  doc.segments.forEach((s, i) => {
    const y = 8 + i * row, hgt = Math.max(2, row - (row > 5 ? 2 : 1));
    const keys = st ? sk.keys[i] || [] : null;
    let live = 0;
    const sw = Math.max(2, s.total_size * scale);
    g.fillStyle = s.allocated_size === 0 ? COLORS.releasable : COLORS.trapped;
    g.fillRect(M.left, y, sw, hgt);
    S.segRects.push({ seg: s, block: null, x: M.left, y, w: sw, h: hgt });
    for (const b of s.blocks || []) {
      if (!b.state.startsWith("active")) continue;
      const bx = M.left + (b.address - s.address) * scale;
      const pending = b.state === "active_pending_free";
      const { color, key } = st ? segmentBlockColor(keys[live++], st) :
        { color: pending ? COLORS.pending : COLORS.allocated, key: null };
      const bw = Math.max(1, b.size * scale - (b.size * scale > 3 ? 1 : 0));
      g.fillStyle = color;
      g.fillRect(bx, y, bw, hgt);
      if (st && pending) { // the series' colour kept, the pending state outlined
        g.strokeStyle = COLORS.pending;
        g.lineWidth = 1.5;
        g.strokeRect(bx + 0.75, y + 0.75, Math.max(0.5, bw - 1.5), Math.max(0.5, hgt - 1.5));
        g.lineWidth = 1;
      }
      if (key !== null) coloured.add(key);
      S.segRects.push({ seg: s, block: b, x: bx, y, w: Math.max(1, b.size * scale), h: hgt,
                        color, series: key });
    }
    if (row >= 12) {
      g.fillStyle = COLORS.text;
      g.fillText(bytes(s.total_size), M.left - 6, y + hgt / 2);
    }
  });
  S.segSeries = { by: st ? st.by : null, keys: [...coloured] };
  canvas.dataset.by = st ? st.by : "";
  canvas.dataset.series = S.segSeries.keys.length;
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
  if (b && S.segSeries && S.segSeries.by) { // coloured by a series: which (timeline.js's label)
    const sr = hit.series === null || hit.series === undefined ? null :
      S.stacks.series.find((x) => x.key === hit.series);
    text += "\n" + (S.segSeries.by === "size" ? "size class" : S.segSeries.by) + ": " +
      (sr ? sr.label : "the rest (not among the series drawn)");
  }
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
