// The live elements' browser side, served once per browser as a static file (ui/live_routes.py) and imported by the
// elements' small loaders (ui/assets/live_view.js, live_status.js): the live view (a run's header and charts on
// Train, a group's lines and charts on Compare, the live lines on Sweep and the lesson) and the sidebar's line. Each
// takes what it shows from a server-sent-events stream (ui/live_feed.py), one EventSource per page and feed shared by
// the elements that show it, and asks Streamlit for a rerun only when the state changes (a run starts or ends).
// Counters for tests and measurement: data-* attributes on each element's root and window.__benchLiveCharts,
// window.__benchFeed.

// -- plotly.js: one <script> per page, from the static address (the browser keeps it for a year) ---------------------
const PLOTLY_WAIT_MS = 60000;
let plotlyPromise = null;

function plotlyReady(url) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotlyPromise && url) {
    plotlyPromise = new Promise((resolve) => {
      const script = document.createElement("script");
      script.src = new URL(url, window.location.href).href;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => { plotlyPromise = null; resolve(null); };
      document.head.appendChild(script);
    });
  }
  if (!plotlyPromise) return Promise.resolve(null);
  return Promise.race([plotlyPromise, new Promise((r) => setTimeout(() => r(null), PLOTLY_WAIT_MS))]);
}

// -- the header ------------------------------------------------------------------------------------------------------
function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  Object.entries(attrs).forEach(([k, v]) => node.setAttribute(k, v));
  if (text !== null) node.textContent = text;
  return node;
}

function inline(node, text) {
  // The lines' own markdown, as st.caption draws it: **bold** and `code`; everything else stays text.
  const parts = String(text).split(/(\*\*[^*]+\*\*|`[^`]+`)/);
  node.replaceChildren(...parts.filter((p) => p).map((p) => {
    if (p.startsWith("**") && p.endsWith("**") && p.length > 4) return el("strong", {}, p.slice(2, -2));
    if (p.startsWith("`") && p.endsWith("`") && p.length > 2) return el("code", {}, p.slice(1, -1));
    return document.createTextNode(p);
  }));
  return node;
}

function primaryColour(fallback) {
  // the theme's primary colour as the page draws it (a viewer may switch between the light and the dark theme)
  const button = document.querySelector('[data-testid="stBaseButton-primary"]');
  const colour = button ? getComputedStyle(button).backgroundColor : "";
  return colour && colour !== "rgba(0, 0, 0, 0)" ? colour : fallback;
}

function build(root) {
  root.replaceChildren();
  const status = el("p", { class: "blh-status", "data-testid": "stMarkdownContainer" });
  const progress = el("div", { "data-testid": "stProgress" });
  const progressText = el("p");
  const track = el("div", { class: "blh-track", role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100" });
  const fill = el("div", { class: "blh-fill" });
  track.append(fill);
  progress.append(progressText, track);
  const tiles = el("div", { class: "blh-tiles" });
  const lines = el("div", { class: "blh-lines" });
  root.append(status, progress, tiles, lines);
  return { status, progressText, track, fill, tiles, tileNodes: [], lines, sigs: {}, builds: 1, updates: 0, changes: 0 };
}

function setText(st, node, text) {
  if (node.textContent !== text) { node.textContent = text; st.changes += 1; }
}

function tileNode() {
  const tile = el("div", { "data-testid": "stMetric" });
  const label = el("div", { "data-testid": "stMetricLabel" });
  const labelText = el("p");
  const name = el("span");
  const help = el("span", { class: "blh-help" }, "help");
  labelText.append(name, help);
  label.append(labelText);
  const value = el("div", { "data-testid": "stMetricValue" });
  const note = el("div", { "data-testid": "stCaptionContainer" });
  tile.append(label, value, note);
  return { tile, name, help, value, note };
}

function update(st, data, root) {
  // status line: icon, then text runs, some bold
  const statusSig = JSON.stringify(data.status);
  if (st.sigs.status !== statusSig) {
    st.sigs.status = statusSig;
    const parts = [];
    if (data.status.icon) parts.push(el("span", { class: "blh-icon", "aria-hidden": "true" }, data.status.icon));
    for (const [text, bold] of data.status.parts) parts.push(bold ? el("strong", {}, text) : document.createTextNode(text));
    st.status.replaceChildren(...parts);
    st.changes += 1;
  }
  setText(st, st.progressText, data.progress.text);
  const width = `${Math.round(Math.max(0, Math.min(1, data.progress.fraction)) * 1000) / 10}%`;
  if (st.fill.style.width !== width) { st.fill.style.width = width; st.track.setAttribute("aria-valuenow", width.slice(0, -1)); }
  const colour = primaryColour(data.primary);
  if (st.fill.style.background !== colour) st.fill.style.background = colour;
  // tiles: the same four for the run's life; their words change
  while (st.tileNodes.length < data.tiles.length) { const t = tileNode(); st.tileNodes.push(t); st.tiles.append(t.tile); }
  data.tiles.forEach((tile, i) => {
    const t = st.tileNodes[i];
    setText(st, t.name, tile.label);
    setText(st, t.value, tile.value);
    setText(st, t.note, tile.note || "");
    t.note.style.display = tile.note ? "" : "none";
    t.help.style.display = tile.help ? "" : "none";
    if (tile.help && t.help.title !== tile.help) t.help.title = tile.help;
  });
  const linesSig = JSON.stringify(data.lines);
  if (st.sigs.lines !== linesSig) {
    st.sigs.lines = linesSig;
    st.lines.replaceChildren(...data.lines.map((line) => inline(el("div", line.kind === "warning"
      ? { class: "blh-warning", role: "alert" } : { "data-testid": "stCaptionContainer" }), line.text)));
    st.changes += 1;
  }
  st.updates += 1;
  root.dataset.builds = String(st.builds);
  root.dataset.updates = String(st.updates);
  root.dataset.changes = String(st.changes);
  root.dataset.run = String(data.run);
}


// -- charts ------------------------------------------------------------------------------------------------------------
const MAX_POINTS = 3000; // per trace kept in the browser; beyond it the older two thirds are halved

function nested(obj, path) {
  return path.split(".").reduce((o, k) => (o == null ? undefined : o[k]), obj);
}

function setNested(obj, path, value) {
  const keys = path.split(".");
  const last = keys.pop();
  const target = keys.reduce((o, k) => (o[k] = o[k] || {}), obj);
  target[last] = value;
}

function appendInPlace(gd, update, traces) {
  // What Plotly.extendTraces(gd, update, traces) appends, without its redraw: update[path][j] extends trace traces[j].
  Object.entries(update).forEach(([path, perTrace]) => {
    traces.forEach((t, j) => {
      const trace = gd.data[t];
      if (!trace) return;
      const held = nested(trace, path);
      if (Array.isArray(held)) held.push(...perTrace[j]);
      else setNested(trace, path, perTrace[j].slice());
    });
  });
}

function thin(gd, paths) {
  // Halve the density of a long trace's oldest two thirds (every path in step, so points stay aligned).
  let changed = false;
  gd.data.forEach((trace) => {
    const n = (trace.x || []).length;
    if (n <= MAX_POINTS) return;
    const cut = Math.floor((n * 2) / 3);
    for (const path of ["x", ...paths.filter((p) => p !== "x")]) {
      const values = nested(trace, path);
      if (!Array.isArray(values) || values.length !== n) continue;
      setNested(trace, path, values.filter((_, i) => i >= cut || i % 2 === 0));
    }
    changed = true;
  });
  return changed;
}

// Epoch and phase names (the figure's annotations, in rows shifted down from the top) are thinned to the width drawn: on
// a phone held upright a 15-epoch run would pile "epoch 10", "epoch 11", "epoch 12" on top of each other. Going left
// to right, a name whose box would touch a box already kept is hidden, as Plotly thins its tick labels. A name's size
// is read from the page while it is drawn (kept by its text and font for when it is hidden), else measured.
const NAME_GAP_PX = 6;
let measureCtx = null;

function nameSize(gd, ann, i) {
  const sizes = (gd.__benchNameSizes = gd.__benchNameSizes || new Map());
  const size = (ann.font && ann.font.size) || 12;
  const key = `${size}|${ann.text}`;
  const drawn = gd.querySelector(`.annotation[data-index="${i}"]`);
  if (drawn) {
    const r = drawn.getBoundingClientRect();
    if (r.width > 0) sizes.set(key, { w: r.width, h: r.height });
  }
  if (!sizes.has(key)) {
    measureCtx = measureCtx || document.createElement("canvas").getContext("2d");
    measureCtx.font = `${size}px ${getComputedStyle(gd).fontFamily || "sans-serif"}`;
    const w = measureCtx.measureText(String(ann.text).replace(/<[^>]*>/g, "")).width + 4;
    return { w, h: size * 1.3 + 4 };
  }
  return sizes.get(key);
}

function namesToShow(gd) {
  const anns = (gd.layout && gd.layout.annotations) || [];
  const full = gd._fullLayout;
  if (!anns.length || !full) return null;
  const boxes = [];
  anns.forEach((ann, i) => {
    const xa = full[String(ann.xref || "x").replace(/^x(\d*)$/, "xaxis$1")];
    const ya = full[String(ann.yref || "y").replace(/^y(\d*)$/, "yaxis$1")];
    if (!xa || !ya || typeof xa.l2p !== "function" || ann.text == null) return;
    const { w, h } = nameSize(gd, ann, i);
    const x = xa._offset + xa.l2p(xa.d2l ? xa.d2l(ann.x) : ann.x);
    const y = ya._offset + ya.l2p(ya.d2l ? ya.d2l(ann.y) : ann.y) - (ann.yshift || 0);
    const top = ann.yanchor === "top" ? y : ann.yanchor === "bottom" ? y - h : y - h / 2;
    boxes.push({ i, left: x - w / 2, right: x + w / 2, top, bottom: top + h });
  });
  const show = anns.map(() => false);
  const kept = [];
  boxes.sort((a, b) => a.left - b.left);
  for (const b of boxes) {
    const clash = kept.some((k) => b.left < k.right + NAME_GAP_PX && k.left < b.right + NAME_GAP_PX
      && b.top < k.bottom && k.top < b.bottom);
    if (!clash) { kept.push(b); show[b.i] = true; }
  }
  return show;
}

function namesDrawn(gd) {
  // what the names' places depend on: how many there are, the figure's width and the time axis' range
  const full = gd._fullLayout || {};
  const range = (full.xaxis && full.xaxis.range) || [];
  return `${((gd.layout && gd.layout.annotations) || []).length}|${full.width}|${range.join(",")}`;
}

function thinNames(gd) {
  // The names' visibility for the width drawn now, set with one relayout when it changed. The draw that relayout
  // causes is not looked at again (a hidden name's size is an estimate, so a second look could flip it back), but a
  // draw of new names, a new width or a longer time axis during the relayout is: thinned once it is done.
  if (gd.__benchThinning) { gd.__benchThinAgain = true; return; }
  const show = namesToShow(gd);
  if (!show) return;
  const update = {};
  show.forEach((visible, i) => {
    if ((gd.layout.annotations[i].visible !== false) !== visible) update[`annotations[${i}].visible`] = visible;
  });
  gd.dataset.names = String(show.length);
  gd.dataset.namesShown = String(show.filter(Boolean).length);
  if (!Object.keys(update).length) return;
  gd.__benchThinning = true;
  gd.__benchThinAgain = false;
  const drawn = namesDrawn(gd);
  Promise.resolve(window.Plotly.relayout(gd, update)).finally(() => {
    gd.__benchThinning = false;
    if (gd.__benchThinAgain && namesDrawn(gd) !== drawn) thinNames(gd);
    gd.__benchThinAgain = false;
  });
}

function watchNames(gd) {
  // after every draw: a new figure, appended points, a resize (responsive), a zoom
  gd.on("plotly_afterplot", () => thinNames(gd));
  thinNames(gd);
}

function publish(gd, st, name) {
  const points = (gd.data || []).reduce((sum, t) => sum + ((t.x || []).length), 0);
  gd.dataset.fullRenders = String(st.full);
  gd.dataset.extends = String(st.extend);
  gd.dataset.points = String(points);
  gd.dataset.seq = String(st.applied);
  window.__benchLiveCharts = window.__benchLiveCharts || {};
  window.__benchLiveCharts[name] = { full: st.full, extend: st.extend, thin: st.thin, resyncs: st.resyncs, reasons: st.reasons, points, seq: st.applied };
}

// -- the stream: one EventSource per page and address, shared by the elements that show it ----------------------------
const feeds = new Map(); // stream address -> feed
const REOPEN_MS = 2000;

const LOG_MAX = 600; // events kept after the last snapshot, for an element that subscribes later on the same page

function openFeed(url) {
  // ``log``: the last snapshot and every event after it, replayed to a listener that subscribes later (the live view
  // mounted after the sidebar's line opened the stream), so it draws without a second snapshot; past LOG_MAX events
  // it is dropped and a late listener reopens the stream instead.
  const feed = { url, listeners: new Set(), source: null, log: null, events: 0, bytes: 0, opened: 0, closer: null };
  const open = () => {
    if (feed.source) feed.source.close();
    feed.opened += 1;
    feed.log = null;
    const source = new EventSource(new URL(url, window.location.href).href);
    feed.source = source;
    source.onmessage = (e) => {
      feed.events += 1;
      feed.bytes += e.data.length;
      let msg;
      try { msg = JSON.parse(e.data); } catch (err) { console.error("live feed", err); return; }
      if (msg.kind === "snapshot") feed.log = [msg];
      else if (feed.log) { feed.log.push(msg); if (feed.log.length > LOG_MAX) feed.log = false; }
      feed.listeners.forEach((fn) => { try { fn(msg); } catch (err) { console.error("live feed listener", err); } });
      window.__benchFeed = { url, events: feed.events, bytes: feed.bytes, opened: feed.opened, seq: msg.seq };
    };
    source.onerror = () => {
      // a dropped connection reconnects by itself; a refused one (server restarting) is closed: open it again
      if (source.readyState === EventSource.CLOSED && feed.listeners.size) setTimeout(() => {
        if (feed.source === source && feed.listeners.size) open();
      }, REOPEN_MS);
    };
  };
  feed.subscribe = (fn) => {
    if (feed.closer) { clearTimeout(feed.closer); feed.closer = null; }
    feed.listeners.add(fn);
    if (!feed.source || feed.source.readyState === EventSource.CLOSED || feed.log === false) open();
    else if (feed.log) feed.log.forEach((msg) => { try { fn(msg); } catch (err) { console.error("live feed replay", err); } });
    return () => {
      feed.listeners.delete(fn);
      if (!feed.listeners.size) feed.closer = setTimeout(() => {
        if (!feed.listeners.size && feed.source) { feed.source.close(); feed.source = null; feed.log = null; }
      }, 1000);
    };
  };
  feed.reopen = open;
  return feed;
}

function feedFor(data) {
  const url = `${data.stream}?feed=${encodeURIComponent(data.feed || "train")}&variant=${encodeURIComponent(data.variant || "plain")}`;
  if (!feeds.has(url)) feeds.set(url, openFeed(url));
  return feeds.get(url);
}

function watchConnected(node, unsubscribe) {
  // an element Streamlit removed stops listening (checked at each event; no timers per element)
  return (fn) => (msg) => { if (!node.isConnected) { unsubscribe.current && unsubscribe.current(); return; } fn(msg); };
}

// -- the sidebar's line ------------------------------------------------------------------------------------------------
const lines = new WeakMap();

function showLine(root, line) {
  const status = el("p", { class: "bls-line" });
  if (line && line.icon) status.append(el("span", { class: "bls-icon", "aria-hidden": "true" }, line.icon));
  status.append(document.createTextNode(line ? line.text : "No run yet."));
  const parts = [status];
  if (line && line.note) {
    const note = el("p", { class: "bls-note" });
    note.append(el("span", { class: "bls-icon", "aria-hidden": "true" }, "bolt"), document.createTextNode(line.note));
    parts.push(note);
  }
  root.replaceChildren(...parts);
}

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
  if (data.seq >= st.seq) { st.seq = data.seq; showLine(root, data.line); }
}

// -- the Train page's live view: header and charts from the stream ----------------------------------------------------
const views = new WeakMap();
// What a view holds: the Train page's run (one header with tiles; time per epoch, utilization, loss) or Compare's group
// (a status line per run; the two comparison charts). The server names it in the element's data (``layout``).
const RUN_LAYOUT = { headers: "one", charts: ["epochs", "util", "loss"], note: "util", wide: ["loss"] };
// A class's reruns after a state change are spread over up to 10 s (100 ms a viewer). The first waits RERUN_AFTER_MS: the
// page that caused the change (Start, Stop) is mid-rerun when the stream says so, and its redraw ends the wait.
const RERUN_SPREAD_MS_PER_VIEWER = 100;
const RERUN_SPREAD_MAX_MS = 10000;
const RERUN_AFTER_MS = 1500;
// A rerun asked for while the page is still running another (the Stop click's own) can be dropped: that run then ends
// with the page drawing an older state than the stream's, and the element, redrawn, asks again (viewElement). No
// timer: the stream loses no event (ui/live_routes.py), and the page's own redraw says what it drew.

function buildView(root, data) {
  root.replaceChildren();
  const layout = data.layout || RUN_LAYOUT;
  const watching = el("p", { class: "blv-watching", "data-testid": "stCaptionContainer" });
  const header = el("div", { class: "blv-headers" });
  const grid = el("div", { class: "blv-grid" });
  const cells = {};
  for (const name of layout.charts) {
    // a chart's div exists while the chart does (in the layout's order; the loss chart from the first epoch)
    const cell = el("div", { class: `blv-cell blv-${name}${(layout.wide || []).includes(name) ? " blv-wide" : ""}` });
    if (name === layout.note) cell.append(el("div", { class: "blv-note", "data-testid": "stCaptionContainer" }, data.nvml_note || ""));
    cell.style.display = "none";
    grid.append(cell);
    cells[name] = { cell, gd: null, st: null };
  }
  root.append(watching, header, grid);
  return { root, layout, watching, header, headerSts: [], cells, seq: -1, drawnState: data.state, pending: null,
           reruns: 0, unsubscribe: { current: null }, data, queue: Promise.resolve() };
}

function chartDiv(c, name) {
  if (!c.gd) {
    c.gd = el("div", { class: "bench-live-chart", "data-name": name });
    c.cell.prepend(c.gd);
    c.st = { applied: 0, full: 0, extend: 0, thin: 0, resyncs: 0, reasons: [], sig: null, watching: false };
  }
  c.cell.style.display = "";
  return c.gd;
}

function showHeader(view, header) {
  // one header with tiles (a run), or one status line and bar per run (a group: header.runs)
  const parts = !header ? [] : view.layout.headers === "many" ? header.runs || [] : [header];
  while (view.headerSts.length > parts.length) view.headerSts.pop().root.remove();
  while (view.headerSts.length < parts.length) {
    const root = el("div", { class: "bench-live-header" });
    view.header.append(root);
    const st = build(root);
    st.root = root;
    view.headerSts.push(st);
  }
  parts.forEach((part, i) => update(view.headerSts[i], part, view.headerSts[i].root));
  if (view.layout.headers === "many") { // a group's lines under its runs (the headline so far)
    if (!view.groupLines) { view.groupLines = el("div", { class: "blv-lines" }); view.header.after(view.groupLines); }
    const lines = (header && header.lines) || [];
    view.groupLines.replaceChildren(...lines.map((line) => inline(el("p", { class: "blv-line" }), line.text)));
  }
}

function showWatching(view, viewers) {
  const text = view.data.presenter && viewers ? `${viewers} watching` : "";
  view.watching.textContent = text;
  view.watching.style.display = text ? "" : "none";
  view.root.dataset.viewers = String(viewers || 0);
}

async function applyChart(view, name, change, config) {
  const c = view.cells[name];
  if (change === null) { // the chart is gone (no run, or no epoch yet)
    if (c.gd) { if (window.Plotly) window.Plotly.purge(c.gd); c.gd.remove(); c.gd = null; }
    c.cell.style.display = "none";
    return;
  }
  const Plotly = await plotlyReady(view.data.plotly);
  if (!Plotly) { view.feed.reopen(); return; }
  if (change.op === "full") {
    const gd = chartDiv(c, name);
    const st = c.st;
    const layout = { ...change.figure.layout, font: { family: getComputedStyle(gd).fontFamily, ...change.figure.layout.font } };
    if (st.sig === change.sig && gd.data) await Plotly.react(gd, change.figure.data, layout, config);
    else {
      await Plotly.newPlot(gd, change.figure.data, layout, config);
      if (!st.watching) { watchNames(gd); st.watching = true; }
    }
    st.full += 1;
    st.sig = change.sig;
  } else if (change.op === "extend") {
    const gd = c.gd;
    if (!gd || !gd.data) { view.feed.reopen(); return; } // an increment for a chart this page never drew
    const st = c.st;
    const paths = new Set();
    for (const group of change.groups || []) {
      Object.keys(group.update).forEach((p) => paths.add(p));
      appendInPlace(gd, group.update, group.traces);
    }
    if (change.layout) Object.assign(gd.layout, change.layout);
    if (change.append) Object.entries(change.append).forEach(([k, items]) => { gd.layout[k] = [...(gd.layout[k] || []), ...items]; });
    if (thin(gd, [...paths])) st.thin += 1;
    st.extend += 1;
    await Plotly.redraw(gd);
  }
  if (c.gd) { c.st.applied = view.seq; publish(c.gd, c.st, `live_${name}`); }
}

function askRerun(view, state, viewers) {
  // The page's Streamlit elements (Stop, the ended run's header) follow the run's state: ask for this fragment's rerun
  // once per new state (again when the page draws an older one: viewElement), after a random delay that grows
  // with the class, so a hundred pages do not rerun at once.
  if (state.key === view.drawnState) { if (view.pending) { clearTimeout(view.pending.timer); view.pending = null; } return; }
  if (view.pending && view.pending.key === state.key) return;
  if (view.pending) clearTimeout(view.pending.timer);
  const spread = Math.min(RERUN_SPREAD_MAX_MS, RERUN_SPREAD_MS_PER_VIEWER * Math.max(1, viewers || 1));
  requestRerun(view, state.key, RERUN_AFTER_MS + Math.random() * spread);
}

function requestRerun(view, key, delay) {
  // once ``delay`` has passed, ask for the rerun unless the page drew ``key`` meanwhile (viewElement then clears
  // ``pending``)
  const timer = setTimeout(() => {
    view.pending = null;
    if (view.drawnState === key || !view.root.isConnected) return;
    view.reruns += 1;
    view.root.dataset.reruns = String(view.reruns);
    view.setTriggerValue("changed", { state: key, at: Date.now() });
  }, delay);
  view.pending = { key, timer };
}

function onFeed(view, msg) {
  if (msg.kind === "snapshot") view.seq = msg.seq;
  else if (msg.seq <= view.seq) return;
  view.seq = msg.seq;
  view.root.dataset.seq = String(msg.seq);
  if (msg.state) view.streamState = msg.state.key;
  if ("header" in msg) {
    if (msg.header === null && view.headerSts.length && view.data.ended_slot) holdHeader(view);
    else { unhold(view); showHeader(view, msg.header); }
  }
  if ("viewers" in msg) { view.viewers = msg.viewers; showWatching(view, msg.viewers); }
  if (msg.state) askRerun(view, msg.state, view.viewers);
  if (msg.config) view.config = msg.config;
  const changes = msg.charts || {};
  if (msg.kind === "snapshot") for (const name of view.layout.charts) if (!(name in changes)) changes[name] = null;
  const config = view.config || { displaylogo: false, responsive: true };
  for (const [name, change] of Object.entries(changes)) {
    if (!view.cells[name]) continue;
    // one queue for the view: a chart's changes apply in the stream's order, whatever each draw's duration
    view.queue = view.queue.then(() => applyChart(view, name, change, config))
      .catch((err) => console.error("live view chart", err));
  }
}

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
  else if (view.streamState && view.streamState !== data.state && view.seq > data.seq && !view.pending) {
    // the page drew an older state than the stream has sent: its rerun request was dropped; ask again
    requestRerun(view, view.streamState, RERUN_AFTER_MS);
  }
  if (data.seq > view.seq && "header" in data) { // drawn before the stream caught up
    if (data.header === null && view.headerSts.length && data.ended_slot) { view.streamState = data.state; holdHeader(view); }
    else { unhold(view); showHeader(view, data.header); }
  }
  showWatching(view, view.viewers);
  root.dataset.drawnState = data.state;
  releaseHeader(view);
}

// A run that ends leaves its live header where it is until the page has drawn the ended run's header (Streamlit's
// elements, in the container named by ``ended_slot``) whole: while the page has not rerun, and while an element of it
// still waits for its code (Streamlit draws a grey box, stSkeleton, meanwhile; on a busy machine for seconds), that
// container is hidden (ui/assets/live_view.css, on data-holding) and the live header stays. Both change in one task:
// the page never shows the two headers, nor none, nor grey boxes.
const HOLD_MAX_MS = 60000;

function holdHeader(view) {
  if (!view.holding) {
    view.holding = { since: Date.now(), observer: null };
    view.root.dataset.holding = "1";
  }
  view.holding.key = view.streamState;
  releaseHeader(view);
}

function unhold(view) {
  if (!view.holding) return;
  if (view.holding.observer) view.holding.observer.disconnect();
  view.holding = null;
  delete view.root.dataset.holding;
}

function releaseHeader(view) {
  const hold = view.holding;
  if (!hold || view.drawnState !== hold.key) return; // the page has not drawn the ended run yet
  const slot = document.querySelector(`.st-key-${view.data.ended_slot}`);
  const ready = !slot || (!slot.querySelector('[data-testid="stSkeleton"]') && slot.textContent.trim() !== "");
  if (ready || Date.now() - hold.since > HOLD_MAX_MS || !view.root.isConnected) {
    unhold(view);
    showHeader(view, null);
    return;
  }
  if (!hold.observer) {
    hold.observer = new MutationObserver(() => releaseHeader(view));
    hold.observer.observe(slot.parentElement || slot, { childList: true, subtree: true, characterData: true });
    setTimeout(() => releaseHeader(view), HOLD_MAX_MS + 100);
  }
}
