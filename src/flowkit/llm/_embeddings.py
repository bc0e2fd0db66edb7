"""The embeddings boundary: the ``Embeddings`` protocol, the checks on the texts that go out
and on the vectors that come back.

A vector that is short, long, not numbers, NaN or infinite, or one too many or too few for
the texts sent, would make every similarity computed with it wrong without a trace; so every
backend (HTTP, replay) hands over only vectors that passed ``checked_vectors``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from flowkit.errors import LLMConfigError

__all__ = [
    "BadVectorsError",
    "Embeddings",
    "batches",
    "check_dimensions",
    "check_texts",
    "checked_vectors",
]


@runtime_checkable
class Embeddings(Protocol):
    """An embedding model: texts in, one vector per text out, in the same order.

    ``embed([])`` is ``[]`` without a request. Every failure is a
    :class:`flowkit.errors.LLMError`, as with chat models.
    """

    @property
    def model(self) -> str:
        """The model name requests are sent with."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text."""
        ...

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Same as :meth:`embed`, without blocking the event loop."""
        ...


class BadVectorsError(ValueError):
    """An answer whose vectors cannot be used; the message says what is wrong with them."""


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, or ``LLMConfigError`` naming the first text that cannot be sent.

    A lone string is refused (it would be embedded a character at a time), and so is an
    empty string: embedding servers reject it, or embed nothing but their special tokens.
    """
    if isinstance(texts, str | bytes) or not isinstance(texts, Sequence):
        raise LLMConfigError(
            f"Pass the texts to embed as a list of strings, not {type(texts).__name__} "
            '(embed(["one text"]) for a single one).'
        )
    checked = list(texts)
    for index, text in enumerate(checked):
        if not isinstance(text, str):
            raise LLMConfigError(
                f"Text {index} to embed is {type(text).__name__}, not a string; pass strings."
            )
        if not text:
            raise LLMConfigError(
                f"Text {index} to embed is empty; embedding servers refuse empty input. "
                "Leave it out (it has no meaning to compare)."
            )
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise LLMConfigError(
                    f"Text {index} to embed is not valid Unicode (a lone surrogate); decode "
                    "bytes as UTF-8."
                ) from None
    return checked


def check_dimensions(dimensions: int | None) -> int | None:
    """``dimensions`` if it is ``None`` or an integer > 0, else ``LLMConfigError``."""
    if dimensions is None:
        return None
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions <= 0:
        raise LLMConfigError(f"dimensions must be an integer > 0 or None, not {dimensions!r}.")
    return dimensions


def batches(texts: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """``texts`` in consecutive slices of at most ``size``."""
    for start in range(0, len(texts), size):
        yield texts[start : start + size]


def checked_vectors(raw: Any, count: int, dimensions: int | None) -> list[list[float]]:
    """``raw`` as ``count`` vectors of floats, all of one length (``dimensions`` when given).

    Raises:
        BadVectorsError: not a list of ``count`` lists, a vector empty or of another length, an
            item that is not a number (booleans included), or NaN or infinite.
    """
    if not isinstance(raw, list):
        raise BadVectorsError(f"the vectors are {type(raw).__name__}, not a list")
    if len(raw) != count:
        raise BadVectorsError(f"it gave {len(raw)} vector(s) for {count} text(s)")
    vectors: list[list[float]] = []
    for index, vector in enumerate(raw):
        if not isinstance(vector, list) or not vector:
            raise BadVectorsError(f"vector {index} is not a non-empty list of numbers")
        want = dimensions if dimensions is not None else len(vectors[0]) if vectors else None
        if want is not None and len(vector) != want:
            raise BadVectorsError(
                f"vector {index} has {len(vector)} dimensions, not {want}; vectors of "
                "different lengths (different models) cannot be compared"
            )
        floats = []
        for position, item in enumerate(vector):
            if isinstance(item, bool) or not isinstance(item, int | float):
                raise BadVectorsError(
                    f"vector {index} holds {type(item).__name__} at {position}, not a number"
                )
            try:
                number = float(item)
            except OverflowError:  # an integer past float's range
                number = math.inf
            if not math.isfinite(number):
                raise BadVectorsError(
                    f"vector {index} holds {number} at {position}, not a finite number"
                )
            floats.append(number)
        vectors.append(floats)
    return vectors
