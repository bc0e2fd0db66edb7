"""What a resume request answers, checked before a run takes it: which pause it is for, and
whether the thread and the pause's input model take it (``prevalidate``), so a request the
background run would refuse is refused to the caller (the thread API and the LangGraph API).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from ..errors import ConflictError, InvalidResumeInputError, NotWaitingError, UnknownGateError
from ..execution._answers import named_answer
from ..runner._result import RunResult
from ..runner._runner import Runner
from ._models import ResumeRequest
from ._served import gate_spec, pause_spec

__all__ = ["answered_pause", "prevalidate"]


def answered_pause(body: ResumeRequest, current: RunResult[Any]) -> str | None:
    """The pause an answer is for, for the audit line: the one named, else the one open."""
    return body.gate or (current.gates[0] if len(current.gates) == 1 else None)


def prevalidate(runner: Runner[Any], current: RunResult[Any], body: ResumeRequest) -> None:
    """Refuse now what the background run would refuse, so the caller hears of it: a done
    thread, a pause it does not wait at, a bare answer while several pauses are open, an
    answer its pause's model refuses."""
    if current.status == "done":
        raise NotWaitingError(
            f"Thread `{current.thread_id}` is done at `{current.node}`; fork it to run again.",
            thread_id=current.thread_id,
            status=current.status,
            node=current.node,
        )
    expected = body.expected_version
    if expected is not None and expected != current.version:  # a page that is behind
        raise ConflictError(
            f"Thread `{current.thread_id}` is at version {current.version}, not {expected}; "
            "someone moved it first. Reload it and decide again.",
            thread_id=current.thread_id,
            expected=expected,
            actual=current.version,
        )
    if current.status != "waiting" or body.input is None:
        return
    for pause, given in _answers_given(runner, current, body).items():
        spec = gate_spec(runner.flow, pause)
        if spec is None:
            continue
        try:
            spec.input.model_validate(given)
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_input=False, include_context=False)
            detail = "\n".join(
                f"  {'.'.join(map(str, e['loc'])) or '(input)'}: {e['msg']}" for e in errors
            )
            raise InvalidResumeInputError(
                pause, thread_id=current.thread_id, errors=[dict(e) for e in errors], detail=detail
            ) from exc


def _answers_given(
    runner: Runner[Any], current: RunResult[Any], body: ResumeRequest
) -> dict[str, Any]:
    """The answers a resume of a waiting thread gives, by pause id, as the runner reads them:
    ``gate`` names one; a mapping ``{id: input}`` answers several (where several can be
    open); a bare input answers the one open pause, and is refused when several are open."""
    flow, waiting, thread_id = runner.flow, current.gates, current.thread_id
    names = ", ".join(f"`{pause}`" for pause in waiting)
    if body.gate is not None:
        if body.gate in waiting:
            return {body.gate: body.input}
        if gate_spec(flow, body.gate) is None:
            raise UnknownGateError(
                body.gate, thread_id=thread_id, gates=list(dict.fromkeys([*flow.gates, *waiting]))
            )
        raise NotWaitingError(
            f"Thread `{thread_id}` waits at {names}, not at `{body.gate}`; resume with gate= "
            + ("that one." if len(waiting) == 1 else "one of those."),
            thread_id=thread_id,
            status=current.status,
            node=current.node,
        )
    given = body.input
    several = any((pause_spec(flow, pause) or (None, False))[1] for pause in waiting)
    if several and isinstance(given, Mapping) and given and set(given) <= set(waiting):
        return dict(given)
    if len(waiting) == 1:
        spec = gate_spec(flow, waiting[0])
        return {waiting[0]: given if spec is None else named_answer(waiting[0], given, spec.input)}
    raise NotWaitingError(
        f"Thread `{thread_id}` waits at {len(waiting)} pauses ({names}); pass gate='<id>' with "
        "its input, or an input mapping {id: input} to answer several.",
        thread_id=thread_id,
        status=current.status,
        node=current.node,
    )
