"""Round summaries kept across sessions (the origin's ``persist_thread_from_log``), in the
runner's long-term memory (``flowkit.memory``, reached by nodes as ``ctx.memory``).

At the end of each round the first character's LLM is asked for strict JSON
``{"summary": <= 200 characters, "keywords": [5 strings]}``; when that fails, the summary is
the round's last 10 log lines (cut to 200 characters) with no keywords. The record, with the
origin's fields (``session_id``, ``thread_id``, ``ts_start``, ``ts_end``, ``domain``,
``summary``, ``keywords``, ``embedding``, ``full_log``), is one item per round ("session
thread") of each session: namespace ``("roundtable", <table>, "sessions", <session>)``, key
the round number (``000001``). An index item, ``("roundtable", <table>)`` / ``recent``,
lists the newest summaries, so the next session's prompts can carry them (``{memory}``)
without reading every record. Nothing here raises into the conversation: the nodes log
failures and the round goes on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..memory import Memory

__all__ = [
    "RECENT_KEY",
    "SUMMARY_CHARS",
    "RoundSummary",
    "fallback_summary",
    "recent_summaries",
    "remember",
    "session_namespace",
    "session_records",
    "summary_messages",
    "table_namespace",
]

#: Longest summary kept (the origin's limit).
SUMMARY_CHARS = 200
#: How many log lines the fallback summary is made of.
FALLBACK_LINES = 10
#: The index item of a table: its newest summaries.
RECENT_KEY = "recent"
#: How many summaries the index keeps.
RECENT_KEPT = 20


class RoundSummary(BaseModel):
    """The strict JSON the summary request asks for."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1, max_length=SUMMARY_CHARS)
    keywords: list[str] = Field(min_length=5, max_length=5)


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


def table_namespace(table: str) -> tuple[str, ...]:
    return ("roundtable", table)


def session_namespace(table: str, session: str) -> tuple[str, ...]:
    return ("roundtable", table, "sessions", session)


def round_key(round_index: int) -> str:
    return f"{round_index:06d}"


def remember(memory: Memory, table: str, record: Mapping[str, Any]) -> None:
    """Put ``record`` (one round of one session) and list it first in the table's index."""
    session, round_index = str(record["session_id"]), int(record["thread_id"])
    memory.put(session_namespace(table, session), round_key(round_index), dict(record))
    item = memory.get(table_namespace(table), RECENT_KEY)
    kept = item.value.get("records", []) if item and isinstance(item.value, dict) else []
    brief = {k: record[k] for k in ("session_id", "thread_id", "summary", "keywords", "ts_end")}
    others = [
        r
        for r in kept
        if isinstance(r, dict)
        and (r.get("session_id"), r.get("thread_id")) != (session, round_index)
    ]
    memory.put(table_namespace(table), RECENT_KEY, {"records": [brief, *others][:RECENT_KEPT]})


def recent_summaries(
    memory: Memory, table: str, *, exclude_session: str, limit: int
) -> list[dict[str, Any]]:
    """The newest summaries of other sessions at ``table``, newest first, at most ``limit``."""
    if limit <= 0:
        return []
    item = memory.get(table_namespace(table), RECENT_KEY)
    kept = item.value.get("records", []) if item and isinstance(item.value, dict) else []
    found = [r for r in kept if isinstance(r, dict) and r.get("session_id") != exclude_session]
    return found[:limit]


def session_records(memory: Memory, table: str, session: str) -> list[dict[str, Any]]:
    """Every round record of ``session`` at ``table``, in round order."""
    items = memory.search(session_namespace(table, session), limit=100_000)
    return [item.value for item in items if isinstance(item.value, dict)]
