// What the live view does with each message of the stream, as plain data: no DOM, no Plotly (node:test runs it:
// tests/js/). live-charts.js carries the plans out with Plotly's public API; live-view.js draws the header.
// The messages' types: ui/live_messages.py (docs/schemas/live-tick.schema.json, live-snapshot.schema.json).

export const MAX_POINTS = 3000; // per trace kept in the browser (Plotly.extendTraces' maxPoints)
export const NAME_GAP_PX = 6; // the least space between two chart names in a row

// Whether a message is news to a view that has applied up to ``seq``: a snapshot always is (it restarts the view),
// a tick once, in order.
export function isNew(msg, seq) {
  return msg.kind === "snapshot" || msg.seq > seq;
}

// The chart operations one message asks for, in order, for a view that shows ``names`` and holds ``held`` (chart
// name -> the signature of the figure it drew, or absent): each {name, op, ...}:
//   {op: "purge"}: the chart is gone;
//   {op: "newPlot", figure, sig}: draw it whole (another run, other traces);
//   {op: "react", figure, sig}: redraw it whole in place (the same traces; the viewer's zoom kept);
//   {op: "extend", traces, update, append, layout}: its new points (Plotly.extendTraces) and marks;
//   {op: "resync"}: an increment for a chart this view never drew: take a snapshot again.
export function planCharts(msg, names, held) {
  const changes = { ...(msg.charts || {}) };
  if (msg.kind === "snapshot") for (const name of names) if (!(name in changes)) changes[name] = null;
  const ops = [];
  for (const name of names) {
    if (!(name in changes)) continue;
    const change = changes[name];
    if (change === null) {
      if (held[name] !== undefined) ops.push({ name, op: "purge" });
    } else if (change.op === "full") {
      ops.push({ name, op: held[name] === change.sig ? "react" : "newPlot", figure: change.figure, sig: change.sig });
    } else if (change.op === "extend") {
      if (held[name] === undefined) { ops.push({ name, op: "resync" }); continue; }
      ops.push({ name, op: "extend", groups: change.groups || [], append: change.append || null,
                 layout: change.layout || null });
    }
  }
  return ops;
}

// A chart's draws still to make, with one more planned after them: the same end state in as few draws as make it,
// so that a page drawing slower than the stream speaks (a long run, a busy machine) catches up instead of falling
// further behind. A chart drawn whole, purged or asked again makes every draw before it moot (a new plot stays a new
// plot: the figure it replaces was never drawn); an increment after an increment is one increment.
export function queueOp(pending, op) {
  if (op.op !== "extend") {
    return [op.op === "react" && pending.length && pending[0].op === "newPlot" ? { ...op, op: "newPlot" } : op];
  }
  const last = pending[pending.length - 1];
  if (!last || last.op !== "extend") return [...pending, op];
  return [...pending.slice(0, -1), mergeExtends(last, op)];
}

function sameSeries(a, b) {
  // two groups extend the same traces with the same keys: their values can be joined, trace by trace
  const keys = Object.keys(a.update);
  return a.traces.length === b.traces.length && a.traces.every((t, i) => t === b.traces[i])
    && keys.length === Object.keys(b.update).length && keys.every((k) => k in b.update);
}

// Two increments of one chart, ``a`` then ``b``, as one: each trace's new points joined, the growing lists joined, the
// replaced layout keys the later's.
export function mergeExtends(a, b) {
  const groups = a.groups.map((g) => ({ traces: g.traces, update: { ...g.update } }));
  for (const g of b.groups) {
    const same = groups.find((h) => sameSeries(h, g));
    if (!same) { groups.push(g); continue; }
    for (const [key, perTrace] of Object.entries(g.update)) {
      same.update[key] = same.update[key].map((values, j) => [...values, ...perTrace[j]]);
    }
  }
  const append = { ...(a.append || {}) };
  for (const [key, items] of Object.entries(b.append || {})) append[key] = [...(append[key] || []), ...items];
  const layout = { ...(a.layout || {}), ...(b.layout || {}) };
  return { ...a, groups, append: Object.keys(append).length ? append : null,
           layout: Object.keys(layout).length ? layout : null };
}

// The layout's lists grown by an increment: the figure's ``layout`` with each of ``append``'s lists added to its
// own (a new list each: Plotly.relayout gets them whole), and ``replace``'s keys.
export function grownLayout(layout, append, replace) {
  const out = {};
  for (const [key, items] of Object.entries(append || {})) out[key] = [...((layout && layout[key]) || []), ...items];
  return Object.assign(out, replace || {});
}

// Which chart names to show at the width drawn, so that no two in a row touch: ``names`` are {x, row, width} (x in
// data units, width in px), ``range`` the x axis' range drawn, ``plotPx`` the plot's width. Left to right in each row,
// a name whose box would touch one kept before is hidden, as Plotly thins its tick labels.
export function visibleNames(names, range, plotPx, gap = NAME_GAP_PX) {
  const [x0, x1] = range;
  const scale = x1 > x0 ? plotPx / (x1 - x0) : 0;
  const order = names.map((n, i) => ({ i, row: n.row, left: (n.x - x0) * scale - n.width / 2, width: n.width }))
    .sort((a, b) => a.left - b.left);
  const shown = names.map(() => false);
  const lastRight = new Map();
  for (const b of order) {
    const right = lastRight.get(b.row);
    if (right === undefined || b.left >= right + gap) {
      shown[b.i] = true;
      lastRight.set(b.row, b.left + b.width);
    }
  }
  return shown;
}

// A class's reruns after a state change are spread over up to 10 s (100 ms a viewer), the first RERUN_AFTER_MS
// after the change: the page that caused it (Start, Stop) is mid-rerun when the stream says so.
export const RERUN_AFTER_MS = 1500;
export const RERUN_SPREAD_MS_PER_VIEWER = 100;
export const RERUN_SPREAD_MAX_MS = 10000;

export function rerunDelay(viewers, random) {
  const spread = Math.min(RERUN_SPREAD_MAX_MS, RERUN_SPREAD_MS_PER_VIEWER * Math.max(1, viewers || 1));
  return RERUN_AFTER_MS + random * spread;
}
