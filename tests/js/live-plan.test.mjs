// ui/static/live-plan.js: what the live view does with each message of the stream (run by `node --test tests/js/`,
// and by pytest through tests/unit/test_live_js.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { grownLayout, isNew, planCharts, rerunDelay, visibleNames, RERUN_AFTER_MS, RERUN_SPREAD_MAX_MS }
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
