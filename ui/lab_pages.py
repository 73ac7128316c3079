"""The lab's two static pages, served beside Streamlit's routes (ui/lab_routes.py), no Streamlit session each:

- ``/lab``, the student's (phone-sized): a name, a choice within the assignment, Submit; then the run's place in
  the queue, the run under way, and where it landed among the class's runs.
- ``/lab/board``, the board (the projector's, and the Lab page's frame): the shared chart (drawn from the server's
  figure, ui.lab_routes' ``/lab/api/figure``), the runs under way, the queue and the results table.

Both redraw from ``GET /lab/api/board?after=N``, which answers when the board changes (no timer per page). Outside
text (names, messages) is set as text (``textContent``), never as markup, each name in its own ``<bdi>`` so a
right-to-left name cannot reorder what follows it."""

from __future__ import annotations

import gzip
import hashlib
import json
from functools import cache

from ui import static_files
from ui.static_files import StaticFile, base_path

CSS = """
:root { color-scheme: light; }
body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2330;
  background: #fff; line-height: 1.45; }
header { display: flex; justify-content: space-between; align-items: baseline; gap: 1rem; flex-wrap: wrap;
  padding: 0.6rem 1rem; border-bottom: 1px solid #e6e8ee; }
header h1 { font-size: 1.2rem; margin: 0; }
main { padding: 0.8rem 1rem; max-width: 1800px; margin: 0 auto; }
.student main { max-width: 480px; }
label { display: block; margin: 0.5rem 0 0.15rem; font-weight: 600; }
input, select, button { font: inherit; padding: 0.45rem; width: 100%; box-sizing: border-box; }
button { margin-top: 0.8rem; background: #1f4fd1; color: #fff; border: 0; border-radius: 6px; font-weight: 600; }
button[disabled] { opacity: 0.5; }
.error { color: #b42318; }
.note { color: #5c6370; font-size: 0.92rem; }
.card { border: 1px solid #e6e8ee; border-radius: 8px; padding: 0.6rem 0.8rem; margin: 0.6rem 0; }
.mine .status { font-weight: 700; }
table { border-collapse: collapse; width: 100%; font-size: 0.95rem; }
th, td { text-align: left; padding: 0.3rem 0.5rem; border-bottom: 1px solid #eef0f4; }
.cols { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
@media (max-width: 900px) { .cols { grid-template-columns: 1fr; } }
#chart { min-height: 460px; }
"""

COMMON_JS = r"""
const DATA = JSON.parse(document.getElementById("lab-data").textContent);
const api = (path) => DATA.base + "/lab/api/" + path;
const el = (tag, props = {}, ...kids) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) { if (k === "text") node.textContent = v; else node.setAttribute(k, v); }
  for (const kid of kids) node.append(kid);
  return node;
};
const name = (text) => el("bdi", { text });  // a name from outside, isolated: it reorders nothing around it
const fmt = (n, digits = 0) => n == null ? "—" : Number(n).toLocaleString("en", { maximumFractionDigits: digits });
async function follow(draw) {
  let version = -1;
  for (;;) {
    try {
      const r = await fetch(api("board?after=" + version), { cache: "no-store" });
      if (!r.ok) throw new Error(r.status);
      const board = await r.json();
      if (board.version !== version) { version = board.version; await draw(board); }
    } catch (e) { await new Promise((ok) => setTimeout(ok, 2000)); }  // the server restarting: look again
  }
}
"""

STUDENT_JS = r"""
const saved = JSON.parse(localStorage.getItem("bench-lab") || "{}");
const form = document.getElementById("form"), out = document.getElementById("mine");
const nameInput = document.getElementById("student");
nameInput.value = saved.student || "";
let lab = null, mine = saved.lab ? (saved.tickets || []) : [];
function options(select, values, keep) {
  const now = select.value || keep;
  select.replaceChildren(...values.map((v) => el("option", { value: String(v), text: String(v) })));
  if (values.map(String).includes(String(now))) select.value = String(now);
}
function batchSizes(a) {
  const out = [];
  for (let b = 1; b <= a.batch_max; b *= 2) if (b >= a.batch_min) out.push(b);
  if (!out.includes(a.batch_min)) out.unshift(a.batch_min);
  if (!out.includes(a.batch_max)) out.push(a.batch_max);
  return out;
}
function drawForm(board) {
  const a = board.assignment, open = board.state === "open";
  document.getElementById("state").textContent = open ? (a.title + ": pick your run") :
    board.state === "closed" ? "The lab is closed." : "Waiting for the teacher to open the lab…";
  form.hidden = !open;
  if (!a) return;
  options(form.family, a.families); options(form.size, a.sizes);
  options(form.batch_size, batchSizes(a), 64);
  const epochs = []; for (let e = a.epochs_min; e <= a.epochs_max; e++) epochs.push(e);
  options(form.epochs, epochs); options(form.target, a.targets);
}
function drawMine(board) {
  const rows = board.rows.filter((r) => mine.includes(r.ticket));
  const measured = board.rows.filter((r) => r.status === "finished" && r.samples_per_s)
    .sort((x, y) => y.samples_per_s - x.samples_per_s);
  out.replaceChildren(...rows.map((r) => {
    let what;
    if (r.status === "queued") what = r.position === 0 ? "next in the queue" : `#${r.position + 1} in the queue (${r.position} before it)`;
    else if (r.status === "starting" || r.status === "running") what = `training: epoch ${Math.min(r.epochs_done + 1, r.epochs)} of ${r.epochs}`;
    else if (r.status === "finished") {
      const rank = measured.findIndex((m) => m.ticket === r.ticket) + 1;
      what = `finished: ${fmt(r.samples_per_s)} samples/s` + (rank ? `, #${rank} of ${measured.length} in the class` : "");
    } else what = r.status + (r.message ? ": " + r.message : "");
    const card = el("div", { class: "card mine", "data-status": r.status },
      el("div", { class: "status", text: what }),
      el("div", { class: "note", text: `${r.family} ${r.size} · batch ${r.batch_size} · ${r.epochs} epoch(s) · ${r.target}` +
        (r.params ? ` · ${fmt(r.params)} parameters` : "") }));
    if (r.status === "running") card.append(el("a", { href: DATA.base + "/watch", text: "Watch it live" }));
    return card;
  }));
}
form.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const error = document.getElementById("error"); error.textContent = "";
  const body = { student: nameInput.value, family: form.family.value, size: form.size.value,
    batch_size: Number(form.batch_size.value), epochs: Number(form.epochs.value), target: form.target.value,
    token: saved.student === nameInput.value && saved.lab === lab ? saved.token : null };
  form.submit_button.disabled = true;
  try {
    const r = await fetch(api("submit"), { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const answer = await r.json();
    if (!r.ok) { error.textContent = answer.error; return; }
    if (saved.lab !== lab) mine = [];
    mine.push(answer.ticket);
    Object.assign(saved, { student: nameInput.value, token: answer.token, lab, tickets: mine });
    localStorage.setItem("bench-lab", JSON.stringify(saved));
    document.getElementById("you").replaceChildren("You are ", name(answer.student));
  } finally { form.submit_button.disabled = false; }
});
follow(async (board) => {
  if (board.lab !== lab) { lab = board.lab; if (saved.lab !== lab) mine = []; }
  drawForm(board); drawMine(board);
});
"""

BOARD_JS = r"""
let plotted = null;
function table(rows, columns) {
  return el("table", {}, el("thead", {}, el("tr", {}, ...columns.map(([h]) => el("th", { text: h })))),
    el("tbody", {}, ...rows.map((r) => el("tr", { "data-status": r.status },
      ...columns.map(([, f]) => { const v = f(r); return el("td", {}, typeof v === "string" ? v : v); })))));
}
const who = ["Student", (r) => name(r.student)];
const what = ["Run", (r) => `${r.family} ${r.size} · batch ${r.batch_size} · ${r.epochs} ep · ${r.target}`];
async function drawChart(board) {
  const ended = board.rows.filter((r) => r.samples_per_s).map((r) => r.run_id).join(",");
  if (ended === plotted) return;
  plotted = ended;
  const r = await fetch(api("figure"), { cache: "no-store" });
  const fig = await r.json();
  await Plotly.react("chart", fig.data, fig.layout, { displayModeBar: false, responsive: true });
  document.getElementById("chart").dataset.points = String(board.rows.filter((x) => x.samples_per_s && x.params).length);
}
follow(async (board) => {
  document.getElementById("state").textContent = board.assignment ?
    `${board.assignment.title} · ${board.state} · ${board.students} student(s) · ${board.rows.length} run(s)` :
    "No lab is open.";
  const live = board.rows.filter((r) => r.status === "running" || r.status === "starting");
  const queued = board.rows.filter((r) => r.status === "queued");
  const ended = board.rows.filter((r) => !["running", "starting", "queued"].includes(r.status));
  document.getElementById("live").replaceChildren(live.length ? table(live, [who, what,
    ["Progress", (r) => `epoch ${Math.min(r.epochs_done + 1, r.epochs)} of ${r.epochs}`], ["Node", (r) => r.node || "—"]]) :
    el("p", { class: "note", text: "Nothing is training." }));
  document.getElementById("queue").replaceChildren(queued.length ? table(queued, [["#", (r) => String(r.position + 1)], who, what]) :
    el("p", { class: "note", text: "The queue is empty." }));
  document.getElementById("results").replaceChildren(table(ended, [who, what, ["Status", (r) => r.status],
    ["Parameters", (r) => fmt(r.params)], ["Samples/s", (r) => fmt(r.samples_per_s)],
    ["CPU %", (r) => fmt(r.cpu_percent)], ["GPU %", (r) => fmt(r.gpu_percent)], ["Node", (r) => r.node || "—"]]));
  await drawChart(board);
});
"""

STUDENT_BODY = """<header><h1>Lab</h1><span id="you"></span></header>
<main><p id="state">Loading…</p>
<form id="form" hidden autocomplete="off">
<label for="student">Your name</label><input id="student" name="student" maxlength="40" dir="auto" required>
<label for="family">Model</label><select id="family" name="family"></select>
<label for="size">Size</label><select id="size" name="size"></select>
<label for="batch_size">Batch size</label><select id="batch_size" name="batch_size"></select>
<label for="epochs">Epochs</label><select id="epochs" name="epochs"></select>
<label for="target">Device</label><select id="target" name="target"></select>
<button id="submit_button" name="submit_button" type="submit">Train it</button>
<p id="error" class="error" role="alert"></p></form>
<section id="mine" aria-live="polite"></section>
<p class="note"><a href="{base}/lab/board">The class's board</a></p></main>"""

BOARD_BODY = """<header><h1>Lab board</h1><span id="state">Loading…</span></header>
<main><div id="chart"></div>
<div class="cols"><section><h2>Training now</h2><div id="live"></div></section>
<section><h2>Queue</h2><div id="queue"></div></section></div>
<section><h2>Results</h2><div id="results"></div></section></main>"""


@cache
def page(which: str) -> StaticFile:
    """The student's page (``student``) or the board (``board``), built and compressed once per process."""
    base = base_path()
    data = json.dumps({"base": base}).replace("</", "<\\/")
    if which == "board":
        body, script = BOARD_BODY, BOARD_JS
        head = f'<script src="{static_files.static_url("plotly-basic.min.js")}"></script>'
        title, kind = "Lab board", "board"
    else:
        body, script, head, title, kind = STUDENT_BODY.replace("{base}", base), STUDENT_JS, "", "Lab", "student"
    text = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · CPU vs GPU training bench</title><style>{CSS}</style>{head}</head>
<body class="{kind}">{body}
<script type="application/json" id="lab-data">{data}</script>
<script>{COMMON_JS}{script}</script></body></html>
"""
    raw = text.encode("utf-8")
    return StaticFile(raw, gzip.compress(raw, 9), hashlib.blake2b(raw, digest_size=8).hexdigest(),
                      "text/html; charset=utf-8")
