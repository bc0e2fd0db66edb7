"""The manuscript fetch chain (seed §3.4): UNIT-QUALITY-120-004 (3 retries with 1/2/4 s
back-off, recorded) and INT-QUALITY-120-003 (QC-015/016/017 issued as the seed maps them),
tool reordering, SHA-256 re-verification (QC-018) and the fetch log's fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from flowkit.quality.errors import (
    ManualUploadPending,
    ManuscriptHashMismatchError,
    ManuscriptStorageError,
    QualityError,
    QualityInputError,
)
from flowkit.quality.fetch import (
    ArtifactCache,
    Fetched,
    ManualClock,
    ManualUploads,
    ManuscriptFetcher,
    SnapshotReader,
    excerpt,
)
from flowkit.quality.models import ManuscriptFetchLog, TextRange, sha256_text

TEXT = "吾輩は猫である。名前はまだ無い。"
H = sha256_text(TEXT)


@dataclass
class Tool:
    """A tool that fails with the given errors, then returns ``text``."""

    name: str
    failures: list[QualityError] = field(default_factory=list)
    text: str = TEXT
    calls: int = 0

    def __call__(self, manuscript_hash: str) -> Fetched:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return Fetched(self.text, f"{self.name}:x")


def chain(*tools: Tool) -> tuple[ManuscriptFetcher, ManualClock, list[ManuscriptFetchLog]]:
    clock, logs = ManualClock(), []
    return ManuscriptFetcher(tools, clock=clock, on_log=logs.append), clock, logs


def storage() -> ManuscriptStorageError:
    return ManuscriptStorageError("disk busy")


def test_UNIT_QUALITY_120_004_three_retries_with_exponential_backoff_recorded() -> None:
    flaky = Tool("fetch_artifact", [storage(), storage(), storage()])
    fetcher, clock, logs = chain(flaky, Tool("read_snapshot"))
    got = fetcher.fetch(H, session_id="s")
    assert (got.tool, got.text) == ("fetch_artifact", TEXT)
    assert clock.slept == [1.0, 2.0, 4.0]
    assert [(log.attempt_index, log.backoff_ms, log.result) for log in logs] == [
        (0, 0, "failure"),
        (1, 1000, "failure"),
        (2, 2000, "failure"),
        (3, 4000, "success"),
    ]
    assert [log.qc_code for log in logs] == ["QC-016", "QC-016", "QC-016", None]


def test_after_the_third_retry_the_next_tool_is_tried() -> None:
    dead = Tool("fetch_artifact", [storage() for _ in range(4)])
    fetcher, clock, _ = chain(dead, Tool("read_snapshot"))
    assert fetcher.fetch(H, session_id="s").tool == "read_snapshot"
    assert dead.calls == 4 and clock.slept == [1.0, 2.0, 4.0]
    assert fetcher.order == ["read_snapshot", "fetch_artifact"]  # the winner goes first


def test_INT_QUALITY_120_003_fallback_issues_qc_015_016_017(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path / "artifacts")
    snapshot = SnapshotReader({H: str(tmp_path / "gone.txt")})
    uploads = ManualUploads(tmp_path / "uploads")
    clock, logs = ManualClock(), []
    fetcher = ManuscriptFetcher([cache, snapshot, uploads], clock=clock, on_log=logs.append)
    with pytest.raises(ManualUploadPending) as caught:
        fetcher.fetch(H, session_id="s")
    assert caught.value.qc_code == "QC-017"
    codes = [(log.tool_id, log.qc_code) for log in logs]
    assert codes == [
        ("fetch_artifact", "QC-015"),
        ("read_snapshot", "QC-016"),
        ("read_snapshot", "QC-016"),
        ("read_snapshot", "QC-016"),
        ("read_snapshot", "QC-016"),
        ("request_manual_upload", "QC-017"),
    ]
    uploads.upload(TEXT, expected_hash=H)
    logs.clear()
    got = fetcher.fetch(H, session_id="s")
    assert got.tool == "request_manual_upload" and got.source_key.startswith("upload:")
    assert fetcher.order[0] == "request_manual_upload"
    success = logs[-1]
    assert (success.result, success.excerpt_hash, success.excerpt_length) == (
        "success",
        H,
        len(TEXT),
    )


def test_a_tool_returning_other_text_is_qc_018_and_the_next_tool_is_asked() -> None:
    fetcher, _, logs = chain(Tool("fetch_artifact", text="改竄された本文"), Tool("read_snapshot"))
    assert fetcher.fetch(H, session_id="s").tool == "read_snapshot"
    assert logs[0].qc_code == "QC-018" and logs[0].result == "failure"


def test_when_every_tool_fails_without_upload_the_last_failure_is_raised() -> None:
    fetcher, _, _ = chain(Tool("fetch_artifact", text="other"))
    with pytest.raises(ManuscriptHashMismatchError):
        fetcher.fetch(H, session_id="s")


def test_a_wrong_upload_is_refused_with_qc_018(tmp_path: Path) -> None:
    with pytest.raises(ManuscriptHashMismatchError) as caught:
        ManualUploads(tmp_path).upload("別の原稿", expected_hash=H)
    assert caught.value.qc_code == "QC-018"


def test_artifact_cache_round_trip_and_latency_on_the_injected_clock(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    assert cache.put(TEXT) == H
    assert cache.put(TEXT) == H  # idempotent
    fetcher, _, logs = chain(cache)  # type: ignore[arg-type]
    assert fetcher.fetch(H, session_id="s").source_key == f"artifact:{H[:12]}"
    assert logs[0].latency_ms == 0  # the manual clock did not move


@pytest.mark.parametrize("bad", ["", "abc", "Z" * 64, None, H.upper()])
def test_bad_hashes_are_refused(bad: object) -> None:
    fetcher, _, _ = chain(Tool("fetch_artifact"))
    with pytest.raises(QualityInputError):
        fetcher.fetch(bad, session_id="s")  # type: ignore[arg-type]


def test_an_empty_chain_is_refused() -> None:
    with pytest.raises(QualityInputError):
        ManuscriptFetcher([])


def test_excerpts_are_the_minimum_range_with_their_hashes() -> None:
    rng = TextRange.of(TEXT, 8, 15)
    piece = excerpt(TEXT, rng, context=2)
    assert piece.text == TEXT[6:16]
    assert piece.range_checksum == sha256_text("名前はまだ無い")
    assert piece.manuscript_hash == H
    assert piece.excerpt_hash == sha256_text(piece.text)
    assert set(piece.metadata()) == {"excerpt_hash", "range_checksum", "manuscript_hash"}


def test_an_excerpt_per_issue_takes_the_manuscripts_hash_instead_of_hashing_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flowkit.quality import fetch

    hashed: list[str] = []
    monkeypatch.setattr(fetch, "sha256_text", lambda text: hashed.append(text) or H)
    piece = excerpt(TEXT, TextRange.of(TEXT, 8, 15), context=2, manuscript_hash=H)
    assert piece.manuscript_hash == H
    assert TEXT not in hashed  # only the excerpt and the range were hashed
