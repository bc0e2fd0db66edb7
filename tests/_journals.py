"""Reading a live JSON-file store's journals from a test while another process writes it."""

from __future__ import annotations

from pathlib import Path


def thread_journals(root: Path) -> list[bytes]:
    """The bytes of every thread journal under ``root/threads`` now; none while the folder
    is not there yet. The threads only: the writer's spare folders come and go (renamed by
    its refill) while they would be walked, and a folder gone mid-walk means the walk is
    asked again next time (empty now)."""
    try:
        return [f.read_bytes() for f in (root / "threads").rglob("journal.jsonl")]
    except FileNotFoundError:
        return []
