"""A loopback HTTP server that answers chat requests with tool calls, in each API's own format.

OpenAI: ``message.tool_calls[].function.arguments`` is a JSON *string*; streamed, a call
arrives in deltas keyed by ``index`` (id and name first, then pieces of the arguments) and
the answer ends with ``finish_reason: "tool_calls"``. Ollama: ``arguments`` is an *object*,
calls carry no id, and a stream sends each call whole in one NDJSON line.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Call:
    """A tool call the server makes the model ask for; ``raw`` sends exactly that text as
    the arguments (OpenAI only: Ollama's server parses arguments itself)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw: str | None = None


@dataclass(frozen=True)
class Turn:
    """One answer: text, or tool calls (with some text before them, as models do)."""

    text: str = ""
    calls: tuple[Call, ...] = ()


def says(text: str) -> Turn:
    return Turn(text=text)


def calls(*made: Call, text: str = "") -> Turn:
    return Turn(text=text, calls=made)


class ToolServer(ThreadingHTTPServer):
    """Serves ``/v1/chat/completions`` and ``/api/chat``; answers the scripted turns in order."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self._turns: deque[Turn] = deque()
        self._lock = threading.Lock()
        self._ids = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def script(self, *turns: Turn) -> None:
        self._turns.extend(turns)

    def next_turn(self, body: dict[str, Any]) -> tuple[Turn, int]:
        with self._lock:
            self.requests.append(body)
            turn = self._turns.popleft() if self._turns else Turn(text="(no more turns)")
            first = self._ids
            self._ids += len(turn.calls)
            return turn, first

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ToolServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def end_headers(self) -> None:
        self.send_header("Connection", "close")
        super().end_headers()

    def do_POST(self) -> None:
        self.close_connection = True
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        api = {"/v1/chat/completions": "openai", "/api/chat": "ollama"}.get(self.path)
        if api is None:
            self._send(404, b'{"error": "not found"}', "application/json")
            return
        turn, first = self.server.next_turn(body)
        model = body.get("model", "?")
        if body.get("stream"):
            lines = (_openai_stream if api == "openai" else _ollama_stream)(turn, first, model)
            kind = "text/event-stream" if api == "openai" else "application/x-ndjson"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for line in lines:
                data = line.encode()
                self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        answer = (_openai_answer if api == "openai" else _ollama_answer)(turn, first, model)
        self._send(200, json.dumps(answer).encode(), "application/json")

    def _send(self, status: int, payload: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _arguments_text(call: Call) -> str:
    return call.raw if call.raw is not None else json.dumps(call.arguments)


def _openai_answer(turn: Turn, first: int, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.calls:
        message["tool_calls"] = [
            {
                "id": f"call_{first + i}",
                "type": "function",
                "function": {"name": c.name, "arguments": _arguments_text(c)},
            }
            for i, c in enumerate(turn.calls)
        ]
    return {
        "id": "chatcmpl-t",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if turn.calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


def _ollama_answer(turn: Turn, first: int, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.calls:
        message["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.arguments}} for c in turn.calls
        ]
    return {
        "model": model,
        "message": message,
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 11,
        "eval_count": 3,
    }


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data)}\n\n"


def _openai_stream(turn: Turn, first: int, model: str) -> list[str]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return _sse(
            {
                "id": "chatcmpl-t",
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    lines = [chunk({"role": "assistant", "content": ""})]
    lines += [chunk({"content": turn.text[i : i + 4]}) for i in range(0, len(turn.text), 4)]
    # Each call: id, type and name first with empty arguments, then the arguments in
    # pieces of 5 characters; the pieces of two calls interleave, as parallel calls do.
    pieces = {i: _arguments_text(c) for i, c in enumerate(turn.calls)}
    for i, c in enumerate(turn.calls):
        head = {
            "index": i,
            "id": f"call_{first + i}",
            "type": "function",
            "function": {"name": c.name, "arguments": ""},
        }
        lines.append(chunk({"tool_calls": [head]}))
    offset = 0
    while any(offset < len(text) for text in pieces.values()):
        for i, text in pieces.items():
            if offset < len(text):
                part = {"index": i, "function": {"arguments": text[offset : offset + 5]}}
                lines.append(chunk({"tool_calls": [part]}))
        offset += 5
    lines.append(chunk({}, "tool_calls" if turn.calls else "stop"))
    lines.append("data: [DONE]\n\n")
    return lines


def _ollama_stream(turn: Turn, first: int, model: str) -> list[str]:
    def line(message: dict[str, Any], **extra: Any) -> str:
        return json.dumps({"model": model, "message": message, **extra}) + "\n"

    lines = [
        line({"role": "assistant", "content": turn.text[i : i + 4]})
        for i in range(0, len(turn.text), 4)
    ]
    for c in turn.calls:
        call = {"function": {"name": c.name, "arguments": c.arguments}}
        lines.append(line({"role": "assistant", "content": "", "tool_calls": [call]}))
    lines.append(
        line(
            {"role": "assistant", "content": ""},
            done=True,
            done_reason="stop",
            prompt_eval_count=11,
            eval_count=3,
        )
    )
    return lines


@pytest.fixture
def tool_server() -> Iterator[ToolServer]:
    httpd = ToolServer()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
