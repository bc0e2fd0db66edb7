"""Nodes: plain functions returning partial updates, with declared reads/writes and policies.

A node is ``fn(state)`` or ``fn(state, ctx)``, sync or async, returning a mapping of the
fields it changes (or ``None``). ``@node(reads=..., writes=..., timeout=..., retry=...)``
declares its contract; the engine rejects writes outside ``writes``.
"""

from __future__ import annotations

import inspect
import random
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NoReturn, overload

from typing_extensions import TypeVar

from ..errors import InvalidUpdateError, RunError
from ..foundation._logging import get_logger
from ..records._events import Emitted
from ..records._node_error import ErrorText, NodeError, is_retryable
from ._ask import Ask
from ._cache_policy import CachePolicy
from ._gate import Gate, as_gate
from ._sleep import SleepUntil

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..foundation._logging import Logger
    from ..memory import Memory
    from ..records._events import Event

__all__ = ["Context", "ErrorText", "Node", "NodeError", "RetryPolicy", "node"]

NodeFn = Callable[..., Any]

#: The type of ``ctx.deps``: whatever the application hands its nodes at run time.
D = TypeVar("D", default=Any)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often, and how patiently, to re-run a failing node.

    ``max_attempts`` counts the first try. Delays grow as ``initial_delay * backoff**n`` up to
    ``max_delay``; ``jitter`` spreads them by up to +/-50 % so many workers do not retry in step.
    An exception is retried when ``retry_on`` says so (a tuple of exception classes, or a
    callable); by default, when it is marked ``retryable`` (flowkit's timeout/unavailable
    errors) or is a transient network failure: a ``TimeoutError`` or ``ConnectionError``,
    an unreachable network or host, a temporary DNS failure, httpx's timeouts and
    connection errors, or an ``httpx.HTTPStatusError`` with status 5xx, 429 or 408.
    Bugs (``ValueError``, ``KeyError`` ...), other ``OSError``s and 4xx refusals are not.
    """

    max_attempts: int = 3
    initial_delay: float = 0.5
    backoff: float = 2.0
    max_delay: float = 30.0
    jitter: bool = True
    retry_on: Callable[[BaseException], bool] | tuple[type[BaseException], ...] | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("RetryPolicy.max_attempts must be at least 1")
        if self.initial_delay < 0 or self.max_delay < 0 or self.backoff < 1:
            raise ValueError("RetryPolicy delays must be >= 0 and backoff >= 1")

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        if attempt >= self.max_attempts:
            return False
        if self.retry_on is None:
            return is_retryable(error)
        if isinstance(self.retry_on, tuple):
            return isinstance(error, self.retry_on)
        return bool(self.retry_on(error))

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        base = min(self.max_delay, self.initial_delay * self.backoff ** (attempt - 1))
        if self.jitter:
            base *= 0.5 + random.random()
        return float(base)


class Context(Generic[D]):
    """What a node may use besides the state: ids, the LLM, a bound logger, the clock, the
    cancellation signal, the run-time dependencies (``deps``), long-term memory (``memory``)
    and the step's idempotency key (``step_key``).

    ``cancel_event`` (a ``threading.Event``) is set when the node's timeout fires. A sync node
    cannot be stopped from outside, so one that moves hardware or loops for long should check
    ``ctx.cancelled`` (or wait on ``ctx.cancel_event`` instead of ``time.sleep``) and return;
    an async node is cancelled by ``asyncio`` and sees the flag set too.

    ``deps`` is the object given as ``Runner(..., deps=...)`` or to the call
    (``runner.start(..., deps=...)``): a database handle, a robot driver, a user id. It is
    never stored, journaled, logged or put in an event. Annotate ``ctx: Context[MyDeps]`` to
    have it typed.
    """

    __slots__ = (
        "__dict__",
        "_cancel",
        "_deps",
        "_emit",
        "_memory",
        "_runner",
        "_signalled",
        "_step",
        "attempt",
        "clock",
        "llm",
        "node",
        "run_id",
        "thread_id",
    )

    def __init__(
        self,
        *,
        thread_id: str,
        run_id: str,
        node: str,
        attempt: int,
        llm: Any,
        clock: Callable[[], datetime],
        cancel_event: threading.Event | None = None,
        emit: Callable[[Event], None] | None = None,
        deps: D = None,  # type: ignore[assignment]  # None when the runner was given none
        memory: Memory | None = None,
        step: tuple[Any, str] | None = None,
        runner: Any = None,
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.node = node
        self.attempt = attempt
        self.llm = llm
        self.clock = clock
        self._deps = deps
        # Made up front for nodes with a timeout (the engine sets it from another thread),
        # on demand for the rest, where nothing ever sets it.
        self._cancel = cancel_event
        self._emit = emit
        self._memory = memory
        # The engine hands its runner and the step's cursor and node; deps, memory and the
        # step key are read from them only when a node asks (most never do).
        self._runner = runner
        self._step = step
        #: What the node called to end its step (``ctx.ask``, ``ctx.sleep_until``), if it did:
        #: a node that returns after it was caught (``except Exception``) is refused.
        self._signalled: str | None = None

    def ask(
        self,
        payload: Any = None,
        *,
        input: type[BaseModel] | None = None,
        update: Mapping[str, Any] | None = None,
    ) -> NoReturn:
        """Pause the thread here with ``payload`` (what whoever answers is shown: a question,
        a draft, options), saving ``update`` with the pause. The node's step ends now: nothing
        after this call runs. The answer, validated against the node's ``asks`` model, becomes
        the node's update and its route decides where the run goes; a node that needs another
        answer is routed back and asks again (see docs/pauses.md).

        ``input`` (optional) names the model the node declared with ``@node(asks=...)``.
        """
        self._signalled = "ctx.ask"
        raise Ask(payload, update=update, input=input)

    def sleep_until(
        self, when: datetime | timedelta, *, update: Mapping[str, Any] | None = None
    ) -> NoReturn:
        """Let the thread sleep at this node until ``when`` (an aware ``datetime``, or a
        ``timedelta`` from now by the runner's clock), saving ``update`` with it. The node's
        step ends now: nothing after this call runs. When the timer fires (``fire_due``, run by
        ``flowkit worker`` and ``flowkit serve``), the node's route decides where the run goes;
        the node does not run again. Until then the thread is ``waiting`` with no pause to
        answer (``RunResult.due`` says when it wakes). See docs/timers.md.

        A node of the flow sleeps, and a node inside a ``Subflow`` node (its timer is the
        thread's); a call of a ``Map`` or ``Parallel`` (and a node of a ``Subflow`` run as
        one) fails with a ``RunError`` saying so.
        """
        if self._step is not None and self._step[0].node != self.node:
            raise RunError(
                f"`{self.node}` called ctx.sleep_until inside a Map or Parallel call; only a "
                "node of its own can sleep. Let the calls finish, then route to a node that "
                "sleeps.",
                thread_id=self.thread_id,
            )
        top = self._runner
        while getattr(top, "parent", None) is not None:  # a Subflow's child: its parent's
            top = top.parent
        if getattr(top, "_batch_child", False):
            raise RunError(
                f"`{self.node}` called ctx.sleep_until inside a Subflow run as a Map or "
                "Parallel call; such a call cannot sleep. Sleep in the parent flow, before or "
                "after the batch.",
                thread_id=self.thread_id,
            )
        self._signalled = "ctx.sleep_until"
        raise SleepUntil(when, update=update)

    def emit(self, value: Any) -> None:
        """Send ``value`` to whoever watches the run: the ``custom`` mode of ``Runner.stream``
        and subscribers (as an ``Emitted`` event). Not journaled; a no-op when nobody watches.
        """
        if self._emit is not None:
            self._emit(Emitted(self.thread_id, self.run_id, self.node, value))

    @property
    def deps(self) -> D:
        """The run-time dependencies: the call's ``deps=``, else the runner's (else None)."""
        if self._runner is not None:
            deps: D = self._runner._deps_for(self.run_id)
            return deps
        return self._deps

    @property
    def memory(self) -> Memory:
        """Long-term memory shared across threads (``Runner(..., memory=...)``)."""
        if self._memory is None and self._runner is not None:
            self._memory = self._runner.memory
        if self._memory is None:
            raise RunError(
                f"Node `{self.node}` uses ctx.memory, but the runner has no memory; make it "
                "with Runner(flow, memory=JsonFileMemory(path)) (or InProcessMemory()).",
                thread_id=self.thread_id,
            )
        return self._memory

    @property
    def step_key(self) -> str:
        """A key for this step that is the same on every attempt and every re-run after a
        crash, and differs between steps: hand it to an external service as its idempotency
        key. ``thread/version/node`` (``node[index]`` for a ``Map`` or ``Parallel`` call;
        ``.../subflow/child-version/node`` inside a ``Subflow``). See docs/lifecycle.md.
        """
        step = self._step
        if step is None or self._runner is None:  # made by hand (a unit test): one per node
            return f"{self.thread_id}/-/{self.node}"
        cursor, node = step
        prefix = self._runner._step_prefix(self.thread_id)
        return f"{prefix}/{cursor.step_version}/{node}"

    @property
    def error_text(self) -> ErrorText:
        """How the runner keeps exception text (``Runner(..., error_text=...)``): a node that
        records an error itself passes it on, ``NodeError.from_exception(..., text=...)``."""
        return "masked" if self._runner is None else self._runner.error_text

    @property
    def cancel_event(self) -> threading.Event:
        if self._cancel is None:
            self._cancel = threading.Event()
        return self._cancel

    @property
    def cancelled(self) -> bool:
        """Whether this attempt was given up (its timeout fired): stop work and return."""
        return self._cancel is not None and self._cancel.is_set()

    @cached_property
    def log(self) -> Logger:
        # Bound lazily: most nodes never log, and binding costs more than the node itself.
        return get_logger().bind(thread_id=self.thread_id, run_id=self.run_id, node=self.node)

    def __repr__(self) -> str:
        # Never the deps: they may hold credentials.
        return f"Context(thread_id={self.thread_id!r}, node={self.node!r}, attempt={self.attempt})"


@dataclass(frozen=True, slots=True)
class Node:
    """A node function with its contract. Calling it calls the function (handy in unit tests)."""

    fn: NodeFn
    reads: frozenset[str] | None = None
    writes: frozenset[str] | None = None
    timeout: float | None = None
    retry: RetryPolicy | None = None
    #: Reuse the update while the declared reads are unchanged (see ``CachePolicy``).
    cache: CachePolicy | None = None
    #: What the answer looks like when the node asks (``ctx.ask``): a ``Gate`` (its input
    #: model, and how the answer becomes an update); ``None``: the node never asks.
    asks: Gate | None = None
    is_async: bool = field(init=False)
    takes_context: bool = field(init=False)
    #: Called once, with the state alone: no context, timeout, retry or cache. The engine runs
    #: such a node without its attempt loop (most nodes are like this; see ``run_steps``).
    single_call: bool = field(init=False)

    #: Run by the core its own way (``Map``, ``Parallel``, ``Subflow``), not as one call.
    composite: ClassVar[bool] = False
    #: Runs a flow of its own (``Subflow``): as a call of a ``Map`` or a ``Parallel`` branch,
    #: the engine runs it as a child thread.
    runs_child: ClassVar[bool] = False

    def shape(self) -> dict[str, Any]:
        """What kind of node this is, as plain data, with what a reader of the flow needs of
        it (``Flow.to_data``): ``{"kind": "node"}`` here; composite nodes say more."""
        return {"kind": "node"}

    def definition_problems(self, name: str) -> list[str]:
        """What is wrong with this node as node ``name`` of a flow (checked when it is built);
        a plain node has nothing of its own to check."""
        return []

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(not_a_function(self.fn))
        if isinstance(self.fn, Node) and self.fn.composite:
            raise TypeError(
                f"A node is a function (state) -> update; a {type(self.fn).__name__} is run by "
                "the engine as a node of its own, not called as the function of another node "
                "(a Map's fn, node(...)). Give it its own name in the flow's nodes= instead."
            )
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(self.fn))
        object.__setattr__(self, "takes_context", takes_at_least(self.fn, 2))
        object.__setattr__(
            self,
            "single_call",
            not self.takes_context
            and self.timeout is None
            and self.retry is None
            and self.cache is None,
        )
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("node timeout must be positive seconds")
        if self.cache is not None:
            self._check_cache()
        if self.asks is not None:
            object.__setattr__(self, "asks", as_gate(self.asks))

    def _check_cache(self) -> None:

        if not isinstance(self.cache, CachePolicy):
            raise TypeError("cache= takes a CachePolicy, e.g. CachePolicy(ttl=3600)")
        if self.reads is None:
            raise TypeError(
                f"Node `{self.name}` has a cache but no declared reads: the reads are the cache "
                "key; declare them, e.g. @node(reads=['question'], cache=CachePolicy(...))."
            )

    @property
    def name(self) -> str:
        return getattr(self.fn, "__name__", repr(self.fn))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def takes_at_least(fn: NodeFn, count: int) -> bool:
    """Whether ``fn`` takes ``count`` positional arguments (``*args`` does; a callable whose
    signature cannot be read is taken not to): how the engine decides to pass ``ctx``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return True
    return sum(1 for p in params if p.kind in kinds) >= count


@overload
def node(
    fn: NodeFn,
    *,
    reads: Iterable[str] | None = None,
    writes: Iterable[str] | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | None = None,
    cache: CachePolicy | None = None,
    asks: Gate | type[BaseModel] | None = None,
) -> Node: ...


@overload
def node(
    fn: None = None,
    *,
    reads: Iterable[str] | None = None,
    writes: Iterable[str] | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | None = None,
    cache: CachePolicy | None = None,
    asks: Gate | type[BaseModel] | None = None,
) -> Callable[[NodeFn], Node]: ...


def node(
    fn: NodeFn | None = None,
    *,
    reads: Iterable[str] | None = None,
    writes: Iterable[str] | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | None = None,
    cache: CachePolicy | None = None,
    asks: Gate | type[BaseModel] | None = None,
) -> Node | Callable[[NodeFn], Node]:
    """Declare a node's contract: ``@node(reads=[...], writes=[...], timeout=5, retry=...,
    cache=CachePolicy(ttl=...), asks=AnswerModel)``. ``asks`` is what the answer looks like
    when the node pauses with ``ctx.ask(payload)`` (a model, or a ``Gate`` with its own
    ``apply``)."""

    def wrap(f: NodeFn) -> Node:
        return Node(
            f,
            reads=frozenset(reads) if reads is not None else None,
            writes=frozenset(writes) if writes is not None else None,
            timeout=timeout,
            retry=retry,
            cache=cache,
            asks=None if asks is None else as_gate(asks),
        )

    return wrap(fn) if fn is not None else wrap


def as_node(value: Node | NodeFn) -> Node:
    """``value`` as a node: a ``Node`` as it is, a function wrapped; anything else (a ``Flow``
    among them) is refused with a ``TypeError`` saying what to give instead."""
    return value if isinstance(value, Node) else Node(value)


def is_flow(value: object) -> bool:
    """Whether ``value`` is a ``Flow``, told by its shape: this module is below ``Flow``'s (a
    flow is made of nodes), so it cannot import the class."""
    return (
        not callable(value)
        and isinstance(getattr(value, "nodes", None), Mapping)
        and hasattr(value, "routes")
        and hasattr(value, "start")
    )


def not_a_function(value: object) -> str:
    """Why ``value`` cannot be a node's function; for a ``Flow``, how to run it as a node."""
    if is_flow(value):
        name = str(getattr(value, "name", "flow"))
        return (
            f"A node is a function (state) -> update, not a Flow: to run flow `{name}` as a node "
            f"of another flow, wrap it: Subflow(flow, writes=[...]) with the fields it hands "
            "back (or input=/output=); see docs/subflows.md."
        )
    return f"A node is a function (state) -> update, not {type(value).__name__}"


def check_update(update: Any, node_name: str) -> Mapping[str, Any]:
    """A node's return value as a mapping; ``None`` means no change."""
    if update is None:
        return {}
    # The exact-dict test first: nearly every node returns a dict, and the ABC check costs more.
    if type(update) is dict or isinstance(update, Mapping):
        return update
    raise InvalidUpdateError(
        f"`{node_name}` returned {type(update).__name__}; a node returns a dict of the fields "
        "it changes, or None.",
        node=node_name,
    )
