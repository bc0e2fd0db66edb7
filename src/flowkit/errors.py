"""Every error flowkit raises, in one tree.

Catch ``FlowkitError`` to catch them all. Each error says what happened and what to do,
and carries its context as attributes (``thread_id``, ``node``, ``path``, ``line`` ...)::

    FlowkitError
    ├── FlowDefinitionError        a Flow or RouteTable is inconsistent (.problems lists all)
    ├── WorkflowLoadError          a CLI target names no workflow, fails to import, is no Flow
    ├── RouteError                 a route table could not pick a target for a state
    ├── NodeContractError          a node broke its declared contract (programming error)
    │   ├── UndeclaredWriteError   wrote a key it did not declare
    │   └── InvalidUpdateError     wrote a value the state model rejects
    ├── NodeTimeoutError           a node ran past its timeout (becomes error state)
    ├── NodeStillRunningError      a timed-out attempt still runs, so the node is not rerun
    ├── AttemptsExhaustedError     a retried node's attempts ran out with its dying process
    ├── SubflowError               an attempt of a Subflow node failed (.error, its NodeError):
    │                              what the node's ``RetryPolicy(retry_on=callable)`` is asked
    ├── RunError                   a runner call that cannot proceed
    │   ├── ThreadNotFoundError
    │   ├── ThreadExistsError
    │   ├── NotWaitingError        resume on a thread that is not paused at a gate
    │   ├── UnknownGateError       resume names a gate the flow does not have
    │   ├── InvalidResumeInputError  resume input fails the gate's model (.errors)
    │   ├── InvalidStateError      a start state or patch the state model rejects
    │   ├── StepLimitError         a run took more steps than its limit (a loop without exit?)
    │   ├── RunCancelledError      ``Runner.cancel`` stopped the run after its last saved step
    │   ├── RecoveryLimitError     a node's process died in it past max_recovery_attempts
    │   │                          (recorded as the thread's failure, never raised)
    │   ├── CheckpointNotFoundError
    │   ├── InvariantViolation     a step made a state that breaks a flow invariant; not saved
    │   └── IncompatibleThreadError  a stored thread no longer fits its changed flow (.version,
    │                              the record; .problems); add a migration (docs/migrations.md)
    ├── QueueClosedError           a broadcaster queue was closed or evicted (.thread_id)
    ├── RecoveryPolicyError        a recovery policy does not fit its flow (.problems)
    ├── ServerConfigError          ``flowkit.server.create_app`` settings that cannot work
    ├── InvalidListingError        a thread listing's arguments are unusable (limit, order,
    │   │                          status, times); also a ValueError
    │   └── InvalidCursorError     a listing cursor that is malformed or made for another order
    ├── StoreError                 persistence failed (.thread_id, .path)
    │   ├── InvalidThreadIdError   e.g. ``../../etc``
    │   ├── ConflictError          another writer got there first; reload and retry
    │   ├── CorruptStoreError      a record cannot be read (.path, .line)
    │   ├── UnstorableValueError   a value JSON cannot carry (NaN, bytes, ...); nothing written
    │   └── MemoryItemError        long-term memory refuses a namespace, key or value
    │                              (.namespace, .key); nothing written
    ├── LLMError                   calling a language model failed
    │   ├── LLMConfigError         a bad spec, option, URL, message list or cassette
    │   ├── LLMTimeoutError
    │   ├── LLMUnavailableError    refused connection, 5xx or 429 after all retries
    │   ├── LLMResponseError       the server answered something unusable
    │   ├── LLMSchemaError         the answer is not the requested schema (.raw_text)
    │   └── ReplayMismatchError    a replayed call does not match the recording
    ├── ToolError                  a tool call cannot be run; the tool loop tells the model
    │   ├── UnknownToolError       the model named a tool it was not offered (.tool)
    │   ├── ToolArgumentsError     the arguments are not a JSON object
    │   ├── ToolValidationError    the arguments fail the tool's parameters (.errors)
    │   └── ToolCallLimitError     one answer asked for more calls than max_calls; not run
    └── ToolLoopLimitError         the model still asks for tools after max_rounds (.rounds)
    RobotProgramError              a robot program (Blockly XML, module steps) is unusable
    ├── UnsafeXMLError             DOCTYPE, entities or external references in the XML
    ├── InvalidProgramError        a program fails validation (.problems, each with its line)
    ├── StepTextError              the text form of module steps does not parse (.line)
    └── CatalogError               a block catalog file is invalid (.problems)
    ParameterTableError            a teaching/number/flag table is unusable (.path, .key)
    TaskCycleError                 sas task list whose sub-tasks call in a circle (.cycle;
                                   also a ValueError, so TaskList reports it as invalid)
    DomainError                    a dialogue domain or conversation file is invalid (.problems)
    UntrustedInputError            text from outside breaks a parsing limit (also a ValueError)
    ├── InputTooLargeError         more bytes than the limit
    ├── InputTooDeepError          nested deeper than the limit (refused before parsing)
    ├── YAMLAliasError             YAML anchors/aliases where none are allowed, or expanding
    │                              past the limit (alias bombs)
    ├── NumberTooLongError         an integer with more digits than Python reads (.line)
    └── UnsafePatternError         a regex pattern that could backtrack without bound
    Loaders with their own error (``DomainError``, ``CatalogError`` ...) raise it ``from`` the
    ``UntrustedInputError``, so ``__cause__`` says which limit was hit.

Foreign errors are mapped where they enter and raised ``from`` the original.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = [
    "AttemptsExhaustedError",
    "CatalogError",
    "CheckpointNotFoundError",
    "ConflictError",
    "CorruptStoreError",
    "DomainError",
    "FlowDefinitionError",
    "FlowkitError",
    "IncompatibleThreadError",
    "InputTooDeepError",
    "InputTooLargeError",
    "InvalidCursorError",
    "InvalidListingError",
    "InvalidProgramError",
    "InvalidResumeInputError",
    "InvalidStateError",
    "InvalidThreadIdError",
    "InvalidUpdateError",
    "InvariantViolation",
    "LLMConfigError",
    "LLMError",
    "LLMResponseError",
    "LLMSchemaError",
    "LLMTimeoutError",
    "LLMUnavailableError",
    "MemoryItemError",
    "NodeContractError",
    "NodeStillRunningError",
    "NodeTimeoutError",
    "NotWaitingError",
    "NumberTooLongError",
    "ParameterTableError",
    "QueueClosedError",
    "RecoveryLimitError",
    "RecoveryPolicyError",
    "ReplayMismatchError",
    "RobotProgramError",
    "RouteError",
    "RunCancelledError",
    "RunError",
    "ServerConfigError",
    "StepLimitError",
    "StepTextError",
    "StoreError",
    "SubflowError",
    "TaskCycleError",
    "ThreadExistsError",
    "ThreadNotFoundError",
    "ToolArgumentsError",
    "ToolCallLimitError",
    "ToolError",
    "ToolLoopLimitError",
    "ToolValidationError",
    "UndeclaredWriteError",
    "UnknownGateError",
    "UnknownToolError",
    "UnsafePatternError",
    "UnsafeXMLError",
    "UnstorableValueError",
    "UntrustedInputError",
    "YAMLAliasError",
]


class FlowkitError(Exception):
    """Root of every error flowkit raises."""

    #: Whether retrying the same operation may succeed (used by node retry policies).
    retryable: bool = False


class FlowDefinitionError(FlowkitError):
    """A flow definition is inconsistent; ``problems`` lists every problem with its fix."""

    def __init__(self, flow: str, problems: Sequence[str]) -> None:
        self.flow = flow
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        count = len(self.problems)
        super().__init__(f"Flow `{flow}` has {count} problem{'s' if count != 1 else ''}:\n{lines}")


class WorkflowLoadError(FlowkitError):
    """A target names no registered workflow, cannot be imported, or is not a Flow."""

    def __init__(self, target: str, message: str) -> None:
        self.target = target
        super().__init__(message)


class RouteError(FlowkitError):
    """A route table could not resolve a target (a condition raised, or a bad state)."""

    def __init__(self, message: str, *, table: str, node: str | None = None) -> None:
        self.table = table
        self.node = node
        super().__init__(message)


class NodeContractError(FlowkitError):
    """A node broke its contract with the engine; fix the node, then resume the thread."""

    def __init__(self, message: str, *, node: str, key: str | None = None) -> None:
        self.node = node
        self.key = key
        super().__init__(message)


class UndeclaredWriteError(NodeContractError):
    """A node returned a key that is not in its declared ``writes``."""


class InvalidUpdateError(NodeContractError):
    """A node returned a value that the state model rejects, or a key it does not have."""


class NodeTimeoutError(FlowkitError):
    """A node ran longer than its timeout."""

    retryable = True

    def __init__(self, node: str, timeout: float) -> None:
        self.node = node
        self.timeout = timeout
        super().__init__(
            f"Node `{node}` did not finish within {timeout:g} s; "
            "raise its timeout or make it faster."
        )


class NodeStillRunningError(FlowkitError):
    """An attempt of a node abandoned at its timeout still runs, so no new attempt starts.

    Python cannot stop a thread: a sync node past its timeout runs on in the background with
    ``ctx.cancelled`` set. The next attempt waits up to ``grace`` seconds for it; this error
    is what it gets when the earlier attempt has not returned by then.
    """

    retryable = False

    def __init__(self, node: str, *, thread_id: str, timeout: float, grace: float) -> None:
        self.node = node
        self.thread_id = thread_id
        self.timeout = timeout
        self.grace = grace
        super().__init__(
            f"Node `{node}` of thread `{thread_id}` was not run again: its earlier attempt, "
            f"abandoned at its {timeout:g} s timeout, was still running {grace:g} s later, and "
            "two attempts of a node never run at once. Make the node return when "
            "`ctx.cancelled` is set, then resume the thread."
        )


class AttemptsExhaustedError(FlowkitError):
    """A node with a ``RetryPolicy`` had made all its attempts when its process died: it is
    not run again. Raised by no call; it is the error the thread records (``NodeError.type``),
    routed like any failure."""


class _RecordedFailure(Protocol):
    """What ``SubflowError`` reads of the failure it wraps (a ``flowkit.NodeError``)."""

    @property
    def type(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def node(self) -> str: ...
    @property
    def retryable(self) -> bool: ...


class SubflowError(FlowkitError):
    """An attempt of a ``Subflow`` node failed: its child failed (a child node with nowhere to
    route, or a final state marked ``failed``) or ran past the node's ``timeout``.

    ``error`` is the failure as the parent records it: its ``type`` names the child's
    exception (``NodeTimeoutError`` for the timeout, ``SubflowFailed`` for a failed final
    state). The node's ``RetryPolicy(retry_on=callable)`` is called with this error, which is
    ``retryable`` when ``error`` is; it is never raised.
    """

    def __init__(self, error: _RecordedFailure) -> None:
        self.error = error
        self.node = error.node
        self.retryable = error.retryable
        super().__init__(f"{error.type}: {error.message}")


class RunError(FlowkitError):
    """A runner call cannot proceed in the thread's current situation."""

    def __init__(self, message: str, *, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(message)


class ThreadNotFoundError(RunError):
    """No thread with this id exists in the store."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(
            f"Thread `{thread_id}` does not exist; start it first or check the store path.",
            thread_id=thread_id,
        )


class ThreadExistsError(RunError):
    """``start`` was called with the id of an existing thread."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(
            f"Thread `{thread_id}` already exists; resume it, fork it, or pick a new id.",
            thread_id=thread_id,
        )


class NotWaitingError(RunError):
    """``resume`` was called on a thread that is not paused where the caller expected."""

    def __init__(self, message: str, *, thread_id: str, status: str, node: str) -> None:
        self.status = status
        self.node = node
        super().__init__(message, thread_id=thread_id)


class UnknownGateError(RunError):
    """``resume`` named a gate that the flow does not define."""

    def __init__(self, gate: str, *, thread_id: str, gates: Sequence[str]) -> None:
        self.gate = gate
        self.gates = list(gates)
        known = ", ".join(f"`{g}`" for g in self.gates) or "none"
        super().__init__(
            f"Gate `{gate}` is not in this flow (its gates: {known}); resume with one of those.",
            thread_id=thread_id,
        )


class InvalidResumeInputError(RunError):
    """The resume input does not validate against the gate's input model."""

    def __init__(
        self, gate: str, *, thread_id: str, errors: Sequence[dict[str, Any]], detail: str
    ) -> None:
        self.gate = gate
        self.errors = list(errors)
        super().__init__(
            f"Input for gate `{gate}` of thread `{thread_id}` is invalid; the thread still "
            f"waits there, resume again with corrected input:\n{detail}",
            thread_id=thread_id,
        )


class InvalidStateError(RunError):
    """A start state, patch or target state that the flow cannot accept."""


class IncompatibleThreadError(RunError):
    """A stored thread does not fit the flow any more: its gate or node was renamed or
    removed, or its state fails the changed state model, and no migration covers it.

    ``version`` is the journal record where it stopped fitting (its position or state),
    ``flow_version`` the flow version the thread ran under, ``problems`` what does not fit.
    """

    def __init__(
        self,
        message: str,
        *,
        thread_id: str,
        version: int | None = None,
        flow_version: int | None = None,
        problems: Sequence[str] = (),
    ) -> None:
        self.version = version
        self.flow_version = flow_version
        self.problems = list(problems)
        super().__init__(message, thread_id=thread_id)


class StepLimitError(RunError):
    """A single run executed more nodes than the runner's ``step_limit``."""

    def __init__(self, thread_id: str, limit: int, node: str) -> None:
        self.limit = limit
        self.node = node
        super().__init__(
            f"Thread `{thread_id}` ran {limit} steps in one run without pausing or finishing "
            f"(next: `{node}`); check the flow for a loop without exit, or raise step_limit. "
            "Everything so far is saved; resume continues from here.",
            thread_id=thread_id,
        )


class RecoveryLimitError(RunError):
    """A node's process died inside it more often than the runner's
    ``max_recovery_attempts``: it is not run again. Raised by no call; it is the error a
    thread records when it fails for this reason (``NodeError.type``), routed like any."""

    def __init__(self, thread_id: str, node: str, crashes: int, limit: int) -> None:
        self.node = node
        self.crashes = crashes
        self.limit = limit
        super().__init__(
            f"Node `{node}` of thread `{thread_id}` was interrupted by its process dying "
            f"{crashes} times (max_recovery_attempts={limit}); it was not run again. Fix "
            "what kills it, then resume the thread.",
            thread_id=thread_id,
        )


class RunCancelledError(RunError):
    """``Runner.cancel`` stopped the run: the step in progress finished and was saved, then no
    other node ran. The thread stands ``pending`` at ``node``; ``resume`` goes on from there."""

    def __init__(self, thread_id: str, version: int, node: str) -> None:
        self.version = version
        self.node = node
        super().__init__(
            f"The run of thread `{thread_id}` was cancelled after checkpoint {version}; it "
            f"stands at `{node}`, pending. Everything so far is saved; resume it to go on.",
            thread_id=thread_id,
        )


class CheckpointNotFoundError(RunError):
    """A fork or lookup named a checkpoint version the thread does not have."""

    def __init__(self, thread_id: str, version: int, latest: int, *, first: int = 0) -> None:
        self.version = version
        self.latest = latest
        self.first = first
        super().__init__(
            f"Thread `{thread_id}` has no checkpoint {version}; versions run from {first} to "
            f"{latest}" + (" (older history was compacted away)." if first else "."),
            thread_id=thread_id,
        )


class QueueClosedError(FlowkitError):
    """A consumer read a broadcaster queue that is closed, evicted or was never opened."""

    def __init__(self, thread_id: str, why: str) -> None:
        self.thread_id = thread_id
        super().__init__(
            f"No event queue for thread `{thread_id}`: {why}. Open it again with "
            "broadcaster.open(thread_id) and reload the thread's state, since events were missed."
        )


class RecoveryPolicyError(FlowkitError):
    """A recovery policy names states or fields its flow does not have; ``problems`` lists all."""

    def __init__(self, policy: str, flow: str, problems: Sequence[str]) -> None:
        self.policy = policy
        self.flow = flow
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"Recovery policy `{policy}` does not fit flow `{flow}`; fix the policy:\n{lines}"
        )


class ServerConfigError(FlowkitError):
    """The HTTP server was set up with something that cannot work (a short token, no flows)."""


class InvalidListingError(FlowkitError, ValueError):
    """A thread listing (``list_threads``) was asked for something it cannot give: a limit out
    of range, an unknown order or status, a time that is not a number. A ``ValueError`` too,
    like any bad argument."""


class InvalidCursorError(InvalidListingError):
    """A listing cursor that is not one ``list_threads`` made, or was made for another order;
    start again from the first page (no cursor)."""


class StoreError(FlowkitError):
    """Persistence failed."""

    def __init__(
        self, message: str, *, thread_id: str | None = None, path: str | None = None
    ) -> None:
        self.thread_id = thread_id
        self.path = path
        super().__init__(message)


class InvalidThreadIdError(StoreError):
    """A thread id is empty, too long, or could escape the store (``../../etc``)."""

    def __init__(self, thread_id: str, reason: str) -> None:
        super().__init__(
            f"Thread id {thread_id[:80]!r} is not allowed: {reason}. Use 1-128 characters from "
            "letters, digits, '-', '_', '.', ':' and '@', not starting with '.'.",
            thread_id=thread_id,
        )


class ConflictError(StoreError):
    """Another writer changed the thread first; nothing was written. Reload and try again."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        thread_id: str,
        expected: int | None = None,
        actual: int | None = None,
    ) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(message, thread_id=thread_id)


class CorruptStoreError(StoreError):
    """A stored record cannot be read. Only this thread is affected."""

    def __init__(
        self, message: str, *, thread_id: str | None, path: str, line: int | None = None
    ) -> None:
        self.line = line
        where = f"{path}:{line}" if line is not None else path
        super().__init__(
            f"{message} ({where}). Other threads are unaffected; restore this file from a "
            "backup, or start the work again in a new thread.",
            thread_id=thread_id,
            path=path,
        )


class UnstorableValueError(StoreError):
    """A value that JSON cannot carry faithfully was refused before anything was written.

    NaN or ±inf floats, bytes that are not UTF-8, objects with no JSON form, strings with lone
    surrogates, containers nested past ``flowkit.definition._jsonform.MAX_NESTING``, integers
    of more digits than Python reads back, and, in a field that admits any type (``Any``, a bare
    ``dict``, ...), a value JSON would give back changed (a tuple, a set, an int key, a
    datetime, a model). ``node`` is the
    node, gate, ``update_state`` or ``start`` that produced it; ``field`` the state (or gate
    input) field; ``at`` the place inside it (``scores[3].value``). The thread is unchanged.
    """

    def __init__(
        self, reason: str, *, thread_id: str, node: str, field: str, at: str | None = None
    ) -> None:
        self.node = node
        self.field = field
        self.at = at or field
        super().__init__(
            f"Thread `{thread_id}`: `{node}` produced `{self.at}` = {reason}, which cannot be "
            "saved as JSON. Nothing was written and the thread is unchanged; store a finite "
            "number, None, text or a JSON-ready structure instead, then resume.",
            thread_id=thread_id,
        )


class MemoryItemError(StoreError):
    """Long-term memory (``flowkit.memory``) refused a namespace, key or value: empty, too
    long, control characters, not JSON (NaN, bytes, tuples, objects), nested too deep or too
    big. Nothing was written. ``namespace`` and ``key`` are what the caller passed (possibly
    shortened), for the message; never the value, which may be private."""

    def __init__(self, message: str, *, namespace: Any = None, key: Any = None) -> None:
        self.namespace = namespace
        self.key = key
        super().__init__(message)


class LLMError(FlowkitError):
    """Calling a language model failed."""

    def __init__(self, message: str, *, model: str | None = None) -> None:
        self.model = model
        super().__init__(message)


class LLMTimeoutError(LLMError):
    """The model did not answer within the timeout."""

    retryable = True


class LLMUnavailableError(LLMError):
    """The server refused the connection or kept failing (5xx, 429) through every retry."""

    retryable = True

    def __init__(
        self, message: str, *, model: str | None = None, status_code: int | None = None
    ) -> None:
        self.status_code = status_code
        super().__init__(message, model=model)


class LLMResponseError(LLMError):
    """The server answered with something that is not a usable response."""

    def __init__(self, message: str, *, model: str | None = None, raw_text: str = "") -> None:
        self.raw_text = raw_text
        super().__init__(message, model=model)


class LLMSchemaError(LLMResponseError):
    """The answer is not valid JSON for the requested schema, even after one repair request."""

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        raw_text: str = "",
        errors: Sequence[dict[str, Any]] = (),
    ) -> None:
        self.errors = list(errors)
        super().__init__(message, model=model, raw_text=raw_text)


class ReplayMismatchError(LLMError):
    """A replayed LLM request does not match the recorded one."""


class LLMConfigError(LLMError):
    """The LLM layer is set up or called wrongly: a bad spec string, option, URL or cassette."""


class ToolError(FlowkitError):
    """A tool call cannot be run. Raise it from a tool to give the model a message instead
    of failing the node; the tool loop sends ``str(error)`` back as the tool's result."""

    def __init__(self, message: str, *, tool: str | None = None, call_id: str | None = None):
        self.tool = tool
        self.call_id = call_id
        super().__init__(message)


class UnknownToolError(ToolError):
    """The model asked for a tool that was not offered."""


class ToolArgumentsError(ToolError):
    """A tool call's arguments are not a JSON object (malformed JSON, or another value)."""


class ToolValidationError(ToolError):
    """A tool call's arguments do not fit the tool's parameters."""

    def __init__(
        self,
        message: str,
        *,
        tool: str | None = None,
        call_id: str | None = None,
        errors: Sequence[dict[str, Any]] = (),
    ) -> None:
        self.errors = list(errors)
        super().__init__(message, tool=tool, call_id=call_id)


class ToolCallLimitError(ToolError):
    """One model answer asked for more tool calls than the loop's ``max_calls``; the calls
    beyond it were not run, and each is answered with this error so the model can ask again."""


class ToolLoopLimitError(FlowkitError):
    """The model kept asking for tools after the loop's ``max_rounds`` rounds."""

    def __init__(self, message: str, *, rounds: int) -> None:
        self.rounds = rounds
        super().__init__(message)


class RobotProgramError(FlowkitError):
    """A robot program (Blockly XML or module steps) cannot be read, checked or written."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class UnsafeXMLError(RobotProgramError):
    """The XML declares a DOCTYPE, entities or external references; it was not read."""


class InvalidProgramError(RobotProgramError):
    """A program fails validation; ``problems`` lists every problem (with line numbers for XML).

    Each problem has ``severity``, ``message``, ``line``, ``block_id``, ``block_type``,
    ``task`` and ``step``; ``str(problem)`` is one readable line.
    """

    def __init__(self, problems: Sequence[Any], *, path: str | None = None) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        where = f"{path}: " if path else ""
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"{where}the robot program has {count} problem{'s' if count != 1 else ''}; "
            f"fix {'them' if count != 1 else 'it'} and try again:\n{lines}",
            path=path,
        )


class StepTextError(RobotProgramError):
    """The text form of module steps does not parse; ``line`` is the 1-based line number."""

    def __init__(self, message: str, *, line: int, path: str | None = None) -> None:
        self.line = line
        where = f"{path}:{line}" if path else f"line {line}"
        super().__init__(f"{where}: {message}", path=path)


class CatalogError(RobotProgramError):
    """A block catalog file is not valid; ``problems`` lists every problem with its fix."""

    def __init__(self, problems: Sequence[str], *, path: str | None = None) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"Block catalog {path or '(in memory)'} has {count} problem"
            f"{'s' if count != 1 else ''}:\n{lines}",
            path=path,
        )


class ParameterTableError(FlowkitError):
    """A parameter table (teaching points, number variables, flags) cannot be read, written or
    mapped onto; ``path`` is the file and ``key`` the slot or entry (``P3.x_pos``) at fault."""

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None) -> None:
        self.path = path
        self.key = key
        where = ", ".join(x for x in (path, f"key {key!r}" if key else None) if x)
        super().__init__(f"{where}: {message}" if where else message)


class TaskCycleError(FlowkitError, ValueError):
    """A sas task list whose tasks call each other in a circle; ``cycle`` names it from the
    first task back to it (``("A", "B", "A")``). A ``ValueError`` too, so ``TaskList`` reports
    it inside its ``ValidationError`` and an LLM answer with a cycle is retried like any
    invalid answer."""

    def __init__(self, cycle: Sequence[str]) -> None:
        self.cycle = tuple(cycle)
        super().__init__(
            f"the tasks call each other in a circle: {' -> '.join(self.cycle)}; a robot "
            f"program cannot run that, so remove one of these sub-task calls"
        )


class InvariantViolation(RunError):  # noqa: N818 - the name the seed's spec uses
    """A step produced a state that breaks one of the flow's invariants.

    Nothing was saved: the thread stays at its last good checkpoint ``version`` (``None``: the
    start state was refused, so the thread does not exist). ``node`` is
    the node, gate, ``update_state`` or ``__start__`` that produced the state; ``problems`` lists
    each broken invariant's findings as ``"name: problem"``; ``invariants`` names them.
    """

    def __init__(
        self,
        *,
        thread_id: str,
        node: str,
        problems: Sequence[str],
        invariants: Sequence[str],
        version: int | None,
    ) -> None:
        self.node = node
        self.problems = list(problems)
        self.invariants = list(invariants)
        self.version = version
        lines = "\n".join(f"  - {p}" for p in self.problems)
        where = (
            f"thread `{thread_id}` was not created"
            if version is None
            else f"thread `{thread_id}` stays at version {version}"
        )
        super().__init__(
            f"`{node}` produced a state that breaks {len(self.invariants)} invariant(s) of the "
            f"flow; nothing was saved and {where}. Fix the node (or the invariant), then "
            f"resume:\n{lines}",
            thread_id=thread_id,
        )


class DomainError(FlowkitError):
    """A dialogue domain (or conversation test file) is invalid; ``problems`` lists each one as
    ``"location: what is wrong and what to do"``; ``path`` is the file, when there is one."""

    def __init__(self, problems: Sequence[str], *, path: str | None = None) -> None:
        self.path = path
        self.problems = list(problems)
        count = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"{path or 'The dialogue domain'} has {count} problem{'s' if count != 1 else ''}; "
            f"fix {'them' if count != 1 else 'it'} and load it again:\n{lines}"
        )


# --- Untrusted input limits (flowkit.foundation._untrusted) ------------------------------


class UntrustedInputError(FlowkitError, ValueError):
    """Text from outside (a file, an LLM answer) breaks a limit of the guarded parsers.

    Also a ``ValueError``, as ``json.JSONDecodeError`` is: code that treats unparsable input
    as a bad value treats input past a limit the same way.

    ``what`` names the input ("route table JSON", "LLM answer"), ``path`` its file if any,
    ``limit`` the limit it broke.
    """

    def __init__(
        self, message: str, *, what: str, limit: int | None = None, path: str | None = None
    ) -> None:
        self.what = what
        self.limit = limit
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class InputTooLargeError(UntrustedInputError):
    """The input is larger than its size limit; it was refused before parsing."""


class InputTooDeepError(UntrustedInputError):
    """The input nests deeper than its limit; it was refused before the parser recursed."""


class YAMLAliasError(UntrustedInputError):
    """YAML anchors or aliases where none are allowed, or aliases that expand past the limit."""


class NumberTooLongError(UntrustedInputError):
    """An integer with more digits than Python converts (``sys.get_int_max_str_digits()``,
    4,300 by default); ``line`` is where it is (1-based), when known, and ``digits`` its
    length."""

    def __init__(
        self,
        message: str,
        *,
        what: str,
        limit: int,
        line: int | None,
        digits: int,
        path: str | None = None,
    ) -> None:
        self.line = line
        self.digits = digits
        super().__init__(message, what=what, limit=limit, path=path)


class UnsafePatternError(UntrustedInputError):
    """A regular expression that cannot run in bounded time (or does not compile)."""
