"""``send_message``: the speaker's displayed text goes out as the origin's message event
(``{"type": "message", "speaker", "text"}``) and into the conversation log."""

from __future__ import annotations

from typing import Any

from ...definition._node import Context, Node, node
from ...roundtable.events import message_event
from ...roundtable.services import Services
from ...roundtable.state import LogEntry, RoundtableState

__all__ = ["make_send_message"]


def make_send_message(services: Services) -> Node:
    @node(reads=["current_display_name", "display_text"], writes=["conversation_log"])
    def send_message(state: RoundtableState, ctx: Context) -> dict[str, Any]:
        text = state.display_text or services.config.postprocess_settings.empty_text
        speaker = state.current_display_name
        ctx.emit(message_event(speaker, text))
        entry = LogEntry(
            time=ctx.clock().astimezone().strftime("%H:%M:%S"), speaker=speaker, text=text
        )
        services.logs.conversation(ctx.thread_id, entry.line())
        services.operation(
            ctx, "info", "roundtable_message_sent", "ConversationLoop",
            character=state.current_internal_id, request_id=state.request_id, chars=len(text),
        )  # fmt: skip
        return {"conversation_log": [entry]}

    return send_message
