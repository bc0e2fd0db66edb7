"""INT-QUALITY-120-004 and seed §2.2's QC mapping: 10 normal and 10 abnormal cases, all mapped.

Normal: each typed exception of §7 (and the LLM / store failures they stand for) gives its
QC code. Abnormal: anything else (foreign errors, non-errors, cause chains, cycles) gives a
defined answer and never raises. Every case also yields a complete tool envelope.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from flowkit.errors import ConflictError, LLMSchemaError, LLMTimeoutError, StoreError
from flowkit.quality.errors import (
    PORTABLE_CODES,
    QC_CODES,
    ManualAlignmentRequired,
    ManualUploadPending,
    ManuscriptCacheMissError,
    ManuscriptHashMismatchError,
    ManuscriptStorageError,
    PromptExecutionError,
    SessionBusyError,
    StaleStateError,
    StatePersistenceError,
    TemplateMismatchError,
    ToolUnavailableError,
    error_envelope,
    qc_code_for,
)

NORMAL: list[tuple[BaseException, str]] = [
    (PromptExecutionError("the model refused"), "QC-004"),
    (LLMTimeoutError("no answer in 60 s"), "QC-004"),
    (StatePersistenceError("disk full"), "QC-009"),
    (ConflictError("moved on", thread_id="t"), "QC-009"),
    (ToolUnavailableError("no such tool", tool="polish"), "QC-012"),
    (ManualAlignmentRequired("place it", issue_id=None), "QC-013"),
    (ManuscriptCacheMissError("not cached"), "QC-015"),
    (ManuscriptStorageError("read failed"), "QC-016"),
    (ManualUploadPending("upload it"), "QC-017"),
    (ManuscriptHashMismatchError("differs", expected="a" * 64, actual="b" * 64), "QC-018"),
]


def _chained() -> BaseException:
    try:
        try:
            raise ManuscriptCacheMissError("inner")
        except ManuscriptCacheMissError as inner:
            raise RuntimeError("wrapper") from inner
    except RuntimeError as outer:
        return outer


def _cycle() -> BaseException:
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__, b.__cause__ = b, a
    return a


class _Model(BaseModel):
    n: int


def _validation_error() -> BaseException:
    try:
        _Model(n="x")  # type: ignore[arg-type]
    except ValidationError as exc:
        return exc
    raise AssertionError


ABNORMAL: list[tuple[Any, str | None, str]] = [
    (RuntimeError("boom"), None, "internal_error"),
    (KeyError("missing"), None, "not_found"),
    (TimeoutError(), None, "timeout"),
    (_validation_error(), None, "validation_error"),
    (None, None, "internal_error"),
    ("QC-004", None, "internal_error"),
    (_chained(), "QC-015", "internal_error"),
    (_cycle(), None, "internal_error"),
    (SessionBusyError("episode 1 is busy", episode_number=1), None, "busy"),
    (StaleStateError("moved", session_id="s", expected=1, actual=2), "QC-009", "busy"),
]


def test_the_table_has_one_row_per_code_and_each_exception_carries_it() -> None:
    codes = [row.code for row in QC_CODES]
    assert len(codes) == len(set(codes))
    for row in QC_CODES:
        assert row.exception.qc_code == row.code
    assert {"QC-004", "QC-009", "QC-012", "QC-013", "QC-015", "QC-016", "QC-017", "QC-018"} <= set(
        codes
    )
    assert TemplateMismatchError.qc_code == "QC-006"


@pytest.mark.parametrize(("exc", "code"), NORMAL, ids=[c for _, c in NORMAL])
def test_INT_QUALITY_120_004_normal_cases_map_to_their_qc_code(
    exc: BaseException, code: str
) -> None:
    assert qc_code_for(exc) == code
    envelope = error_envelope(exc, tool="execute_check_step", arguments={"episode_number": 1})
    assert envelope["success"] is False
    assert envelope["qc_code"] == code
    assert envelope["status"] == PORTABLE_CODES[envelope["code"]]
    assert envelope["tool"] == "execute_check_step"
    assert envelope["arguments"] == {"episode_number": 1}
    assert envelope["error"]


@pytest.mark.parametrize(
    ("exc", "code", "portable"), ABNORMAL, ids=[f"abnormal-{i}" for i in range(len(ABNORMAL))]
)
def test_INT_QUALITY_120_004_abnormal_cases_map_without_raising(
    exc: Any, code: str | None, portable: str
) -> None:
    assert qc_code_for(exc) == code
    envelope = error_envelope(exc)
    assert (envelope["success"], envelope["code"], envelope["qc_code"]) == (False, portable, code)
    assert envelope["status"] == PORTABLE_CODES[portable]
    assert "arguments" not in envelope


def test_mapping_rate_is_100_percent_over_the_twenty_cases() -> None:
    assert len(NORMAL) == 10 and len(ABNORMAL) == 10
    mapped = sum(qc_code_for(e) == c for e, c in NORMAL)
    mapped += sum(qc_code_for(e) == c and error_envelope(e)["code"] == p for e, c, p in ABNORMAL)
    assert mapped / 20 == 1.0


def test_foreign_messages_stay_out_of_the_envelope() -> None:
    envelope = error_envelope(RuntimeError("password=hunter2 in the manuscript"))
    assert "hunter2" not in envelope["error"]


def test_portable_codes_are_the_origins_plus_forbidden() -> None:
    assert PORTABLE_CODES == {
        "validation_error": 400,
        "forbidden": 403,
        "not_found": 404,
        "timeout": 408,
        "busy": 409,
        "rate_limited": 429,
        "internal_error": 500,
    }
    assert error_envelope(ManuscriptStorageError("slow", timed_out=True))["code"] == "timeout"
    assert qc_code_for(LLMSchemaError("bad json", raw_text="{")) == "QC-004"
    assert qc_code_for(StoreError("disk")) == "QC-009"
