// The live chart's browser side (ui/live_chart.py): Plotly.newPlot once, then appends and layout changes with what the
// server says is new, keeping the viewer's zoom; the oldest points are thinned here once a trace grows long.
// Counters for tests and measurement: the chart div's data-full-renders, data-extends, data-points attributes and
// window.__benchLiveCharts[name].

const MAX_POINTS = 3000; // per trace kept in the browser; beyond it the older two thirds are halved
const PLOTLY_WAIT_MS = 20000;
const charts = new WeakMap(); // parentElement -> this chart's state; the module lives as long as the page

function plotlyReady(code) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__benchPlotly) {
    let resolve;
    const promise = new Promise((r) => { resolve = r; });
    window.__benchPlotly = { promise, resolve, loading: false };
  }
  const shared = window.__benchPlotly;
  if (!code && !shared.loading) {
    // another chart's message may carry the code in this very update; if none starts loading it, ask for it
    return new Promise((r) => setTimeout(() => r(shared.loading ? plotlyReady() : window.Plotly || null), 1500));
  }
  if (code && !shared.loading) {
    shared.loading = true;
    const script = document.createElement("script");
    script.src = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
    script.onload = () => shared.resolve(window.Plotly);
    script.onerror = () => { shared.loading = false; };
    document.head.appendChild(script);
  }
  return Promise.race([shared.promise, new Promise((r) => setTimeout(() => r(null), PLOTLY_WAIT_MS))]);
}

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

function appendFrom(gd, figure) {
  // Extend each trace with the points of ``figure``'s same trace past the last x drawn (x grows along a live trace).
  figure.data.forEach((trace, i) => {
    const held = gd.data[i];
    if (!held || !Array.isArray(trace.x) || !Array.isArray(held.x)) return;
    const last = held.x.length ? held.x[held.x.length - 1] : null;
    const start = last === null ? 0 : trace.x.findIndex((x) => x !== null && x > last);
    if (start < 0) return;
    const update = {};
    const walk = (obj, prefix) => Object.entries(obj).forEach(([k, v]) => {
      if (Array.isArray(v) && v.length === trace.x.length) update[prefix + k] = [v.slice(start)];
      else if (v && typeof v === "object" && !Array.isArray(v)) walk(v, `${prefix}${k}.`);
    });
    walk(trace, "");
    window.Plotly.extendTraces(gd, update, [i]);
  });
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

function thinNames(gd) {
  // The names' visibility for the width drawn now, set with one relayout when it changed. The draw that relayout
  // causes is not looked at again (a hidden name's size is an estimate, so a second look could flip it back).
  if (gd.__benchThinning) return;
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
  Promise.resolve(window.Plotly.relayout(gd, update)).finally(() => { gd.__benchThinning = false; });
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

async function apply(st, component) {
  const { data, parentElement, setStateValue } = component;
  const gd = parentElement.querySelector(".bench-live-chart");
  if (!gd) return;
  const resync = (plotly) => {
    if (st.resyncFor === data.seq) return; // asked once per message; the server answers with the whole figure
    st.resyncFor = data.seq;
    st.resyncs += 1;
    const why = `got ${data.op} ${data.seq} (base ${data.base}), holds ${st.applied}, plotly ${!!window.Plotly}`;
    st.reasons = [...st.reasons, why].slice(-5);
    gd.dataset.resyncs = st.reasons.join("; ");
    console.info(`live chart ${data.name}: asks for the whole figure: ${why}`);
    setStateValue("resync", { seq: data.seq, plotly, at: Date.now() });
  };
  if (data.op === "full") {
    if (data.seq <= st.applied) return;
    const Plotly = await plotlyReady(data.plotly);
    if (!Plotly) { resync(true); return; }
    if (st.full && data.sig === st.sig) {
      // the same chart, sent whole again before the server knew this browser had it: append what is new here
      appendFrom(gd, data.figure);
      await Plotly.relayout(gd, { shapes: data.figure.layout.shapes || [], title: data.figure.layout.title });
      st.extend += 1;
    } else {
      // the page's own font, as st.plotly_chart's theme gives the finished run's charts
      const layout = { ...data.figure.layout, font: { family: getComputedStyle(gd).fontFamily, ...data.figure.layout.font } };
      await Plotly.newPlot(gd, data.figure.data, layout, data.config);
      watchNames(gd);
      st.full += 1;
      st.sig = data.sig;
    }
    st.applied = data.seq;
    setStateValue("ack", { seq: data.seq, plotly: true });
  } else if (data.op === "extend") {
    const deltas = data.deltas.filter((d) => d.seq > st.applied);
    const gap = deltas.length ? deltas[0].prev !== st.applied : data.seq !== st.applied;
    if (gap || !window.Plotly || !gd.data) { resync(!window.Plotly); return; }
    // Every delta of this message goes into the figure's own data and layout first, then one redraw draws it all:
    // Plotly.extendTraces and relayout each redraw the whole figure, and a message often holds several groups, a
    // layout change (an epoch mark) and a thinning.
    for (const delta of deltas) {
      const paths = new Set();
      for (const group of delta.groups) {
        Object.keys(group.update).forEach((p) => paths.add(p));
        appendInPlace(gd, group.update, group.traces);
      }
      if (delta.layout) Object.assign(gd.layout, delta.layout);
      if (thin(gd, [...paths])) st.thin += 1;
      st.extend += 1;
      st.applied = delta.seq;
    }
    if (deltas.length) await window.Plotly.redraw(gd);
  }
  publish(gd, st, data.name);
}

export default function (component) {
  const { data, parentElement } = component;
  if (!data || !parentElement) return;
  let st = charts.get(parentElement);
  if (!st) {
    st = { applied: -1, full: 0, extend: 0, thin: 0, resyncs: 0, reasons: [], resyncFor: null, queue: Promise.resolve() };
    charts.set(parentElement, st);
  }
  st.queue = st.queue.then(() => apply(st, component)).catch((err) => console.error("live chart", err));
}
