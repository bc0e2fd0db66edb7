"""The ledger: where action handlers record what they have taken (a booked slot), shared by
every conversation of a ``Dialogue`` and, on a JSON-file store, by every process using it.

``claim(key, record)`` is first-come: it keeps ``record`` and returns ``None`` when ``key`` is
free, and returns the record already kept otherwise. ``FileLedger`` makes the claim atomic
across processes by hard-linking a fully written file into place, which fails if the key's
file exists, so two operators booking the same slot at once cannot both win.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

__all__ = ["FileLedger", "Ledger", "MemoryLedger"]


class Ledger(Protocol):
    """First-come records by key (``robot_2/2025-03-11/15:00``)."""

    def claim(self, key: str, record: Mapping[str, Any]) -> dict[str, Any] | None:
        """Keep ``record`` under a free ``key`` (None), or return the record already there."""
        ...

    def get(self, key: str) -> dict[str, Any] | None: ...


class MemoryLedger:
    """A ledger in a dict: one process, one ``Dialogue`` (the default without a store folder)."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}

    def claim(self, key: str, record: Mapping[str, Any]) -> dict[str, Any] | None:
        if key in self._records:
            return dict(self._records[key])
        self._records[key] = json.loads(json.dumps(dict(record), default=str))
        return None

    def get(self, key: str) -> dict[str, Any] | None:
        found = self._records.get(key)
        return None if found is None else dict(found)


class FileLedger:
    """A ledger as files ``<dir>/<sha256 of key>.json``: ``{"key": ..., "record": ...}``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / f"{hashlib.sha256(key.encode('utf-8')).hexdigest()}.json"

    def claim(self, key: str, record: Mapping[str, Any]) -> dict[str, Any] | None:
        target = self._path(key)
        if target.exists():
            return self.get(key)
        self.directory.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({"key": key, "record": dict(record)}, default=str).encode()
        # Opened with mode 0666 so the umask applies, as for the store's other files.
        tmp = self.directory / f".claim.{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(tmp, target)  # fails if another process claimed the key first
            except FileExistsError:
                return self.get(key)
        finally:
            tmp.unlink(missing_ok=True)
        return None

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        record: dict[str, Any] = data["record"]
        return record
