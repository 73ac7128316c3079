// The live header (a run's status line, progress bar, four tiles and the lines under them) and the sidebar's line,
// drawn from the stream's words (ui.live.header_data, sidebar_line) in every state of a run: waiting, live, ended,
// failed. Built once, then only the text that differs changes. Its own classes only (ui/assets/live_header.css).

export function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  Object.entries(attrs).forEach(([k, v]) => node.setAttribute(k, v));
  if (text !== null) node.textContent = text;
  return node;
}

export function inline(node, text) {
  // The lines' own markdown: **bold** and `code` (a name, isolated: dir="auto"); everything else stays text.
  const parts = String(text).split(/(\*\*[^*]+\*\*|`[^`]+`)/);
  node.replaceChildren(...parts.filter((p) => p).map((p) => {
    if (p.startsWith("**") && p.endsWith("**") && p.length > 4) return el("strong", {}, p.slice(2, -2));
    if (p.startsWith("`") && p.endsWith("`") && p.length > 2) return el("code", { dir: "auto" }, p.slice(1, -1));
    return document.createTextNode(p);
  }));
  return node;
}

export function buildHeader(root) {
  root.replaceChildren();
  const status = el("p", { class: "blh-status" });
  const progress = el("div", { class: "blh-progress" });
  const progressText = el("p", { class: "blh-progress-text" });
  const track = el("div", { class: "blh-track", role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100" });
  const fill = el("div", { class: "blh-fill" });
  track.append(fill);
  progress.append(progressText, track);
  const tiles = el("div", { class: "blh-tiles" });
  const lines = el("div", { class: "blh-lines" });
  root.append(status, progress, tiles, lines);
  return { root, status, progressText, track, fill, tiles, tileNodes: [], lines, sigs: {}, builds: 1, updates: 0, changes: 0 };
}

function setText(st, node, text) {
  if (node.textContent !== text) { node.textContent = text; st.changes += 1; }
}

function tileNode() {
  const tile = el("div", { class: "blh-tile" });
  const label = el("p", { class: "blh-label" });
  const name = el("span");
  const help = el("span", { class: "blh-help" }, "help");
  label.append(name, help);
  const value = el("div", { class: "blh-value" });
  const note = el("div", { class: "blh-note" });
  tile.append(label, value, note);
  return { tile, name, help, value, note };
}

export function updateHeader(st, data) {
  const statusSig = JSON.stringify(data.status);
  if (st.sigs.status !== statusSig) {
    st.sigs.status = statusSig;
    const parts = [];
    if (data.status.icon) parts.push(el("span", { class: "blh-icon", "aria-hidden": "true" }, data.status.icon));
    // each part its own <bdi>: a name in one (a data set's, a device's, an owner's) reorders no other part
    for (const [text, bold] of data.status.parts) {
      const part = el("bdi", {}, text);
      if (bold) { const strong = el("strong"); strong.append(part); parts.push(strong); } else parts.push(part);
    }
    st.status.replaceChildren(...parts);
    st.changes += 1;
  }
  setText(st, st.progressText, data.progress.text);
  const width = `${Math.round(Math.max(0, Math.min(1, data.progress.fraction)) * 1000) / 10}%`;
  if (st.fill.style.width !== width) { st.fill.style.width = width; st.track.setAttribute("aria-valuenow", width.slice(0, -1)); }
  if (data.primary && st.fill.style.background !== data.primary) st.fill.style.background = data.primary;
  while (st.tileNodes.length > data.tiles.length) st.tileNodes.pop().tile.remove();
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
      ? { class: "blh-warning", role: "alert" } : { class: "blh-caption" }), line.text)));
    st.changes += 1;
  }
  st.updates += 1;
  st.root.dataset.builds = String(st.builds);
  st.root.dataset.updates = String(st.updates);
  st.root.dataset.changes = String(st.changes);
  st.root.dataset.run = String(data.run);
  st.root.dataset.status = data.status.parts.length > 1 ? String(data.status.parts[1][0]) : "";
}

// The sidebar's line ("Run #3: running · epoch 2/10", "No run yet.") and the note under it.
export function showLine(root, line) {
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
