// The stream: one EventSource per page and address, shared by the elements that show it (the live view, the
// sidebar's line). Each listener gets every message in order; one that subscribes later on the same page gets the
// last snapshot and the messages after it replayed, so it draws without a second snapshot.
const feeds = new Map(); // stream address -> feed
const REOPEN_MS = 2000; // a refused stream (the server restarting) is opened again after this
const LOG_MAX = 600; // messages kept after the last snapshot for a late listener; past it, it reopens the stream
// The server speaks at least every 15 s (an event, or its keep-alive "ping": ui/live_routes.KEEPALIVE_S). A stream
// silent for this long has stalled (a half-open connection, a proxy that buffers): it is opened again, and the
// snapshot that follows brings the view up to date.
export const STALL_MS = 40000;
const STALL_CHECK_MS = 5000;

function openFeed(url) {
  const feed = { url, listeners: new Set(), source: null, log: null, events: 0, bytes: 0, opened: 0, snapshots: 0,
                 stalls: 0, heard: 0, closer: null, watchdog: null };
  const deliver = (fn, msg) => { try { fn(msg); } catch (err) { console.error("live feed listener", err); } };
  const open = () => {
    if (feed.source) feed.source.close();
    feed.opened += 1;
    feed.log = null;
    const source = new EventSource(new URL(url, window.location.href).href);
    feed.source = source;
    feed.heard = Date.now();
    if (!feed.watchdog) {
      feed.watchdog = setInterval(() => {
        if (!feed.source || !feed.listeners.size) { clearInterval(feed.watchdog); feed.watchdog = null; return; }
        if (feed.source.readyState === EventSource.OPEN && Date.now() - feed.heard > STALL_MS) {
          feed.stalls += 1;
          open();
        }
      }, STALL_CHECK_MS);
    }
    source.onopen = () => { feed.heard = Date.now(); };
    source.addEventListener("ping", () => { feed.heard = Date.now(); });
    source.onmessage = (e) => {
      feed.heard = Date.now();
      feed.events += 1;
      feed.bytes += e.data.length;
      let msg;
      try { msg = JSON.parse(e.data); } catch (err) { console.error("live feed", err); return; }
      if (msg.kind === "snapshot") { feed.log = [msg]; feed.snapshots += 1; } // one each (re)connection
      else if (feed.log) { feed.log.push(msg); if (feed.log.length > LOG_MAX) feed.log = false; }
      feed.listeners.forEach((fn) => deliver(fn, msg));
      window.__benchFeed = { url, events: feed.events, bytes: feed.bytes, opened: feed.opened,
                             snapshots: feed.snapshots, stalls: feed.stalls, seq: msg.seq };
    };
    source.onerror = () => {
      // a dropped connection reconnects by itself; a refused one is closed: open it again
      if (source.readyState === EventSource.CLOSED && feed.listeners.size) {
        setTimeout(() => { if (feed.source === source && feed.listeners.size) open(); }, REOPEN_MS);
      }
    };
  };
  feed.subscribe = (fn) => {
    if (feed.closer) { clearTimeout(feed.closer); feed.closer = null; }
    feed.listeners.add(fn);
    if (!feed.source || feed.source.readyState === EventSource.CLOSED || feed.log === false) open();
    else if (feed.log) feed.log.forEach((msg) => deliver(fn, msg));
    return () => {
      feed.listeners.delete(fn);
      if (!feed.listeners.size) {
        feed.closer = setTimeout(() => {
          if (!feed.listeners.size && feed.source) { feed.source.close(); feed.source = null; feed.log = null; }
        }, 1000);
      }
    };
  };
  feed.reopen = open;
  return feed;
}

// The feed of an element's data: ``stream`` (the address), ``feed`` (train, compare, ...), ``variant``.
export function feedFor(data) {
  const url = `${data.stream}?feed=${encodeURIComponent(data.feed || "train")}&variant=${encodeURIComponent(data.variant || "plain")}`;
  if (!feeds.has(url)) feeds.set(url, openFeed(url));
  return feeds.get(url);
}
