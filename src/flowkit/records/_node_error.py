"""A node's failure as the run records it: in state, the journal, events and results."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..errors import FlowkitError
from ..foundation._logging import mask_text
from ..foundation._transient import is_transient

__all__ = ["ERROR_TEXTS", "ErrorText", "NodeError", "is_retryable"]

#: How a ``NodeError`` keeps its exception's text: ``"masked"`` (e-mail addresses, phone
#: numbers and secrets replaced by ``***``, as in log lines) or ``"raw"`` (as it was).
ErrorText = Literal["masked", "raw"]
ERROR_TEXTS: tuple[ErrorText, ...] = ("masked", "raw")


def is_retryable(error: BaseException) -> bool:
    """The default rule: flowkit's errors marked ``retryable``, and transient network
    failures (see ``_transient``)."""
    if isinstance(error, FlowkitError):
        return error.retryable
    return is_transient(error)


def _text_of(exc: BaseException) -> str:
    """``str(exc)``, or its type's name when that is empty or cannot be read (a ``__str__``
    that raises must not turn a recorded node failure into an engine crash)."""
    try:
        text = str(exc)
    except Exception:  # any failure of foreign code: fall back to the type
        return f"{type(exc).__name__} (its message could not be read)"
    return text or type(exc).__name__


class NodeError(BaseModel):
    """A node failure recorded in state: routed by tables like any other field.

    ``message`` is the exception's text, masked unless the runner keeps it raw
    (``Runner(..., error_text="raw")``): state, journal, events and the CLI all show it.
    """

    model_config = ConfigDict(frozen=True)

    type: str
    message: str
    node: str
    retryable: bool = False
    attempts: int = 1

    @classmethod
    def from_exception(
        cls, exc: BaseException, *, node: str, attempts: int, text: ErrorText = "masked"
    ) -> NodeError:
        """The error of a node that raised ``exc``; its text masked unless ``text="raw"``.

        Masked here, where it is built, once: every reader gets the same text, and a node
        that succeeds never pays for it.
        """
        message = _text_of(exc)
        return cls(
            type=type(exc).__name__,
            message=message if text == "raw" else mask_text(message),
            node=node,
            retryable=is_retryable(exc),
            attempts=attempts,
        )
