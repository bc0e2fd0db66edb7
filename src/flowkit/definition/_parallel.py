"""Nodes that run several calls at once: ``Map`` (one call per item) and ``Parallel`` (branches).

Both are fan-out and join in one node. Every call sees the state as it was when the node was
reached, never a sibling's writes; each finished call is checkpointed on its own, so a crash
re-runs only the calls that had not finished; when all have finished their updates merge
through the fields' reducers in a fixed order (item index, or branch declaration order), so
the result does not depend on which call finished first. The node's route is the join: it
decides where the run goes next, and, through the flow's error field, what to do when some
calls failed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from ._cache_policy import CachePolicy
from ._gate import Gate
from ._node import Node, NodeFn, RetryPolicy, as_node, is_flow, takes_at_least

__all__ = ["BatchNode", "Batched", "Call", "Map", "Parallel"]

#: ``over(state)`` -> the items a ``Map`` runs its function on, one call per item.
Items = Callable[[Any], Sequence[Any] | Iterable[Any]]
#: ``merge(state, updates)`` -> the one update a ``Map``'s join applies (updates in item order).
Merge = Callable[[Any, list[dict[str, Any]]], Mapping[str, Any] | None]
#: A fixed number of calls at once, or ``limit(state)`` read when the node starts.
Concurrency = int | Callable[[Any], int]


@dataclass(frozen=True, slots=True)
class Call:
    """One call of a batch: its index in the merge order, a label and the node to call, or the
    gate whose input stands for the call (a ``Parallel`` branch that waits for a person). A
    ``Subflow`` as the node runs its flow as a child thread (``node.runs_child``)."""

    index: int
    label: str
    node: Node
    gate: Gate | None = None
    #: The item of a ``Map`` call (what a ``Subflow`` call starts its child from, and part
    #: of a cached call's key).
    item: Any = None


def _like(first: Node) -> Callable[[NodeFn], Node]:
    """Makes the nodes of a Map's other calls from its first call's: the same wrapper of the
    same function around another item, so what ``Node`` works out from its function (reading
    its signature) holds for them too; working it out again was a fifth of a 10,000-item map."""
    kind = type(first)
    kept = [(name, getattr(first, name)) for name in kind.__slots__ if name != "fn"]
    put = object.__setattr__

    def like(fn: NodeFn) -> Node:
        node = object.__new__(kind)
        put(node, "fn", fn)
        for name, value in kept:
            put(node, name, value)
        return node

    return like


def _not_callable_directly(*_: Any) -> Any:
    raise TypeError("A Map or Parallel node runs its calls through a Runner; call `.fn` instead.")


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchNode(Node):
    """What ``Map`` and ``Parallel`` share: bounded concurrency and a join. Each lists its calls
    for a state with ``calls(state)``; the engine takes either as a ``Batched`` node."""

    concurrency: Concurrency = 8
    merge: Merge | None = None
    composite: ClassVar[bool] = True

    def limit(self, state: Any) -> int:
        """How many calls may run at once for this state."""
        limit = self.concurrency(state) if callable(self.concurrency) else self.concurrency
        _check_limit(limit)
        return limit

    def _check_concurrency(self) -> None:
        if not callable(self.concurrency):
            _check_limit(self.concurrency)
        if self.merge is not None and not callable(self.merge):
            raise TypeError("merge is a function (state, updates) -> the update to apply")


def _check_limit(limit: Any) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError("concurrency is a whole number of calls running at once")
    if limit < 1:
        raise ValueError("concurrency must be at least 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class Map(BatchNode):
    """Run ``fn(state, item)`` (or ``fn(state, item, ctx)``) once per item of ``over(state)``.

    ``over`` must give the same items for the same state (it runs again when a crashed map
    resumes). At most ``concurrency`` calls run at once (a number, or a function of the
    state): async functions on the event loop, sync ones in worker threads.
    ``reads``/``writes``/``timeout``/``retry`` apply to each call. ``key(item)`` names a call
    in events and logs (``"node[key]"``; default: the item's index). The calls' updates merge
    through the fields' reducers in item order; or ``merge(state, updates)`` receives them (in
    item order, failed calls left out) and returns the one update to apply.

    >>> from flowkit import Map
    >>> def summarise(state, section):
    ...     return {"summaries": [section.upper()]}
    >>> summarise_all = Map(summarise, over=lambda state: state.sections, concurrency=4)
    """

    over: Items | None = None
    key: Callable[[Any], str] | None = None
    item_takes_context: bool = field(init=False, default=False)
    #: The ``CachePolicy`` of the function's ``@node``: each call's update is cached by the
    #: function's reads and its item (a Map is not cached as a whole).
    item_cache: CachePolicy | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.cache is not None:
            raise TypeError("A Map is not cached as a whole; cache the work its calls do instead")
        if isinstance(self.fn, Node) and self.fn.runs_child:
            self._over_subflow()
            return
        if isinstance(self.fn, Node) and not self.fn.composite:
            # @node(...) on the function: its contract holds for each call (where the Map
            # declares none of its own), and the call is the function's own (state, item),
            # (state, item, ctx), sync or async; the Node wrapper would hide all of that.
            declared = self.fn
            for name in ("reads", "writes", "timeout", "retry", "asks"):
                if getattr(self, name) is None:
                    object.__setattr__(self, name, getattr(declared, name))
            object.__setattr__(self, "item_cache", declared.cache)
            object.__setattr__(self, "fn", declared.fn)
        Node.__post_init__(self)
        if self.over is None or not callable(self.over):
            raise TypeError("Map needs over=, a function state -> the items to map over")
        if self.key is not None and not callable(self.key):
            raise TypeError("Map key= is a function item -> the call's name in events and logs")
        self._check_concurrency()
        object.__setattr__(self, "item_takes_context", takes_at_least(self.fn, 3))
        # The engine calls each item through a plain node: (state) or (state, ctx).
        object.__setattr__(self, "takes_context", self.item_takes_context)

    def _over_subflow(self) -> None:
        """``Map(Subflow(flow, ...), over=...)``: each item runs the flow as a child."""
        if self.over is None or not callable(self.over):
            raise TypeError("Map needs over=, a function state -> the items to map over")
        if self.key is not None and not callable(self.key):
            raise TypeError("Map key= is a function item -> the call's name in events and logs")
        child = self.fn
        assert isinstance(child, Node)
        for name in ("reads", "writes", "timeout", "retry"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, getattr(child, name))
        object.__setattr__(self, "is_async", child.is_async)
        object.__setattr__(self, "takes_context", False)
        object.__setattr__(self, "single_call", False)
        object.__setattr__(self, "item_takes_context", False)
        self._check_concurrency()

    def shape(self) -> dict[str, Any]:
        limit = self.concurrency
        shape: dict[str, Any] = {
            "kind": "map",
            "concurrency": limit if isinstance(limit, int) else "per state",
        }
        child = self.fn
        if isinstance(child, Node) and child.runs_child:
            shape["subflow"] = child.shape()
        return shape

    def items(self, state: Any) -> list[Any]:
        assert self.over is not None
        return list(self.over(state))

    def calls(self, state: Any) -> list[Call]:
        items = self.items(state)
        key = self.key
        labels = [str(key(item)) if key else str(index) for index, item in enumerate(items)]
        if key is not None and len(set(labels)) < len(labels):
            # Two calls named alike could not be told apart in events, errors and pause ids:
            # a repeated label gets its index (again, while that too names another call).
            taken = set(labels)
            seen: set[str] = set()
            for index, label in enumerate(labels):
                if label in seen:
                    new = f"{label}#{index}"
                    while new in taken:
                        new = f"{new}#{index}"
                    labels[index] = new
                    taken.add(new)
                seen.add(label)
        fn = self.fn
        if isinstance(fn, Node) and fn.runs_child:  # each call runs the flow as a child
            return [
                Call(index, label, fn, item=item)
                for index, (label, item) in enumerate(zip(labels, items, strict=True))
            ]
        nodes: list[Node] = []
        like: Callable[[NodeFn], Node] | None = None
        for item in items:
            nodes.append(self._bound(item, like))
            like = like or _like(nodes[0])
        return [
            Call(index, label, bound, item=item)
            for index, (label, bound, item) in enumerate(zip(labels, nodes, items, strict=True))
        ]

    def _bound(self, item: Any, like: Callable[[NodeFn], Node] | None = None) -> Node:
        fn = self.fn
        if self.is_async:
            if self.item_takes_context:

                async def call_ctx_async(state: Any, ctx: Any) -> Any:
                    return await fn(state, item, ctx)

                bound: NodeFn = call_ctx_async
            else:

                async def call_async(state: Any) -> Any:
                    return await fn(state, item)

                bound = call_async
        elif self.item_takes_context:

            def call_ctx(state: Any, ctx: Any) -> Any:
                return fn(state, item, ctx)

            bound = call_ctx
        else:

            def call(state: Any) -> Any:
                return fn(state, item)

            bound = call
        if like is not None:
            return like(bound)
        return Node(
            bound,
            reads=self.reads,
            writes=self.writes,
            timeout=self.timeout,
            retry=self.retry,
            asks=self.asks,
            cache=self.item_cache,
        )


@dataclass(frozen=True, slots=True, kw_only=True, init=False)
class Parallel(BatchNode):
    """Run named branches concurrently, each a node ``(state)`` or ``(state, ctx)``, or a
    ``Gate`` that waits for its own input (several gates then wait at once).

    Every branch sees the state as it was when this node was reached; their updates merge in
    the order the branches are declared. A branch keeps its own ``reads``/``writes``/
    ``timeout``/``retry`` (declare them with ``@node``). For a branch of several steps, make it
    a function that does them, or a flow of its own.

    >>> from flowkit import Parallel
    >>> def web(state):
    ...     return {"notes": ["web"]}
    >>> def docs(state):
    ...     return {"notes": ["docs"]}
    >>> research = Parallel({"web": web, "docs": docs})
    """

    branches: Mapping[str, Node] = field(default_factory=dict)
    gates: Mapping[str, Gate] = field(default_factory=dict)
    _order: tuple[str, ...] = field(default=(), repr=False)

    def __init__(
        self,
        branches: Mapping[str, Node | NodeFn | Gate],
        *,
        concurrency: Concurrency = 8,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not isinstance(branches, Mapping) or not branches:
            raise TypeError("Parallel needs a mapping of branch name -> node function")
        gates = {str(k): v for k, v in branches.items() if isinstance(v, Gate)}
        nodes = {str(k): _branch(str(k), v) for k, v in branches.items() if not isinstance(v, Gate)}
        writes = _union(
            [*(n.writes for n in nodes.values()), *(_gate_writes(g) for g in gates.values())]
        )
        reads = _union(n.reads for n in nodes.values())
        object.__setattr__(self, "fn", _not_callable_directly)
        object.__setattr__(self, "reads", reads)
        object.__setattr__(self, "writes", writes)
        object.__setattr__(self, "timeout", timeout)
        object.__setattr__(self, "retry", retry)
        object.__setattr__(self, "cache", None)
        object.__setattr__(self, "asks", None)
        object.__setattr__(self, "concurrency", concurrency)
        object.__setattr__(self, "merge", None)
        object.__setattr__(self, "branches", MappingProxyType(nodes))
        object.__setattr__(self, "gates", MappingProxyType(gates))
        object.__setattr__(self, "_order", tuple(str(k) for k in branches))
        object.__setattr__(self, "is_async", any(n.is_async for n in nodes.values()))
        object.__setattr__(self, "takes_context", False)
        self._check_concurrency()

    def shape(self) -> dict[str, Any]:
        return {
            "kind": "parallel",
            "concurrency": self.concurrency if isinstance(self.concurrency, int) else "per state",
            "branches": sorted(self.branches),
            "gate_branches": {name: g.input.__name__ for name, g in self.gates.items()},
        }

    def calls(self, state: Any) -> list[Call]:
        calls = []
        for index, name in enumerate(self._order):
            if name in self.gates:
                calls.append(Call(index, name, _waits, self.gates[name]))
            else:
                calls.append(Call(index, name, self._with_defaults(self.branches[name])))
        return calls

    def _with_defaults(self, branch: Node) -> Node:
        """A branch without its own timeout or retry takes the ``Parallel``'s."""
        if branch.runs_child:  # a Subflow keeps its own policies
            return branch
        if (branch.timeout is not None or self.timeout is None) and (
            branch.retry is not None or self.retry is None
        ):
            return branch
        return Node(
            branch.fn,
            reads=branch.reads,
            writes=branch.writes,
            timeout=branch.timeout if branch.timeout is not None else self.timeout,
            retry=branch.retry if branch.retry is not None else self.retry,
        )


def _branch(name: str, value: Node | NodeFn) -> Node:
    """Branch ``name`` as a node: a function, a ``Node``, or a ``Subflow`` (a flow of its own,
    run as a child). A bare ``Flow``, a ``Map`` or a ``Parallel`` is refused here, when the
    ``Parallel`` is made, rather than failing on every run."""
    if isinstance(value, Node) and value.runs_child:
        return value
    if is_flow(value) or (isinstance(value, Node) and value.composite):
        kind = "Flow" if is_flow(value) else type(value).__name__
        hint = (
            "wrap it: Subflow(flow, writes=[...]) with the fields it hands back"
            if is_flow(value)
            else "make the branch a function, or wrap the steps in a flow of their own and "
            "give Subflow(flow, ...) as the branch"
        )
        raise TypeError(
            f"Parallel branch `{name}` is a {kind}: a branch is one call (state) -> update or a "
            f"Subflow(...); {hint} (see docs/subflows.md)."
        )
    return as_node(value)


def _gate_writes(gate: Gate) -> frozenset[str] | None:
    return gate.default_writes if gate.apply is None else gate.writes


#: Stands in for the node of a gate branch, which is answered, never called.
_waits = Node(_not_callable_directly)


def _union(sets: Iterable[frozenset[str] | None]) -> frozenset[str] | None:
    """The union of declared field sets; ``None`` (undeclared) if any branch declares none."""
    found: set[str] = set()
    for each in sets:
        if each is None:
            return None
        found |= each
    return frozenset(found)


#: The nodes the engine runs as a batch of calls (fan-out, checkpoint per call, join).
Batched = Map | Parallel
