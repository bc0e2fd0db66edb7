"""The roundtable's two logs (seed 004 §7, the origin's ``log_manager``).

- The **conversation log** is the transcript: one line per utterance,
  ``[HH:MM:SS] speaker: text``, the person's lines included (as ``USER``). It is content,
  kept in the state and, when ``logs.conversation_dir`` is set, in
  ``conversation_<session>.log``.
- The **operation log** says what the table did, never what anyone said:
  ``[YYYY-mm-dd HH:MM:SS] [LEVEL] [Module] message`` lines in ``operation_<session>.log``
  when ``logs.operation_dir`` is set, and the same events through flowkit's logger
  (``roundtable_*`` events with ``thread_id`` and ``node``). Neither carries the person's text,
  a prompt or an API key; with ``FLOWKIT_LOG_CONTENT=1`` debug lines carry prompts and replies.

Writing a log file never fails a turn: an ``OSError`` is reported once as a warning.
"""

from __future__ import annotations

import re
import threading
from datetime import datetime
from pathlib import Path

from ..foundation._logging import get_logger

__all__ = ["RoundLogs", "session_file"]

_UNSAFE = re.compile(r"[^\w.-]")


def session_file(folder: str | Path, kind: str, session: str) -> Path:
    """``<folder>/<kind>_<session>.log``, the session id made safe for a file name."""
    return Path(folder) / f"{kind}_{_UNSAFE.sub('_', session) or 'session'}.log"


class RoundLogs:
    """Appends to the conversation and operation log files of each session (when enabled)."""

    def __init__(
        self, *, conversation_dir: str | Path | None = None, operation_dir: str | Path | None = None
    ) -> None:
        self.conversation_dir = Path(conversation_dir) if conversation_dir else None
        self.operation_dir = Path(operation_dir) if operation_dir else None
        self._lock = threading.Lock()
        self._warned: set[Path] = set()

    def conversation(self, session: str, line: str) -> None:
        """Append one transcript line (``[HH:MM:SS] speaker: text``)."""
        if self.conversation_dir is not None:
            self._append(session_file(self.conversation_dir, "conversation", session), line)

    def operation(
        self, session: str, when: datetime, level: str, module: str, message: str
    ) -> None:
        """Append one operation line; ``message`` must hold no person's text or prompt."""
        if self.operation_dir is not None:
            stamp = when.astimezone().strftime("%Y-%m-%d %H:%M:%S")
            line = f"[{stamp}] [{level}] [{module}] {message}"
            self._append(session_file(self.operation_dir, "operation", session), line)

    def _append(self, path: Path, line: str) -> None:
        try:
            with self._lock:
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(line.replace("\r", " ").replace("\n", " ") + "\n")
        except OSError as exc:
            if path not in self._warned:
                self._warned.add(path)
                get_logger().warning(
                    "roundtable_log_unwritable", path=str(path), error_type=type(exc).__name__
                )
