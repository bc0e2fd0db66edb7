"""Request and response bodies of the HTTP API, as pydantic models (the OpenAPI document's
schemas). Requests forbid unknown fields, so a misspelt option is a 422, not ignored, and their
flags are JSON booleans (no `0` for `false`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, model_validator

__all__ = [
    "THREAD_ID_PATTERN",
    "Accepted",
    "Checkpoint",
    "FlowInfo",
    "ForkRequest",
    "GateInfo",
    "History",
    "Me",
    "PauseInfo",
    "ProblemBody",
    "ResumeRequest",
    "StartRequest",
    "ThreadList",
    "ThreadState",
    "ThreadSummary",
    "UpdateStateRequest",
]

#: Thread ids as the stores accept them (``flowkit.stores._ids``, which also refuses ``..``:
#: a 422 ``invalid_thread_id``; regex engines of JSON schema tools lack the look-ahead).
THREAD_ID_PATTERN = r"^[A-Za-z0-9_@:-][A-Za-z0-9_.@:-]{0,127}$"

Status = Literal["pending", "waiting", "done", "failed"]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


#: A JSON true or false: `0` or `"no"` is refused, as the document says, not taken for false.
#: (Whole numbers stay lax: JSON Schema counts `3.0` as an integer.)
Flag = Annotated[bool, Strict()]


def _no_flag(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a version is a whole number, not true or false")
    return value


#: A checkpoint version: a whole number from 0 (`3.0` too), never `true` taken for 1.
Version = Annotated[int, Field(ge=0), BeforeValidator(_no_flag)]


class StartRequest(_Request):
    """Start a thread of the flow named in the path."""

    thread_id: str | None = Field(
        default=None,
        pattern=THREAD_ID_PATTERN,
        description="The new thread's id (default: generated from the flow's name and time)",
    )
    input: dict[str, Any] | None = Field(
        default=None, description="The start state's fields (default: the state's defaults)"
    )
    wait: Flag = Field(
        default=True,
        description="Answer when the run waits, finishes or fails (true), or as soon as the "
        "thread exists, letting it run on (false: 202; follow it with its events)",
    )


class ResumeRequest(_Request):
    """Answer what a thread waits for, or continue a failed or interrupted run."""

    input: Any = Field(
        default=None,
        description="The answer (see its pause's input_schema in `gates`); with several pauses "
        "of a Map or Parallel open, a mapping {pause id: answer} answers several at once; null "
        "to retry",
    )
    gate: str | None = Field(
        default=None,
        min_length=1,
        max_length=512,
        description="The id of the pause to answer (one of `pauses`: a gate, a node that asked, "
        "a Map call `node[label]`, `subflow/gate` inside a subflow); refused unless it is open. "
        "Without it, a bare input answers the one open pause (refused when several are open)",
    )
    expected_version: Version | None = Field(
        default=None, description="Refuse (409) if the thread moved past this version"
    )
    wait: Flag = Field(default=True, description="As for start")


class ForkRequest(_Request):
    """Start a new thread from a checkpoint of this one."""

    new_thread_id: str | None = Field(
        default=None, pattern=THREAD_ID_PATTERN, description="default: THREAD-fork-N"
    )
    at: Version | None = Field(default=None, description="Checkpoint version (default: latest)")


class UpdateStateRequest(_Request):
    """Patch a thread's state: an audited checkpoint of its own (who, why)."""

    values: dict[str, Any] = Field(default_factory=dict, description="Fields to change")
    goto: str | None = Field(
        default=None, min_length=1, max_length=512, description="Also move it here (a state)"
    )
    as_node: str | None = Field(
        default=None,
        min_length=1,
        max_length=512,
        description="Apply the values as this node's update and move where its route sends "
        "the new state (not with goto)",
    )
    reason: str = Field(default="", max_length=2000, description="Why (kept in history)")
    expected_version: Version | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> UpdateStateRequest:
        # An empty patch wrote a version of its own, which every open review page that
        # sends `expected_version` then found to be a conflict, with nothing changed.
        if not self.values and self.goto is None and self.as_node is None:
            raise ValueError("the patch changes nothing: give `values`, `goto` or `as_node`")
        return self


class GateInfo(BaseModel):
    name: str = Field(description="The pause's id (as in `pauses`)")
    description: str
    input_schema: dict[str, Any] = Field(description="JSON schema of the gate's input")


class PauseInfo(BaseModel):
    """One open pause: what an answer names (``gate``) and what it shows whoever answers."""

    id: str = Field(
        description="What an answer names (resume's `gate`): a gate, a gate branch of a "
        "Parallel, a node that asked, a Map call `node[label]`; `subflow/...` inside a subflow"
    )
    payload: Any = Field(
        default=None,
        description="What the pause carries (the question, a draft, options), as JSON, "
        "redacted as the state is; null when it carries none",
    )


class ErrorInfo(BaseModel):
    type: str
    message: str | None = Field(description="Shown to principals only")
    node: str


class ThreadState(BaseModel):
    thread_id: str
    flow: str
    status: Status
    node: str
    version: int
    gates: list[GateInfo] = Field(description="The open pauses, with their input schemas")
    pauses: list[PauseInfo] = Field(
        default_factory=list, description="The open pauses, with their payloads"
    )
    due: str | None = Field(
        default=None,
        description="When the thread's timer fires (ISO 8601, UTC): a gate's deadline or a "
        "node's wake-up (see docs/timers.md); null when none",
    )
    state: dict[str, Any]
    error: ErrorInfo | None = None


class Accepted(BaseModel):
    """The run goes on in the server; follow it with ``GET /threads/{id}/events``."""

    thread_id: str
    flow: str
    running: Literal[True] = True


class ThreadSummary(BaseModel):
    thread_id: str
    flow: str
    status: Status
    node: str
    version: int
    updated: float = Field(description="Seconds since the epoch of its last checkpoint")


class ThreadList(BaseModel):
    threads: list[ThreadSummary]
    total: int | None = Field(
        description="Threads matching the filters, on every page; null where reads are "
        "decided thread by thread (an authorization hook, identities with roles, open reads "
        "on a private flow): counting would read every thread"
    )
    limit: int
    offset: int
    next_cursor: str | None = Field(
        default=None, description="Pass as `cursor` for the next page; null: this was the last"
    )


class Checkpoint(BaseModel):
    version: int
    kind: str
    node: str | None
    next: str
    status: Status
    ts: float
    run_id: str | None
    actor: str | None
    reason: str
    update: dict[str, Any]
    error_type: str | None = None
    attempts: int = Field(
        default=1,
        ge=0,
        description="How many attempts the step's node took: more than 1 for a node retried by "
        "its policy or a subflow node's own step (its child's steps are named `sub#2/...` in its "
        "second attempt); 0 for a step whose update came from the node cache",
    )


class History(BaseModel):
    thread_id: str
    checkpoints: list[Checkpoint]
    total: int
    limit: int
    offset: int
    #: The page ends before this version (``None``: paged by ``offset``).
    before: int | None = None


class FlowInfo(BaseModel):
    name: str
    description: str
    start: str
    gates: list[str]
    states: list[str]
    state_schema: dict[str, Any]


class ProblemBody(BaseModel):
    """An RFC 9457 problem; ``code`` is stable, ``detail`` says what to do."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    code: str
    detail: str


class Me(BaseModel):
    """Who the request's token proves, and what that principal may do (``GET /me``)."""

    principal: str | None
    #: Its roles (the server token's: ``admin``); ``None``: a plain name from an
    #: ``authenticate`` hook, which no role limits.
    roles: list[str] | None
    admin: bool
    #: The actions its roles allow (``read`` for a ``starter``: the threads it started).
    actions: list[str]
