"""Record embeddings from any model and replay them from a cassette, offline.

An embedding is recorded per text, as a call in the cassette format of the chat calls
(``save_cassette`` / ``load_cassette``): its request is one message ``{"role": "embed",
"content": text}``, its response's ``parsed`` the vector. So one cassette may hold a run's
chat and embedding calls, a replayed text finds its vector whatever batch it comes in, and
the matching, the content keys and the mismatch errors are ``ReplayLLM``'s own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Self

from flowkit.errors import LLMConfigError
from flowkit.llm._cassette import read_cassette
from flowkit.llm._embeddings import BadVectorsError, Embeddings, check_texts, checked_vectors
from flowkit.llm._types import LLMResponse
from flowkit.llm.recording import call_record
from flowkit.llm.replay import ReplayLLM

__all__ = ["EMBED_ROLE", "RecordingEmbeddings", "ReplayEmbeddings", "embedding_record"]

#: The role of the one message of a recorded embedding.
EMBED_ROLE = "embed"

Sink = Callable[[dict[str, Any]], None]


def embedding_record(text: str, vector: Sequence[float], model: str) -> dict[str, Any]:
    """The record of one text's embedding, in the shape ``save_cassette`` writes."""
    response = LLMResponse(text="", parsed=list(vector), model=model)
    return call_record([{"role": EMBED_ROLE, "content": text}], None, model, response)


class RecordingEmbeddings:
    """Delegate to ``inner``; hand ``sink`` a record for each text embedded the first time.

    A text embedded again is not recorded again: the model gives it the same vector.
    Failed calls are not recorded.
    """

    def __init__(self, inner: Embeddings, sink: Sink) -> None:
        self.inner = inner
        self._sink = sink
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RecordingEmbeddings({self.inner!r})"

    @property
    def model(self) -> str:
        """The wrapped model's name."""
        return self.inner.model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed with the wrapped model and record the new texts."""
        vectors = self.inner.embed(texts)
        self._record(texts, vectors)
        return vectors

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Async version of :meth:`embed`."""
        vectors = await self.inner.aembed(texts)
        self._record(texts, vectors)
        return vectors

    def _record(self, texts: Sequence[str], vectors: list[list[float]]) -> None:
        for text, vector in zip(texts, vectors, strict=True):
            with self._lock:
                if text in self._seen:
                    continue
                self._seen.add(text)
            self._sink(embedding_record(text, vector, self.model))


class _Answers(ReplayLLM):
    # An embedding is the same however often its text is asked for.
    repeats: ClassVar[bool] = True


class ReplayEmbeddings:
    """Embeddings answered from recorded calls; an unrecorded text raises
    ``ReplayMismatchError`` (never a made-up vector).

    ``calls`` may hold chat calls too; only the embedding records answer here. Every vector
    is checked as a server's would be (finite numbers, one length).
    """

    def __init__(
        self,
        calls: Sequence[Mapping[str, Any]],
        *,
        model: str | None = None,
        source: str | None = None,
        record_with: str | None = None,
        show_prompts: bool | None = None,
    ) -> None:
        self._replay = _Answers(
            calls,
            model=model,
            source=source,
            record_with=record_with,
            show_prompts=show_prompts,
        )
        self.dimensions: int | None = None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, show_prompts: bool | None = None) -> Self:
        """Replay the embeddings of a cassette file written by ``save_cassette``."""
        data = read_cassette(path)
        record_with = data.get("record_with")
        return cls(
            data["calls"],
            source=str(path),
            record_with=record_with if isinstance(record_with, str) else None,
            show_prompts=show_prompts,
        )

    def __repr__(self) -> str:
        return f"ReplayEmbeddings(model={self.model!r})"

    @property
    def model(self) -> str:
        """The recorded model's name (or the one given)."""
        return self._replay.model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The recorded vector of each text."""
        checked = check_texts(texts)
        raw = [
            self._replay.complete([{"role": EMBED_ROLE, "content": text}]).parsed
            for text in checked
        ]
        try:
            vectors = checked_vectors(raw, len(checked), self.dimensions)
        except BadVectorsError as exc:
            where = f" in cassette {self._replay.source}" if self._replay.source else ""
            raise LLMConfigError(
                f"A recorded embedding{where} cannot be used: {exc}. Record it again."
            ) from exc
        if vectors and self.dimensions is None:
            self.dimensions = len(vectors[0])
        return vectors

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Same as :meth:`embed`; nothing here blocks on I/O."""
        return self.embed(texts)
