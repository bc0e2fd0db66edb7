"""How commands print: aligned tables, times, JSON documents, and hints that run as printed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["command_hint", "iso", "table", "when", "write_json"]


def when(ts: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def iso(ts: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).isoformat()


def table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        out.write("\n")


def write_json(data: Any, out: TextIO) -> None:
    import json

    out.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def command_hint(*words: str, store: str | None = None, **options: str | None) -> str:
    """A ``flowkit`` command line a person can paste: quoted, with ``--store`` when not default.

    ``store`` is the folder the current command used; it is added unless it is the default
    the next command would pick by itself. ``options`` become ``--name value`` (``_`` -> ``-``).
    """
    import shlex

    from ._store import default_store

    parts = ["flowkit", *words]
    for name, value in options.items():
        if value is not None:
            parts += [f"--{name.replace('_', '-')}", value]
    if store is not None and store != default_store():
        parts += ["--store", store]
    return " ".join(shlex.quote(part) for part in parts)
