// viewer.js — memanalyze view's page logic (compiled into memanalyze, served at /viewer.js): the
// window summary (/api/window: `diff` from the window's start to its end, by site; the top
// sites allocated in it, the categories at its peak and end, its steps as `steps` prints them,
// its OOMs with report's verdicts), for a brushed window or on asking; the tables of the devices
// and the steps (/api/steps); the input (wheel to zoom around the cursor, drag to pan,
// shift-drag to select a window, click for the cursor, the controls); and the start (main: the
// summary, the device with the highest peak unless the URL names one, the state read back).
// The page's scripts, each one job, run in index.html's order (`defer`: document order), this
// one last: it alone runs anything (main), so every function of the others is declared by then:
//   - search.js: the search (/api/search, its marks on the timeline and outlines on the blocks);
//   - inputs.js: with several inputs, the strip of them (/api/inputs), every request for the
//     input shown (input=I);
//   - state.js: the state S (in location.hash), api() with the token, the shared helpers;
//   - timeline.js: the window (zoom, pan, fetch), the timeline and its stacks;
//   - blocks.js: the allocations in view and the segments at the cursor;
//   - in a share file only (no server), share.js between inputs.js and state.js.
// The page keeps only what one window needs: its memory does not grow with the trace. Text goes
// in through textContent only, never as HTML.
"use strict";

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
  const win = await api("/api/window", { device, from: whenAt(lo), to: whenAt(hi - 1) });
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
  summarySites(win.sites);
  summaryCategories(win);
  summarySteps(win);
  summaryOoms(win.ooms);
  document.getElementById("summary").hidden = false;
}

// The top sites: bytes allocated in the window per allocation stack (view_window.h's).
function summarySites(sites) {
  const body = document.querySelector("#summary-sites tbody");
  body.textContent = "";
  for (const s of sites.listed) {
    const tr = document.createElement("tr");
    tr.dataset.stackId = s.stack_id;
    tr.dataset.bytes = s.bytes;
    cell(tr, bytes(s.bytes), true);
    cell(tr, String(s.blocks), true);
    cell(tr, s.site || "(no stack)");
    body.appendChild(tr);
  }
  document.getElementById("summary-sites-note").textContent = sites.sites_total ?
    "(" + bytes(sites.bytes) + " in " + sites.blocks + " block" + (sites.blocks === 1 ? "" : "s") +
    " from " + sites.sites_total + " site" + (sites.sites_total === 1 ? "" : "s") +
    (sites.listed.length < sites.sites_total ? "; the " + sites.listed.length + " largest" : "") +
    ")" : "(nothing allocated in the window)";
}

// The categories at the window's peak and at its end (those with bytes at either).
function summaryCategories(win) {
  const body = document.querySelector("#summary-categories tbody");
  body.textContent = "";
  const c = win.categories, note = document.getElementById("summary-categories-note");
  if (!c) {
    note.textContent = "(" + (win.categories_error || "no categories") + ")";
    return;
  }
  let shown = 0;
  for (const name of Object.keys(c.at_peak)) {
    if (!c.at_peak[name] && !c.at_end[name]) continue;
    const tr = document.createElement("tr");
    tr.dataset.category = name;
    cell(tr, name.replace(/_/g, " "));
    cell(tr, bytes(c.at_peak[name]), true);
    cell(tr, bytes(c.at_end[name]), true);
    body.appendChild(tr);
    shown++;
  }
  note.textContent = shown ? "(at the window's peak, " + bytes(win.peak_allocated_bytes) +
    " allocated, and at its end)" : "(nothing allocated)";
}

// The steps that overlap the window, as `steps` prints them.
function summarySteps(win) {
  const body = document.querySelector("#summary-steps tbody");
  body.textContent = "";
  for (const s of win.steps.steps) body.appendChild(stepRow(s));
  const n = win.steps_in_window, listed = win.steps_listed;
  document.getElementById("summary-steps").hidden = n === 0;
  document.getElementById("summary-steps-note").textContent = n === 0 ? "(no step in it)" :
    "(" + (listed < n ? listed + " of " + n + " listed" : n + " step" + (n === 1 ? "" : "s")) +
    " of the run's " + win.steps.step_count + ")";
}

function summaryOoms(ooms) {
  const list = document.getElementById("summary-ooms");
  list.textContent = "";
  for (const o of ooms.oom_events) {
    const li = document.createElement("li");
    li.dataset.eventId = o.event_id;
    li.dataset.verdict = o.verdict || "";
    li.textContent = o.text + (o.verdict ? " [" + o.verdict + "]" : " [no verdict]");
    list.appendChild(li);
  }
  document.getElementById("summary-ooms-note").textContent = ooms.count === 0 ? "no OOM" :
    ooms.count + " OOM" + (ooms.count === 1 ? "" : "s") + (ooms.listed < ooms.count ?
      " (" + ooms.listed + " of " + ooms.count + " listed)" : "");
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
  for (const s of doc.steps) body.appendChild(stepRow(s));
}

// A row of `steps`: the Steps table's and the window summary's.
function stepRow(s) {
  const tr = document.createElement("tr");
  tr.dataset.step = s.step;
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
  return tr;
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
    if (!d) { tl.title = rangeTitle(e.offsetX, e.offsetY); return; }
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
    drawSegments(); // plain until the new series come
    fetchSegmentSeries().catch(showError);
    scheduleFetch();
  });
  document.getElementById("blocks-layout").addEventListener("change", (e) => {
    S.blocksLayout = BLOCK_LAYOUTS.includes(e.target.value) ? e.target.value : "address";
    writeHash();
    drawBlocks();
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
  S.rangeMarks = rangeMarksOf(marks);
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
  // the strip of inputs only with several (its facts cost passes over each input's steps: made
  // beside the first screen, not before it; the page is ready when both are drawn)
  const summary = await api("/api/summary");
  const strip = summary.inputs > 1 ? inputsInit() : null;
  S.summary = summary;
  const run = summary.run;
  document.getElementById("input").textContent =
    (summary.inputs > 1 ? "input " + (S.input + 1) + " of " + summary.inputs + ": " : "") +
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
  S.blocksLayout = state.layout;
  document.getElementById("blocks-layout").value = state.layout;
  let device = summary.devices.length ? summary.devices[0].device : 0;
  if (summary.devices.length > 1) { // the device with the highest peak, as the commands pick it
    device = summary.devices.reduce((a, b) => (b.peak_allocated_bytes > a.peak_allocated_bytes ? b : a)).device;
  }
  if (state.device !== null && summary.devices.some((d) => d.device === state.device))
    device = state.device;
  sel.value = device;
  await switchDevice(device, state);
  if (strip) await strip;
  S.ready = true;
  document.body.dataset.ready = "1";
}

main().catch((e) => {
  showError(e);
  document.body.dataset.ready = "error";
});
