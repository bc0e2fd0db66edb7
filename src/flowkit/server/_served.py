"""The flows a server runs: one runner per flow over one tapped store, and what the routes
need to know of a thread (its flow, its open pauses and their input schemas).
"""

from __future__ import annotations

import functools
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from ..definition._flow import Flow
from ..definition._gate import Gate
from ..definition._pause_ids import pause_spec
from ..errors import ServerConfigError, ThreadNotFoundError
from ..runner._result import RunResult
from ..runner._runner import Runner
from ..stores._ids import check_thread_id
from ..stores._protocol import AttemptMarks, Store
from ..workflows import load_flow
from ._problems import Problem
from ._tap import Listener, tap

__all__ = [
    "RunnerFactory",
    "Served",
    "gate_spec",
    "gates_json",
    "input_schema",
    "pause_spec",
    "text_field",
]

# ``pause_spec`` is the definition layer's, shared with the CLI (re-exported here).

#: Builds the runner of one flow over the server's (tapped) store.
RunnerFactory = Callable[[Flow, Store], Runner[Any]]


class Served:
    """Runners by flow name, sharing one store whose writes the hub hears of."""

    def __init__(
        self,
        flows: Iterable[Flow | str],
        store: Store,
        listener: Listener,
        *,
        llm: Any = None,
        runner_factory: RunnerFactory | None = None,
    ) -> None:
        self.store = store
        self.tapped = tap(store, listener)
        loaded = []
        for item in flows:
            if not isinstance(item, Flow | str):
                raise ServerConfigError(
                    f"Serve Flows or registered workflow names, not {type(item).__name__}."
                )
            loaded.append(item if isinstance(item, Flow) else load_flow(item))
        if not loaded:
            raise ServerConfigError("Serve at least one flow: pass Flows or registered names.")
        names = [f.name for f in loaded]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ServerConfigError(
                f"Flow names must be unique; served twice: {', '.join(twice)}. Rename one."
            )

        def default_factory(flow: Flow, store: Store) -> Runner[Any]:
            flow_llm = llm.get(flow.name) if isinstance(llm, Mapping) else llm
            return Runner(
                flow, store=store, llm=flow_llm, track_attempts=isinstance(store, AttemptMarks)
            )

        make = runner_factory or default_factory
        self.runners: dict[str, Runner[Any]] = {f.name: make(f, self.tapped) for f in loaded}
        self._flow_of: OrderedDict[str, str] = OrderedDict()
        self._guard = threading.Lock()

    @property
    def flows(self) -> dict[str, Flow]:
        return {name: runner.flow for name, runner in self.runners.items()}

    def runner(self, flow: str) -> Runner[Any]:
        found = self.runners.get(flow)
        if found is None:
            raise Problem(
                404,
                "flow_not_served",
                f"This server runs no flow `{flow}`; it runs: {', '.join(sorted(self.runners))}.",
            )
        return found

    def flow_name(self, thread_id: str) -> str:
        """The flow ``thread_id`` belongs to (its start record names it)."""
        check_thread_id(thread_id)
        with self._guard:
            known = self._flow_of.get(thread_id)
        if known is not None:
            return known
        log = self.store.load(thread_id)
        first = log.snapshot or (log.records[0] if log.records else None)
        name = getattr(first, "flow", None)
        if not isinstance(name, str):
            raise ThreadNotFoundError(thread_id)
        self.remember(thread_id, name)
        return name

    def remember(self, thread_id: str, flow: str) -> None:
        """Note that ``thread_id`` belongs to ``flow`` (it was started here, or read), so
        the next request for it need not read its journal to find its runner."""
        with self._guard:
            self._flow_of[thread_id] = flow
            while len(self._flow_of) > 10_000:
                self._flow_of.popitem(last=False)

    def forget(self, thread_id: str) -> None:
        with self._guard:
            self._flow_of.pop(thread_id, None)

    def runner_of(self, thread_id: str) -> Runner[Any]:
        name = self.flow_name(thread_id)
        if name not in self.runners:
            raise Problem(
                404,
                "flow_not_served",
                f"Thread `{thread_id}` belongs to flow `{name}`, which this server does not run.",
                extra={"thread_id": thread_id},
            )
        return self.runners[name]


def gate_spec(flow: Flow, name: str) -> Gate | None:
    """What answers the open pause ``name`` (a ``RunResult.gates`` entry) look like; ``None``
    when the flow has no such pause (see ``flowkit.definition._pause_ids``)."""
    found = pause_spec(flow, name)
    return None if found is None else found[0]


def gates_json(flow: Flow, result: RunResult[Any]) -> list[dict[str, Any]]:
    """The open pauses of a waiting thread, each with its input's JSON schema."""
    found = []
    for name in result.gates:
        spec = gate_spec(flow, name)
        model: type[BaseModel] | None = spec.input if spec is not None else None
        found.append(
            {
                "name": name,
                "description": spec.description if spec is not None else "",
                "input_schema": input_schema(model) if model is not None else {},
            }
        )
    return found


@functools.lru_cache(maxsize=512)
def _schema_json(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema, made once per model: pydantic builds it anew on every call,
    which was over a third of what starting a thread over HTTP cost. A fresh copy each time,
    so no caller can change another's."""
    found: dict[str, Any] = json.loads(_schema_json(model))
    return found


def text_field(model: Any) -> str | None:
    """The field of a gate's input that takes what a person types, if there is one."""
    fields = model.model_fields
    for name in ("text", "message", "content", "utterance"):
        if name in fields:
            return name
    strings = [name for name, info in fields.items() if info.annotation is str]
    return strings[0] if len(strings) == 1 else None
