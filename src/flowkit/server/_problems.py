"""Errors as HTTP problems (RFC 9457): every failure is ``application/problem+json`` with a
stable ``code`` that clients switch on, a status, and a detail that says what to do.

``FlowkitError`` subclasses map by class (most specific first); anything unexpected is a 500
whose detail says nothing about the server's insides. Details of 5xx problems never carry the
error's own message (it may name files or hold data); the log line names only the error type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import (
    CheckpointNotFoundError,
    ConflictError,
    CorruptStoreError,
    FlowkitError,
    InputTooDeepError,
    InputTooLargeError,
    InvalidResumeInputError,
    InvalidStateError,
    InvalidThreadIdError,
    InvalidUpdateError,
    InvariantViolation,
    LLMError,
    NotWaitingError,
    RunCancelledError,
    RunError,
    StepLimitError,
    StoreError,
    ThreadExistsError,
    ThreadNotFoundError,
    UnknownGateError,
    UnstorableValueError,
    UntrustedInputError,
)

__all__ = ["PROBLEM_JSON", "Problem", "field_errors", "problem_of"]

PROBLEM_JSON = "application/problem+json"

#: Class -> (HTTP status, code); the first class the error is an instance of wins.
_MAPPING: Sequence[tuple[type[FlowkitError], int, str]] = (
    (ThreadNotFoundError, 404, "thread_not_found"),
    (CheckpointNotFoundError, 404, "checkpoint_not_found"),
    (ThreadExistsError, 409, "thread_exists"),
    (NotWaitingError, 409, "not_waiting"),
    (ConflictError, 409, "conflict"),
    (StepLimitError, 409, "step_limit"),
    (RunCancelledError, 409, "run_cancelled"),
    (UnknownGateError, 422, "unknown_gate"),
    (InvalidResumeInputError, 422, "invalid_gate_input"),
    (InvariantViolation, 422, "invariant_violation"),
    (InvalidStateError, 422, "invalid_state"),
    (InvalidUpdateError, 422, "invalid_update"),
    (InvalidThreadIdError, 422, "invalid_thread_id"),
    (UnstorableValueError, 422, "unstorable_value"),
    (InputTooLargeError, 413, "request_too_large"),
    (InputTooDeepError, 422, "request_too_deep"),
    (UntrustedInputError, 422, "invalid_request"),
    (RunError, 409, "run_error"),
    (CorruptStoreError, 500, "corrupt_store"),
    (StoreError, 500, "store_error"),
    (LLMError, 502, "llm_error"),
)

_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Request too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    500: "Internal server error",
    501: "Not implemented",
    502: "Bad gateway",
    503: "Service unavailable",
}


class Problem(Exception):  # noqa: N818 - RFC 9457's name; raised by routes, sent as is
    """An HTTP problem raised by the server's own code (``code`` is the stable part)."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        extra: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.detail = detail
        self.extra = dict(extra or {})
        self.headers = dict(headers or {})
        super().__init__(detail)

    def body(self) -> dict[str, Any]:
        return {
            "type": f"urn:flowkit:problem:{self.code}",
            "title": _TITLES.get(self.status, "Error"),
            "status": self.status,
            "code": self.code,
            "detail": self.detail,
            **self.extra,
        }


def problem_of(exc: FlowkitError) -> Problem:
    """The problem a flowkit error stands for."""
    status, code = next(
        ((status, code) for cls, status, code in _MAPPING if isinstance(exc, cls)),
        (500, "flowkit_error"),
    )
    extra: dict[str, Any] = {}
    thread_id = getattr(exc, "thread_id", None)
    if status < 500:
        detail = str(exc)
        if isinstance(thread_id, str) and thread_id and code != "invalid_thread_id":
            extra["thread_id"] = thread_id
        if isinstance(exc, InvalidResumeInputError):
            extra["gate"] = exc.gate
            extra["errors"] = field_errors(exc.errors)
        elif isinstance(exc, UnknownGateError):
            extra["gates"] = list(dict.fromkeys(exc.gates))
        elif isinstance(exc, ConflictError) and exc.actual is not None:
            extra["version"] = exc.actual
    elif code == "llm_error":
        detail = (
            f"The language model call failed ({type(exc).__name__}); the thread keeps its last "
            "saved step. Try again later."
        )
    else:
        detail = (
            f"The server could not complete the request ({type(exc).__name__}); the server's "
            "log has the error type. Nothing more is shown here."
        )
    return Problem(status, code, detail, extra=extra)


def field_errors(errors: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Validation errors as ``{loc, msg, type}``: never the input, which may be personal."""
    return [
        {
            "loc": [part if isinstance(part, int) else str(part) for part in e.get("loc", ())],
            "msg": str(e.get("msg", "")),
            "type": str(e.get("type", "")),
        }
        for e in errors
    ]
