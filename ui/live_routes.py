"""The routes served beside Streamlit's own (app.py hands them to ``st.App``): the live stream and the static files.

- ``GET {base}/bench/live?variant=plain|present``: the current run as server-sent events (ui.live_feed): one snapshot,
  then the increments every viewer shares. Read-only: it takes no input but the variant, and says nothing a viewer's
  page does not show already.
- ``GET {base}/bench/static/<name>``: plotly.js and the live elements' script, each named with its content's hash so
  a browser keeps it for a year and fetches it once (gzip-compressed when the browser accepts it).
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ui import live_feed

log = logging.getLogger(__name__)
STATIC = Path(__file__).with_name("static")
KEEPALIVE_S = 15.0  # a comment line this often keeps proxies from closing a quiet stream
RETRY_MS = 2000  # what the browser waits before it reconnects a dropped stream


@dataclass(frozen=True)
class StaticFile:
    body: bytes
    gzipped: bytes
    etag: str
    media_type: str


def _plotly_path() -> Path:
    import plotly

    return Path(plotly.__file__).with_name("package_data") / "plotly.min.js"


def _sources() -> dict[str, Path]:
    return {"plotly.min.js": _plotly_path(), "live.js": STATIC / "live.js"}


@cache
def static_file(name: str) -> StaticFile | None:
    """A static file by name, read and compressed once per process; None for a name not served."""
    path = _sources().get(name)
    if path is None:
        return None
    body = path.read_bytes()
    media = "text/javascript; charset=utf-8" if name.endswith(".js") else "application/octet-stream"
    return StaticFile(body, gzip.compress(body, 6), hashlib.blake2b(body, digest_size=8).hexdigest(), media)


def base_path() -> str:
    """Streamlit's server.baseUrlPath as a path prefix ("" or "/prefix")."""
    from streamlit import config

    base = str(config.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}" if base else ""


def static_url(name: str) -> str:
    """Where a browser fetches ``name``: its content hash in the query, so a changed file is a new address."""
    found = static_file(name)
    version = found.etag if found else "missing"
    return f"{base_path()}/bench/static/{name}?v={version}"


def stream_url() -> str:
    return f"{base_path()}/bench/live"


# -- handlers -------------------------------------------------------------------------------------------------------
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


class _Waker:
    """Wakes every stream of one event loop when the publisher's thread published (one call across threads per
    event, whatever the number of subscribers)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.event = asyncio.Event()

    def poke(self) -> None:
        self.loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        self.event.set()
        self.event = asyncio.Event()


_WAKERS: dict[int, _Waker] = {}


def _waker(publisher: live_feed.Publisher) -> _Waker:
    loop = asyncio.get_running_loop()
    waker = _WAKERS.get(id(loop))
    if waker is None:
        waker = _WAKERS[id(loop)] = _Waker(loop)
        publisher.on_publish(waker.poke)
    return waker


async def events(publisher: live_feed.Publisher, variant: str) -> AsyncIterator[bytes]:
    """One subscriber's stream: a snapshot, then every increment in order (a snapshot again if it fell behind)."""
    waker = _waker(publisher)
    publisher.subscribed(+1)
    try:
        yield f"retry: {RETRY_MS}\n\n".encode()
        publisher.want(variant)
        seq, data = await asyncio.to_thread(publisher.snapshot, variant)
        yield data
        while True:
            wake = waker.event
            try:
                await asyncio.wait_for(wake.wait(), KEEPALIVE_S)
            except asyncio.TimeoutError:
                yield b": keepalive\n\n"
                continue
            publisher.want(variant)
            found = publisher.since(seq, variant)
            if found is None:
                seq, data = await asyncio.to_thread(publisher.snapshot, variant)
                yield data
                continue
            for seq, data in found:
                yield data
    finally:
        publisher.subscribed(-1)


async def stream(request: Any) -> Any:
    from starlette.responses import PlainTextResponse, StreamingResponse

    publisher = live_feed.installed()
    variant = request.query_params.get("variant", "plain")
    if variant not in live_feed.VARIANTS:
        return PlainTextResponse(f"variant must be one of {', '.join(live_feed.VARIANTS)}", status_code=400)
    if publisher is None:  # no page drawn yet in this process (a restarted server): the browser retries
        return PlainTextResponse("The dashboard is starting; open a page first.", status_code=503,
                                 headers={"Retry-After": "2"})
    return StreamingResponse(events(publisher, variant), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


def routes() -> list[Any]:
    """The routes app.py gives st.App."""
    from starlette.routing import Route

    base = base_path()
    return [Route(f"{base}/bench/live", stream, methods=["GET"]),
            Route(f"{base}/bench/static/{{name}}", serve_static, methods=["GET"])]
