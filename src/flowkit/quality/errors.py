"""The quality workflow's errors, its QC codes (seed 003 §7) and the tool error envelope.

Every error is a typed exception carrying its QC code (when the seed gives one) and a portable
code of the tool envelope::

    QualityError                          code            QC
    ├── QualityInputError                 validation_error
    ├── AccessDeniedError                 forbidden       (§6.2: not the initiator, no admin)
    ├── SessionNotFoundError              not_found
    ├── IssueNotFoundError                not_found
    ├── SessionBusyError                  busy            (another session holds the episode)
    ├── PromptExecutionError              internal_error  QC-004 (the LLM call failed)
    ├── TemplateMismatchError             validation_error QC-006
    ├── StatePersistenceError             internal_error  QC-009 (the state store failed)
    │   ├── StaleStateError               busy            QC-009 (state_version moved on)
    │   └── CorruptStateError             internal_error  QC-009 (stored state unreadable)
    ├── ToolUnavailableError              not_found       QC-012
    ├── ManualAlignmentRequired           validation_error QC-013
    ├── ManuscriptCacheMissError          not_found       QC-015
    ├── ManuscriptStorageError            internal_error  QC-016 (timeout when it timed out)
    ├── ManualUploadPending               not_found       QC-017
    └── ManuscriptHashMismatchError       validation_error QC-018

:func:`qc_code_for` maps any exception (ours, flowkit's, foreign) to its QC code and
:func:`error_envelope` to ``{"success": false, "error", "code", "status", "qc_code", "tool",
"arguments"}``; neither ever raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from ..errors import FlowkitError, LLMError, LLMTimeoutError, LLMUnavailableError, StoreError

__all__ = [
    "PORTABLE_CODES",
    "QC_CODES",
    "AccessDeniedError",
    "CorruptStateError",
    "IssueNotFoundError",
    "ManualAlignmentRequired",
    "ManualUploadPending",
    "ManuscriptCacheMissError",
    "ManuscriptHashMismatchError",
    "ManuscriptStorageError",
    "PortableCode",
    "PromptExecutionError",
    "QCCode",
    "QualityError",
    "QualityInputError",
    "SessionBusyError",
    "SessionNotFoundError",
    "StaleStateError",
    "StatePersistenceError",
    "TemplateMismatchError",
    "ToolUnavailableError",
    "error_envelope",
    "portable_code_for",
    "qc_code_for",
]

PortableCode = Literal[
    "validation_error",
    "forbidden",
    "not_found",
    "timeout",
    "busy",
    "rate_limited",
    "internal_error",
]
#: The envelope's portable codes and their HTTP statuses (``forbidden`` is flowkit's own
#: addition for §6.2; the origin lists the other six).
PORTABLE_CODES: Final[Mapping[PortableCode, int]] = {
    "validation_error": 400,
    "forbidden": 403,
    "not_found": 404,
    "timeout": 408,
    "busy": 409,
    "rate_limited": 429,
    "internal_error": 500,
}


class QualityError(FlowkitError):
    """Root of the quality workflow's errors."""

    qc_code: str | None = None
    code: PortableCode = "internal_error"


class QualityInputError(QualityError, ValueError):
    """An argument is out of range or malformed (episode number, policy, range ...)."""

    code = "validation_error"


class AccessDeniedError(QualityError):
    """The principal may not read this session's history (§6.2)."""

    code = "forbidden"

    def __init__(self, message: str, *, session_id: str | None = None) -> None:
        self.session_id = session_id
        super().__init__(message)


class SessionNotFoundError(QualityError):
    code = "not_found"

    def __init__(self, message: str, *, session_id: str | None = None) -> None:
        self.session_id = session_id
        super().__init__(message)


class IssueNotFoundError(QualityError):
    code = "not_found"

    def __init__(self, message: str, *, issue_id: str | None = None) -> None:
        self.issue_id = issue_id
        super().__init__(message)


class SessionBusyError(QualityError):
    """Another session holds the episode's lock (a second ``begin_session`` on it)."""

    code = "busy"

    def __init__(self, message: str, *, episode_number: int | None = None) -> None:
        self.episode_number = episode_number
        super().__init__(message)


class PromptExecutionError(QualityError):
    """The LLM call of a step failed (QC-004)."""

    qc_code = "QC-004"


class TemplateMismatchError(QualityError):
    """A check template does not fit the step asking for it (QC-006); ``.template`` is its
    file and ``.field`` the field that does not fit (``None``: the file as a whole)."""

    qc_code = "QC-006"
    code = "validation_error"

    def __init__(
        self, message: str, *, template: Path | None = None, field: str | None = None
    ) -> None:
        self.template = template
        self.field = field
        super().__init__(message)


class StatePersistenceError(QualityError):
    """The workflow state store could not save or read (QC-009)."""

    qc_code = "QC-009"


class StaleStateError(StatePersistenceError):
    """The session's ``state_version`` moved on since this writer read it (§6.3): another
    process took the session over; nothing of this unit was written."""

    code = "busy"

    def __init__(self, message: str, *, session_id: str, expected: int, actual: int) -> None:
        self.session_id = session_id
        self.expected = expected
        self.actual = actual
        super().__init__(message)


class CorruptStateError(StatePersistenceError):
    """A session's stored state cannot be read (a damaged document or row, §6.3). The write
    that met it was rolled back and this handle let go of the session's episode lock; the
    store logged ``quality_store_corrupt`` for the administrator. Only that session is
    affected."""

    def __init__(self, message: str, *, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(message)


class ToolUnavailableError(QualityError):
    """The tool a fix needs is not available for its category (QC-012)."""

    qc_code = "QC-012"
    code = "not_found"

    def __init__(self, message: str, *, tool: str, category: str | None = None) -> None:
        self.tool = tool
        self.category = category
        super().__init__(message)


class ManualAlignmentRequired(QualityError):  # noqa: N818 - the seed's name
    """No strategy found the issue's range in the new manuscript with enough confidence;
    a person must confirm it (QC-013)."""

    qc_code = "QC-013"
    code = "validation_error"

    def __init__(
        self, message: str, *, issue_id: str | None = None, best_confidence: float = 0.0
    ) -> None:
        self.issue_id = issue_id
        self.best_confidence = best_confidence
        super().__init__(message)


class ManuscriptCacheMissError(QualityError):
    """The artifact cache has no manuscript with that hash (QC-015)."""

    qc_code = "QC-015"
    code = "not_found"


class ManuscriptStorageError(QualityError):
    """Reading the manuscript from storage failed (QC-016); worth retrying."""

    qc_code = "QC-016"
    retryable = True

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        self.timed_out = timed_out
        super().__init__(message)
        if timed_out:
            self.code = "timeout"


class ManualUploadPending(QualityError):  # noqa: N818 - the seed's name
    """No tool could fetch the manuscript; it waits for a person to upload it (QC-017)."""

    qc_code = "QC-017"
    code = "not_found"


class ManuscriptHashMismatchError(QualityError):
    """The fetched text does not hash to the manuscript hash asked for (QC-018)."""

    qc_code = "QC-018"
    code = "validation_error"

    def __init__(self, message: str, *, expected: str, actual: str) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(message)


@dataclass(frozen=True)
class QCCode:
    """One row of the QC table: the code, the exception that carries it, what it means."""

    code: str
    exception: type[QualityError]
    meaning: str


#: Seed 003 §7, plus QC-006 from the origin; one row per code.
QC_CODES: Final[tuple[QCCode, ...]] = (
    QCCode("QC-004", PromptExecutionError, "LLM execution failed"),
    QCCode("QC-006", TemplateMismatchError, "check template does not match the step"),
    QCCode("QC-009", StatePersistenceError, "state persistence failed"),
    QCCode("QC-012", ToolUnavailableError, "recommended tool not available"),
    QCCode("QC-013", ManualAlignmentRequired, "manual range alignment required"),
    QCCode("QC-015", ManuscriptCacheMissError, "manuscript cache miss"),
    QCCode("QC-016", ManuscriptStorageError, "manuscript storage fetch failed"),
    QCCode("QC-017", ManualUploadPending, "waiting for a manual upload"),
    QCCode("QC-018", ManuscriptHashMismatchError, "manuscript hash mismatch"),
)


def qc_code_for(exc: object) -> str | None:
    """The QC code of an exception: its own, else that of what it maps to (an LLM failure is
    QC-004, a store failure QC-009), else that of its ``__cause__``; ``None`` when nothing fits.
    Never raises, whatever it is given."""
    seen: set[int] = set()
    current: object = exc
    while isinstance(current, BaseException) and id(current) not in seen:
        seen.add(id(current))
        code = _own_qc(current)
        if code is not None:
            return code
        current = current.__cause__
    return None


def _own_qc(exc: BaseException) -> str | None:
    if isinstance(exc, QualityError):
        return exc.qc_code
    if isinstance(exc, LLMError):
        return "QC-004"
    if isinstance(exc, StoreError):
        return "QC-009"
    return None


def portable_code_for(exc: object) -> PortableCode:
    """The envelope code of an exception; ``internal_error`` for anything unknown."""
    if isinstance(exc, QualityError):
        return exc.code
    if isinstance(exc, LLMTimeoutError | TimeoutError):
        return "timeout"
    if isinstance(exc, LLMUnavailableError) and "429" in str(exc):
        return "rate_limited"
    if isinstance(exc, ValueError):  # pydantic's ValidationError is one
        return "validation_error"
    if isinstance(exc, KeyError | FileNotFoundError | LookupError):
        return "not_found"
    return "internal_error"


def error_envelope(
    exc: object, *, tool: str | None = None, arguments: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The tool error envelope ``{"success": False, "error", "code", "status", "qc_code",
    "tool", "arguments"?}`` for ``exc``. The message is the exception's own (flowkit's say
    what to do); a foreign exception shows only its type, since its text may hold anything."""
    code = portable_code_for(exc)
    if isinstance(exc, FlowkitError):
        message = str(exc) or type(exc).__name__
    elif isinstance(exc, BaseException):
        message = f"{type(exc).__name__} (unexpected; see the logs)"
    else:
        message = "unknown error"
    envelope: dict[str, Any] = {
        "success": False,
        "error": message,
        "code": code,
        "status": PORTABLE_CODES[code],
        "qc_code": qc_code_for(exc),
        "tool": tool,
    }
    if arguments is not None:
        envelope["arguments"] = dict(arguments)
    return envelope
