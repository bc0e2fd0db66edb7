"""``Subflow``: a whole ``Flow`` used as one node of another flow.

The child runs inside the parent's run and thread: each of its steps is a checkpoint of the
parent's journal (a ``sub`` record wrapping the child's own record), a gate inside the child
pauses the parent, and ``resume`` on the parent answers it. How it runs is in
``_subflow_run``; this module only defines the node, so flows without one never load that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ._flow import Flow
from ._node import Node, RetryPolicy, takes_at_least

__all__ = ["Subflow"]

#: ``input(parent_state)`` -> the child's start state (a mapping or a child state model).
#: ``input(parent_state)``, or ``input(parent_state, item)`` for a ``Map`` over the subflow.
InputFn = Callable[..., Any]
#: ``output(parent_state, child_final_state)`` -> the parent's update (or ``None``).
OutputFn = Callable[[Any, Any], Mapping[str, Any] | None]


def _not_callable_directly(*_: Any) -> Any:
    raise TypeError("A Subflow runs its flow through a Runner; it cannot be called directly.")


@dataclass(frozen=True, slots=True, kw_only=True, init=False)
class Subflow(Node):
    """Run ``flow`` as one node: its steps, gates and failures belong to the parent thread.

    ``input(parent_state)`` gives the child's start state (default: the parent's values of the
    fields both states have). ``output(parent_state, child_state)`` gives the parent's update
    once the child reaches ``END`` or a ``done`` final state (default: the child's values of
    the fields named in ``writes``; nothing when ``writes`` is not declared). A child that
    fails (a node with nowhere to route, or a ``failed`` final state) is this node failing.

    ``retry`` runs a failed child again, afresh from ``input``, as a plain node's policy runs
    a failed node again; ``timeout`` bounds how long one attempt runs in one ``start`` or
    ``resume`` call (time waiting at a gate inside the child does not count). See
    docs/subflows.md for which failures are retried and how a timeout stops a child.

    >>> from pydantic import BaseModel
    >>> from flowkit import END, Flow, Subflow
    >>> class Draft(BaseModel):
    ...     text: str = ""
    >>> polish = Flow(name="polish", state=Draft, start="tidy",
    ...               nodes={"tidy": lambda s: {"text": s.text.strip()}}, routes={"tidy": END})
    >>> step = Subflow(polish, writes=["text"])
    """

    flow: Flow
    input: InputFn | None
    output: OutputFn | None

    def __init__(
        self,
        flow: Flow,
        *,
        input: InputFn | None = None,
        output: OutputFn | None = None,
        reads: Iterable[str] | None = None,
        writes: Iterable[str] | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
    ) -> None:
        if not isinstance(flow, Flow):
            raise TypeError(f"Subflow needs a Flow, got {type(flow).__name__}")
        for name, fn in (("input", input), ("output", output)):
            if fn is not None and not callable(fn):
                raise TypeError(f"Subflow {name}= is a function, got {type(fn).__name__}")
        if isinstance(reads, str) or isinstance(writes, str):
            raise TypeError("reads/writes are lists of field names, not one string")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise TypeError(f"Subflow retry= takes a RetryPolicy, got {type(retry).__name__}")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
        ):
            raise ValueError(f"Subflow timeout= is positive seconds, got {timeout!r:.40}")
        object.__setattr__(self, "fn", _not_callable_directly)
        object.__setattr__(self, "reads", None if reads is None else frozenset(reads))
        object.__setattr__(self, "writes", None if writes is None else frozenset(writes))
        object.__setattr__(self, "timeout", timeout)
        object.__setattr__(self, "retry", retry)
        object.__setattr__(self, "cache", None)
        object.__setattr__(self, "asks", None)
        object.__setattr__(self, "flow", flow)
        object.__setattr__(self, "input", input)
        object.__setattr__(self, "output", output)
        # The sync API refuses flows with async nodes inside an event loop: the child's count.
        object.__setattr__(self, "is_async", any(n.is_async for n in flow.nodes.values()))
        object.__setattr__(self, "takes_context", False)

    composite: ClassVar[bool] = True
    runs_child: ClassVar[bool] = True

    def shape(self) -> dict[str, Any]:
        return {"kind": "subflow", "flow": self.flow.to_data()}

    def definition_problems(self, name: str) -> list[str]:
        """Without ``output`` the parent copies ``writes`` from the child's final state, so
        the child's state must have those fields too."""
        if self.output is not None:
            return []
        child = self.flow.state
        return [
            f"Subflow `{name}` copies `{key}` from its child `{self.flow.name}`, whose state "
            f"{child.__name__} has no such field; pass output= or fix the writes."
            for key in sorted((self.writes or frozenset()) - child.model_fields.keys())
        ]

    def start_state(self, parent: Any) -> Any:
        """The child's start state for this parent state (a mapping or a model)."""
        if self.input is not None:
            return self.input(parent)
        shared = type(parent).model_fields.keys() & self.flow.state.model_fields.keys()
        return {key: getattr(parent, key) for key in shared if key != "dialog_state"}

    def item_start_state(self, parent: Any, item: Any) -> Any:
        """The child's start state for one item of a ``Map`` over this subflow:
        ``input(parent, item)`` when ``input`` takes two arguments, ``input(parent)`` when it
        takes one; without ``input``, the item itself (a mapping or a model of the child's
        state)."""
        if self.input is None:
            return item
        if takes_at_least(self.input, 2):
            return self.input(parent, item)
        return self.input(parent)

    def parent_update(self, parent: Any, child: Any) -> Mapping[str, Any] | None:
        """The parent's update once the child has finished."""
        if self.output is not None:
            return self.output(parent, child)
        return {key: getattr(child, key) for key in sorted(self.writes or ())}
