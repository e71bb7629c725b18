// blocks.js — memanalyze view's blocks (compiled into memanalyze, served at /blocks.js):
//   - the allocations in view: the K largest blocks live in the window (/api/allocations, asked
//     by timeline.js's fetchWindow) as rectangles, x their lifetime, y their address (address
//     ranges packed, gaps cut), coloured by allocation stack; click one for its detail
//     (/api/block);
//   - the segments at the cursor (/api/segments): one row per segment, its blocks, free gaps
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
