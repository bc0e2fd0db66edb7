"""Live endpoints: server-sent events of a thread, and a WebSocket in the roundtable origin's
protocol.

``GET /threads/{id}/events`` sends ``ready`` (the position it starts from), then a
``checkpoint`` per journal record (id: its version; one after which the thread waits lists
the pauses it carries with their payloads, ``pauses``) and live events (``node_started``,
``node_finished``, and for principals ``token`` and ``custom``); ``Last-Event-ID`` (or
``?last_event_id=``) resumes from the journal. ``deleted`` ends the stream when the thread is;
``lagging`` when the client fell behind (reconnecting with its id resumes: ``_hub``).

``/threads/{id}/ws`` sends ``{"type": "message", "speaker", "text"}`` and ``{"type":
"status", "character", "status"}`` as nodes ``ctx.emit`` them (messages are never dropped;
statuses coalesce per character), to principals ``{"type": "pause", "id", "payload"}`` for
each pause a run of this server stops at (the payload redacted as the thread's state is), and
takes text a person types as the answer to the one pause the thread waits at. Browsers
cannot send headers on a WebSocket: a client without an ``Authorization`` header sends
``{"type": "auth", "token": "..."}`` first (with ``--open-reads`` too when it connects with
``?auth=message``: else it reads anonymously). Opt-in, beyond the origin's shapes:
``?tokens=true`` adds ``{"type": "token", "node", "text", "done"}`` for each chunk an LLM
streams inside a node (principals only; chunks a slow client has not read yet are joined).

When the server stops (``Hub.close_streams``) an event stream ends and a WebSocket closes with
1001 (going away), so neither holds the server up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ..errors import FlowkitError
from ..foundation._untrusted import parse_json
from ..records._events import Emitted, Event, TokenStreamed, Waiting
from ..runtime._queue import Priority, classify_event
from ._audit import answered
from ._context import Server, ThreadId, open_thread, principal_for, server_of
from ._hub import SHUTTING_DOWN, Subscription
from ._journal import ShowPauses, frame, parse_event_id
from ._problems import Problem, problem_of
from ._redact import redact_with_pauses
from ._served import gate_spec, text_field

__all__ = ["router"]

router = APIRouter()

#: One server-sent event as a client parses it (OpenAPI before 3.2: ``schema`` describes each
#: event of a ``text/event-stream``); ``data`` is one line of JSON.
_SSE_EVENT = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {
            "type": "string",
            "enum": ["ready", "checkpoint", "node_started", "node_finished", "token", "custom",
                     "deleted", "lagging"],
        },
        "data": {"type": "string", "contentMediaType": "application/json"},
        "id": {"type": "string", "pattern": r"^\d{1,12}(\.\d{1,12})?$"},
        "retry": {"type": "integer", "minimum": 0},
    },
}  # fmt: skip
#: ``Last-Event-ID`` as sent back: an id of this stream (blank: from now).
_EVENT_ID_PATTERN = r"^\s*(\d{1,12}(\.\d{1,12})?)?\s*$"

_SSE_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A stream of server-sent events: ready, checkpoint, live events; "
        "deleted or lagging end it",
        "content": {"text/event-stream": {"schema": _SSE_EVENT}},
    },
    400: {"description": "Last-Event-ID is not an id this server sent"},
    403: {"description": "The authorisation hook denied it"},
    404: {"description": "No such thread"},
    503: {"description": "Too many subscribers, or the server is shutting down"},
}


@router.get(
    "/threads/{thread_id}/events",
    response_class=StreamingResponse,
    responses=_SSE_DOC,
    tags=["events"],
)
async def thread_events(
    request: Request,
    thread_id: ThreadId,
    last_event_id: Annotated[
        str | None,
        Query(
            max_length=40,
            description="As the Last-Event-ID header",
            json_schema_extra={"pattern": _EVENT_ID_PATTERN},  # checked as the header is: 400
        ),
    ] = None,
) -> StreamingResponse:
    """The thread's events as server-sent events; reconnect with ``Last-Event-ID`` to get
    what was missed from the journal."""
    server = server_of(request)
    principal = await principal_for(server, request.headers.get("authorization"))
    header = request.headers.get("last-event-id")
    after = parse_event_id(header if header is not None else last_event_id)
    runner, result = await run_in_threadpool(open_thread, server, principal, "read", thread_id)
    hub = server.hub
    sub = await hub.subscribe(
        thread_id,
        runner.flow.change_classes,
        after=after,
        private=principal is not None,
        classify=_sse_classify,
        shown=event_pauses(server, runner.flow.name),
    )
    ready = {"thread_id": thread_id, "version": sub.cursor, "status": result.status}

    async def stream() -> AsyncIterator[bytes]:
        watcher = asyncio.ensure_future(_watch_disconnect(request, sub))
        try:
            yield b"retry: 2000\n\n" + frame("ready", ready, str(sub.cursor))
            while True:
                frames = await hub.next_frames(sub)
                if not frames:
                    return
                yield b"".join(frames)
        finally:
            watcher.cancel()
            hub.unsubscribe(sub)

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def _sse_classify(event: Event) -> tuple[Priority, str] | None:
    """Live events of the event stream: a pause arrives there as its checkpoint (journaled,
    sent again on reconnect), never as a live event too."""
    return None if isinstance(event, Waiting) else classify_event(event)


def event_pauses(server: Server, flow: str) -> ShowPauses:
    """How checkpoint events show the payloads of a thread's pauses: redacted as for an
    anonymous reader, since one encoded event goes to every subscriber (a principal reads
    what it may see with ``GET /threads/{id}``). A redact function that fails hides them."""

    def shown(pauses: list[dict[str, Any]]) -> list[dict[str, Any]]:
        given = [(pause["id"], pause["payload"]) for pause in pauses]
        try:
            return redact_with_pauses(server.redact, flow, None, given, None)[1]
        except Exception:  # never the payload unredacted, never a broken stream
            return [{"id": pause, "payload": None} for pause, _ in given]

    return shown


async def _watch_disconnect(request: Request, sub: Subscription) -> None:
    with contextlib.suppress(Exception):
        while True:
            message = await request.receive()
            if message["type"] == "http.disconnect":
                sub.end("the client left")
                return


# -- WebSocket ---------------------------------------------------------------------------------

_AUTH_TIMEOUT_S = 10.0
_MAX_TEXT = 20_000
_GOING_AWAY = 1001
_YES = ("1", "true", "yes")


def roundtable_shape(value: Any) -> dict[str, str] | None:
    """``value`` as one of the roundtable origin's two shapes, or ``None``."""
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind == "message":
        speaker, text = value.get("speaker"), value.get("text")
        if isinstance(speaker, str) and isinstance(text, str):
            return {"type": "message", "speaker": speaker, "text": text}
    elif kind == "status":
        character, status = value.get("character"), value.get("status")
        if isinstance(character, str) and isinstance(status, str):
            return {"type": "status", "character": character, "status": status}
    return None


def _ws_classify(event: Event) -> tuple[Priority, str] | None:
    if isinstance(event, Waiting):
        return "critical", "pause"  # never dropped nor coalesced: each is its own question
    if not isinstance(event, Emitted):
        return None
    shape = roundtable_shape(event.value)
    if shape is None:
        return None
    if shape["type"] == "message":
        return "critical", "message"
    return "progress", f"status:{shape['character']}"


def _ws_classify_tokens(event: Event) -> tuple[Priority, str] | None:
    """``_ws_classify``, and streamed chunks (joined per node while unread: ``merge_progress``)."""
    if isinstance(event, TokenStreamed):
        return "progress", f"token:{event.node}"
    return _ws_classify(event)


def _option(websocket: WebSocket, name: str) -> str:
    """A query parameter of the socket's URL, lower case (blank when absent)."""
    return websocket.query_params.get(name, "").strip().lower()


@router.websocket("/threads/{thread_id}/ws")
async def thread_socket(websocket: WebSocket, thread_id: str) -> None:
    server = server_of(websocket)
    try:
        principal = await principal_for(server, websocket.headers.get("authorization"))
    except Problem:
        await websocket.close(code=4401)
        return
    await websocket.accept()
    try:
        if principal is None and (
            not server.guard.open_reads or _option(websocket, "auth") == "message"
        ):
            principal = await _authenticate(server, websocket)
        runner, _ = await run_in_threadpool(open_thread, server, principal, "read", thread_id)
        sub = await server.hub.subscribe(
            thread_id,
            runner.flow.change_classes,
            after=None,
            private=principal is not None,
            classify=_ws_classify_tokens if _option(websocket, "tokens") in _YES else _ws_classify,
        )
    except (Problem, FlowkitError) as exc:
        await _refuse(websocket, exc)
        return
    except WebSocketDisconnect:
        return
    who = [principal]  # the socket's principal, set later by an auth frame under open reads
    sender = asyncio.ensure_future(_send_events(server, websocket, sub, runner.flow.name, who))
    receiver = asyncio.ensure_future(_receive_text(server, websocket, thread_id, who, sub))
    try:
        await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sender, receiver):
            task.cancel()
        server.hub.unsubscribe(sub)
        # 1001 "going away" tells the client the server stops, not that it did wrong.
        code = _GOING_AWAY if sub.closed == SHUTTING_DOWN else 1000
        with contextlib.suppress(Exception):
            await websocket.close(code=code)


async def _receive_frame(websocket: WebSocket) -> str | None:
    """The next text frame, or ``None`` for a binary one (the protocol is text; Starlette's
    ``receive_text`` would raise KeyError on it)."""
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000), message.get("reason"))
    text = message.get("text")
    return text if isinstance(text, str) else None


async def _authenticate(server: Server, websocket: WebSocket) -> str:
    text = await asyncio.wait_for(_receive_frame(websocket), _AUTH_TIMEOUT_S)
    try:
        message = json.loads(text[:4096]) if text is not None else None
    except ValueError:
        message = None
    token = message.get("token") if isinstance(message, dict) else None
    if not isinstance(message, dict) or message.get("type") != "auth" or not isinstance(token, str):
        raise Problem(401, "unauthorized", 'Send {"type": "auth", "token": "..."} first.')
    principal = await principal_for(server, f"Bearer {token}")
    assert principal is not None
    return principal


async def _late_principal(
    server: Server, websocket: WebSocket, frame: dict[str, Any], principal: str | None
) -> str | None:
    """The principal an ``auth`` frame sent after connecting names (one already known is
    kept); a wrong token is an error frame, and the socket stays as it was."""
    token = frame.get("token")
    if principal is not None or not isinstance(token, str):
        return principal
    try:
        return await principal_for(server, f"Bearer {token}")
    except Problem as exc:
        await websocket.send_json({"type": "error", "code": exc.code, "detail": exc.detail})
        return None


async def _refuse(websocket: WebSocket, exc: Exception) -> None:
    problem = exc if isinstance(exc, Problem) else problem_of(exc)  # type: ignore[arg-type]
    with contextlib.suppress(Exception):
        await websocket.send_json({"type": "error", "code": problem.code, "detail": problem.detail})
        await websocket.close(code=4000 + problem.status if problem.status < 1000 else 1011)


async def _send_events(
    server: Server, websocket: WebSocket, sub: Subscription, flow: str, who: list[str | None]
) -> None:
    while True:
        envelope = await server.hub.next_live(sub)
        if envelope is None:
            return
        event = envelope.event
        if isinstance(event, Waiting):
            await websocket.send_json(_pause_message(server, flow, event, who[0]))
            continue
        if isinstance(event, TokenStreamed):
            token = {"type": "token", "node": event.node, "text": event.text, "done": event.done}
            await websocket.send_json(token)
            continue
        assert isinstance(event, Emitted)
        shape = roundtable_shape(event.value)
        if shape is not None:
            await websocket.send_json(shape)


def _pause_message(
    server: Server, flow: str, event: Waiting, principal: str | None
) -> dict[str, Any]:
    """``{"type": "pause", "id", "payload"}``, the payload as ``principal`` may see it."""
    try:
        _, (shown,) = redact_with_pauses(
            server.redact, flow, None, [(event.gate, event.payload)], principal
        )
    except Exception:  # never the payload unredacted
        shown = {"id": event.gate, "payload": None}
    return {"type": "pause", "id": event.gate, "payload": shown["payload"]}


async def _receive_text(
    server: Server, websocket: WebSocket, thread_id: str, who: list[str | None], sub: Subscription
) -> None:
    """Each text a person sends answers the gate the thread waits at."""
    while True:
        try:
            frame = await _receive_frame(websocket)
        except WebSocketDisconnect:
            return
        if frame is None:
            await websocket.send_json(
                {
                    "type": "error",
                    "code": "bad_request",
                    "detail": 'Send text frames: what you type, or {"text": "..."}.',
                }
            )
            continue
        text = frame
        with contextlib.suppress(ValueError):  # not JSON, or nested too deeply: plain text
            data = parse_json(text, what="message", max_bytes=None) if text[:1] == "{" else None
            if isinstance(data, dict):
                if data.get("type") == "auth":
                    # With open reads the socket reads anonymously until told otherwise: a
                    # token sent as the documented first frame makes it the token's principal
                    # from then on, answers and events alike.
                    who[0] = await _late_principal(server, websocket, data, who[0])
                    sub.private = who[0] is not None
                    continue
                said = data.get("text")
                text = said if isinstance(said, str) else ""
        text = text.strip()
        if not text:
            continue
        try:
            await run_in_threadpool(_answer, server, thread_id, who[0], text[:_MAX_TEXT])
        except (Problem, FlowkitError) as exc:
            problem = exc if isinstance(exc, Problem) else problem_of(exc)
            await websocket.send_json(
                {"type": "error", "code": problem.code, "detail": problem.detail}
            )


def _answer(server: Server, thread_id: str, principal: str | None, text: str) -> None:
    runner, result = open_thread(server, principal, "resume", thread_id)
    if result.status == "waiting" and len(result.gates) > 1:
        raise Problem(
            409,
            "not_waiting",
            f"Thread `{thread_id}` waits at {len(result.gates)} pauses "
            f"({', '.join(f'`{pause}`' for pause in result.gates)}); answer each with POST "
            f"/threads/{thread_id}/resume and its `gate`.",
        )
    if result.status != "waiting" or len(result.gates) != 1:
        raise Problem(
            409,
            "not_waiting",
            f"Thread `{thread_id}` is not waiting for one answer (it is {result.status}).",
        )
    spec = gate_spec(runner.flow, result.gates[0])
    field = text_field(spec.input) if spec is not None else None
    if field is None:
        raise Problem(
            422,
            "not_a_text_gate",
            f"Gate `{result.gates[0]}` takes a form, not one text; answer it with POST "
            f"/threads/{thread_id}/resume.",
        )
    with server.underway.held(thread_id):  # two answers sent at once: one wins, one hears 409
        answered_at = runner.resume(
            thread_id,
            {field: text},
            gate=result.gates[0],
            expected_version=result.version,
            actor=principal or "anonymous",
        )
    answered(principal, "resume", thread_id, flow=runner.flow.name, pause=result.gates[0],
             version=answered_at.version)  # fmt: skip
