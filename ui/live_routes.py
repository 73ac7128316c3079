"""The routes served beside Streamlit's own (app.py hands them to ``st.App``): the live stream and the static files.

- ``GET {base}/bench/live?feed=train|compare|sweep|lesson:<step>&variant=plain|present``: the current run (or the
  latest group of that kind) as server-sent events (ui.live_feed): one snapshot, then the increments every viewer
  shares. Read-only: it takes no input but the variant, and says nothing a viewer's
  page does not show already.
- ``GET {base}/watch``: the watch page (ui/watch.py), the live view alone, static: what the projector's QR code opens.
- ``GET {base}/bench/static/<name>``: plotly.js (whole, and its basic bundle) and the live elements' modules, each named with its content's hash so
  a browser keeps it for a year and fetches it once (gzip-compressed when the browser accepts it).
- ``GET {base}/metrics``: this machine and the current run in Prometheus's text format (ui.metrics_route), one text
  shared by every scrape within a second; 404 with ``BENCH_METRICS=0``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from types import FrameType
from typing import Any

from ui import live_feed, metrics_route
from ui.static_files import base_path, static_file

log = logging.getLogger(__name__)
# A keep-alive this often keeps proxies from closing a quiet stream; it is a comment and a "ping" event, so a browser
# that hears nothing for much longer knows its connection stalled and opens it again (ui/static/live-feed.js)
KEEPALIVE_S = 15.0
KEEPALIVE = b": keepalive\nevent: ping\ndata: {}\n\n"
RETRY_MS = 2000  # what the browser waits before it reconnects a dropped stream


# -- handlers -------------------------------------------------------------------------------------------------------
async def serve_watch(request: Any) -> Any:
    """The watch page (ui/watch.py): one static page for every watcher, compressed once."""
    from starlette.responses import PlainTextResponse, Response

    from ui import watch

    if not host_allowed(request.headers.get("host")):
        return PlainTextResponse("This host is not in server.allowedHosts.", status_code=403)
    found = watch.page()
    headers = {"Cache-Control": "no-cache", "ETag": f'"{found.etag}"', "Vary": "Accept-Encoding",
               "X-Content-Type-Options": "nosniff"}
    if request.headers.get("if-none-match") == f'"{found.etag}"':
        return Response(status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        return Response(found.gzipped, media_type=found.media_type, headers={**headers, "Content-Encoding": "gzip"})
    return Response(found.body, media_type=found.media_type, headers=headers)


async def serve_static(request: Any) -> Any:
    from starlette.responses import PlainTextResponse, Response

    found = static_file(request.path_params["name"])
    if found is None:
        return PlainTextResponse("Not found", status_code=404)
    headers = {"Cache-Control": "public, max-age=31536000, immutable", "ETag": f'"{found.etag}"',
               "Vary": "Accept-Encoding", "X-Content-Type-Options": "nosniff"}
    if request.headers.get("if-none-match") == f'"{found.etag}"':
        return Response(status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        return Response(found.gzipped, media_type=found.media_type, headers={**headers, "Content-Encoding": "gzip"})
    return Response(found.body, media_type=found.media_type, headers=headers)


class Waker:
    """Tells every stream of one event loop that the publisher's thread published (one call across threads per
    event, whatever the number of subscribers). A stream waits for the publisher's sequence number to pass the last
    one it sent: what it waits for is read from the publisher itself, never from a signal it could have missed, so
    a publish while it read the snapshot, wrote an event or a keep-alive is sent at its next look."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.waiting: set[asyncio.Future[None]] = set()

    def poke(self) -> None:
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        waiting, self.waiting = self.waiting, set()
        for future in waiting:
            if not future.done():
                future.set_result(None)


# publisher -> its wakers by event loop; held weakly, so a publisher replaced (a new JobManager) takes its wakers
# with it, and a new one never finds a waker that was registered with another
_WAKERS: weakref.WeakKeyDictionary[Any, dict[asyncio.AbstractEventLoop, Waker]] = weakref.WeakKeyDictionary()


# -- the server's stop -----------------------------------------------------------------------------------------------
# Set when the server is told to stop: every open stream ends at once. The server's graceful stop waits for its open
# connections to close, and a stream never closes by itself: without this, a stop (Ctrl-C, `docker stop`) waited on
# every page still watching. The pages reconnect by themselves to the server that follows.
_STOPPING = threading.Event()
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def stop_streams() -> None:
    """End every open stream now (and any opened after): each wakes and returns."""
    _STOPPING.set()
    for wakers in list(_WAKERS.values()):
        for waker in list(wakers.values()):
            waker.poke()


def _chained(previous: Any) -> Callable[[int, FrameType | None], None]:
    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop_streams()
        if callable(previous):  # the server's own handler: it stops the server as before
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)
    return on_signal


@contextlib.asynccontextmanager
async def lifespan(_app: Any) -> AsyncIterator[None]:
    """``st.App``'s lifespan: while the server runs, its stop signals end the open streams first, then go to the
    handler they had (the server's). Signals are the main thread's: a server run in another thread is stopped its
    own way, and its streams with ``stop_streams``."""
    _STOPPING.clear()
    before = {}
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            before[sig] = signal.getsignal(sig)
            signal.signal(sig, _chained(before[sig]))
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def waker_of(publisher: Any) -> Waker:
    """This event loop's waker for ``publisher`` (anything with ``on_publish``: a live feed, the lab's room), made and
    registered once."""
    loop = asyncio.get_running_loop()
    wakers = _WAKERS.setdefault(publisher, {})
    waker = wakers.get(loop)
    if waker is None:
        waker = wakers[loop] = Waker(loop)
        publisher.on_publish(waker.poke)
    return waker


async def _published_after(waker: Waker, publisher: Any, sent: int, timeout: float) -> bool:
    return await passed(waker, lambda: publisher.seq, sent, timeout)


async def passed(waker: Waker, number: Callable[[], int], sent: int, timeout: float) -> bool:
    """Wait until the publisher's sequence number is past ``sent`` (True) or ``timeout`` passed (False). The look
    and the start of the wait are one step of this event loop (no await between them), and a publish wakes this
    loop after it raised the number, so no publish falls between them."""
    if number() > sent:
        return True
    future: asyncio.Future[None] = waker.loop.create_future()
    waker.waiting.add(future)
    try:
        await asyncio.wait_for(future, timeout)
    except asyncio.TimeoutError:
        pass
    finally:
        waker.waiting.discard(future)
    return bool(number() > sent)


async def events(publisher: Any, variant: str) -> AsyncIterator[bytes]:
    """One subscriber's stream: a snapshot, then every event after the last one it sent, in order (a snapshot again
    if it fell behind), whatever happened while it wrote; a keep-alive while nothing did."""
    waker = waker_of(publisher)
    publisher.subscribed(+1)
    try:
        yield f"retry: {RETRY_MS}\n\n".encode()
        publisher.want(variant)
        sent, data = await asyncio.to_thread(publisher.snapshot, variant)
        yield data
        while not _STOPPING.is_set():
            published = await _published_after(waker, publisher, sent, KEEPALIVE_S)
            if _STOPPING.is_set():
                return
            if not published:
                yield KEEPALIVE
                continue
            publisher.want(variant)
            found = publisher.since(sent, variant)
            if found is None:  # fell further behind than the ring holds
                sent, data = await asyncio.to_thread(publisher.snapshot, variant)
                yield data
                continue
            for seq, data in found:
                sent = seq
                yield data
    finally:
        publisher.subscribed(-1)


def host_allowed(host: str | None) -> bool:
    """The stream follows the rule Streamlit's websocket follows: with ``server.allowedHosts`` set, only those hosts
    (ports ignored, ``*.example.org`` for subdomains, ``*`` for any)."""
    import streamlit as st

    allowed = [str(h).strip().lower().rstrip(".") for h in (st.get_option("server.allowedHosts") or [])]
    if not allowed or "*" in allowed:
        return True
    name = (host or "").strip().lower()
    name = name[1:name.index("]")] if name.startswith("[") and "]" in name else name.rsplit(":", 1)[0]
    name = name.rstrip(".")
    return any(name == h or (h.startswith("*.") and name.endswith(h[1:])) for h in allowed)


def _train_feed() -> live_feed.Publisher | None:
    """The current run's publisher, made as the first dashboard page makes it (the server's one JobManager)."""
    try:
        from ui import common, live

        return live.feed(common.get_manager())
    except Exception:  # noqa: BLE001 - the browser retries; the dashboard's own pages say what is wrong
        log.exception("live stream: the current run's feed could not be made")
        return None


async def stream(request: Any) -> Any:
    from starlette.responses import PlainTextResponse, StreamingResponse

    if not host_allowed(request.headers.get("host")):
        return PlainTextResponse("This host is not in server.allowedHosts.", status_code=403)
    feed = request.query_params.get("feed", "train")
    variant = request.query_params.get("variant", "plain")
    if not live_feed.FEED_NAME.match(feed):
        return PlainTextResponse("feed must be a feed's name: train, compare, sweep, lesson:<step>", status_code=400)
    if variant not in live_feed.VARIANTS:
        return PlainTextResponse(f"variant must be one of {', '.join(live_feed.VARIANTS)}", status_code=400)
    publisher = live_feed.installed(feed)
    if publisher is None and feed == "train":  # the watch page, before any dashboard page was drawn
        publisher = await asyncio.to_thread(_train_feed)
    if publisher is None:  # no page has drawn this feed yet in this process (a restarted server): the browser retries
        return PlainTextResponse("The dashboard is starting; open a page first.", status_code=503,
                                 headers={"Retry-After": "2"})
    return StreamingResponse(events(publisher, variant), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


async def metrics(request: Any) -> Any:
    from starlette.responses import PlainTextResponse

    if not host_allowed(request.headers.get("host")):
        return PlainTextResponse("This host is not in server.allowedHosts.", status_code=403)
    return await metrics_route.respond(request)


def routes() -> list[Any]:
    """The routes app.py gives st.App (``/metrics`` answers 404 when BENCH_METRICS=0, read here, at the start)."""
    from starlette.routing import Route

    base = base_path()
    return [Route(f"{base}/bench/live", stream, methods=["GET"]),
            Route(f"{base}/watch", serve_watch, methods=["GET"]),
            Route(f"{base}/bench/static/{{name}}", serve_static, methods=["GET"]),
            Route(f"{base}/metrics", metrics if metrics_route.enabled() else metrics_route.off, methods=["GET"])]
