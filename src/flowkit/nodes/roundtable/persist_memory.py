"""``persist_memory``: the round is over; its summary goes to the cross-thread memory.

The first character's LLM is asked for strict JSON ``{summary, keywords}``; when that fails
the summary is the round's last 10 log lines and there are no keywords. One record per round
of the session (``flowkit.roundtable.memory``). Every failure is logged and swallowed: the
table never stops for its memory.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ...definition._node import Context, Node, node
from ...roundtable.memory import RoundSummary, fallback_summary, remember, summary_messages
from ...roundtable.services import Services, memory_of
from ...roundtable.state import RoundtableState
from .call_llm import call_with_deadline

__all__ = ["make_persist_memory"]


def make_persist_memory(services: Services) -> Node:
    config = services.config

    @node(
        reads=["conversation_log", "round_log_start", "round_index", "round_started_at"],
        writes=["last_summary"],
    )
    def persist_memory(state: RoundtableState, ctx: Context) -> dict[str, Any]:
        memory = memory_of(ctx)
        if memory is None or not config.memory.enabled:
            return {}
        try:
            record = _record(services, state, ctx)
            remember(memory, config.name, record)
        except Exception as exc:
            services.operation(
                ctx, "error", "roundtable_memory_failed", "MemoryManager",
                round=state.round_index, error_type=type(exc).__name__,
            )  # fmt: skip
            return {}
        services.operation(
            ctx, "info", "roundtable_memory_saved", "MemoryManager", round=state.round_index,
            keywords=len(record["keywords"]), by=record["by"],
        )  # fmt: skip
        return {"last_summary": record["summary"]}

    return persist_memory


def _record(services: Services, state: RoundtableState, ctx: Context) -> dict[str, Any]:
    config = services.config
    lines = [entry.line() for entry in state.round_log()]
    summary, keywords, by = fallback_summary(lines), [], "fallback"
    first = config.characters[0].id
    try:
        llm = services.cast.llm_for(first, default=ctx.llm)
        timeout = config.conversation.timeout_s
        response = call_with_deadline(
            lambda: llm.complete(
                summary_messages(lines, config.language), schema=RoundSummary, timeout=timeout
            ),
            timeout,
        )
        parsed = RoundSummary.model_validate(response.parsed)
        summary, keywords, by = parsed.summary, list(parsed.keywords), "llm"
    except Exception as exc:
        services.operation(
            ctx, "warning", "roundtable_summary_failed", "MemoryManager",
            character=first, error_type=type(exc).__name__,
        )  # fmt: skip
    return {
        "session_id": ctx.thread_id,
        "thread_id": state.round_index,
        "ts_start": _utc(state.round_started_at) or _utc(ctx.clock().isoformat()),
        "ts_end": _utc(ctx.clock().isoformat()),
        "domain": config.memory.domain,
        "summary": summary,
        "keywords": keywords,
        "embedding": None,
        "full_log": "\n".join(lines),
        "by": by,
    }


def _utc(iso: str) -> str:
    """An ISO time as UTC with a ``Z`` (the origin's form); "" for "" ."""
    if not iso:
        return ""
    moment = datetime.fromisoformat(iso)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
