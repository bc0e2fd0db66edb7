"""Records of §4.2: ids, ranges, hashes, round trips, and what they refuse."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from flowkit.quality.errors import QualityInputError
from flowkit.quality.ids import check_episode, episode_of, new_issue_id, session_id_for
from flowkit.quality.models import (
    AdjustmentAttempt,
    Issue,
    IssueResolution,
    ManuscriptFetchLog,
    Session,
    TextRange,
    sha256_text,
)

NOW = datetime(2025, 9, 27, 9, 0, 12, tzinfo=UTC)
H = sha256_text("本文")


def issue(**changes: object) -> Issue:
    base = Issue(
        issue_id=new_issue_id(NOW, "0123abcd"),
        session_id="QC_EP001_20250927_0900",
        step_id=1,
        manuscript_hash=H,
        text_range=TextRange.of("一行目\n二行目", 4, 7),
        range_checksum=sha256_text("二行目"),
        category="typo",
    )
    return base.model_copy(update=changes) if changes else base


def test_ids_have_the_origin_formats() -> None:
    assert new_issue_id(NOW, "0123abcd") == "ISSUE-1758963612000-0123abcd"
    assert session_id_for(1, NOW) == "QC_EP001_20250927_0900"
    assert session_id_for(1234, NOW) == "QC_EP1234_20250927_0900"
    taken = frozenset({"QC_EP001_20250927_0900", "QC_EP001_20250927_0900_2"})
    assert session_id_for(1, NOW, taken) == "QC_EP001_20250927_0900_3"
    assert episode_of("QC_EP042_20250927_0900_2") == 42
    assert episode_of("../etc") is None
    assert new_issue_id(NOW) != new_issue_id(NOW)


@pytest.mark.parametrize("bad", [0, -1, 10_000, True, 1.5, "1", None])
def test_episode_numbers_outside_1_to_9999_are_refused(bad: object) -> None:
    with pytest.raises(QualityInputError, match="from 1 to 9999"):
        check_episode(bad)


def test_text_range_lines() -> None:
    text = "一行目\n二行目\n三行目"
    assert TextRange.of(text, 4, 7) == TextRange(start_char=4, end_char=7, start_line=2, end_line=2)
    assert TextRange.of(text, 0, len(text)).end_line == 3
    assert TextRange.of(text, 3, 5).start_line == 1  # the newline belongs to line 1
    with pytest.raises(ValidationError):
        TextRange(start_char=5, end_char=4)


def test_records_are_frozen_and_round_trip() -> None:
    first = issue(
        adjustment_attempts=(
            AdjustmentAttempt(
                strategy="diff3", result="success", confidence=0.8, adjustment_delta=3
            ),
        )
    )
    with pytest.raises(ValidationError):
        first.issue_id = "ISSUE-0000000000000-00000000"  # type: ignore[misc]
    assert Issue.model_validate_json(first.model_dump_json()) == first
    res = IssueResolution(issue_id=first.issue_id, resolution_attempt=1, diff_ref="artifact:ab")
    assert IssueResolution.model_validate_json(res.model_dump_json()) == res
    session = Session(
        session_id="QC_EP001_20250927_0900", episode_number=1, initiator="aki", created_at=NOW
    )
    assert (session.state_version, session.lock_status, session.current_status) == (
        0,
        "held",
        "active",
    )
    assert Session.model_validate_json(session.model_dump_json()) == session


@pytest.mark.parametrize(
    "changes",
    [
        {"issue_id": "EXPR-002"},
        {"manuscript_hash": "本文"},
        {"range_checksum": "abc"},
        {"severity": "moderate"},
        {"state": "Closed"},
        {"related_issue_ids": ("nope",)},
        {"category": ""},
    ],
)
def test_bad_issue_fields_are_refused(changes: dict[str, object]) -> None:
    data = issue().model_dump()
    data.update(changes)
    with pytest.raises(ValidationError):
        Issue.model_validate(data)


def test_records_hold_hashes_never_text() -> None:
    log = ManuscriptFetchLog(
        fetch_id="0" * 32,
        session_id="s",
        manuscript_hash=H,
        tool_id="fetch_artifact",
        result="success",
        latency_ms=3,
        attempt_index=0,
        excerpt_hash=H,
        excerpt_length=2,
    )
    assert "本文" not in log.model_dump_json()
    with pytest.raises(ValidationError):
        ManuscriptFetchLog(
            fetch_id="x",
            session_id="s",
            manuscript_hash=H,
            tool_id="t",
            result="success",
            latency_ms=0,
            attempt_index=0,
        )
