"""``start_round``: the person spoke at the gate; a new round of the characters' turns begins.

Logs the person's line (``USER``) in the transcript, sets every character IDLE, takes the
registry and limits from the configuration, loads the recent memory of earlier sessions and
chooses the first speaker: the character the person nominated (``[Next: NOX]``), else the
configuration's first speaker.
"""

from __future__ import annotations

from typing import Any

from ...definition._node import Context, Node, node
from ...roundtable.memory import recent_summaries
from ...roundtable.services import Services, memory_of
from ...roundtable.speaker import match_nomination
from ...roundtable.state import PERSON, LogEntry, RoundtableState

__all__ = ["make_start_round"]


def make_start_round(services: Services) -> Node:
    config = services.config

    @node(
        reads=["user_input", "conversation_log", "round_index", "memory_context"],
        writes=[
            "session_id",
            "config_name",
            "registry",
            "max_turns",
            "auto_loops",
            "round_index",
            "round_turns",
            "round_started_at",
            "round_log_start",
            "spoken_set",
            "conversation_log",
            "next_internal_id",
            "next_display_name",
            "decision_reason",
            "continue_round",
            "error",
            "round_failures",
            "memory_context",
        ],
    )
    def start_round(state: RoundtableState, ctx: Context) -> dict[str, Any]:
        now = ctx.clock()
        text = state.user_input or ""
        registry = config.registry
        nominated = match_nomination(text, None, registry, config.next)
        first = nominated.internal_id if nominated.refusal is None else None
        first = first or config.first_speaker
        entry = LogEntry(time=now.astimezone().strftime("%H:%M:%S"), speaker=PERSON, text=text)
        services.logs.conversation(ctx.thread_id, entry.line())
        services.status(ctx, [m.display_name for m in registry], "IDLE")
        services.operation(
            ctx,
            "info",
            "roundtable_round_started",
            "ConversationLoop",
            round=state.round_index + 1,
            chars=len(text),
            first=first,
        )
        speaker = next(m for m in registry if m.internal_id == first)
        return {
            "session_id": ctx.thread_id,
            "config_name": config.name,
            "registry": registry,
            "max_turns": config.conversation.max_turns,
            "auto_loops": config.conversation.auto_loops,
            "round_index": state.round_index + 1,
            "round_turns": 0,
            "round_started_at": now.isoformat(),
            "round_log_start": len(state.conversation_log),
            "spoken_set": [],
            "conversation_log": [entry],
            "next_internal_id": speaker.internal_id,
            "next_display_name": speaker.display_name,
            "decision_reason": None,
            "continue_round": False,
            "error": None,
            "round_failures": [],
            "memory_context": _memory_context(services, ctx),
        }

    return start_round


def _memory_context(services: Services, ctx: Context) -> str:
    """The recent summaries of other sessions, one line each; "" without memory."""
    memory, config = memory_of(ctx), services.config
    if memory is None or not config.memory.enabled or config.memory.recent == 0:
        return ""
    try:
        records = recent_summaries(
            memory, config.name, exclude_session=ctx.thread_id, limit=config.memory.recent
        )
    except Exception as exc:  # memory is a help, never a reason to stop the table
        services.operation(
            ctx, "warning", "roundtable_memory_unreadable", "MemoryManager",
            error_type=type(exc).__name__,
        )  # fmt: skip
        return ""
    lines = []
    for record in records:
        keywords = record.get("keywords") or []
        tags = f" ({', '.join(map(str, keywords))})" if keywords else ""
        lines.append(f"- {record.get('summary', '')}{tags}")
    return "\n".join(lines)
