"""Fetching a manuscript by its hash (seed 003 §3.4): a chain of tools with retries.

Tools are tried in order, ``fetch_artifact`` -> ``read_snapshot`` -> ``request_manual_upload``
by default. A storage failure (QC-016) is retried up to 3 times after 1 s, 2 s and 4 s (on an
injectable clock, so tests never sleep); a cache miss (QC-015) or text whose SHA-256 is not the
hash asked for (QC-018) moves on to the next tool; the upload tool ends the chain with QC-017
until someone uploads the file. The tool that succeeded is tried first next time. Every attempt
becomes a ``ManuscriptFetchLog`` handed to ``on_log``; ``last_successful_tool`` reads the
preference back from stored logs, so a new process keeps it (``QualityServices`` does that).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Protocol

from ..foundation._atomic import write_atomically
from .errors import (
    ManualUploadPending,
    ManuscriptCacheMissError,
    ManuscriptHashMismatchError,
    ManuscriptStorageError,
    QualityError,
    QualityInputError,
)
from .ids import new_fetch_id
from .models import ManuscriptFetchLog, TextRange, sha256_text

__all__ = [
    "BACKOFF_SEC",
    "ArtifactCache",
    "Clock",
    "Excerpt",
    "FetchOutcome",
    "FetchTool",
    "Fetched",
    "ManualClock",
    "ManualUploads",
    "ManuscriptFetcher",
    "SnapshotReader",
    "SystemClock",
    "excerpt",
    "last_successful_tool",
]

#: Waits before the 1st, 2nd and 3rd retry of a tool (seconds).
BACKOFF_SEC: Final = (1.0, 2.0, 4.0)
_HEX64_LEN: Final = 64


class Clock(Protocol):
    """Time as the quality workflow sees it: wall time, a monotonic counter, and waiting."""

    def now(self) -> datetime: ...

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass
class ManualClock:
    """A clock tests move by hand; ``sleep`` advances it at once and is remembered."""

    start: datetime = datetime(2025, 9, 27, 9, 0, tzinfo=UTC)
    elapsed: float = 0.0
    slept: list[float] = field(default_factory=list)

    def now(self) -> datetime:
        from datetime import timedelta

        return self.start + timedelta(seconds=self.elapsed)

    def monotonic(self) -> float:
        return self.elapsed

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.elapsed += seconds

    def advance(self, seconds: float) -> None:
        self.elapsed += seconds


@dataclass(frozen=True)
class Fetched:
    """What a tool returns: the text and where it came from (``source_key``)."""

    text: str
    source_key: str


class FetchTool(Protocol):
    """One way to get a manuscript's text by hash; raises a QC-coded ``QualityError``."""

    @property
    def name(self) -> str: ...

    def __call__(self, manuscript_hash: str) -> Fetched: ...


@dataclass(frozen=True)
class Excerpt:
    """The minimum text an LLM is shown, with the hashes that let the answer be checked."""

    text: str
    excerpt_hash: str
    range_checksum: str
    manuscript_hash: str
    start_char: int
    end_char: int

    def metadata(self) -> dict[str, str]:
        return {
            "excerpt_hash": self.excerpt_hash,
            "range_checksum": self.range_checksum,
            "manuscript_hash": self.manuscript_hash,
        }


def excerpt(
    text: str, text_range: TextRange, *, context: int = 40, manuscript_hash: str | None = None
) -> Excerpt:
    """The range of ``text`` with ``context`` characters either side, and its hashes.

    ``manuscript_hash``: the hash of ``text`` when the caller has it (a fetch verified it), so
    an excerpt per issue does not hash the whole manuscript again.
    """
    start = max(0, text_range.start_char - context)
    end = min(len(text), text_range.end_char + context)
    piece = text[start:end]
    return Excerpt(
        text=piece,
        excerpt_hash=sha256_text(piece),
        range_checksum=sha256_text(text[text_range.start_char : text_range.end_char]),
        manuscript_hash=manuscript_hash or sha256_text(text),
        start_char=start,
        end_char=end,
    )


class ArtifactCache:
    """Manuscripts by hash in a folder (``<root>/<sha256>.txt``): the ``fetch_artifact`` tool."""

    name = "fetch_artifact"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def put(self, text: str) -> str:
        """Keep ``text``; returns its hash."""
        digest = sha256_text(text)
        path = self.root / f"{digest}.txt"
        if not path.exists():
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                write_atomically(path, text, private=True)
            except OSError as exc:
                raise ManuscriptStorageError(f"Cannot write {path}: {exc.strerror}.") from exc
        return digest

    def __call__(self, manuscript_hash: str) -> Fetched:
        path = self.root / f"{_checked_hash(manuscript_hash)}.txt"
        try:
            return Fetched(path.read_text(encoding="utf-8"), f"artifact:{manuscript_hash[:12]}")
        except FileNotFoundError:
            raise ManuscriptCacheMissError(
                f"No cached manuscript {manuscript_hash[:12]}."
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ManuscriptStorageError(f"Cannot read {path}: {exc}.") from exc


class SnapshotReader:
    """The manuscript file a session was started from: the ``read_snapshot`` tool.

    ``sources`` maps a manuscript hash to the file it was read from.
    """

    name = "read_snapshot"

    def __init__(self, sources: Mapping[str, str] | None = None) -> None:
        self.sources: dict[str, str] = dict(sources or {})

    def __call__(self, manuscript_hash: str) -> Fetched:
        path = self.sources.get(_checked_hash(manuscript_hash))
        if path is None:
            raise ManuscriptCacheMissError(f"No snapshot is known for {manuscript_hash[:12]}.")
        try:
            return Fetched(Path(path).read_text(encoding="utf-8"), f"file:{Path(path).name}")
        except (OSError, UnicodeDecodeError) as exc:
            raise ManuscriptStorageError(f"Cannot read the snapshot {path}: {exc}.") from exc


class ManualUploads:
    """Files people uploaded (``<root>/<sha256>.txt``): the ``request_manual_upload`` tool."""

    name = "request_manual_upload"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def upload(self, text: str, expected_hash: str | None = None) -> str:
        """Accept an uploaded manuscript; QC-018 when it is not the one asked for."""
        digest = sha256_text(text)
        if expected_hash is not None and digest != expected_hash:
            raise ManuscriptHashMismatchError(
                f"The uploaded file hashes to {digest[:12]}, not {expected_hash[:12]}; upload "
                "the manuscript as it was when the check ran.",
                expected=expected_hash,
                actual=digest,
            )
        self.root.mkdir(parents=True, exist_ok=True)
        write_atomically(self.root / f"{digest}.txt", text, private=True)
        return digest

    def __call__(self, manuscript_hash: str) -> Fetched:
        path = self.root / f"{_checked_hash(manuscript_hash)}.txt"
        try:
            return Fetched(path.read_text(encoding="utf-8"), f"upload:{manuscript_hash[:12]}")
        except FileNotFoundError:
            raise ManualUploadPending(
                f"Manuscript {manuscript_hash[:12]} is not available; upload it "
                "(`flowkit quality upload SESSION FILE`)."
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ManuscriptStorageError(f"Cannot read the upload {path}: {exc}.") from exc


@dataclass(frozen=True)
class FetchOutcome:
    """A fetched manuscript: its text, the tool that got it and where it came from."""

    text: str
    tool: str
    source_key: str


class ManuscriptFetcher:
    """Tries ``tools`` in order with retries; see the module docstring."""

    def __init__(
        self,
        tools: Sequence[FetchTool],
        *,
        clock: Clock | None = None,
        backoff: Sequence[float] = BACKOFF_SEC,
        on_log: Callable[[ManuscriptFetchLog], None] | None = None,
    ) -> None:
        if not tools:
            raise QualityInputError("A ManuscriptFetcher needs at least one tool.")
        self.tools = {tool.name: tool for tool in tools}
        self.order = [tool.name for tool in tools]
        self.clock: Clock = clock or SystemClock()
        self.backoff = tuple(backoff)
        self.on_log = on_log

    def prefer(self, tool_id: str) -> None:
        """Try ``tool_id`` first from now on (what a success does)."""
        if tool_id in self.tools:
            self.order.remove(tool_id)
            self.order.insert(0, tool_id)

    def fetch(self, manuscript_hash: str, *, session_id: str) -> FetchOutcome:
        """The text whose SHA-256 is ``manuscript_hash``.

        Raises:
            ManualUploadPending: no tool had it and it waits for an upload (QC-017).
            QualityError: every tool failed; the last failure (QC-015, QC-016 or QC-018).
        """
        _checked_hash(manuscript_hash)
        last: QualityError | None = None
        pending: ManualUploadPending | None = None
        for name in list(self.order):
            for attempt in range(len(self.backoff) + 1):
                wait = self.backoff[attempt - 1] if attempt else 0.0
                if wait:
                    self.clock.sleep(wait)
                began = self.clock.monotonic()
                try:
                    got = self.tools[name](manuscript_hash)
                    actual = sha256_text(got.text)
                    if actual != manuscript_hash:
                        raise ManuscriptHashMismatchError(
                            f"{name} returned text hashing to {actual[:12]}, not "
                            f"{manuscript_hash[:12]}.",
                            expected=manuscript_hash,
                            actual=actual,
                        )
                except QualityError as exc:
                    self._log(session_id, manuscript_hash, name, attempt, began, wait, exc)
                    last = exc
                    if isinstance(exc, ManualUploadPending):
                        pending = exc
                    if exc.retryable and attempt < len(self.backoff):
                        continue
                    break
                self._log(session_id, manuscript_hash, name, attempt, began, wait, None, got)
                self.prefer(name)
                return FetchOutcome(got.text, name, got.source_key)
        if pending is not None:
            raise pending
        assert last is not None
        raise last

    def _log(
        self,
        session_id: str,
        manuscript_hash: str,
        tool: str,
        attempt: int,
        began: float,
        wait: float,
        error: QualityError | None,
        got: Fetched | None = None,
    ) -> None:
        if self.on_log is None:
            return
        latency = max(0, int((self.clock.monotonic() - began) * 1000))
        self.on_log(
            ManuscriptFetchLog(
                fetch_id=new_fetch_id(),
                session_id=session_id,
                manuscript_hash=manuscript_hash,
                tool_id=tool,
                result="failure" if error else "success",
                latency_ms=latency,
                attempt_index=attempt,
                qc_code=error.qc_code if error else None,
                excerpt_hash=sha256_text(got.text) if got else None,
                excerpt_length=len(got.text) if got else None,
                source_key=got.source_key if got else None,
                backoff_ms=int(wait * 1000),
            )
        )


def last_successful_tool(logs: Iterable[ManuscriptFetchLog]) -> str | None:
    """The tool of the last successful attempt in ``logs`` (in the order they were made)."""
    tool = None
    for log in logs:
        if log.result == "success":
            tool = log.tool_id
    return tool


def _checked_hash(manuscript_hash: object) -> str:
    if (
        not isinstance(manuscript_hash, str)
        or len(manuscript_hash) != _HEX64_LEN
        or any(c not in "0123456789abcdef" for c in manuscript_hash)
    ):
        raise QualityInputError(f"{str(manuscript_hash)[:70]!r} is not a hex SHA-256.")
    return manuscript_hash
