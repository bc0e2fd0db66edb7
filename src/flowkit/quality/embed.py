"""Embedders for ``semantic_search`` re-mapping: texts in, vectors out (seed 003 §3.3).

``NGramEmbedder`` is the offline default: hashed character 1-3-grams of the NFKC-normalised
text, so it needs no model and works the same on Japanese (no spaces between words) as on
English. ``SentenceTransformerEmbedder`` puts a real sentence-embedding model behind the same
protocol (``pip install "flowkit[quality-embeddings]"``; the model must be on disk or
downloadable where it runs).
"""

from __future__ import annotations

import math
import unicodedata
import zlib
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from .errors import QualityInputError

__all__ = ["Embedder", "NGramEmbedder", "SentenceTransformerEmbedder", "cosine"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors whose cosine similarity says how alike the texts are."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0.0 when either is all zeros)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


class NGramEmbedder:
    """Hashed character n-gram counts (``sizes`` 1-3 by default) in ``dims`` buckets, L2-normed.

    Whitespace is dropped and the text NFKC-normalised and case-folded first, so full-width
    and half-width forms, letter case, line breaks and spacing do not count as differences.
    """

    def __init__(self, *, sizes: Sequence[int] = (1, 2, 3), dims: int = 2048) -> None:
        if not sizes or any(n < 1 for n in sizes) or dims < 16:
            raise QualityInputError("NGramEmbedder needs n-gram sizes >= 1 and dims >= 16.")
        self.sizes = tuple(sizes)
        self.dims = dims

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[float]:
        clean = "".join(unicodedata.normalize("NFKC", text).casefold().split())
        vector = [0.0] * self.dims
        for n in self.sizes:
            weight = float(n)  # longer grams say more about order
            for i in range(len(clean) - n + 1):
                bucket = zlib.crc32(clean[i : i + n].encode("utf-8")) % self.dims
                vector[bucket] += weight
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector


class SentenceTransformerEmbedder:
    """A ``sentence-transformers`` model as an ``Embedder`` (imported when first used)."""

    def __init__(self, model: str = "paraphrase-multilingual-MiniLM-L12-v2") -> None:
        self.model_name = model
        self._model: Any = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found,unused-ignore]
            except ImportError as exc:
                raise QualityInputError(
                    "SentenceTransformerEmbedder needs sentence-transformers: "
                    'pip install "flowkit[quality-embeddings]" (or use NGramEmbedder, the '
                    "offline default)."
                ) from exc
            self._model = SentenceTransformer(self.model_name)
        vectors = self._model.encode(list(texts), normalize_embeddings=True)
        return [[float(x) for x in v] for v in vectors]
