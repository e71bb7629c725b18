// search.js — memanalyze view's search (compiled into memanalyze, served at /search.js). One
// field: an address when it parses as 0x… hex, frame text (a function or file name) otherwise,
// asked of /api/search for the device shown:
//   - frame text: the sites whose frames hold it, listed (site, blocks, bytes, own peak), and the
//     histogram of their allocations over the whole run (512 buckets) drawn as marks in a strip
//     along the top of the timeline, the buckets that fall in the window; a click on a site
//     outlines its blocks among the allocations drawn (the rows carry their stack ids) and greys
//     the others;
//   - an address: the blocks that held it (alloc and free, size, site), their allocs as ticks in
//     the same strip; a click on one selects it as a click on its rectangle does (/api/block) and
//     puts the cursor at its alloc (the window moved there when it is outside).
// The query (and the chosen site) lives in location.hash with the rest of the state. Loaded
// before the page's other scripts and only functions here: they use those scripts' globals
// (state.js's S, api, bytes, place, X, cell, showError, writeHash; timeline.js's setWindow,
// drawTimeline; blocks.js's setCursor, selectBlock, drawBlocks) when called, and those call them
// (searchHash from state.js, searchDrawTimeline and searchLegend from timeline.js,
// searchDrawBlocks from blocks.js, searchBind and runSearch from viewer.js).
// Text goes in through textContent only.
"use strict";

const SEARCH_COLOR = "#c0189a";
const SEARCH_STRIP = 7; // the marks' strip: its height in CSS pixels under the plot's top

// An address when the text is 0x and hex digits (at most 64 bits), frame text otherwise.
function searchKind(q) {
  return /^0x[0-9a-f]{1,16}$/i.test(q) ? "addr" : "text";
}

function searchNote(text) {
  document.getElementById("search-note").textContent = text;
}

let searchSeq = 0;
// Asks the server for `q` on the device shown (an empty q clears the search); `site` is the
// site to outline (from a deep link), or null.
async function runSearch(q, site) {
  q = (q || "").trim();
  const seq = ++searchSeq, device = S.device, kind = searchKind(q);
  S.searchQ = q;
  S.search = null;
  S.searchSite = site === undefined ? null : site;
  S.searchMarks = null;
  document.getElementById("search-q").value = q;
  document.getElementById("search-results").hidden = true;
  writeHash();
  drawTimeline();
  drawBlocks();
  if (!q) { searchNote(""); return; }
  searchNote("searching…");
  let doc;
  try {
    doc = await api("/api/search", kind === "addr" ? { device, addr: q } : { device, q });
  } catch (e) {
    if (seq === searchSeq) searchNote(String(e.message || e));
    return;
  }
  if (seq !== searchSeq) return; // a newer search was asked for
  S.search = Object.assign(doc, { kind });
  S.fetched.search++;
  searchNote("");
  if (kind === "addr") fillAddress(doc); else fillSites(doc);
  document.getElementById("search-results").hidden = false;
  drawTimeline();
  drawBlocks();
}

function searchHead(cols) {
  const head = document.querySelector("#search-table thead");
  head.textContent = "";
  const tr = document.createElement("tr");
  for (const c of cols) {
    const th = document.createElement("th");
    th.textContent = c;
    tr.appendChild(th);
  }
  head.appendChild(tr);
  const body = document.querySelector("#search-table tbody");
  body.textContent = "";
  return body;
}

function fillSites(doc) {
  document.getElementById("search-head").textContent = "“" + doc.q + "”: " + doc.sites_total +
    " site" + (doc.sites_total === 1 ? "" : "s") + " allocate from " + doc.frames_matched +
    " frame" + (doc.frames_matched === 1 ? "" : "s") + " holding it" +
    (doc.sites_listed < doc.sites_total ? " (the " + doc.sites_listed + " largest listed)" : "") +
    ": " + doc.blocks + " blocks, " + bytes(doc.bytes) + " over the run; their allocations are " +
    "the marks along the timeline's top. Click a site to outline its blocks.";
  const body = searchHead(["site", "blocks", "bytes", "own peak", "matched frame"]);
  for (const s of doc.sites) {
    const tr = document.createElement("tr");
    tr.dataset.stackId = s.stack_id;
    if (s.stack_id === S.searchSite) tr.className = "chosen";
    cell(tr, s.site || "(no stack)");
    cell(tr, String(s.blocks), true);
    cell(tr, bytes(s.bytes), true);
    cell(tr, bytes(s.peak_live_bytes), true);
    const f = s.matched_frames[0];
    cell(tr, f ? (f.name || "?") + " " + (f.filename || "?") + ":" + (f.line || "?") : "");
    tr.addEventListener("click", () => chooseSite(s.stack_id));
    body.appendChild(tr);
  }
}

// A site's blocks outlined among those drawn (again: none).
function chooseSite(id) {
  S.searchSite = S.searchSite === id ? null : id;
  for (const tr of document.querySelectorAll("#search-table tbody tr"))
    tr.className = Number(tr.dataset.stackId) === S.searchSite ? "chosen" : "";
  writeHash();
  drawBlocks();
}

// A block's alloc and free on the timeline's axis: time since the first event, or event ids; a
// block live before the recording began (alloc_id < 1) is at the axis' start.
function searchAllocAt(b) {
  return b.alloc_id < 1 ? 0 : S.axis === "event" ? b.alloc_id : b.alloc_ts_ns;
}
function searchFreeAt(b) { return S.axis === "event" ? b.free_event_id : b.free_ts_ns; }

function fillAddress(doc) {
  const segs = doc.segments.map((g) => "0x" + g.address.toString(16) + " (" + bytes(g.size) +
    ")").join(", ");
  document.getElementById("search-head").textContent = "0x" + doc.address.toString(16) + ": " +
    doc.blocks_total + " block" + (doc.blocks_total === 1 ? "" : "s") + " held it" +
    (doc.blocks_listed < doc.blocks_total ? " (the first " + doc.blocks_listed + " listed)" : "") +
    "; " + doc.segments_total + " segment" + (doc.segments_total === 1 ? "" : "s") +
    (segs ? ": " + segs : "") + ". Click a block to select it and put the cursor at its alloc.";
  const body = searchHead(["block", "address", "size", "allocated", "freed", "site"]);
  for (const b of doc.blocks) {
    const tr = document.createElement("tr");
    tr.dataset.allocId = b.alloc_id;
    cell(tr, String(b.alloc_id), true);
    cell(tr, "0x" + b.address.toString(16));
    cell(tr, bytes(b.size), true);
    cell(tr, b.alloc_id < 1 ? "before the recording" : place(searchAllocAt(b)));
    cell(tr, b.free_event_id === null ? "live at the end" : place(searchFreeAt(b)));
    cell(tr, b.site || "(no stack)");
    tr.addEventListener("click", () => { pickBlock(b).catch(showError); });
    body.appendChild(tr);
  }
}

// A listed block: the window moved to its alloc when it is outside, the cursor there, the
// block selected (its detail) as a click on its rectangle does.
async function pickBlock(b) {
  const t = searchAllocAt(b);
  if (t < S.lo || t >= S.hi) {
    const span = S.hi - S.lo;
    setWindow(t - span / 2, t + span / 2);
  }
  setCursor(t);
  await selectBlock(b.alloc_id);
}

// The marks, in the clipped plot of the timeline: the histogram's buckets that fall in the
// window (their blocks as the opacity), or an address's blocks' allocs as ticks. S.searchMarks
// says what was drawn (bucket indexes, or alloc ids), for the tests.
function searchDrawTimeline(g, top) {
  S.searchMarks = null;
  const s = S.search;
  if (!s || s.device !== S.device) return;
  const marks = [];
  g.fillStyle = SEARCH_COLOR;
  if (s.kind === "text") {
    const h = s.histogram, wd = h.bucket_width;
    const first = Math.max(0, Math.floor(S.lo / wd));
    const last = Math.min(h.buckets - 1, Math.floor((S.hi - 1) / wd));
    let most = 0;
    for (let i = first; i <= last; i++) most = Math.max(most, h.blocks[i]);
    for (let i = first; i <= last; i++) {
      if (!h.blocks[i]) continue;
      const x0 = X(i * wd), x1 = X((i + 1) * wd);
      g.globalAlpha = 0.35 + 0.65 * h.blocks[i] / most;
      g.fillRect(x0, top, Math.max(1.5, x1 - x0 - (x1 - x0 > 3 ? 1 : 0)), SEARCH_STRIP);
      marks.push(i);
    }
    g.globalAlpha = 1;
  } else {
    for (const b of s.blocks) {
      const t = searchAllocAt(b);
      if (t < S.lo || t >= S.hi) continue;
      g.fillRect(X(t) - 1, top, 2, SEARCH_STRIP + 3);
      marks.push(b.alloc_id);
    }
  }
  S.searchMarks = marks;
}

// The chosen site's blocks outlined among the allocations drawn, the others greyed. S.rects are
// drawBlocks' rectangles (with their stack ids); S.searchOutlined the ids outlined.
function searchDrawBlocks(g) {
  S.searchOutlined = [];
  const s = S.search;
  if (S.searchSite === null || !s || s.kind !== "text" || s.device !== S.device) return;
  g.fillStyle = "rgba(255, 255, 255, 0.6)";
  for (const r of S.rects) if (r.stack !== S.searchSite) g.fillRect(r.x, r.y, r.w, r.h);
  g.strokeStyle = SEARCH_COLOR;
  g.lineWidth = 2;
  for (const r of S.rects) {
    if (r.stack !== S.searchSite) continue;
    g.strokeRect(r.x, r.y, r.w, r.h);
    S.searchOutlined.push(r.id);
  }
  g.lineWidth = 1;
}

// The search's part of location.hash, and of the legend.
function searchHash(p) {
  if (S.searchQ) p.set("q", S.searchQ);
  if (S.searchQ && S.searchSite !== null) p.set("site", S.searchSite);
}

function searchLegend(key) {
  const s = S.search;
  if (!s || s.device !== S.device) return;
  key(SEARCH_COLOR, s.kind === "text" ? "allocations from “" + s.q + "” (" + s.blocks + ")" :
    "allocs of the blocks that held 0x" + s.address.toString(16));
}

function searchBind() {
  document.getElementById("search-form").addEventListener("submit", (e) => {
    e.preventDefault();
    runSearch(document.getElementById("search-q").value, null);
  });
  document.getElementById("search-clear").addEventListener("click", () => runSearch("", null));
}
