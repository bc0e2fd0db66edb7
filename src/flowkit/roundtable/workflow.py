"""The roundtable flow: seed 004's nodes wired with the roundtable route tables.

``build_flow(config)`` returns an ordinary ``flowkit.Flow``: start a thread (it waits at the
``person`` gate at once), then resume the gate with ``{"text": ...}`` for every message of
the person; the characters' round runs and the thread waits at the gate again.
``example_flow()`` is the shipped ``trio-ja`` table (the registered workflow ``roundtable``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..definition._flow import Flow
from ..definition._gate import Gate
from ..llm import LLM
from ..nodes.roundtable import (
    make_call_llm,
    make_choose_next_fallback,
    make_end_or_continue,
    make_extract_next,
    make_persist_memory,
    make_postprocess_response,
    make_prepare_context,
    make_send_message,
    make_start_round,
    make_update_status_active,
    make_update_status_idle,
    make_update_status_thinking,
)
from ..routing import roundtable as r
from .config import RoundtableConfig, load_config
from .llms import Cast
from .logs import RoundLogs
from .services import Services
from .state import PersonInput, RoundtableState

__all__ = ["CHANGE_CLASSES", "EXAMPLE", "build", "build_flow", "example_flow"]

#: The shipped configuration ``example_flow`` uses.
EXAMPLE = "trio-ja"

#: Which changed fields a front end reacts to (events' change classes).
CHANGE_CLASSES = {
    "critical": ["error"],
    "progress": ["conversation_log", "current_internal_id", "next_internal_id"],
}


def _take_message(state: RoundtableState, value: PersonInput) -> dict[str, Any]:
    return {"user_input": value.text}


def build_flow(
    config: RoundtableConfig | Mapping[str, Any] | str | os.PathLike[str],
    *,
    llms: Mapping[str, LLM] | None = None,
    logs: RoundLogs | None = None,
) -> Flow:
    """The roundtable flow for ``config`` (a ``RoundtableConfig``, its data, a file or a
    shipped example's name).

    ``llms`` gives characters their LLM by internal id (else their configuration's, else
    the runner's); ``logs`` overrides the configuration's log folders. Round summaries go to
    the runner's memory (``Runner(flow, memory=...)``); a runner without one keeps none.
    """
    return build(config, llms=llms, logs=logs)[0]


def build(
    config: RoundtableConfig | Mapping[str, Any] | str | os.PathLike[str],
    *,
    llms: Mapping[str, LLM] | None = None,
    logs: RoundLogs | None = None,
) -> tuple[Flow, Services]:
    """``build_flow``, also returning the services its nodes share (LLMs, logs, memory)."""
    config = load_config(config)
    services = Services(
        config=config,
        cast=Cast(config, llms),
        logs=logs
        or RoundLogs(
            conversation_dir=config.logs.conversation_dir,
            operation_dir=config.logs.operation_dir,
        ),
    )
    flow = Flow(
        name="roundtable",
        description=f"Roundtable `{config.name}`: "
        + ", ".join(c.display_name for c in config.characters),
        state=RoundtableState,
        start=r.PERSON,
        gates={
            r.PERSON: Gate(
                PersonInput,
                apply=_take_message,
                writes=["user_input"],
                description="the person's message",
            )
        },
        nodes={
            r.START_ROUND: make_start_round(services),
            r.PREPARE_CONTEXT: make_prepare_context(services),
            r.UPDATE_STATUS_THINKING: make_update_status_thinking(services),
            r.CALL_LLM: make_call_llm(services),
            r.POSTPROCESS_RESPONSE: make_postprocess_response(services),
            r.SEND_MESSAGE: make_send_message(services),
            r.EXTRACT_NEXT: make_extract_next(services),
            r.CHOOSE_NEXT_FALLBACK: make_choose_next_fallback(services),
            r.END_OR_CONTINUE: make_end_or_continue(services),
            r.UPDATE_STATUS_IDLE: make_update_status_idle(services),
            r.PERSIST_MEMORY: make_persist_memory(services),
            r.UPDATE_STATUS_ACTIVE: make_update_status_active(services),
        },
        routes={
            r.PERSON: r.START_ROUND,
            r.START_ROUND: r.route_after_start_round,
            r.PREPARE_CONTEXT: r.route_after_prepare_context,
            r.UPDATE_STATUS_THINKING: r.CALL_LLM,
            r.CALL_LLM: r.route_after_call_llm,
            r.POSTPROCESS_RESPONSE: r.route_after_postprocess_response,
            r.SEND_MESSAGE: r.route_after_send_message,
            r.EXTRACT_NEXT: r.route_after_extract_next,
            r.CHOOSE_NEXT_FALLBACK: r.route_after_choose_next_fallback,
            r.END_OR_CONTINUE: r.route_after_end_or_continue,
            r.UPDATE_STATUS_IDLE: r.PREPARE_CONTEXT,
            r.PERSIST_MEMORY: r.route_after_persist_memory,
            r.UPDATE_STATUS_ACTIVE: r.PERSON,
        },
        error_field="error",
        change_classes=CHANGE_CLASSES,
    )
    return flow, services


def example_flow() -> Flow:
    """The flow of the shipped ``trio-ja`` table (each character on its own Ollama model)."""
    return build_flow(EXAMPLE)
