"""Nodes of the roundtable workflow (seed 004 §4), one module per node (the status updates
share one). Each ``make_*`` takes the flow's ``Services`` and returns a plain node function
with its declared reads and writes; ``flowkit.roundtable.workflow`` wires them together."""

from __future__ import annotations

from .call_llm import make_call_llm
from .choose_next_fallback import make_choose_next_fallback
from .end_or_continue import make_end_or_continue
from .extract_next import make_extract_next
from .persist_memory import make_persist_memory
from .postprocess_response import make_postprocess_response
from .prepare_context import make_prepare_context
from .send_message import make_send_message
from .start_round import make_start_round
from .status import make_update_status_active, make_update_status_idle, make_update_status_thinking

__all__ = [
    "make_call_llm",
    "make_choose_next_fallback",
    "make_end_or_continue",
    "make_extract_next",
    "make_persist_memory",
    "make_postprocess_response",
    "make_prepare_context",
    "make_send_message",
    "make_start_round",
    "make_update_status_active",
    "make_update_status_idle",
    "make_update_status_thinking",
]
