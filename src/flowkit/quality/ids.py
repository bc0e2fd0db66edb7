"""Ids of the quality workflow: issues ``ISSUE-<epoch_ms>-<random>``, sessions
``QC_EP<episode:03d>_<YYYYMMDD>_<HHMM>`` (origin format), fetch attempts (UUID hex)."""

from __future__ import annotations

import os
import re
import uuid
from datetime import UTC, datetime
from typing import Final

from .errors import QualityInputError

__all__ = [
    "ISSUE_ID",
    "SESSION_ID",
    "check_episode",
    "episode_of",
    "new_fetch_id",
    "new_issue_id",
    "session_id_for",
]

ISSUE_ID: Final = re.compile(r"^ISSUE-\d{13}-[0-9a-f]{8}$")
SESSION_ID: Final = re.compile(r"^QC_EP(?P<episode>\d{3,4})_\d{8}_\d{4}(_\d+)?$")
MAX_EPISODE: Final = 9999


def check_episode(episode_number: object) -> int:
    """``episode_number`` if it is a whole number 1-9999 (the origin's range), else an error."""
    if (
        isinstance(episode_number, bool)
        or not isinstance(episode_number, int)
        or not 1 <= episode_number <= MAX_EPISODE
    ):
        raise QualityInputError(
            f"Episode number {episode_number!r} is not a whole number from 1 to {MAX_EPISODE}."
        )
    return episode_number


def new_issue_id(now: datetime, random_hex: str | None = None) -> str:
    """A fresh issue id for an issue found at ``now``: never reused, never changed."""
    epoch_ms = int(now.timestamp() * 1000)
    return f"ISSUE-{epoch_ms:013d}-{random_hex or os.urandom(4).hex()}"


def session_id_for(episode_number: int, now: datetime, taken: frozenset[str] = frozenset()) -> str:
    """``QC_EP001_20250927_0900`` for episode 1 at 09:00 UTC; ``_2``, ``_3`` ... appended when
    a session of that episode already began in the same minute."""
    check_episode(episode_number)
    stamp = now.astimezone(UTC).strftime("%Y%m%d_%H%M")
    base = f"QC_EP{episode_number:03d}_{stamp}"
    candidate, suffix = base, 1
    while candidate in taken:
        suffix += 1
        candidate = f"{base}_{suffix}"
    return candidate


def episode_of(session_id: str) -> int | None:
    """The episode number a session id names, or ``None`` when it is not a session id."""
    found = SESSION_ID.match(session_id)
    return int(found["episode"]) if found else None


def new_fetch_id() -> str:
    return uuid.uuid4().hex
