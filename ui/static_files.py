"""The files the browser keeps: plotly.js and the live elements' modules (ui/static/live*.js), each read and compressed
once per process and named with its content's hash, so a browser fetches it once and keeps it (ui/live_routes.py
serves them; the elements' data carries their addresses). A module's imports of its siblings (``from
"./live-plan.js"``) are served with the sibling's hash in the address, so a changed module is fetched anew and an
unchanged one is not."""

from __future__ import annotations

import gzip
import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

STATIC = Path(__file__).with_name("static")
ASSETS_CSS = Path(__file__).with_name("assets")
VENDOR = Path(__file__).with_name("vendor")  # third parties' files, as published (ui/vendor/README.md)


@dataclass(frozen=True)
class StaticFile:
    body: bytes
    gzipped: bytes
    etag: str
    media_type: str


def _plotly_path() -> Path:
    import plotly

    return Path(plotly.__file__).with_name("package_data") / "plotly.min.js"


MODULES = ("live.js", "live-plan.js", "live-feed.js", "live-header.js", "live-charts.js")
_IMPORT = re.compile(r'from "\./(live[a-z-]*\.js)"')


def _sources() -> dict[str, Path]:
    # plotly-basic.min.js: plotly.js's basic bundle (scatter, bar), vendored from npm's plotly.js-basic-dist-min
    # (the same version as plotly.min.js): the watch page's, a third of the whole
    return {"plotly.min.js": _plotly_path(), "plotly-basic.min.js": VENDOR / "plotly-basic.min.js",
            **{name: STATIC / name for name in MODULES}}


def _versioned_imports(body: bytes) -> bytes:
    """A module's sibling imports with each sibling's hash in the address (the browser keeps each a year)."""
    def versioned(match: re.Match[str]) -> str:
        found = static_file(match.group(1))
        return f'from "./{match.group(1)}?v={found.etag if found else "missing"}"'

    return _IMPORT.sub(versioned, body.decode("utf-8")).encode("utf-8")


@cache
def static_file(name: str) -> StaticFile | None:
    """A static file by name, read and compressed once per process; None for a name not served."""
    path = _sources().get(name)
    if path is None:
        return None
    body = path.read_bytes()
    if name in MODULES:
        body = _versioned_imports(body)
    media = "text/javascript; charset=utf-8" if name.endswith(".js") else "application/octet-stream"
    return StaticFile(body, gzip.compress(body, 9), hashlib.blake2b(body, digest_size=8).hexdigest(), media)


def base_path() -> str:
    """Streamlit's server.baseUrlPath as a path prefix ("" or "/prefix")."""
    import streamlit as st

    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}" if base else ""


def static_url(name: str) -> str:
    """Where a browser fetches ``name``: its content hash in the query, so a changed file is a new address."""
    found = static_file(name)
    version = found.etag if found else "missing"
    return f"{base_path()}/bench/static/{name}?v={version}"


def stream_url() -> str:
    return f"{base_path()}/bench/live"
