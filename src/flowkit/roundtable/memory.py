"""Round summaries kept across sessions (the origin's ``persist_thread_from_log``).

At the end of each round the first character's LLM is asked for strict JSON
``{"summary": <= 200 characters, "keywords": [5 strings]}``; when that fails, the summary is
the round's last 10 log lines (cut to 200 characters) with no keywords. The record, with the
origin's fields (``session_id``, ``thread_id``, ``ts_start``, ``ts_end``, ``domain``,
``summary``, ``keywords``, ``embedding``, ``full_log``), is put in a cross-thread memory
store under the namespace ``("roundtable", <configuration name>)`` and the key
``<session_id>/<thread_id>``: one record per round ("session thread") of each session. The
next session's prompts carry the most recent summaries of other sessions (``{memory}``).
Nothing here raises into the conversation: failures are logged and the round goes on.

``SessionMemory`` is the small part of a memory store this needs (``put`` and ``search`` by
namespace prefix); ``JsonlSessionMemory`` keeps records in the origin's
``session_threads.jsonl`` form, ``InMemorySessionMemory`` in a dict.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SUMMARY_CHARS",
    "InMemorySessionMemory",
    "JsonlSessionMemory",
    "RoundSummary",
    "SessionMemory",
    "fallback_summary",
    "namespace_for",
    "recent_summaries",
    "summary_messages",
]

#: Longest summary kept (the origin's limit).
SUMMARY_CHARS = 200
#: How many log lines the fallback summary is made of.
FALLBACK_LINES = 10


@runtime_checkable
class SessionMemory(Protocol):
    """What the roundtable needs of a cross-thread memory store."""

    def put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any]) -> None:
        """Store ``value`` under ``namespace`` / ``key`` (replacing what was there)."""
        ...

    def search(self, namespace: tuple[str, ...]) -> Iterable[Any]:
        """The values (or items with a ``.value``) under ``namespace`` and its sub-namespaces."""
        ...


class RoundSummary(BaseModel):
    """The strict JSON the summary request asks for."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1, max_length=SUMMARY_CHARS)
    keywords: list[str] = Field(min_length=5, max_length=5)


def namespace_for(config_name: str) -> tuple[str, ...]:
    return ("roundtable", config_name)


def summary_messages(lines: Sequence[str], language: str) -> list[dict[str, str]]:
    """The request for a round's summary (strict JSON, in the table's language)."""
    if language == "ja":
        instruction = (
            "次の会話を要約してください。JSON だけを返してください: "
            '{"summary": "200文字以内の日本語の要約", "keywords": ["キーワード5個"]}'
        )
    else:
        instruction = (
            "Summarise the conversation below. Answer with JSON only: "
            '{"summary": "at most 200 characters", "keywords": ["exactly five keywords"]}'
        )
    return [
        {"role": "system", "content": instruction},
        {"role": "user", "content": "\n".join(lines) or "(empty)"},
    ]


def fallback_summary(lines: Sequence[str]) -> str:
    """The last 10 log lines, cut to 200 characters: the summary when the LLM's fails."""
    text = " / ".join(lines[-FALLBACK_LINES:])
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _value(item: Any) -> Any:
    return item if isinstance(item, Mapping) else getattr(item, "value", None)


def recent_summaries(
    memory: SessionMemory, config_name: str, *, exclude_session: str, limit: int
) -> list[Mapping[str, Any]]:
    """The newest records of other sessions at this table, newest first, at most ``limit``."""
    if limit <= 0:
        return []
    records = [
        value
        for value in map(_value, memory.search(namespace_for(config_name)))
        if isinstance(value, Mapping) and value.get("session_id") != exclude_session
    ]
    records.sort(key=lambda r: str(r.get("ts_end", "")), reverse=True)
    return records[:limit]


class InMemorySessionMemory:
    """Records in a dict: for tests and one-process apps."""

    def __init__(self) -> None:
        self._items: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any]) -> None:
        with self._lock:
            self._items[(tuple(namespace), key)] = dict(value)

    def search(self, namespace: tuple[str, ...]) -> list[dict[str, Any]]:
        prefix = tuple(namespace)
        with self._lock:
            return [dict(v) for (ns, _), v in self._items.items() if ns[: len(prefix)] == prefix]


class JsonlSessionMemory:
    """Records as JSON lines in one file (the origin's ``memory/session_threads.jsonl``).

    Each ``put`` appends a line with the record's fields plus ``namespace`` and ``key``; the
    last line of a key wins when reading, so a round persisted twice (a crash between the
    write and the checkpoint) still counts once.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any]) -> None:
        line = json.dumps({**value, "namespace": list(namespace), "key": key}, ensure_ascii=False)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")

    def search(self, namespace: tuple[str, ...]) -> list[dict[str, Any]]:
        prefix = list(namespace)
        latest: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}
        with self._lock:
            if not self.path.is_file():
                return []
            lines = self.path.read_text(encoding="utf-8").splitlines()
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a torn last line from a crash mid-write
            if not isinstance(record, dict):
                continue
            space = record.get("namespace")
            if not isinstance(space, list) or space[: len(prefix)] != prefix:
                continue
            latest[(tuple(space), str(record.get("key")))] = record
        return list(latest.values())
