"""Rows read back into records and snapshots, checked as strictly as journal lines.

A body carries the journal line's checksum; one that fails it, does not parse, holds another
version than its row, or was written by a newer flowkit is damage, reported with
``CorruptStoreError`` naming the table, thread and version. Only that thread is affected.
"""

from __future__ import annotations

from typing import Any

from ...errors import CorruptStoreError
from ...records._records import FORMAT_VERSION, RecordAdapter, Snapshot
from .._jsonl import unseal
from .._protocol import AnyRecord

__all__ = ["record_from_row", "snapshot_from_row"]


def record_from_row(schema: str, thread_id: str, version: Any, raw: Any) -> AnyRecord:
    """The journal record stored as ``raw`` in row ``(thread_id, version)``."""
    where = (schema, "records", thread_id, int(version))
    body = _unsealed(bytes(raw), where)
    try:
        record = RecordAdapter.validate_json(body)
    except ValueError as exc:
        raise _corrupt(where, exc) from exc
    if record.version != int(version):
        raise _corrupt(where, ValueError(f"it holds version {record.version}"))
    if record.v > FORMAT_VERSION:
        raise _corrupt(where, ValueError(f"format v{record.v} is newer than this flowkit"))
    return record


def snapshot_from_row(schema: str, thread_id: str, raw: Any) -> Snapshot:
    """The snapshot stored as ``raw`` for ``thread_id``."""
    where = (schema, "snapshots", thread_id, None)
    try:
        snapshot = Snapshot.model_validate_json(_unsealed(bytes(raw), where))
    except ValueError as exc:
        raise _corrupt(where, exc) from exc
    if snapshot.v > FORMAT_VERSION:
        raise _corrupt(where, ValueError(f"format v{snapshot.v} is newer than this flowkit"))
    return snapshot


def _unsealed(raw: bytes, where: tuple[str, str, str, int | None]) -> bytes:
    body, intact = unseal(raw)
    if intact is False:
        raise _corrupt(where, ValueError("its checksum does not match its content"))
    return body


def _corrupt(where: tuple[str, str, str, int | None], exc: Exception) -> CorruptStoreError:
    schema, table, thread_id, version = where
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    at = f", version {version}" if version is not None else ""
    return CorruptStoreError(
        f"Stored row is not a readable flowkit record: {reason}",
        thread_id=thread_id,
        path=f"{schema}.{table} (thread `{thread_id}`{at})",
    )
