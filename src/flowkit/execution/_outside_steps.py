"""Steps that come from outside a run: a gate's input, a patch (``update_state``) and a
rewind to an earlier checkpoint (``rewind``).

The first two are committed like a node's step (routed through the machine, mirrored, checked
against the invariants, journaled with who and why), but no node runs: the caller supplies the
update. A rewind puts back a whole earlier position, as a patch that holds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ..definition._gate import Gate
from ..definition._invariants import check_invariants
from ..definition._jsonform import dump_state
from ..definition._parallel import Map
from ..errors import InvalidResumeInputError, RunError
from ..foundation._known_fields import unknown_keys, unknown_keys_message
from ..foundation._logging import mask_text
from ..foundation._plain import describe_validation_error
from ..records._node_error import ErrorText
from ..records._records import InputRecord, PatchRecord
from ._cursor import Cursor
from ._open import arrive, gate_payload
from ._port import RunPort
from ._steps import check_writes, mirror, move, status_of
from ._threads import Threads
from ._upgrade import check_position

if TYPE_CHECKING:
    from ..definition._flow import Flow

__all__ = [
    "dump_input",
    "gate_input_step",
    "patch_step",
    "refused_by_gate",
    "rewind_step",
    "validate_gate_input",
]


def validate_gate_input(
    flow: Flow, thread_id: str, gate: str, value: Any, spec: Gate | None = None
) -> BaseModel:
    """The resume input as the gate's model; ``InvalidResumeInputError`` lists what is wrong.

    ``spec`` is the gate when it is not one of the flow's own (a ``Parallel``'s gate branch).
    """
    model = (spec or flow.gates[gate]).input
    unknown = unknown_keys(model, value)
    if unknown:  # a typo would otherwise answer with the field's default
        raise InvalidResumeInputError(
            gate,
            thread_id=thread_id,
            errors=[{"loc": (str(key),), "msg": "unknown field"} for key in unknown],
            detail=f"  {unknown_keys_message(model, unknown)}",
        )
    try:
        if isinstance(value, model):
            return value
        return model.model_validate({} if value is None else value)
    except ValidationError as exc:
        # Never echo the input back: it may hold personal data.
        errors = exc.errors(include_url=False, include_input=False, include_context=False)
        detail = "\n".join(
            f"  {'.'.join(map(str, e['loc'])) or '(input)'}: {e['msg']}" for e in errors
        )
        raise InvalidResumeInputError(
            gate, thread_id=thread_id, errors=[dict(e) for e in errors], detail=detail
        ) from exc


def refused_by_gate(
    gate: str, thread_id: str, exc: Exception, text: ErrorText = "masked"
) -> InvalidResumeInputError:
    """The error for input a gate's own ``apply`` refused, its reason in one plain line (a
    pydantic error it let through too: never pydantic's multi-line text with its links),
    masked as a failed node's message is unless the runner keeps error text raw."""
    reason = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
    if text != "raw":
        reason = mask_text(reason)
    return InvalidResumeInputError(
        gate, thread_id=thread_id, errors=[{"msg": reason}], detail=f"  {reason}"
    )


def gate_input_step(
    runner: RunPort,
    thread_id: str,
    run_id: str,
    cursor: Cursor,
    value: BaseModel,
    gate: Gate | None = None,
    actor: str | None = None,
) -> Cursor:
    """Apply validated input to the gate the thread waits at (or, with ``gate``, the answer
    to the node that asked): reduce it into the state, route on, commit, naming ``actor``
    (who answered, when said) in the ``input`` record."""
    flow = runner.flow
    gate_name = cursor.node
    if gate is None:
        gate = flow.gates[gate_name]
    try:
        raw = gate.to_update(cursor.state, value, thread_id=thread_id)
    except (ValueError, TypeError, LookupError) as exc:
        # The gate's own checks refused the input: the thread keeps waiting, nothing saved.
        raise refused_by_gate(gate_name, thread_id, exc, runner.error_text) from exc
    check_writes(gate_name, gate.writes, raw)
    state, update = flow.schema.apply(cursor.state, raw, node=gate_name)
    target = flow.next_state(gate_name, state)
    runner._log.debug("route_decided", thread_id=thread_id, node=gate_name, target=target)
    state = move(flow, thread_id, gate_name, target, state, update, cursor.version)
    pauses, due = arrive(runner, thread_id, target, state)
    after = Cursor(
        state, target, status_of(flow, target), cursor.version + 1, pauses=pauses, due=due
    )
    record = InputRecord.model_construct(
        version=after.version,
        ts=runner._threads.stamp(),
        run_id=run_id,
        next=target,
        status=after.status,
        pauses=pauses,
        due=due,
        gate=gate_name,
        input=dump_input(thread_id, gate_name, value),
        update=runner._threads.dump(update, thread_id=thread_id, who=gate_name),
        actor=actor,
    )
    runner._threads.commit(thread_id, cursor.version, after, record)
    runner._announce(thread_id, run_id, gate_name, after, update)
    return after


def dump_input(thread_id: str, gate: str, value: BaseModel) -> dict[str, Any]:
    """The gate input's JSON form as the input record keeps it, refused if JSON cannot."""
    return dump_state(
        value, thread_id=thread_id, who=gate, dump=lambda: value.model_dump(mode="json")
    )


def patch_step(
    runner: RunPort,
    thread_id: str,
    cursor: Cursor,
    values: Mapping[str, Any],
    goto: str | None,
    reason: str,
    actor: str,
    as_node: str | None = None,
) -> Cursor:
    """The patch checkpoint; with ``as_node``, the values go in as that node's update would
    and the thread moves where that node's route sends the new state (``goto`` unset)."""
    flow = runner.flow
    if as_node is not None:
        check_writes(as_node, _writes_of(flow, as_node), values)
    state, update = flow.schema.apply(cursor.state, values, node=as_node or "update_state")
    if as_node is not None:
        goto = flow.next_state(as_node, state)
    target = cursor.node if goto is None else goto
    status = cursor.status if goto is None else status_of(flow, target)
    # A patch that leaves the thread where it is keeps its pauses and timer.
    pauses, due = (cursor.pauses, cursor.due) if goto is None else (None, None)
    gate = flow.gates.get(target)
    if goto is None and status == "waiting" and gate is not None and gate.payload is not None:
        # What the gate shows is made from the state: the patched one, not the one the
        # thread arrived with (a reviewer was shown a draft that was no longer the one to
        # be published). Its deadline stays as it was.
        entry = gate_payload(runner, thread_id, target, gate, state)
        pauses = None if entry is None else {target: entry}
    if goto is None and status == "waiting" and isinstance(flow.nodes.get(target), Map):
        # The map starts again (its calls saw the old state), so the questions its calls
        # asked are not open any more: it waits to be run again (``resume()``), which asks
        # anew. Kept open, they showed a pause as answered whose answer was then dropped.
        status, pauses = "pending", None
    if goto is not None:
        state = mirror(flow, state, update, target)
        pauses, due = arrive(runner, thread_id, target, state)
    if flow.invariants:
        check_invariants(flow, thread_id, "update_state", state, cursor.version)
    # A running child stays (same rule as replay) unless the patch moved the thread.
    sub = cursor.sub if (target, status) == (cursor.node, cursor.status) else None
    after = Cursor(
        state,
        target,
        status,
        cursor.version + 1,
        cursor.error if goto is None else None,
        None,
        sub,
        pauses=pauses,
        due=due,
    )
    record = PatchRecord.model_construct(
        version=after.version,
        ts=runner._threads.stamp(),
        run_id=None,
        next=target,
        status=status,
        pauses=None if pauses is None else dict(pauses),
        due=due,
        update=runner._threads.dump(update, thread_id=thread_id, who="update_state"),
        reason=reason,
        actor=actor,
        as_node=as_node,
    )
    runner._threads.commit(thread_id, cursor.version, after, record)
    runner._announce(thread_id, None, "update_state", after, update)
    return after


def _writes_of(flow: Flow, name: str) -> frozenset[str] | None:
    """What node or gate ``name`` may write (``None``: not declared, anything): a gate with
    no ``apply`` writes its input's fields."""
    if name in flow.nodes:
        return flow.nodes[name].writes
    gate = flow.gates[name]
    if gate.writes is None and gate.apply is None:
        return gate.default_writes
    return gate.writes


def rewind_step(
    runner: RunPort,
    threads: Threads,
    thread_id: str,
    cursor: Cursor,
    back: Cursor,
    reason: str,
    actor: str,
) -> Cursor:
    """Put the thread standing at ``cursor`` back where it stood at an earlier checkpoint
    (``back``, its cursor then): its whole state (no reducer runs), node, status and open
    pauses, as a new checkpoint; nothing earlier is rewritten. A gate it waited at waits
    again, its payload and deadline made afresh; a node it stood before runs again with a
    new step key (a new branch, not a retry).

    The patch holds the whole position (``migration``, from and to the flow's version, as a
    migration's does), so a reader takes it as it is instead of folding an update into it.
    A checkpoint part-way through a ``Map``/``Parallel`` batch is refused (its calls' child
    threads have moved on): pick the one before the batch node."""
    flow = runner.flow
    in_batch = back.node in flow.composite and back.status == "waiting" and back.sub is None
    if back.items is not None or in_batch:
        raise RunError(
            f"Cannot rewind thread `{thread_id}` to checkpoint {back.version}: it stands part-way "
            f"through the batch of `{back.node}`. Rewind to the checkpoint before that node.",
            thread_id=thread_id,
        )
    # One the flow no longer has (it changed since) would leave the thread unreadable.
    check_position(flow, thread_id, back, back.version, flow.version)
    pauses, due = back.pauses, back.due
    if back.sub is None and back.status == "waiting" and back.node in flow.arrivals:
        pauses, due = arrive(runner, thread_id, back.node, back.state)
    after = Cursor(
        back.state, back.node, back.status, cursor.version + 1, back.error, None, back.sub,
        pauses=pauses, due=due,
    )  # fmt: skip
    position = threads.snapshot(after, thread_id)
    now = threads.dump_state(thread_id, cursor.state, "rewind")
    changed = {k: v for k, v in position.state.items() if k not in now or now[k] != v}
    record = PatchRecord(
        version=after.version,
        ts=position.ts,
        next=after.node,
        status=after.status,
        pauses=None if pauses is None else dict(pauses),
        due=due,
        update=changed,
        reason=reason,
        actor=actor,
        migration={
            "from": flow.version,
            "to": flow.version,
            "rewound_to": back.version,
            "position": position.model_dump(mode="json"),
        },
    )
    threads.commit(thread_id, cursor.version, after, record)
    runner._announce(thread_id, None, "update_state", after, {})
    return after
