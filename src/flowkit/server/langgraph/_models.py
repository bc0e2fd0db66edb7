"""The request bodies LangGraph clients send, as far as flowkit reads them.

Fields a client sends that flowkit has no use for are ignored (``extra="ignore"``); fields
that would change the meaning of a request but have no flowkit equivalent are named here
and refused with a clear problem when given (``unsupported``).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from .._models import THREAD_ID_PATTERN, Flag
from .._problems import Problem
from ._thread_order import SortBy, SortOrder

__all__ = [
    "AssistantSearch",
    "HistoryRequest",
    "RunCreate",
    "StateCheckpointRequest",
    "ThreadCopy",
    "ThreadCreate",
    "ThreadPatch",
    "ThreadSearch",
    "UpdateStateBody",
    "unsupported",
]

_LOOSE = ConfigDict(extra="ignore")


def _not_a_flag(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a whole number, not true or false")  # pydantic's 422
    return value


#: A whole number, where JSON's true and false are refused (pydantic would take them for 1
#: and 0); ``3.0`` stays one, as JSON Schema counts it.
Whole = Annotated[int, BeforeValidator(_not_a_flag)]


def _unstorable(value: Any) -> str | None:
    """Why ``value`` cannot be kept and sent back as JSON (``None``: it can): a number JSON
    has no form for (NaN, Infinity) or text that is not Unicode (a lone surrogate)."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return "NaN and Infinity are not JSON numbers; send a number"
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "a lone surrogate (\\ud800-\\udfff) is not text; send UTF-8 text"
        elif isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list | tuple):
            todo.extend(item)
    return None


class _Body(BaseModel):
    """A request body: unknown fields ignored, and nothing kept that JSON cannot give back
    (metadata and values are stored and answered later: a 422 now, not a 500 then)."""

    model_config = _LOOSE

    @model_validator(mode="after")
    def _storable(self) -> Self:
        for name, value in self.__dict__.items():
            why = _unstorable(value)
            if why is not None:
                raise ValueError(f"`{name}`: {why}")
        return self


def unsupported(feature: str, hint: str = "") -> Problem:
    """The answer to a LangGraph feature flowkit does not serve (docs/server.md lists them)."""
    return Problem(
        501,
        "langgraph_unsupported",
        f"flowkit does not support {feature} on its LangGraph API."
        + (f" {hint}" if hint else "")
        + " See docs/server.md, 'LangGraph client API'.",
    )


class AssistantSearch(_Body):
    metadata: dict[str, Any] | None = None
    graph_id: str | None = Field(default=None, max_length=200)
    name: str | None = Field(default=None, max_length=200)
    limit: Whole = Field(default=10, ge=1, le=1000)
    offset: Whole = Field(default=0, ge=0, le=1_000_000)


class ThreadCreate(_Body):
    thread_id: str | None = Field(default=None, pattern=THREAD_ID_PATTERN, max_length=128)
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] | None = None
    graph_id: str | None = Field(default=None, max_length=200)
    supersteps: list[Any] | None = None
    ttl: Any = None


class ThreadCopy(_Body):
    """``threads.copy`` sends no body; one sent is a JSON object (a 422 otherwise), whose
    fields flowkit has no use for."""


class ThreadPatch(_Body):
    metadata: dict[str, Any] | None = None


class ThreadSearch(_Body):
    metadata: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    ids: list[Annotated[str, Field(pattern=THREAD_ID_PATTERN, max_length=128)]] | None = Field(
        default=None, max_length=1000
    )
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    limit: Whole = Field(default=10, ge=1, le=1000)
    offset: Whole = Field(default=0, ge=0, le=1_000_000)
    sort_by: SortBy | None = None
    sort_order: SortOrder | None = None


class UpdateStateBody(_Body):
    values: dict[str, Any] | list[Any] | None = None
    as_node: str | None = Field(default=None, max_length=200)
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = Field(default=None, max_length=40)


class StateCheckpointRequest(_Body):
    checkpoint: dict[str, Any]
    subgraphs: Flag = False


class HistoryRequest(_Body):
    limit: Whole = Field(default=10, ge=1, le=1000)
    before: str | dict[str, Any] | None = None
    checkpoint: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


class RunCreate(_Body):
    """``runs.create``, ``runs.wait`` and ``runs.stream``."""

    assistant_id: str = Field(max_length=200)
    input: Any = None
    command: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    stream_mode: str | list[str] = "values"
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] | None = None
    if_not_exists: Literal["create", "reject"] | None = None
    on_completion: Literal["delete", "keep"] | None = None
    checkpoint_id: str | None = Field(default=None, max_length=40)
    checkpoint: dict[str, Any] | None = None
    #: Read for ``configurable.checkpoint_id`` alone (another way to name a checkpoint).
    config: dict[str, Any] | None = None
    interrupt_before: Any = None
    interrupt_after: Any = None
    webhook: str | None = None
    after_seconds: Whole | None = None
    stream_subgraphs: Flag = False
    #: ``runs.stream``: what a client leaving does to the run (``cancel`` by default).
    on_disconnect: Literal["cancel", "continue"] | None = None
