"""A misbehaving LLM server on loopback, against both HTTP clients (OpenAI-compatible and
Ollama), each called to complete and to stream, sync and async.

The server is a raw socket: it reads the request, then answers with exactly the bytes a
case scripts (garbage JSON, a cut stream, a wrong content type, a 4 MB line, 5xx, a reply
slower than the timeout, a reset connection, bytes that are not UTF-8 ...). Each call ends
in an ``LLMError``, or gives back exactly the text the server meant.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flowkit.llm import Backoff
from flowkit.llm.ollama import OllamaLLM
from flowkit.llm.openai import OpenAICompatibleLLM

from .registry import OK, add, expect

FAST = Backoff(initial=0.01, multiplier=2.0, maximum=0.02, jitter=0.0, max_retry_after=0.05)
TEXT = "Hello there, friend"
MB = 1024 * 1024
#: An action answers one request on its socket.
Action = Callable[[socket.socket], None]


class RawServer:
    """Answers the n-th request with the n-th action (the last one for all after it)."""

    def __init__(self, actions: list[Action]) -> None:
        self.actions = actions
        self.requests = 0
        self.stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            try:
                _read_request(conn)
                action = self.actions[min(self.requests, len(self.actions) - 1)]
                self.requests += 1
                action(conn)
            except OSError:
                pass  # the client gave up (a timeout case): nothing to answer

    def close(self) -> None:
        self.stopping.set()
        self._thread.join(5)
        self._listener.close()


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return data
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += conn.recv(65536)
    return body


# -- what the server sends ------------------------------------------------------------------


def send(status: int, body: bytes, kind: str = "application/json", **headers: str) -> Action:
    def action(conn: socket.socket) -> None:
        extra = "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in headers.items())
        head = (f"HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
                f"{extra}Connection: close\r\n\r\n")  # fmt: skip
        conn.sendall(head.encode() + body)

    return action


def stream(kind: str, lines: list[bytes], *, end: bool = True) -> Action:
    """A chunked 200 with ``lines``; without ``end`` the connection drops mid-stream."""

    def action(conn: socket.socket) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nTransfer-Encoding: chunked\r\n"
        conn.sendall(head.encode() + b"Connection: close\r\n\r\n")
        for line in lines:
            conn.sendall(b"%X\r\n%s\r\n" % (len(line), line))
        if end:
            conn.sendall(b"0\r\n\r\n")

    return action


def raw(data: bytes) -> Action:
    return lambda conn: conn.sendall(data)


def slow(seconds: float, then: Action) -> Action:
    def action(conn: socket.socket) -> None:
        time.sleep(seconds)
        then(conn)

    return action


def reset(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def hang_up(conn: socket.socket) -> None:
    pass  # closed by the caller's `with`, without a byte


# -- what each API's good and bad answers look like ----------------------------------------


def completion(api: str, text: Any = TEXT) -> bytes:
    if api == "openai":
        return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant",
                           "content": text}, "finish_reason": "stop"}]}).encode()  # fmt: skip
    return json.dumps({"message": {"role": "assistant", "content": text}, "done": True}).encode()


def stream_lines(api: str, text: str = TEXT) -> list[bytes]:
    pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
    if api == "openai":
        lines = [b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": p}}]})
                 .encode() + b"\n\n" for p in pieces]  # fmt: skip
        end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        return [*lines, b"data: " + json.dumps(end).encode() + b"\n\n", b"data: [DONE]\n\n"]
    lines = [json.dumps({"message": {"role": "assistant", "content": p}, "done": False})
             .encode() + b"\n" for p in pieces]  # fmt: skip
    return [*lines, json.dumps({"message": {"role": "assistant", "content": ""},
                                "done": True}).encode() + b"\n"]  # fmt: skip


def stream_kind(api: str) -> str:
    return "text/event-stream" if api == "openai" else "application/x-ndjson"


def good(api: str, how: str) -> Action:
    if how == "complete":
        return send(200, completion(api))
    return stream(stream_kind(api), stream_lines(api))


# -- the cases -------------------------------------------------------------------------------

#: name -> (actions for the api and call, text a correct client returns or None: must fail)
Fault = Callable[[str, str], tuple[list[Action], str | None]]


def _non_utf8_body(api: str, how: str) -> tuple[list[Action], str | None]:
    if how == "complete":
        return [send(200, completion(api, "caf_").replace(b"caf_", b"caf\xe9"))], None
    lines = stream_lines(api, "caf_")
    lines[0] = lines[0].replace(b"caf_", b"caf\xe9")
    return [stream(stream_kind(api), lines)], None


def _huge_line(megabytes: int) -> Fault:
    def fault(api: str, how: str) -> tuple[list[Action], str | None]:
        line = b"data: " + b"x" * (megabytes * MB) if api == "openai" else b"{" * (megabytes * MB)
        if how == "complete":
            return [send(200, b'{"choices": "' + b"x" * (megabytes * MB) + b'"}')], None
        return [stream(stream_kind(api), [line])], None

    return fault


def _cut(api: str, how: str) -> tuple[list[Action], str | None]:
    if how == "complete":
        body = completion(api)
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
        return [raw(head.encode() + b"\r\n\r\n" + body[: len(body) // 2])], None
    return [stream(stream_kind(api), stream_lines(api)[:2], end=False)], None


FAULTS: dict[str, Fault] = {
    "garbage instead of JSON": lambda a, h: ([send(200, b"<<not json>>")], None),
    "a JSON list": lambda a, h: ([send(200, b"[1, 2, 3]")], None),
    "JSON of another shape": lambda a, h: ([send(200, b'{"choices": [], "message": 5}')], None),
    "text that is a number": lambda a, h: (
        [send(200, completion(a, 5))]
        if h == "complete"
        else [stream(stream_kind(a), [ln.replace(b'"Hello"', b"5") for ln in stream_lines(a)])],
        None,
    ),
    "an HTML page as text/html": lambda a, h: (
        [send(200, b"<html><body>Welcome</body></html>", "text/html")],
        None,
    ),
    # Ollama's whole answer is one NDJSON line with done: true, a stream of one line.
    "a whole completion when a stream was asked": lambda a, h: (
        [send(200, completion(a))],
        TEXT if h == "complete" or a == "ollama" else None,
    ),
    "a stream when a completion was asked": lambda a, h: (
        [stream(stream_kind(a), stream_lines(a))],
        TEXT if h == "stream" else None,
    ),
    "an empty 200": lambda a, h: ([send(200, b"")], None),
    "a body cut short": _cut,
    "a 4 MB line": _huge_line(4),
    "bytes that are not UTF-8": _non_utf8_body,
    "a UTF-8 BOM before the JSON": lambda a, h: (
        [send(200, b"\xef\xbb\xbf" + completion(a))],
        TEXT if h == "complete" else None,
    ),
    "503 on every attempt": lambda a, h: ([send(503, b'{"error": {"message": "busy"}}')], None),
    "500 then a good answer": lambda a, h: ([send(500, b"{}"), good(a, h)], TEXT),
    "a 500 whose body is 2 MB": lambda a, h: ([send(500, b"e" * (2 * MB))], None),
    "404 for the model": lambda a, h: ([send(404, b'{"error": "model not found"}')], None),
    "a reply slower than the timeout": lambda a, h: ([slow(2.0, good(a, h))], None),
    "a reset connection": lambda a, h: ([reset], None),
    "a reset, then a good answer": lambda a, h: ([reset, good(a, h)], TEXT),
    "a hang-up without a byte": lambda a, h: ([hang_up], None),
    "a status line of garbage": lambda a, h: ([raw(b"\x00\xffnot http\r\n\r\n")], None),
    "a bad chunk size": lambda a, h: (
        [raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")],
        None,
    ),
    "gzip announced, not gzip": lambda a, h: (
        [send(200, completion(a), **{"Content_Encoding": "gzip"})],
        None,
    ),
}
SLOW_FAULTS: dict[str, Fault] = {
    "a 16 MB line": _huge_line(16),
    "Retry-After: 3600 on a 429": lambda a, h: (
        [send(429, b"{}", Retry_After="3600"), good(a, h)],
        TEXT,
    ),
}
KNOWN = {
    "Retry-After: 3600 on a 429": "issue 23 item 20",
    "bytes that are not UTF-8": "found by the campaign: an answer that is not UTF-8 must be "
    "LLMResponseError, never handed over with U+FFFD in place of the bytes",
}


def _client(api: str, url: str, **options: Any) -> Any:
    settings: dict[str, Any] = {"timeout": 0.5, "max_retries": 1, "backoff": FAST, **options}
    if api == "openai":
        return OpenAICompatibleLLM(model="m", base_url=f"{url}/v1", api_key="sk-test", **settings)
    return OllamaLLM(model="m", base_url=url, **settings)


def _call(llm: Any, how: str, mode: str) -> str:
    messages = [{"role": "user", "content": "Say hello"}]
    if mode == "sync":
        if how == "complete":
            return str(llm.complete(messages).text)
        return "".join(chunk.text for chunk in llm.stream(messages))

    async def call() -> str:
        if how == "complete":
            return str((await llm.acomplete(messages)).text)
        return "".join([chunk.text async for chunk in llm.astream(messages)])

    return asyncio.run(call())


def _llm_case(api: str, how: str, mode: str, fault: Fault, **options: Any) -> Callable[[Path], str]:
    def run(tmp: Path) -> str:
        actions, meant = fault(api, how)
        server = RawServer(actions)
        llm = _client(api, server.url, **options)
        try:
            text = _call(llm, how, mode)
        finally:
            llm.close()
            server.close()
        expect(meant is not None, f"the call returned {text[:80]!r} from an unusable answer")
        expect(text == meant, f"the call returned {text[:80]!r}, not {meant!r}")
        return OK

    return run


for _api in ("openai", "ollama"):
    for _how in ("complete", "stream"):
        for _mode in ("sync", "async"):
            for _name, _fault in FAULTS.items():
                # A reply slower than the timeout is one whatever the timeout: a short one
                # (two attempts of 0.2 s against a 2 s reply) keeps the case short.
                _options = {"timeout": 0.2} if "slower than the timeout" in _name else {}
                # The async calls share their core with the sync ones: slow, to keep the
                # default run short.
                add(f"llm/{_api}/{_how}/{_mode}/{_name}",
                    _llm_case(_api, _how, _mode, _fault, **_options),
                    known=KNOWN.get(_name), slow=_mode == "async")  # fmt: skip
            for _name, _fault in SLOW_FAULTS.items():
                # Retry-After needs the default backoff, whose cap is what is under test.
                options = {"backoff": Backoff()} if "Retry-After" in _name else {}
                add(f"llm/{_api}/{_how}/{_mode}/{_name}",
                    _llm_case(_api, _how, _mode, _fault, **options), slow=True, bound_s=30,
                    known=KNOWN.get(_name))  # fmt: skip
