"""Embedders for ``semantic_search`` re-mapping: texts in, vectors out (seed 003 §3.3).

``NGramEmbedder`` is the offline default: hashed character 1-3-grams of the NFKC-normalised
text, so it needs no model and works the same on Japanese (no spaces between words) as on
English. ``SentenceTransformerEmbedder`` puts a real sentence-embedding model behind the same
protocol (``pip install 'flowkit-workflows[quality-embeddings]'``; the model must be on disk or
downloadable where it runs). ``ModelEmbedder`` puts any ``flowkit.llm.Embeddings`` behind it:
an embedding model over HTTP (``/v1/embeddings``, Ollama's ``/api/embed``) or a replayed
cassette. ``embedder_from_spec`` picks one by name, as ``flowkit quality check --embedder`` and
``$FLOWKIT_QUALITY_EMBEDDER`` do.
"""

from __future__ import annotations

import math
import os
import unicodedata
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..foundation._distribution import install_hint
from .errors import QualityInputError

if TYPE_CHECKING:
    from ..llm import Embeddings

__all__ = [
    "EMBEDDER_ENV",
    "SIMILARITY_ENV",
    "Embedder",
    "ModelEmbedder",
    "NGramEmbedder",
    "SentenceTransformerEmbedder",
    "cosine",
    "default_embedder",
    "embedder_from_spec",
]

#: The embedder the quality workflow uses when none is passed: a spec for
#: :func:`embedder_from_spec` (unset: ``ngram``).
EMBEDDER_ENV = "FLOWKIT_QUALITY_EMBEDDER"
#: The ``similarity_threshold`` of the model ``EMBEDDER_ENV`` names (unset: the seed's 0.8).
SIMILARITY_ENV = "FLOWKIT_QUALITY_SIMILARITY"


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
                    f"{install_hint('quality-embeddings')} (or use NGramEmbedder, the "
                    "offline default)."
                ) from exc
            self._model = SentenceTransformer(self.model_name)
        vectors = self._model.encode(list(texts), normalize_embeddings=True)
        return [[float(x) for x in v] for v in vectors]


class ModelEmbedder:
    """An embedding model (any ``flowkit.llm.Embeddings``) as an ``Embedder``.

    ``similarity_threshold`` is the lowest cosine at which re-mapping takes a passage for the
    range on this model's scale (``None``: the seed's 0.8). A neural model's cosines run high:
    with multilingual-e5-small, unrelated sentences of one story score 0.8-0.9, so it needs
    about 0.95. A blank text has no meaning to compare: it gets a zero vector (cosine 0 with
    anything), as with ``NGramEmbedder``, and is not sent. The model's failures are
    ``LLMError``s.
    """

    def __init__(
        self, embeddings: Embeddings, *, similarity_threshold: float | None = None
    ) -> None:
        self.embeddings = embeddings
        self.similarity_threshold = _threshold(similarity_threshold)
        self._dims: int | None = None

    def __repr__(self) -> str:
        return f"ModelEmbedder({self.embeddings!r})"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            raise QualityInputError("Embedder.embed takes a list of texts, not one string.")
        wanted = [i for i, text in enumerate(texts) if text.strip()]
        found = self.embeddings.embed([texts[i] for i in wanted]) if wanted else []
        if found:
            self._dims = len(found[0])
        elif self._dims is None:
            # Only blank texts, before any answer: the zero vectors need the model's length.
            self._dims = len(self.embeddings.embed(["."])[0])
        vectors = [[0.0] * self._dims for _ in texts]
        for index, vector in zip(wanted, found, strict=True):
            vectors[index] = vector
        return vectors

    def close(self) -> None:
        """Release the model's connections, if it holds any."""
        close = getattr(self.embeddings, "close", None)
        if callable(close):
            close()


def embedder_from_spec(spec: str, *, similarity_threshold: float | None = None) -> Embedder:
    """The embedder a spec names: ``ngram`` (the offline default), or an embeddings spec of
    :func:`flowkit.llm.embeddings_from_spec` (``openai:MODEL``, ``ollama:MODEL``,
    ``replay:PATH``) behind a :class:`ModelEmbedder` with ``similarity_threshold``.

    Raises:
        QualityInputError: a spec in none of these forms (it says which are valid), or a
            threshold not in (0, 1].
    """
    if not isinstance(spec, str) or not spec.strip():
        raise QualityInputError(
            "An embedder spec is `ngram` or an embeddings spec such as `openai:MODEL`."
        )
    threshold = _threshold(similarity_threshold)
    if spec.strip().lower() == "ngram":
        return NGramEmbedder()
    from ..errors import LLMConfigError
    from ..llm import embeddings_from_spec

    try:
        return ModelEmbedder(embeddings_from_spec(spec), similarity_threshold=threshold)
    except LLMConfigError as exc:
        raise QualityInputError(f"Embedder {spec!r}: {exc} (or `ngram`, the default).") from exc


def default_embedder() -> Embedder:
    """The embedder ``$FLOWKIT_QUALITY_EMBEDDER`` names, else ``NGramEmbedder``; a model's
    ``similarity_threshold`` from ``$FLOWKIT_QUALITY_SIMILARITY`` (unset: 0.8)."""
    spec = os.environ.get(EMBEDDER_ENV, "").strip()
    if not spec:
        return NGramEmbedder()
    given = os.environ.get(SIMILARITY_ENV, "").strip()
    try:
        threshold = float(given) if given else None
    except ValueError:
        raise QualityInputError(
            f"{SIMILARITY_ENV}={given[:20]!r} is not a number; give a cosine in (0, 1], e.g. 0.95."
        ) from None
    try:
        return embedder_from_spec(spec, similarity_threshold=threshold)
    except QualityInputError as exc:
        raise QualityInputError(f"{EMBEDDER_ENV}: {exc}") from exc.__cause__


def _threshold(value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise QualityInputError(
            f"similarity_threshold {value!r} is not a cosine in (0, 1]; e.g. 0.95 for "
            "multilingual-e5-small, or None for the seed's 0.8."
        )
    return float(value)
