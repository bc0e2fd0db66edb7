"""Pause ids as a flow's shape tells them: what an answer to a pause looks like.

A pause id is a gate's name, a ``Parallel``'s gate branch, a node that asks (``asks=``), a
``Map`` call ``node[label]`` whose function asks, or any of those inside a ``Subflow`` by path
(``review/approve``; inside a ``Map`` over a ``Subflow``: ``each[2]/approve``). Clients (the
CLI, the HTTP server) resolve an id to the model its answer must fit without running anything.
"""

from __future__ import annotations

from ._flow import Flow
from ._gate import Gate
from ._parallel import BatchNode, Parallel
from ._subflow import Subflow

__all__ = ["pause_spec"]


def pause_spec(flow: Flow, name: str) -> tuple[Gate, bool] | None:
    """``gate_spec``, and whether the pause is one of several that may be open at once (a
    ``Map``'s or a ``Parallel``'s, or one inside a call of theirs: there a mapping
    ``{id: input}`` answers several)."""
    found = _own_pause(flow, name)
    if found is not None:
        return found
    for cut, char in enumerate(name):
        if char != "/":
            continue
        child = _child_flow(flow, name[:cut])
        if child is not None:
            inner = pause_spec(child[0], name[cut + 1 :])
            if inner is not None:
                return inner[0], inner[1] or child[1]
    return None


def _own_pause(flow: Flow, name: str) -> tuple[Gate, bool] | None:
    """A pause of ``flow`` itself: a gate, a ``Parallel``'s gate branch, a node that asks, a
    ``Map`` call that asks (``node[label]``)."""
    if name in flow.gates:
        return flow.gates[name], False
    for node in flow.nodes.values():
        if isinstance(node, Parallel) and name in node.gates:
            return node.gates[name], True
    asking = flow.nodes.get(name)
    if asking is not None and not isinstance(asking, BatchNode) and asking.asks is not None:
        return asking.asks, False
    batch = _batch_of(flow, name)
    if batch is not None and batch.asks is not None:
        return batch.asks, True
    return None


def _child_flow(flow: Flow, prefix: str) -> tuple[Flow, bool] | None:
    """The flow whose pauses ids starting ``prefix/`` name: a ``Subflow`` node's, a ``Map``
    call's of a ``Map`` over a ``Subflow`` (``node[label]``), a ``Parallel``'s ``Subflow``
    branch's; and whether that is a call of a batch."""
    node = flow.nodes.get(prefix)
    if isinstance(node, Subflow):
        return node.flow, False
    batch = _batch_of(flow, prefix)
    if batch is not None and isinstance(batch.fn, Subflow):
        return batch.fn.flow, True
    for each in flow.nodes.values():
        if isinstance(each, Parallel):
            branch = each.branches.get(prefix)
            if isinstance(branch, Subflow):
                return branch.flow, True
    return None


def _batch_of(flow: Flow, call: str) -> BatchNode | None:
    """The ``Map`` whose call ``call`` (``node[label]``) is."""
    owner, bracket, _ = call.partition("[")
    batch = flow.nodes.get(owner)
    if bracket and call.endswith("]") and isinstance(batch, BatchNode):
        return batch
    return None
