"""Roundtable fixtures: a three-character table as data, scripted LLMs that answer turn by
turn, a fixed clock, and a loopback server speaking the OpenAI and Ollama chat APIs."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from flowkit import Runner
from flowkit.testing import ScriptedLLM

NOON = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)
SUMMARY = {"summary": "天気の話をした。", "keywords": ["天気", "晴れ", "雨", "気圧", "要点"]}


def noon() -> datetime:
    return NOON


def table(**changes: Any) -> dict[str, Any]:
    """The origin's three characters, each with a persona, as configuration data."""
    data: dict[str, Any] = {
        "name": "trio",
        "language": "ja",
        "characters": [
            {"id": "LUMINA", "display_name": "ルミナ", "short_name": "る", "persona": "進行役。"},
            {"id": "CLARIS", "display_name": "クラリス", "short_name": "く", "persona": "解説役。"},
            {"id": "NOX", "display_name": "ノクス", "short_name": "の", "persona": "要約役。"},
        ],
    }
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return data


def turns(model: str, *replies: Any) -> ScriptedLLM:
    """An LLM answering its character's turns with ``replies`` in order (then "…。"), and the
    round summary request with ``SUMMARY``. A reply may be an exception to raise."""
    queue = list(replies)

    def next_reply(prompt: str) -> Any:
        return queue.pop(0) if queue else "以上です。"

    def is_summary_request(prompt: str) -> bool:
        return prompt.startswith(("次の会話を要約", "Summarise"))

    llm = ScriptedLLM(
        [(is_summary_request, SUMMARY)], default=next_reply, model=model, match_on="prompt"
    )
    return llm


def path_of(runner: Runner[Any], thread: str, start: int = 0) -> list[str]:
    """The nodes a thread ran after checkpoint ``start``, in order."""
    return [c.node or "" for c in runner.history(thread)[start + 1 :] if c.kind == "step"]


# -- a loopback server for the OpenAI and Ollama chat APIs ----------------------------------


class LoopbackLLMServer(ThreadingHTTPServer):
    """Answers ``/v1/chat/completions`` and ``/api/chat`` with ``answer(model, body)`` and
    records every request (path, body, headers)."""

    daemon_threads = True

    def __init__(self, answer: Callable[[str, dict[str, Any]], str]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answer = answer
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LoopbackLLMServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        with self.server.lock:
            self.server.requests.append(
                (self.path, body, {k.lower(): v for k, v in self.headers.items()})
            )
        model = str(body.get("model"))
        text = self.server.answer(model, body)
        if self.path == "/v1/chat/completions":
            data: dict[str, Any] = {
                "id": "x",
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
            }
        elif self.path == "/api/chat":
            data = {"model": model, "message": {"role": "assistant", "content": text}, "done": True}
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        payload = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def loopback() -> Iterator[Callable[[Callable[[str, dict[str, Any]], str]], LoopbackLLMServer]]:
    servers: list[tuple[LoopbackLLMServer, threading.Thread]] = []

    def serve(answer: Callable[[str, dict[str, Any]], str]) -> LoopbackLLMServer:
        httpd = LoopbackLLMServer(answer)
        thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02})
        thread.start()
        servers.append((httpd, thread))
        return httpd

    yield serve
    for httpd, thread in servers:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture(autouse=True)
def _clean_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "FLOWKIT_LLM",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OLLAMA_HOST",
        "FLOWKIT_LOG_CONTENT",
    ):
        monkeypatch.delenv(name, raising=False)
