"""``with`` and ``async with`` for a client whose ``close()`` releases its connections."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self

__all__ = ["ClosesOnExit"]


class ClosesOnExit(ABC):
    """Leaving a ``with`` or ``async with`` block calls ``close()``."""

    @abstractmethod
    def close(self) -> None:
        """Release pooled connections; a later call opens new ones."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
