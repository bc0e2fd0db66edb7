"""Action handlers: plain callables registered by name that a goal runs when it completes,
and the artifact stores where results too large for the state are kept by reference.

A handler takes an ``ActionCall`` and returns an ``ActionResult`` (or a mapping, or ``None``),
or raises ``ActionRefused`` when the request cannot be granted as asked (the slot is taken):
the goal stays open and the user is asked again. ``call.ledger`` is where a handler records
what it took, shared by every conversation on the same store.
A result whose JSON exceeds the domain's ``result_inline_bytes`` is stored as an artifact and
the state keeps only its content-hash reference, ``sha256:<hex>``.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import AwareDatetime, BaseModel, ConfigDict, model_validator

from ..errors import DomainError
from ..foundation._atomic import write_atomically
from ._models import Domain
from .ledger import Ledger, MemoryLedger
from .state import JsonScalar

__all__ = [
    "ActionCall",
    "ActionRefused",
    "ActionResult",
    "Artifacts",
    "FileArtifacts",
    "Handler",
    "MemoryArtifacts",
    "Schedule",
    "record_slots",
    "resolve_handlers",
]


@dataclass(frozen=True, slots=True)
class ActionCall:
    """What a handler gets: the action and goal names, the slot values, the thread id, and
    the ``ledger`` of what handlers have taken so far (see ``flowkit.dialogue.ledger``)."""

    action: str
    goal: str
    slots: Mapping[str, JsonScalar] = field(default_factory=dict)
    thread_id: str = ""
    ledger: Ledger = field(default_factory=MemoryLedger)


class ActionRefused(Exception):  # noqa: N818 - a refusal, not an error: the turn goes on
    """Raised by a handler that cannot grant the request as asked (the slot is taken).

    The goal stays open with its slots; the reply is the domain's ``response`` (filled with
    the slot values and ``params``), followed by the question for ``slot`` when one is named,
    and the user's answer to it runs the action again. ``params`` must not hold personal data.
    """

    def __init__(self, response: str, *, slot: str | None = None, **params: JsonScalar) -> None:
        self.response = response
        self.slot = slot
        self.params = params
        super().__init__(f"refused: {response}" + (f" (ask for {slot})" if slot else ""))


class Schedule(BaseModel):
    """An event an action schedules for later (a reminder): ``intent`` comes to the
    conversation as if the user had said it, with ``entities``, ``after`` seconds (or a
    ``timedelta``) from now or ``at`` an aware time. ``name`` lets a later action cancel it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    intent: str
    entities: dict[str, JsonScalar] = {}
    after: timedelta | None = None
    at: AwareDatetime | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _one_time(self) -> Schedule:
        if (self.after is None) == (self.at is None):
            raise ValueError("give a Schedule either after= (a delay) or at= (a time)")
        return self


class ActionResult(BaseModel):
    """``summary``: a few scalars the reply may quote (a booking number); ``data``: anything
    JSON-serialisable, kept inline when small, by reference when large. ``schedule``: events
    to deliver later (reminders); ``cancel``: names of scheduled events to drop, ``"all"``
    for every pending one."""

    summary: dict[str, JsonScalar] = {}
    data: Any = None
    schedule: list[Schedule] = []
    cancel: list[str] | Literal["all"] = []


Handler = Callable[[ActionCall], ActionResult | Mapping[str, Any] | None]


def record_slots(call: ActionCall) -> ActionResult:
    """The default handler: acknowledge with a stable reference derived from the request."""
    digest = hashlib.sha256(
        json.dumps([call.goal, dict(call.slots)], sort_keys=True, default=str).encode()
    ).hexdigest()
    return ActionResult(summary={"reference": f"{call.goal}-{digest[:8]}"})


def as_result(value: ActionResult | Mapping[str, Any] | None) -> ActionResult:
    if isinstance(value, ActionResult):
        return value
    if value is None:
        return ActionResult()
    scalars = {k: v for k, v in value.items() if isinstance(v, str | int | float | bool)}
    return ActionResult(summary=scalars, data=dict(value))


def resolve_handlers(
    domain: Domain, given: Mapping[str, Handler] | None = None
) -> dict[str, Handler]:
    """Handlers for every action of ``domain``: ``given`` first, then each action's
    ``handler: module:function``, else ``record_slots``.

    Raises:
        DomainError: a ``handler`` cannot be imported or is not callable.
    """
    given = dict(given or {})
    handlers: dict[str, Handler] = {}
    problems: list[str] = []
    for name, spec in domain.actions.items():
        if name in given:
            handlers[name] = given[name]
        elif spec.handler is None:
            handlers[name] = record_slots
        else:
            module, _, attr = spec.handler.partition(":")
            try:
                value: Any = importlib.import_module(module)
                for part in attr.split("."):
                    value = getattr(value, part)
            except (ImportError, AttributeError) as exc:
                problems.append(
                    f"actions.{name}.handler: cannot import `{spec.handler}` "
                    f"({type(exc).__name__}); fix the path or pass actions=..."
                )
                continue
            if not callable(value):
                problems.append(f"actions.{name}.handler: `{spec.handler}` is not callable")
                continue
            handlers[name] = value
    unknown = sorted(set(given) - set(domain.actions))
    problems += [
        f"actions.{n}: a handler was given but the domain declares no such action" for n in unknown
    ]
    if problems:
        raise DomainError(problems)
    return handlers


class Artifacts(Protocol):
    """Where large action results go; ``put`` returns a reference, ``get`` reads it back."""

    def put(self, data: bytes) -> str: ...

    def get(self, ref: str) -> bytes: ...


def content_ref(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


class MemoryArtifacts:
    """Artifacts in a dict: for tests and runs without a store folder."""

    def __init__(self) -> None:
        self._items: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        ref = content_ref(data)
        self._items[ref] = data
        return ref

    def get(self, ref: str) -> bytes:
        try:
            return self._items[ref]
        except KeyError:
            raise KeyError(
                f"no artifact {ref!r} in this process; use FileArtifacts to keep "
                "them across processes"
            ) from None


class FileArtifacts:
    """Artifacts as files ``<dir>/<hex>.json`` named by their content hash, written atomically
    (temp file, fsync, rename), so the same result is stored once and never half-written."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def put(self, data: bytes) -> str:
        ref = content_ref(data)
        path = self._path(ref)
        if not path.exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            write_atomically(path, data)
        return ref

    def get(self, ref: str) -> bytes:
        return self._path(ref).read_bytes()

    def _path(self, ref: str) -> Path:
        kind, _, digest = ref.partition(":")
        if (
            kind != "sha256"
            or len(digest) != 64
            or not all(c in "0123456789abcdef" for c in digest)
        ):
            raise ValueError(f"{ref!r} is not an artifact reference (sha256:<64 hex digits>)")
        return self.directory / f"{digest}.json"
