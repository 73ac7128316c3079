// ui/static/live-plan.js: what the live view does with each message of the stream (run by `node --test tests/js/`,
// and by pytest through tests/unit/test_live_js.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { grownLayout, isNew, planCharts, queueOp, rerunDelay, visibleNames, RERUN_AFTER_MS, RERUN_SPREAD_MAX_MS }
  from "../../ui/static/live-plan.js";

const NAMES = ["epochs", "util", "loss"];
const fig = { data: [{ x: [1], y: [2] }], layout: {} };

test("a snapshot restarts the view; a tick applies once, in order", () => {
  assert.equal(isNew({ kind: "snapshot", seq: 3 }, 10), true);
  assert.equal(isNew({ kind: "tick", seq: 11 }, 10), true);
  assert.equal(isNew({ kind: "tick", seq: 10 }, 10), false);
  assert.equal(isNew({ kind: "tick", seq: 9 }, 10), false);
});

test("a snapshot draws what it holds and purges the charts it does not", () => {
  const ops = planCharts({ kind: "snapshot", seq: 1, charts: { util: { op: "full", sig: "a", figure: fig } } },
    NAMES, { loss: "z" });
  assert.deepEqual(ops.map((o) => [o.name, o.op]), [["util", "newPlot"], ["loss", "purge"]]);
});

test("the same traces are redrawn in place, other traces drawn anew", () => {
  const change = { op: "full", sig: "a", figure: fig };
  assert.equal(planCharts({ kind: "tick", seq: 2, charts: { util: change } }, NAMES, { util: "a" })[0].op, "react");
  assert.equal(planCharts({ kind: "tick", seq: 2, charts: { util: change } }, NAMES, { util: "b" })[0].op, "newPlot");
});

test("an increment extends a chart held, and asks for a snapshot for one never drawn", () => {
  const change = { op: "extend", groups: [{ traces: [0], update: { x: [[2]], y: [[3]] } }], append: null, layout: null };
  const [op] = planCharts({ kind: "tick", seq: 2, charts: { epochs: change } }, NAMES, { epochs: "s" });
  assert.deepEqual([op.op, op.groups], ["extend", change.groups]);
  assert.equal(planCharts({ kind: "tick", seq: 2, charts: { epochs: change } }, NAMES, {})[0].op, "resync");
});

test("a tick without charts, or with a chart the view does not show, asks nothing", () => {
  assert.deepEqual(planCharts({ kind: "tick", seq: 2, header: null }, NAMES, { util: "a" }), []);
  assert.deepEqual(planCharts({ kind: "tick", seq: 2, charts: { other: { op: "full", sig: "x", figure: fig } } },
    NAMES, {}), []);
});

test("a tick's null chart is gone; a chart not named in it is unchanged", () => {
  const ops = planCharts({ kind: "tick", seq: 5, charts: { loss: null } }, NAMES, { loss: "l", util: "u" });
  assert.deepEqual(ops, [{ name: "loss", op: "purge" }]);
});

test("grown layout lists keep what was drawn and add the new items", () => {
  const layout = { shapes: [{ x0: 1 }], annotations: [{ text: "epoch 1" }] };
  const out = grownLayout(layout, { shapes: [{ x0: 2 }], annotations: [{ text: "epoch 2" }] }, { title: "t" });
  assert.deepEqual(out.shapes, [{ x0: 1 }, { x0: 2 }]);
  assert.deepEqual(out.annotations.map((a) => a.text), ["epoch 1", "epoch 2"]);
  assert.equal(out.title, "t");
  assert.equal(layout.shapes.length, 1, "the figure's own list is not changed");
});

test("names that would touch in a row are hidden left to right; other rows are apart", () => {
  const names = [{ x: 0, row: 0, width: 40 }, { x: 1, row: 0, width: 40 }, { x: 2, row: 0, width: 40 },
                 { x: 1, row: 1, width: 40 }];
  // 10 units over 100 px: names 10 px apart in a row, 40 px wide
  assert.deepEqual(visibleNames(names, [0, 10], 100), [true, false, false, true]);
  // 10 units over 1000 px: 100 px apart, all fit
  assert.deepEqual(visibleNames(names, [0, 10], 1000), [true, true, true, true]);
});

test("a class's reruns are spread with its size, from RERUN_AFTER_MS to the cap", () => {
  assert.equal(rerunDelay(1, 0), RERUN_AFTER_MS);
  assert.equal(rerunDelay(100, 1), RERUN_AFTER_MS + RERUN_SPREAD_MAX_MS);
  assert.ok(rerunDelay(5, 1) < rerunDelay(50, 1));
});

// -- a page drawing slower than the stream speaks: queueOp, mergeExtends ---------------------------------------------
const ext = (x, extra = {}) => ({ name: "util", op: "extend", groups: [{ traces: [0, 1], update: { x: [[x], [x]], y: [[x * 2], [x * 3]] } }],
                                  append: null, layout: null, ...extra });

test("increments queued for one chart are drawn as one, each trace's points in order", () => {
  let pending = [];
  for (const x of [1, 2, 3]) pending = queueOp(pending, ext(x));
  assert.equal(pending.length, 1);
  assert.deepEqual(pending[0].groups, [{ traces: [0, 1], update: { x: [[1, 2, 3], [1, 2, 3]], y: [[2, 4, 6], [3, 6, 9]] } }]);
});

test("joined increments keep every mark and the later layout keys; other traces stay their own group", () => {
  const a = ext(1, { append: { shapes: [{ x0: 1 }] }, layout: { title: { text: "a" }, "yaxis2.range": [0, 1] } });
  const b = { ...ext(2, { append: { shapes: [{ x0: 2 }], annotations: [{ text: "epoch 2" }] }, layout: { title: { text: "b" } } }),
              groups: [{ traces: [2], update: { x: [[2]], y: [[9]] } }] };
  const [merged] = queueOp(queueOp([], a), b);
  assert.deepEqual(merged.append, { shapes: [{ x0: 1 }, { x0: 2 }], annotations: [{ text: "epoch 2" }] });
  assert.deepEqual(merged.layout, { title: { text: "b" }, "yaxis2.range": [0, 1] });
  assert.deepEqual(merged.groups.map((g) => g.traces), [[0, 1], [2]]);
  assert.deepEqual(a.groups[0].update.x, [[1], [1]], "the queued operation is not changed in place");
});

test("a chart drawn whole makes the draws queued before it moot; a new plot stays a new plot", () => {
  const full = (op, sig) => ({ name: "util", op, figure: { data: [], layout: {} }, sig });
  assert.deepEqual(queueOp([ext(1), ext(2)], full("react", "a")), [full("react", "a")]);
  assert.deepEqual(queueOp([full("newPlot", "b"), ext(1)], full("react", "b")), [full("newPlot", "b")]);
  assert.deepEqual(queueOp([full("newPlot", "b")], ext(1)).map((o) => o.op), ["newPlot", "extend"]);
  assert.deepEqual(queueOp([ext(1)], { name: "util", op: "purge" }), [{ name: "util", op: "purge" }]);
  assert.deepEqual(queueOp([ext(1)], { name: "util", op: "resync" }), [{ name: "util", op: "resync" }]);
});
