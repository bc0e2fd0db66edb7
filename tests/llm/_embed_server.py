"""The loopback fake LLM server of ``conftest``, also speaking the embeddings APIs.

``/v1/embeddings`` (OpenAI-compatible) and ``/api/embed`` (Ollama) answer with a small
vector made from each text, so a test can tell which text a vector belongs to; the scripted
replies of ``conftest`` (``fail``, ``slow``, ``drip``, ``huge``, ``malformed``) work as for
chat. A bad answer is scripted as ``fail(200, body=...)``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from flowkit.llm import OllamaEmbeddings, OpenAIEmbeddings
from flowkit.llm._http_embed import HTTPEmbeddings

from .conftest import FAST, FakeLLMServer, Received, _Handler

__all__ = ["DIMS", "embed_server", "make_embeddings", "vector_of"]

#: Length of the fake server's vectors.
DIMS = 4
_PATHS = {"/v1/embeddings": "openai", "/api/embed": "ollama"}


def vector_of(text: str) -> list[float]:
    """The fake server's vector for ``text``: its length, first and last code point, 1."""
    return [float(len(text)), float(ord(text[0])), float(ord(text[-1])), 1.0]


def answer(api: str, texts: list[str], model: Any) -> dict[str, Any]:
    """An embeddings answer of ``api``; OpenAI's items in reverse order, as the API may."""
    if api == "openai":
        data = [
            {"object": "embedding", "index": i, "embedding": vector_of(t)}
            for i, t in enumerate(texts)
        ]
        return {"object": "list", "data": data[::-1], "model": model, "usage": {}}
    return {"model": model, "embeddings": [vector_of(t) for t in texts]}


class _EmbedHandler(_Handler):
    def do_POST(self) -> None:
        api = _PATHS.get(self.path)
        if api is None:
            super().do_POST()
            return
        self.close_connection = True
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        received = Received(self.path, body, {k.lower(): v for k, v in self.headers.items()})
        reply = self.server.next_reply(received)
        if reply.kind == "drip":
            self._drip(False, reply.delay)
            return
        if reply.kind == "huge":
            self._huge(reply.status * 1024 * 1024, reply.headers["declared"] == "True")
            return
        if reply.delay and self.server.stopping.wait(reply.delay):
            return
        if reply.kind == "status":
            self._send(reply.status, reply.body.encode(), reply.headers)
        elif reply.kind == "malformed":
            self._send(200, b"<html>this is not json")
        else:
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            self._send(200, json.dumps(answer(api, texts, body.get("model"))).encode())


@pytest.fixture
def embed_server() -> Iterator[FakeLLMServer]:
    """The fake server, answering embeddings requests too."""
    httpd = FakeLLMServer()
    httpd.RequestHandlerClass = _EmbedHandler
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        yield httpd
    finally:
        httpd.stopping.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def make_embeddings(kind: str, url: str, **options: Any) -> HTTPEmbeddings:
    """An embeddings client of ``kind`` for a server at ``url`` (its root), fast retries."""
    settings: dict[str, Any] = {"timeout": 2.0, "max_retries": 2, "backoff": FAST}
    if kind == "openai":
        settings.update({"model": "embed-test", "base_url": f"{url}/v1", **options})
        return OpenAIEmbeddings(**settings)
    settings.update({"model": "embed-test", "base_url": url, **options})
    return OllamaEmbeddings(**settings)


@pytest.fixture
def connect_embeddings(kind: str) -> Iterator[Callable[..., HTTPEmbeddings]]:
    """Build embeddings clients of the parametrized kind; all are closed after the test."""
    made: list[HTTPEmbeddings] = []

    def build(url: str, **options: Any) -> HTTPEmbeddings:
        made.append(make_embeddings(kind, url, **options))
        return made[-1]

    yield build
    for client in made:
        client.close()
