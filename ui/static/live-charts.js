// The live view's charts, drawn with Plotly's public API only: Plotly.newPlot / react for a figure whole,
// Plotly.extendTraces (with a cap of MAX_POINTS a trace) for new points, Plotly.relayout for new marks and names,
// Plotly.purge for a chart gone. What to do with each message is live-plan.js's (pure, tested in node).
import { MAX_POINTS, grownLayout, visibleNames } from "./live-plan.js";

// -- plotly.js: one <script> per page, from the static address (the browser keeps it) -------------------------------
const PLOTLY_WAIT_MS = 60000;
let plotlyPromise = null;

export function plotlyReady(url) {
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
  return Promise.race([plotlyPromise, new Promise((r) => { setTimeout(() => r(null), PLOTLY_WAIT_MS); })]);
}

// -- the names (epochs, phases) thinned to the width drawn ----------------------------------------------------------
let measureCtx = null;

function textWidth(family, ann) {
  const size = (ann.font && ann.font.size) || 12;
  measureCtx = measureCtx || document.createElement("canvas").getContext("2d");
  measureCtx.font = `${size}px ${family}`;
  return measureCtx.measureText(String(ann.text).replace(/<[^>]*>/g, "")).width + 4;
}

function thinNames(gd) {
  // names are the annotations in a row (yshift); their visibility set with one relayout when it changed
  const anns = (gd.layout && gd.layout.annotations) || [];
  const range = gd.layout && gd.layout.xaxis && gd.layout.xaxis.range;
  if (!anns.length || !Array.isArray(range)) return null;
  const margin = gd.layout.margin || {};
  const plotPx = gd.clientWidth - (margin.l ?? 80) - (margin.r ?? 80);
  const rows = anns.map((ann, i) => ({ i, ann })).filter(({ ann }) => ann.yshift !== undefined && ann.xref === "x");
  const family = getComputedStyle(gd).fontFamily || "sans-serif"; // once a thinning: asking forces a style pass
  const shown = visibleNames(rows.map(({ ann }) => ({ x: Number(ann.x), row: ann.yshift, width: textWidth(family, ann) })),
    range.map(Number), plotPx);
  const update = {};
  rows.forEach(({ i, ann }, k) => {
    if ((ann.visible !== false) !== shown[k]) update[`annotations[${i}].visible`] = shown[k];
  });
  gd.dataset.names = String(rows.length);
  gd.dataset.namesShown = String(shown.filter(Boolean).length);
  if (Object.keys(update).length) return window.Plotly.relayout(gd, update);
  return null;
}

function watchNames(gd) {
  // after a resize or a zoom (Plotly's own events); draws the view makes thin after themselves
  gd.on("plotly_relayout", (e) => { if (!e || !Object.keys(e).some((k) => k.startsWith("annotations["))) thinNames(gd); });
}

// -- carrying out one operation of live-plan.planCharts --------------------------------------------------------------
function count(gd, c, key) {
  c.counts[key] = (c.counts[key] || 0) + 1;
  const points = (gd.data || []).reduce((sum, t) => sum + ((t.x || []).length), 0);
  gd.dataset.fullRenders = String(c.counts.full || 0);
  gd.dataset.extends = String(c.counts.extend || 0);
  gd.dataset.points = String(points);
  window.__benchLiveCharts = window.__benchLiveCharts || {};
  window.__benchLiveCharts[`live_${c.name}`] = { full: c.counts.full || 0, extend: c.counts.extend || 0, points };
}

export async function applyOp(Plotly, cell, op, config) {
  if (op.op === "purge") {
    if (cell.gd) { Plotly.purge(cell.gd); cell.gd.remove(); cell.gd = null; }
    cell.cell.style.display = "none";
    return;
  }
  if (op.op === "newPlot" || op.op === "react") {
    if (!cell.gd) {
      cell.gd = document.createElement("div");
      cell.gd.className = "bench-live-chart";
      cell.gd.dataset.name = cell.name;
      cell.cell.prepend(cell.gd);
    }
    cell.cell.style.display = "";
    const gd = cell.gd;
    const layout = { ...op.figure.layout, font: { family: getComputedStyle(gd).fontFamily, ...op.figure.layout.font } };
    if (op.op === "react" && gd.data) await Plotly.react(gd, op.figure.data, layout, config);
    else {
      await Plotly.newPlot(gd, op.figure.data, layout, config);
      watchNames(gd);
    }
    count(gd, cell, "full");
  } else if (op.op === "extend") {
    const gd = cell.gd;
    const grown = grownLayout(gd.layout, op.append, op.layout);
    for (const group of op.groups) await Plotly.extendTraces(gd, group.update, group.traces, MAX_POINTS);
    if (Object.keys(grown).length) await Plotly.relayout(gd, grown);
    count(gd, cell, "extend");
  }
  await thinNames(cell.gd);
}
