"""The lab's routes, served beside Streamlit's (app.py adds them to ``st.App``'s): its JSON API and its two static
pages (ui/lab_pages.py). The server's one lab room (bench.lab.room.LabRoom) is made on the first request, over the
dashboard's one JobManager.

- ``POST {base}/lab/api/open``: an assignment (docs/schemas/lab-assignment.schema.json); the presenter key in
  ``X-Presenter-Key`` where one is set (BENCH_PRESENTER_KEY). Answers the lab's id.
- ``POST {base}/lab/api/submit``: a student's choice (lab-choice.schema.json). Answers the run's place in the queue
  and the token the name's later runs carry (lab-submit-answer), or a 4xx naming the field (lab-refusal):
  422 a value outside the assignment, 409 a name taken or the lab not open, 429 the student's cap; nothing queued.
- ``GET {base}/lab/api/board[?after=N]``: the board (lab-board.schema.json), encoded once per version; with
  ``after``, the request waits (at most LONG_POLL_S) for a version past N: a page redraws when the board changes,
  no page polls on a timer.
- ``GET {base}/lab/api/figure``: the shared chart as Plotly's JSON, built once per board version.
- ``POST {base}/lab/api/stop`` (``{"ticket": N}``), ``/remove`` (``{"student": name}``), ``/close``: the teacher's.
- ``GET {base}/lab/api/export?format=json|csv|html``: the board as a file.
- ``GET {base}/lab``: the student's page; ``GET {base}/lab/board``: the board for the projector.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import threading
from typing import Any

from bench.lab.assignment import Assignment, Choice, LabError, read
from bench.lab.board import Refusal
from bench.lab.room import LabRoom
from bench.output import lab_report
from ui import lab_pages, live_routes
from ui.live_routes import host_allowed
from ui.static_files import base_path

log = logging.getLogger(__name__)
LONG_POLL_S = 25.0  # a waiting board request answers at least this often (proxies close quiet requests)
BODY_MAX = 16_384  # bytes: an assignment or a choice is far smaller

_lock = threading.Lock()
_room: LabRoom | None = None
_installed = False  # the room was given (tests): served as it is
_figures: dict[int, bytes] = {}  # board version -> the chart's JSON (the newest only)


def install(room: LabRoom | None) -> None:
    """The room the routes serve (tests give their own; None: made from the dashboard's JobManager when asked)."""
    global _room, _installed
    with _lock:
        _room, _installed = room, room is not None
        _figures.clear()


def room() -> LabRoom:
    """The server's lab room: the one installed, else one over the dashboard's JobManager (made anew when that
    manager is: one room per run queue)."""
    global _room
    with _lock:
        if _room is not None and _installed:
            return _room
        from ui import common

        manager = common.get_manager()
        if _room is None or _room.manager is not manager:
            if _room is not None:
                _room.shutdown()
            _room = LabRoom(manager)
            _figures.clear()
        return _room


def presenter_key() -> str | None:
    from ui import common

    return common.presenter_key()


# -- the board's waiters: the live stream's wakers (ui.live_routes), on the room's version ----------------------------
async def _version_after(lab: LabRoom, after: int, timeout: float, request: Any) -> None:
    """Return once the board's version is past ``after``, ``timeout`` passed or the client has gone: a closed page's
    request ends at once, not LONG_POLL_S later, and holds nothing open (a server stops at once, not when it ends)."""
    waiting = asyncio.ensure_future(
        live_routes.passed(live_routes.waker_of(lab), lambda: lab.board().version, after, timeout))
    gone = asyncio.ensure_future(_client_gone(request))
    try:
        await asyncio.wait({waiting, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
        gone.cancel()


async def _client_gone(request: Any) -> None:
    """Return once the client of ``request`` (a GET: no body to read) has closed its connection."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


# -- answers -------------------------------------------------------------------------------------------------------
def _json(body: bytes | str, status: int = 200) -> Any:
    from starlette.responses import Response

    return Response(body, status_code=status, media_type="application/json",
                    headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"})


def _refuse(error: LabError) -> Any:
    return _json(Refusal(error=str(error), field=error.field).model_dump_json(), error.status)


async def _body(request: Any) -> Any:
    raw = await request.body()
    if len(raw) > BODY_MAX:
        raise LabError(f"the request is {len(raw):,} bytes: at most {BODY_MAX:,}", status=413)
    try:
        return json.loads(raw or b"{}")
    except ValueError:
        raise LabError("the request's body must be a JSON object", status=400) from None


def _teacher(request: Any) -> LabError | None:
    """None when this request may act as the teacher: no presenter key set, or the key given."""
    key = presenter_key()
    if not key:
        return None
    given = request.headers.get("x-presenter-key", "")
    if hmac.compare_digest(given.encode(), key.encode()):
        return None
    return LabError("the presenter key is needed to run the lab (X-Presenter-Key)", status=403)


def _guard(request: Any) -> Any | None:
    from starlette.responses import PlainTextResponse

    if not host_allowed(request.headers.get("host")):
        return PlainTextResponse("This host is not in server.allowedHosts.", status_code=403)
    return None


async def open_lab(request: Any) -> Any:
    if (refused := _guard(request)) is not None:
        return refused
    try:
        if (error := _teacher(request)) is not None:
            raise error
        assignment = read(Assignment, await _body(request))
        opened = await asyncio.to_thread(room().open, assignment)
    except LabError as exc:
        return _refuse(exc)
    return _json(opened.model_dump_json())


async def submit(request: Any) -> Any:
    if (refused := _guard(request)) is not None:
        return refused
    try:
        choice = read(Choice, await _body(request))
        answer = await asyncio.to_thread(room().submit, choice)
    except LabError as exc:
        return _refuse(exc)
    return _json(answer.model_dump_json())


async def board(request: Any) -> Any:
    if (refused := _guard(request)) is not None:
        return refused
    lab = await asyncio.to_thread(room)
    after = request.query_params.get("after")
    if after is not None:
        if not after.lstrip("-").isdigit() or len(after) > 18:
            return _refuse(LabError("after must be a board's version (a whole number)", "after", status=400))
        await _version_after(lab, int(after), LONG_POLL_S, request)
    return _json(lab.board_json()[1])


async def figure(request: Any) -> Any:
    if (refused := _guard(request)) is not None:
        return refused
    lab = await asyncio.to_thread(room)
    version, _ = lab.board_json()
    body = _figures.get(version)
    if body is None:
        body = (await asyncio.to_thread(lambda: lab_report.figure(lab.board()).to_json())).encode()
        _figures.clear()
        _figures[version] = body
    return _json(body)


async def teacher_action(request: Any) -> Any:
    if (refused := _guard(request)) is not None:
        return refused
    action = request.path_params["action"]
    try:
        if (error := _teacher(request)) is not None:
            raise error
        data = await _body(request)
        lab = await asyncio.to_thread(room)
        if action == "stop":
            ticket = data.get("ticket") if isinstance(data, dict) else None
            if not isinstance(ticket, int) or isinstance(ticket, bool):
                raise LabError("ticket must be a run's ticket number", "ticket")
            done: int | bool = await asyncio.to_thread(lab.stop, ticket)
        elif action == "remove":
            student = data.get("student") if isinstance(data, dict) else None
            if not isinstance(student, str):
                raise LabError("student must be a student's name", "student")
            done = await asyncio.to_thread(lab.remove, student)
        elif action == "close":
            done = await asyncio.to_thread(lab.close)
        else:
            raise LabError(f"no action {action!r}: stop, remove or close", status=404)
    except LabError as exc:
        return _refuse(exc)
    return _json(json.dumps({"done": done}))


async def export(request: Any) -> Any:
    from starlette.responses import Response

    if (refused := _guard(request)) is not None:
        return refused
    kinds = {"json": ("application/json", lab_report.to_json), "csv": ("text/csv; charset=utf-8", lab_report.to_csv),
             "html": ("text/html; charset=utf-8", lab_report.to_html)}
    kind = request.query_params.get("format", "json")
    if kind not in kinds:
        return _refuse(LabError("format must be json, csv or html", "format", status=400))
    media, make = kinds[kind]
    board_now = (await asyncio.to_thread(room)).board()
    body = await asyncio.to_thread(make, board_now)
    name = f"{board_now.lab or 'lab'}.{kind}"
    return Response(body, media_type=media, headers={"Content-Disposition": f'attachment; filename="{name}"',
                                                     "X-Content-Type-Options": "nosniff"})


async def _page(request: Any, which: str) -> Any:
    from starlette.responses import Response

    if (refused := _guard(request)) is not None:
        return refused
    found = lab_pages.page(which)
    headers = {"Cache-Control": "no-cache", "Vary": "Accept-Encoding", "X-Content-Type-Options": "nosniff"}
    if "gzip" in request.headers.get("accept-encoding", ""):
        return Response(found.gzipped, media_type=found.media_type, headers={**headers, "Content-Encoding": "gzip"})
    return Response(found.body, media_type=found.media_type, headers=headers)


async def student_page(request: Any) -> Any:
    return await _page(request, "student")


async def board_page(request: Any) -> Any:
    return await _page(request, "board")


def routes() -> list[Any]:
    from starlette.routing import Route

    base = base_path()
    return [Route(f"{base}/lab", student_page, methods=["GET"]),
            Route(f"{base}/lab/board", board_page, methods=["GET"]),
            Route(f"{base}/lab/api/open", open_lab, methods=["POST"]),
            Route(f"{base}/lab/api/submit", submit, methods=["POST"]),
            Route(f"{base}/lab/api/board", board, methods=["GET"]),
            Route(f"{base}/lab/api/figure", figure, methods=["GET"]),
            Route(f"{base}/lab/api/export", export, methods=["GET"]),
            Route(f"{base}/lab/api/{{action}}", teacher_action, methods=["POST"])]
