"""Open pauses: what a waiting position waits for, each by id with its payload, and what a
thread carries when it arrives at a gate (the gate's payload, its deadline).

A pause's id is what an answer names (``resume(..., gate=id)``, or a mapping id -> input):
a gate's name; a ``Parallel``'s gate branch, by its label; a node that asked (``ctx.ask``),
by its name; a call of a ``Map`` that asked, as ``node[label]``.

Pauses whose payload or very existence the flow's shape cannot tell (a payload, a node's or a
``Map`` call's ask) are kept in the cursor (``Cursor.pauses``: id -> ``{"payload": ...}``,
plus ``"index"`` for a ``Map`` call and ``"update"`` for what it saved with its question) and
journaled with the record that made them; the rest follow from the position.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..definition._jsonform import dump_payload
from ..definition._parallel import BatchNode, Parallel
from ..errors import RunError
from ._cursor import Cursor

if TYPE_CHECKING:
    from ..definition._flow import Flow
    from ..definition._gate import Gate
    from ._port import RunPort

__all__ = [
    "arrive",
    "due_after",
    "gate_payload",
    "known_pause",
    "merged",
    "open_pauses",
    "without_call",
]


def open_pauses(flow: Flow, cursor: Cursor) -> dict[str, Any]:
    """The open pauses of a waiting ``cursor`` (this flow's own, not a child's): id -> payload
    (``None`` for a pause without one), in the order they are answered best: a gate; a
    ``Parallel``'s gate branches in declaration order; the calls of a ``Map`` that asked, in
    item order."""
    if cursor.status != "waiting":
        return {}
    kept = cursor.pauses or {}
    if cursor.node in flow.gates:
        return {cursor.node: _payload(kept.get(cursor.node))}
    node = flow.nodes.get(cursor.node)
    if node is None:
        return {}
    found: dict[str, Any] = {}
    if isinstance(node, Parallel) and node.gates:
        done = cursor.items or {}
        for call in node.calls(cursor.state):
            if call.gate is not None and call.index not in done:
                found[call.label] = _payload(kept.get(call.label))
    asked = sorted(
        ((int(entry["index"]), key) for key, entry in kept.items() if "index" in entry),
    )
    for _, key in asked:
        entry = kept[key]
        if "pauses" in entry:  # a Subflow call whose child waits: its pauses, by path
            for pause, payload in entry["pauses"].items():
                found[f"{key}/{pause}"] = payload
        else:
            found[key] = _payload(entry)
    # A node that asked; one asleep (``{"wake": due}``, ctx.sleep_until) waits for no answer.
    if not found and cursor.node in kept and "wake" not in kept[cursor.node]:
        found[cursor.node] = _payload(kept[cursor.node])
    return found


def known_pause(flow: Flow, pause: str, cursor: Cursor) -> bool:
    """Whether ``pause`` can be a pause of this flow: a gate, a ``Parallel``'s gate branch, a
    node that may ask, a call ``node[label]`` of a ``Map`` whose function may ask, or one of
    the cursor's open pauses. Anything else is a typo, refused as an unknown gate."""
    if pause in flow.gates or pause in open_pauses(flow, cursor):
        return True
    node = flow.nodes.get(pause)
    if node is not None and node.asks is not None:
        return True
    for name, each in flow.nodes.items():
        if isinstance(each, Parallel) and pause in each.gates:
            return True
        if isinstance(each, BatchNode) and pause.startswith(f"{name}["):
            return True
    return False


def without_call(pauses: Mapping[str, Any] | None, index: int, label: str) -> dict[str, Any] | None:
    """``pauses`` without those that call ``index`` (label ``label``) of a batch answered by
    finishing: a call that asked, a Subflow call's child, or a gate branch. The same rule for
    a live run and for replay: an ``item`` record closes its call's pauses."""
    if not pauses:
        return None
    kept = {
        key: entry
        for key, entry in pauses.items()
        if entry.get("index", -1) != index and not ("index" not in entry and key == label)
    }
    return kept or None


def merged(
    pauses: Mapping[str, Any] | None, added: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """``pauses`` with the entries a ``pause`` record added (or replaced)."""
    if not added:
        return None if not pauses else dict(pauses)
    return {**(pauses or {}), **added}


def _payload(entry: Mapping[str, Any] | None) -> Any:
    return None if entry is None else entry.get("payload")


def gate_payload(
    runner: RunPort, thread_id: str, name: str, gate: Gate, state: BaseModel
) -> dict[str, Any] | None:
    """The pause entry of gate ``name`` as the thread arrives at it (``None``: no payload)."""
    if gate.payload is None:
        return None
    try:
        value = gate.payload(state)
    except Exception as exc:
        # Nothing is committed yet: the thread stays where it stood. Only the error's type:
        # its text may quote the state.
        raise RunError(
            f"Thread `{thread_id}`: the payload= function of gate `{name}` raised "
            f"{type(exc).__name__}; nothing was saved and the thread is unchanged. Make it "
            "work for every state that reaches the gate, then try again.",
            thread_id=thread_id,
        ) from exc
    return {"payload": dump_payload(value, thread_id=thread_id, who=name)}


def arrive(
    runner: RunPort, thread_id: str, target: str, state: BaseModel
) -> tuple[dict[str, Any] | None, float | None]:
    """What a thread arriving at ``target`` carries: the gate's pause entry (its payload),
    and when its deadline passes (``None``, ``None`` for a node or a gate with neither)."""
    flow = runner.flow
    if target not in flow.arrivals:
        return None, None
    gate = flow.gates[target]
    entry = gate_payload(runner, thread_id, target, gate, state)
    pauses = None if entry is None else {target: entry}
    if gate.deadline is None:
        return pauses, None
    if isinstance(gate.deadline, timedelta):
        return pauses, due_after(runner, gate.deadline)
    return pauses, _wake_up(runner, thread_id, target, gate, state)


def _wake_up(
    runner: RunPort, thread_id: str, name: str, gate: Gate, state: BaseModel
) -> float | None:
    """When a gate whose ``deadline=`` is a function of the state wakes this thread: the
    function's answer (an aware ``datetime``, a ``timedelta`` from now, ``None``: no timer)."""
    assert gate.deadline is not None and not isinstance(gate.deadline, timedelta)
    try:
        when = gate.deadline(state)
    except Exception as exc:
        raise RunError(
            f"Thread `{thread_id}`: the deadline= function of gate `{name}` raised "
            f"{type(exc).__name__}; nothing was saved and the thread is unchanged. Make it "
            "work for every state that reaches the gate, then try again.",
            thread_id=thread_id,
        ) from exc
    if when is None:
        return None
    if isinstance(when, timedelta):
        return due_after(runner, when)
    if not isinstance(when, datetime) or when.tzinfo is None:
        raise RunError(
            f"Thread `{thread_id}`: the deadline= function of gate `{name}` returned "
            f"{type(when).__name__}; return an aware datetime, a timedelta or None.",
            thread_id=thread_id,
        )
    return int(when.timestamp() * 1000) / 1000


def due_after(runner: RunPort, wait: timedelta) -> float:
    """When a timer set now to wait ``wait`` fires: seconds since the epoch by the runner's
    clock, in whole milliseconds (as records keep times)."""
    return int((runner.clock().timestamp() + wait.total_seconds()) * 1000) / 1000
