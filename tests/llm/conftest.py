"""A real HTTP server on 127.0.0.1 that speaks the OpenAI and Ollama chat APIs.

Each test scripts what the server does with the next requests (answer, fail, stall, cut
the stream ...) and reads back what it received; the clients under test talk to it over TCP.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from flowkit.llm import Backoff, Chunk, LLMResponse
from flowkit.llm._http import HTTPChatLLM
from flowkit.llm.ollama import OllamaLLM
from flowkit.llm.openai import OpenAICompatibleLLM

#: Fast retries so a whole retry budget takes milliseconds.
FAST = Backoff(initial=0.01, multiplier=2.0, maximum=0.02, jitter=0.0, max_retry_after=0.05)
USER = [{"role": "user", "content": "Say hello"}]


@dataclass(frozen=True)
class Reply:
    """What the server does with one request."""

    # ok | status | malformed | cut | unterminated | bad_line | error_line | drip |
    # drip_headers | huge
    kind: str = "ok"
    text: str = "Hello there, friend"
    status: int = 200
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    #: Why the model stopped, as the server says it ("length": cut at the token limit).
    finish: str = "stop"


def ok(text: str = "Hello there, friend", *, delay: float = 0.0) -> Reply:
    return Reply(text=text, delay=delay)


def fail(status: int, body: str = '{"error": {"message": "boom"}}', **headers: str) -> Reply:
    return Reply(kind="status", status=status, body=body, headers=headers)


def slow(delay: float = 3.0) -> Reply:
    return Reply(delay=delay)


def drip(every: float = 0.05) -> Reply:
    """Answer 200 at once, then send the body a few bytes at a time, for ever.

    Each piece arrives well within any read timeout, so only a deadline ends the call.
    """
    return Reply(kind="drip", delay=every)


def drip_headers(every: float = 0.3) -> Reply:
    """Send the status line, then one header a byte at a time, for ever: each byte arrives
    within any read timeout, and the headers never end."""
    return Reply(kind="drip_headers", delay=every)


def huge(megabytes: int = 60, *, declared: bool = False) -> Reply:
    """A 200 whose body is ``megabytes`` long, sent in pieces (chunked unless ``declared``)."""
    return Reply(kind="huge", status=megabytes, headers={"declared": str(declared)})


def deep_line(depth: int = 100_000) -> Reply:
    """Stream one line of JSON nested ``depth`` deep (deeper than any parser's stack)."""
    return Reply(kind="deep_line", status=depth)


def malformed() -> Reply:
    return Reply(kind="malformed")


def cut(text: str = "Hello there, friend, how are you today") -> Reply:
    return Reply(kind="cut", text=text)


def unterminated(text: str = "Hello there, friend") -> Reply:
    return Reply(kind="unterminated", text=text)


def stall(text: str = "Hello there, friend, how are you today", *, framed: bool = True) -> Reply:
    """Send the first half of the answer, then nothing more (for up to a minute).

    ``framed=False`` sends the body without a length or chunking, so that its end is the
    connection's close (HTTP/1.1 allows it): a client that shuts the socket at its deadline
    then reads what looks like a clean end.
    """
    return Reply(kind="stall" if framed else "stall_unframed", text=text, delay=60.0)


def cut_unframed(
    text: str = "Hello there, friend, how are you today", *, mid_line: bool = False
) -> Reply:
    """A body ended by closing the connection, closed before the answer's end (with
    ``mid_line``, in the middle of a line)."""
    return Reply(kind="cut_unframed_line" if mid_line else "cut_unframed", text=text)


def bad_line() -> Reply:
    return Reply(kind="bad_line")


def error_line() -> Reply:
    """Stream a little, then an error object as the server's last line."""
    return Reply(kind="error_line")


#: Replies that send half an answer and never finish it.
UNFINISHED = frozenset({"stall", "stall_unframed", "cut_unframed", "cut_unframed_line"})


@dataclass(frozen=True)
class Received:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


class FakeLLMServer(ThreadingHTTPServer):
    """Serves ``/v1/chat/completions`` (SSE when streaming) and ``/api/chat`` (NDJSON)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[Received] = []
        self.fallback = ok()
        self.stopping = threading.Event()
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def script(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies``, then with ``fallback``."""
        self._script.extend(replies)

    def next_reply(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            return self._script.popleft() if self._script else self.fallback

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Writing to a client that gave up (timeouts) is expected here, not a failure.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeLLMServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def end_headers(self) -> None:
        # One request per connection keeps attempt counts exact (no stale keep-alive reuse).
        self.send_header("Connection", "close")
        super().end_headers()

    def do_POST(self) -> None:
        self.close_connection = True
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        received = Received(self.path, body, {k.lower(): v for k, v in self.headers.items()})
        reply = self.server.next_reply(received)
        if reply.kind == "drip":
            self._drip(bool(body.get("stream")), reply.delay)
            return
        if reply.kind == "drip_headers":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            for _ in range(int(60 / reply.delay)):  # capped: a broken client cannot hang us
                self.wfile.flush()
                if self.server.stopping.wait(reply.delay):
                    return
                self.wfile.write(b"a")
            return
        if reply.kind == "huge":
            self._huge(reply.status * 1024 * 1024, reply.headers["declared"] == "True")
            return
        if reply.kind in UNFINISHED:
            api = "openai" if self.path == "/v1/chat/completions" else "ollama"
            self._unfinished(api, reply, bool(body.get("stream")), body.get("model", "?"))
            return
        if reply.delay and self.server.stopping.wait(reply.delay):
            return
        api = {"/v1/chat/completions": "openai", "/api/chat": "ollama"}.get(self.path)
        if api is None:
            self._send(404, b'{"error": "not found"}')
        elif reply.kind == "status":
            self._send(reply.status, reply.body.encode(), reply.headers)
        elif reply.kind == "malformed":
            self._send(200, b"<html>this is not json")
        elif body.get("stream"):
            self._stream(api, reply, body.get("model", "?"))
        elif reply.kind == "cut":
            # Promise a longer body than we send, then hang up.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"choices": [')
        else:
            self._send(
                200,
                json.dumps(_completion(api, reply.text, body.get("model"), reply.finish)).encode(),
            )

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(payload)

    def _drip(self, streaming: bool, every: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        # A blank stream line (which carries nothing but is valid in both APIs), or a
        # space of a JSON body that never ends; capped so a broken client cannot hang us.
        piece = b"\n" if streaming else b" "
        for _ in range(int(60 / every)):
            if self.server.stopping.wait(every):
                return
            self.wfile.write(b"%X\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()

    def _unfinished(self, api: str, reply: Reply, streaming: bool, model: str) -> None:
        """Half an answer, then a stall or a close (see ``stall`` and ``cut_unframed``)."""
        framed = reply.kind == "stall"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if streaming else "application/json")
        if framed:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if streaming:
            pieces = [reply.text[i : i + 5] for i in range(0, len(reply.text), 5)]
            lines = [_stream_line(api, model, piece) for piece in pieces[: len(pieces) // 2]]
            if reply.kind == "cut_unframed_line":
                lines.append(_stream_line(api, model, "half")[:20])
            data = "".join(lines).encode()
        else:
            whole = json.dumps(_completion(api, reply.text, model, reply.finish)).encode()
            data = whole[: len(whole) // 2]
        self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data) if framed else data)
        self.wfile.flush()
        if reply.kind.startswith("stall"):
            self.server.stopping.wait(reply.delay)

    def _huge(self, size: int, declared: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if declared:
            self.send_header("Content-Length", str(size))
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        piece = b" " * 65536
        for _ in range(size // len(piece)):
            if self.server.stopping.is_set():
                return
            self.wfile.write(piece if declared else b"%X\r\n%s\r\n" % (len(piece), piece))
        if not declared:
            self.wfile.write(b"0\r\n\r\n")

    def _stream(self, api: str, reply: Reply, model: str) -> None:
        self.send_response(200)
        kind = "text/event-stream" if api == "openai" else "application/x-ndjson"
        self.send_header("Content-Type", kind)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        pieces = [reply.text[i : i + 5] for i in range(0, len(reply.text), 5)]
        if reply.kind == "cut":
            pieces = pieces[: len(pieces) // 2]
        lines = [_stream_line(api, model, piece) for piece in pieces]
        if reply.kind == "ok":
            lines += _stream_end(api, model, reply.finish)
        if reply.kind == "bad_line":
            lines.append("data: {not json\n\n" if api == "openai" else "{not json\n")
        if reply.kind == "deep_line":
            deep = "[" * reply.status + "]" * reply.status
            lines.append(f"data: {deep}\n\n" if api == "openai" else deep + "\n")
        if reply.kind == "error_line":
            error = {"error": {"message": "model overloaded"}}
            lines.append(
                f"data: {json.dumps(error)}\n\n" if api == "openai" else json.dumps(error) + "\n"
            )
        for line in lines:
            data = line.encode()
            self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        if reply.kind != "cut":  # a cut stream never sends the closing zero-length chunk
            self.wfile.write(b"0\r\n\r\n")


def _completion(api: str, text: str, model: Any, finish: str = "stop") -> dict[str, Any]:
    if api == "openai":
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
        }
    return {
        "model": model,
        "message": {"role": "assistant", "content": text},
        "done": True,
        "done_reason": finish,
        "prompt_eval_count": 5,
        "eval_count": 7,
    }


def _stream_line(api: str, model: str, piece: str) -> str:
    if api == "openai":
        delta = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        return f"data: {json.dumps(delta)}\n\n"
    return json.dumps({"model": model, "message": {"role": "assistant", "content": piece}}) + "\n"


def _stream_end(api: str, model: str, finish: str = "stop") -> list[str]:
    if api == "openai":
        last = {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        return [f"data: {json.dumps(last)}\n\n", "data: [DONE]\n\n"]
    done = {
        "model": model,
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": finish,
    }
    return [json.dumps({**done, "prompt_eval_count": 5, "eval_count": 7}) + "\n"]


@pytest.fixture(autouse=True)
def _clean_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own LLM settings must not leak into these tests."""
    for name in ("FLOWKIT_LLM", "OPENAI_BASE_URL", "OPENAI_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    httpd = FakeLLMServer()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        yield httpd
    finally:
        httpd.stopping.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def dead_url() -> str:
    """A loopback URL where nothing listens, so connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def make_llm(kind: str, url: str, **options: Any) -> HTTPChatLLM:
    """A client of ``kind`` for a server at ``url`` (its root), with fast retries."""
    settings: dict[str, Any] = {"timeout": 2.0, "max_retries": 2, "backoff": FAST}
    if kind == "openai":
        settings.update({"model": "gpt-test", "base_url": f"{url}/v1", **options})
        return OpenAICompatibleLLM(**settings)
    settings.update({"model": "llama-test", "base_url": url, **options})
    return OllamaLLM(**settings)


@pytest.fixture(params=["openai", "ollama"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def connect(kind: str) -> Iterator[Callable[..., HTTPChatLLM]]:
    """Build clients of the parametrized kind; all are closed after the test."""
    made: list[HTTPChatLLM] = []

    def build(url: str, **options: Any) -> HTTPChatLLM:
        made.append(make_llm(kind, url, **options))
        return made[-1]

    yield build
    for llm in made:
        llm.close()


def complete(llm: Any, mode: str, messages: Any = USER, **options: Any) -> LLMResponse:
    """``llm.complete`` or ``llm.acomplete`` in a fresh event loop."""
    if mode == "sync":
        result: LLMResponse = llm.complete(messages, **options)
        return result
    return asyncio.run(llm.acomplete(messages, **options))  # type: ignore[no-any-return]


def stream(llm: Any, mode: str, into: list[Chunk], messages: Any = USER) -> list[Chunk]:
    """Collect ``stream``/``astream`` chunks into ``into`` (kept if the stream raises)."""
    if mode == "sync":
        for chunk in llm.stream(messages):
            into.append(chunk)
        return into

    async def collect() -> None:
        async for chunk in llm.astream(messages):
            into.append(chunk)

    asyncio.run(collect())
    return into
