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

from ._base import FlowkitError
from ._definition import (
    AttemptsExhaustedError,
    FlowDefinitionError,
    InvalidUpdateError,
    NodeContractError,
    NodeStillRunningError,
    NodeTimeoutError,
    RouteError,
    ServerConfigError,
    SubflowError,
    UndeclaredWriteError,
    WorkflowLoadError,
)
from ._domain import (
    CatalogError,
    DomainError,
    InvalidProgramError,
    ParameterTableError,
    RobotProgramError,
    StepTextError,
    TaskCycleError,
    UnsafeXMLError,
)
from ._llm import (
    LLMConfigError,
    LLMError,
    LLMResponseError,
    LLMSchemaError,
    LLMTimeoutError,
    LLMUnavailableError,
    ReplayMismatchError,
    ToolArgumentsError,
    ToolCallLimitError,
    ToolError,
    ToolLoopLimitError,
    ToolValidationError,
    UnknownToolError,
)
from ._runs import (
    CheckpointNotFoundError,
    IncompatibleThreadError,
    InvalidResumeInputError,
    InvalidStateError,
    InvariantViolation,
    NotWaitingError,
    QueueClosedError,
    RecoveryLimitError,
    RecoveryPolicyError,
    RunCancelledError,
    RunError,
    StepLimitError,
    ThreadExistsError,
    ThreadNotFoundError,
    UnknownGateError,
)
from ._stores import (
    ConflictError,
    CorruptStoreError,
    InvalidCursorError,
    InvalidListingError,
    InvalidThreadIdError,
    MemoryItemError,
    StoreError,
    UnstorableValueError,
)
from ._untrusted import (
    InputTooDeepError,
    InputTooLargeError,
    NumberTooLongError,
    UnsafePatternError,
    UntrustedInputError,
    YAMLAliasError,
)

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
    "WorkflowLoadError",
    "YAMLAliasError",
]

# One public home: tracebacks and reprs name ``flowkit.errors.X``, whichever module defines it.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
