"""``call_llm``: the speaker's own LLM answers its prompt, within the turn's time limit.

The request is ``[system: the prompt, user: the person's message]``. The call runs under a
deadline (``conversation.timeout_s``, 60 s by default) even for LLMs that ignore their
``timeout``: past it, the turn is given up as an ``LLMTimeoutError``. Any failure is written
to ``error`` (this node's name in ``error.node``) and the route goes to the fallback; the
request and the response are logged with the request id, the model and sizes, never the text.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ...definition._node import Context, Node, node
from ...errors import LLMTimeoutError
from ...foundation._logging import log_content
from ...records._node_error import NodeError
from ...roundtable.services import Services
from ...roundtable.state import RoundtableState

__all__ = ["call_with_deadline", "make_call_llm"]


def make_call_llm(services: Services) -> Node:
    timeout = services.config.conversation.timeout_s

    @node(
        reads=["current_internal_id", "prompt", "user_input", "request_id"],
        writes=["last_response_text", "error"],
    )
    def call_llm(state: RoundtableState, ctx: Context) -> dict[str, Any]:
        speaker = state.current_internal_id
        started = time.monotonic()
        model = "?"
        try:
            llm = services.cast.llm_for(speaker, default=ctx.llm)
            model = str(getattr(llm, "model", "?"))
            messages = [
                {"role": "system", "content": state.prompt},
                {"role": "user", "content": state.user_input or ""},
            ]
            services.operation(
                ctx, "info", "roundtable_llm_request", "LLM", character=speaker, model=model,
                request_id=state.request_id, prompt_chars=len(state.prompt),
            )  # fmt: skip
            response = call_with_deadline(
                lambda: llm.complete(messages, timeout=timeout), timeout, model=model
            )
        except Exception as exc:
            services.operation(
                ctx, "warning", "roundtable_llm_failed", "LLM", character=speaker, model=model,
                request_id=state.request_id, error_type=type(exc).__name__,
            )  # fmt: skip
            return {
                "last_response_text": None,
                "error": NodeError.from_exception(
                    exc, node=ctx.node, attempts=ctx.attempt, text=ctx.error_text
                ),
            }
        text = str(response.text)
        services.operation(
            ctx, "info", "roundtable_llm_response", "LLM", character=speaker, model=model,
            request_id=state.request_id, chars=len(text),
            latency_s=round(time.monotonic() - started, 3),
        )  # fmt: skip
        if log_content():
            ctx.log.debug("roundtable_reply", request_id=state.request_id, text=text)
        return {"last_response_text": text, "error": None}

    return call_llm


def call_with_deadline(call: Any, timeout: float, *, model: str = "?") -> Any:
    """``call()`` on a helper thread, given up after ``timeout`` seconds.

    Python cannot stop a thread: a call past its deadline runs on, as a daemon thread, and
    its result is dropped. Its exception, if it ends in time, is raised here.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="roundtable-llm", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise LLMTimeoutError(
            f"No answer within {timeout:g} s; the turn was given up.", model=model
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
