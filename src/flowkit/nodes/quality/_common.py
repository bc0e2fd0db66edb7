"""What the quality nodes share: the LLM call with its I/O log and QC-004 mapping, the step
counter, and writing fetch logs into the current unit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from ...definition._node import Context
from ...errors import LLMError
from ...llm._types import Message
from ...quality.errors import PromptExecutionError, QualityError
from ...quality.models import StepExecution, sha256_text
from ...quality.services import QualityServices
from ...quality.state import QualityState

__all__ = ["ask", "deps_of", "record_fetches", "recorded", "step_record"]

M = TypeVar("M", bound=BaseModel)


def ask(
    services: QualityServices,
    ctx: Context[QualityServices],
    state: QualityState,
    step: str,
    messages: Sequence[Message],
    schema: type[M],
) -> tuple[M, str, str]:
    """Ask the LLM; keep the input and output under ``checks/<session_id>/``; returns the
    parsed answer and the hashes of input and output. An LLM failure is QC-004."""
    if ctx.llm is None:
        raise PromptExecutionError(
            "No language model is configured; pass --llm (e.g. openai:gpt-4o-mini)."
        )
    services.checks.write(state.session_id, step, "input", {"messages": list(messages)})
    try:
        answer = ctx.llm.complete(list(messages), schema=schema)
    except LLMError as exc:
        services.audit.record(
            "llm_failed",
            session_id=state.session_id,
            performed_by=services.principal.user_id,
            qc_code="QC-004",
            metadata={"step": step, "error": type(exc).__name__},
        )
        error = PromptExecutionError(f"The LLM call of `{step}` failed: {exc}")
        error.retryable = exc.retryable
        raise error from exc
    parsed = answer.parsed
    result = parsed if isinstance(parsed, schema) else schema.model_validate(parsed)
    output = result.model_dump(mode="json")
    services.checks.write(state.session_id, step, "output", output)
    return result, sha256_text(str(messages)), sha256_text(answer.text)


def record_fetches(services: QualityServices) -> None:
    """Stage the fetch attempts made since the last call (they join the node's unit)."""
    for log in services.drain_fetch_logs():
        services.store.append_fetch_log(log)


def recorded(services: QualityServices, state: QualityState, name: str) -> bool:
    """Whether this step's unit was committed already: the process died after the commit and
    before the engine's checkpoint, and the step runs again. Its writes must not repeat."""
    return any(
        s.step_id == state.steps_done and s.name == name
        for s in services.store.step_executions(state.session_id, principal=services.principal)
    )


def step_record(state: QualityState, name: str, **fields: Any) -> StepExecution:
    return StepExecution(session_id=state.session_id, step_id=state.steps_done, name=name, **fields)


def deps_of(ctx: Context[QualityServices]) -> QualityServices:
    """The services the run was given as ``deps``; a clear error when it was given none."""
    services = ctx.deps
    if not isinstance(services, QualityServices):
        raise QualityError(
            "The quality flow runs with its services as deps: use `flowkit quality check`, "
            "QualityChecker, or Runner(flow, deps=QualityServices(...))."
        )
    return services
