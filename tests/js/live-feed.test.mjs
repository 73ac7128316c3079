// ui/static/live-feed.js: a stream that falls silent is opened again (run by `node --test tests/js/`). The browser's
// EventSource, window and timers are stood in for: the module's own code runs as it does in a page.
import { test } from "node:test";
import assert from "node:assert/strict";

class FakeSource {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSED = 2;
  static made = [];
  constructor(url) {
    this.url = url;
    this.readyState = FakeSource.OPEN;
    this.handlers = {};
    FakeSource.made.push(this);
  }
  addEventListener(kind, fn) { this.handlers[kind] = fn; }
  close() { this.readyState = FakeSource.CLOSED; }
  send(data) { this.onmessage({ data: JSON.stringify(data) }); }
}

let now = 1_000_000;
const intervals = [];
globalThis.EventSource = FakeSource;
globalThis.window = { location: { href: "http://localhost:8501/train" } };
globalThis.setInterval = (fn) => { intervals.push(fn); return intervals.length; };
globalThis.clearInterval = () => {};
Date.now = () => now;
const { feedFor, STALL_MS } = await import("../../ui/static/live-feed.js");

function tick() { intervals.forEach((fn) => fn()); }

test("a stream silent past STALL_MS is opened again; one that pings is kept", () => {
  const got = [];
  const feed = feedFor({ stream: "/bench/live", feed: "train", variant: "plain" });
  feed.subscribe((msg) => got.push(msg.kind));
  assert.equal(FakeSource.made.length, 1);
  FakeSource.made[0].send({ kind: "snapshot", seq: 1 });

  now += STALL_MS - 5000;
  FakeSource.made[0].handlers.ping(); // the server's keep-alive
  now += STALL_MS - 5000;
  tick();
  assert.equal(FakeSource.made.length, 1, "a stream that pings is alive, however quiet its run");

  now += STALL_MS + 1;
  tick();
  assert.equal(FakeSource.made.length, 2, "silent past the bound: opened again");
  assert.equal(FakeSource.made[0].readyState, FakeSource.CLOSED, "the stalled connection is closed");
  FakeSource.made[1].send({ kind: "snapshot", seq: 7 });
  assert.deepEqual(got, ["snapshot", "snapshot"]);
  assert.equal(globalThis.window.__benchFeed.stalls, 1);
});
