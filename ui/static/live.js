// The live elements' browser side, served as static modules (ui/live_routes.py) and imported by the elements' small
// loaders (ui/assets/live_view.js, live_status.js) and by the watch page: the live view (a run's header and charts on
// Train, a group's lines and charts on Compare, Sweep and the lesson) and the sidebar's line. Each
// draws what the stream (ui/live_feed.py) says, in every state of the run (waiting, live, ended, failed): a run's end
// needs no rerun to be drawn. The page's own Streamlit elements (Stop, the run's messages) follow the state: the view
// asks for its fragment's rerun once per new state (``setTriggerValue``, where the page gives one).
// Modules: live-plan.js (what each message does, pure), live-header.js, live-charts.js, live-feed.js.
// Counters for tests and measurement: data-* attributes on each element's root and window.__benchLiveCharts,
// window.__benchFeed.
import { feedFor } from "./live-feed.js";
import { buildHeader, el, inline, showLine, updateHeader } from "./live-header.js";
import { applyOp, plotlyReady } from "./live-charts.js";
import { isNew, planCharts, queueOp, rerunDelay } from "./live-plan.js";

function watchConnected(node, unsubscribe) {
  // an element Streamlit removed stops listening (checked at each event; no timers per element)
  return (fn) => (msg) => { if (!node.isConnected) { unsubscribe.current?.(); return; } fn(msg); };
}

// -- the sidebar's line ----------------------------------------------------------------------------------------------
const lines = new WeakMap();

export function statusElement(component) {
  const { data, parentElement } = component;
  const root = parentElement && parentElement.querySelector(".bench-live-status");
  if (!data || !root) return;
  let st = lines.get(parentElement);
  if (!st || st.root !== root) {
    st = { root, seq: -1, unsubscribe: { current: null } };
    lines.set(parentElement, st);
    const guard = watchConnected(root, st.unsubscribe);
    st.unsubscribe.current = feedFor(data).subscribe(guard((msg) => {
      if ("line" in msg && msg.seq >= st.seq) { st.seq = msg.seq; showLine(root, msg.line); }
    }));
  }
  // the page's own words only until the stream has spoken: after that the line and the header change together, in
  // the same message (two elements drawn by one page run can be a publish apart)
  if (st.seq < 0) showLine(root, data.line);
}

// -- the live view -------------------------------------------------------------------------------------------------
const views = new WeakMap();

function buildView(root, data) {
  root.replaceChildren();
  const layout = data.layout; // ui.live_messages.RUN_LAYOUT, or a group's own
  const watching = el("p", { class: "blv-watching" });
  const header = el("div", { class: "blv-headers" });
  const grid = el("div", { class: "blv-grid" });
  const cells = {};
  for (const name of layout.charts) {
    // a chart's div exists while the chart does (in the layout's order; the loss chart from the first epoch)
    const cell = el("div", { class: `blv-cell blv-${name}${(layout.wide || []).includes(name) ? " blv-wide" : ""}` });
    if (name === layout.note) cell.append(el("div", { class: "blv-note" }, data.nvml_note || ""));
    cell.style.display = "none";
    grid.append(cell);
    cells[name] = { name, cell, gd: null, sig: undefined, counts: {} };
  }
  root.append(watching, header, grid);
  return { root, layout, watching, header, headerSts: [], cells, seq: -1, drawnState: data.state, pending: null,
           reruns: 0, unsubscribe: { current: null }, data, toDraw: {}, drawing: false };
}

function showHeader(view, header) {
  // one header with tiles (a run), or one status line and bar per run (a group: header.runs); none: no run
  const parts = !header ? [] : view.layout.headers === "many" ? header.runs || [] : [header];
  while (view.headerSts.length > parts.length) view.headerSts.pop().root.remove();
  while (view.headerSts.length < parts.length) {
    const root = el("div", { class: "bench-live-header" });
    view.header.append(root);
    view.headerSts.push(buildHeader(root));
  }
  parts.forEach((part, i) => updateHeader(view.headerSts[i], part));
  if (view.layout.headers === "many") { // a group's lines under its runs (the headline so far)
    if (!view.groupLines) { view.groupLines = el("div", { class: "blv-lines" }); view.header.after(view.groupLines); }
    const groupLines = (header && header.lines) || [];
    view.groupLines.replaceChildren(...groupLines.map((line) => inline(el("p", { class: "blv-line" }), line.text)));
  }
}

function showWatching(view, viewers) {
  const text = view.data.presenter && viewers ? `${viewers} watching` : "";
  view.watching.textContent = text;
  view.watching.style.display = text ? "" : "none";
  view.root.dataset.viewers = String(viewers || 0);
}

function askRerun(view, state, viewers) {
  // once per new state, after a random delay that grows with the class (a hundred pages do not rerun at once);
  // again only when the page draws an older state than the stream's (viewElement)
  if (!view.setTriggerValue) return;
  if (state.key === view.drawnState) { if (view.pending) { clearTimeout(view.pending.timer); view.pending = null; } return; }
  if (view.pending && view.pending.key === state.key) return;
  if (view.pending) clearTimeout(view.pending.timer);
  requestRerun(view, state.key, rerunDelay(viewers, Math.random()));
}

function requestRerun(view, key, delay) {
  const timer = setTimeout(() => {
    view.pending = null;
    if (view.drawnState === key || !view.root.isConnected) return;
    view.reruns += 1;
    view.root.dataset.reruns = String(view.reruns);
    view.setTriggerValue("changed", { state: key, at: Date.now() });
  }, delay);
  view.pending = { key, timer };
}

// The page's turn between two draws: its input, a test's question, the stream's next message are answered there.
const pause = (ms) => new Promise((resolve) => { setTimeout(resolve, Math.max(0, ms)); });
// A chart is drawn again no sooner than this after its last draw, nor sooner than DRAW_SHARE times that draw's own
// duration after it: a chart grown by a long run (hundreds of bars and names) is drawn less often, its increments
// joined meanwhile (live-plan.queueOp), and never takes more than a share of the page's time from its input.
export const DRAW_GAP_MS = 150;
export const DRAW_SHARE = 5;

// Draws each chart's queued operations, a chart at a time with a turn of the page between, every chart in each round
// (none waits behind another that always has news), until none is left.
async function drawCharts(view) {
  view.drawing = true;
  try {
    for (;;) {
      const waiting = view.layout.charts.filter((n) => view.toDraw[n]);
      if (!waiting.length) return;
      const now = performance.now();
      const due = waiting.filter((n) => (view.cells[n].nextAt || 0) <= now);
      if (!due.length) { await pause(Math.min(...waiting.map((n) => view.cells[n].nextAt)) - now); continue; }
      for (const name of due) {
        await pause(0);
        if (!(await drawChart(view, name))) return;
      }
    }
  } finally { view.drawing = false; }
}

// The charts with a whole draw (not an increment) queued or being drawn, said on the view (data-whole-queued: their
// names): a test reads there that what it counts is drawn, not still waiting its turn.
const whole = (ops) => (ops || []).some((op) => op.op !== "extend");
function showQueued(view) {
  view.root.dataset.wholeQueued = view.layout.charts
    .filter((n) => whole(view.toDraw[n]) || n === view.drawingWhole).join(" ");
}

// One chart's queued operations drawn; false when the view asked for a snapshot instead (it draws every chart).
async function drawChart(view, name) {
  const ops = view.toDraw[name];
  delete view.toDraw[name];
  if (!ops) return true;
  view.drawingWhole = whole(ops) ? name : null; // the chart whose whole draw is being made
  try {
    return await drawOps(view, name, ops);
  } finally {
    view.drawingWhole = null;
    showQueued(view);
  }
}

async function drawOps(view, name, ops) {
  const Plotly = await plotlyReady(view.data.plotly);
  if (!Plotly || ops.some((op) => op.op === "resync")) { // an increment for a chart this page never drew
    view.toDraw = {};
    view.feed.reopen();
    return false;
  }
  const cell = view.cells[name];
  const started = performance.now();
  try {
    for (const op of ops) {
      await applyOp(Plotly, cell, op, view.config || { displaylogo: false, responsive: true });
      cell.sig = op.op === "purge" ? undefined : op.sig ?? cell.sig;
    }
  } catch (err) { console.error("live view chart", err); }
  const took = performance.now() - started;
  cell.nextAt = performance.now() + Math.max(DRAW_GAP_MS, DRAW_SHARE * took);
  if (cell.gd) { cell.gd.dataset.drawMs = String(Math.round(took)); cell.gd.dataset.draws = String((Number(cell.gd.dataset.draws) || 0) + 1); }
  return true;
}

function onFeed(view, msg) {
  if (!isNew(msg, view.seq)) return;
  view.seq = msg.seq;
  view.root.dataset.seq = String(msg.seq);
  if (msg.state) {
    view.streamState = msg.state.key;
    view.root.dataset.state = msg.state.key;
    view.root.dataset.active = String(msg.state.active);
  }
  if ("header" in msg) showHeader(view, msg.header);
  if ("viewers" in msg) { view.viewers = msg.viewers; showWatching(view, msg.viewers); }
  if (msg.state) askRerun(view, msg.state, view.viewers);
  if (msg.config) view.config = msg.config;
  // planned when the message comes, in the stream's order; ``held`` is what the charts will hold once the draws
  // queued are made
  view.held = view.held || {};
  const ops = planCharts(msg, view.layout.charts, view.held);
  for (const op of ops) view.held[op.name] = op.op === "purge" ? undefined : op.sig ?? view.held[op.name];
  for (const op of ops) view.toDraw[op.name] = queueOp(view.toDraw[op.name] || [], op);
  showQueued(view);
  if (ops.length && !view.drawing) drawCharts(view).catch((err) => console.error("live view chart", err));
}

// The element: ``component`` is Streamlit's (data, parentElement, setTriggerValue) or the watch page's own.
export function viewElement(component) {
  const { data, parentElement, setTriggerValue } = component;
  const root = parentElement && parentElement.querySelector(".bench-live-view");
  if (!data || !root) return;
  let view = views.get(parentElement);
  if (!view || view.root !== root) {
    view = buildView(root, data);
    views.set(parentElement, view);
    view.setTriggerValue = setTriggerValue;
    view.feed = feedFor(data);
    const guard = watchConnected(root, view.unsubscribe);
    view.unsubscribe.current = view.feed.subscribe(guard((msg) => onFeed(view, msg)));
  }
  view.setTriggerValue = setTriggerValue;
  view.data = data;
  view.drawnState = data.state;
  if (view.pending && view.pending.key === data.state) { clearTimeout(view.pending.timer); view.pending = null; }
  else if (view.streamState && view.streamState !== data.state && view.seq > data.seq && !view.pending && setTriggerValue) {
    // the page drew an older state than the stream has sent: its rerun request was dropped; ask again
    requestRerun(view, view.streamState, rerunDelay(1, 0));
  }
  if (view.seq < 0 && "header" in data) showHeader(view, data.header); // until the stream's snapshot (statusElement)
  showWatching(view, view.viewers);
  root.dataset.drawnState = data.state;
}
