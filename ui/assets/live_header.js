// The live run's header (ui/live_header.py): built once per page, then every refresh changes only the text that
// differs. Counters for tests and measurement on the root element: data-builds (1 for a page that kept its header),
// data-updates (refreshes applied), data-changes (text nodes changed).

const headers = new WeakMap(); // parentElement -> this header's state

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

export default function (component) {
  const { data, parentElement } = component;
  if (!data || !parentElement) return;
  const root = parentElement.querySelector(".bench-live-header");
  if (!root) return;
  let st = headers.get(parentElement);
  if (!st || st.root !== root) {
    st = build(root);
    st.root = root;
    headers.set(parentElement, st);
  }
  if (st.last === data) return; // the same message again
  st.last = data;
  update(st, data, root);
}
