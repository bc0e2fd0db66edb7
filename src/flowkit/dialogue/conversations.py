"""Conversation tests (like Rasa's test stories): user turns with the expected intent, slots,
response id and more, run against a domain's real flow, offline and fast.

A file lists ``conversations``, each with ``turns`` of ``user:`` plus any of ``intent``,
``slots`` (a subset), ``missing``, ``response``, ``mode``, ``next_action``, ``step`` and
``says`` (text the reply contains); ``ends: true`` expects the conversation to have ended.
``today:`` fixes the date "tomorrow" refers to. Failures mask personal slot values.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import DomainError, FlowkitError
from ..foundation._progress import OnProgress
from ..routing.dialogue import SG
from ..runner._result import RunResult
from ..runner._runner import Runner
from ._models import Domain, parse_timezone
from .actions import Handler
from .domain import example_names, example_path, load_domain, read_data
from .ledger import MemoryLedger
from .state import DialogueState
from .workflow import build_flow

__all__ = [
    "Conversation",
    "ConversationResult",
    "Turn",
    "format_results",
    "load_conversations",
    "resolve_conversations_path",
    "run_conversations",
]

MASK = "***"


def _plain(value: Any) -> Any:
    # YAML reads 2025-03-11 as a date; the state holds ISO strings.
    return value.isoformat() if isinstance(value, date) else value


class Turn(BaseModel):
    """One user message and what must hold after the assistant answered it. Instead of a
    ``user`` message: ``event`` (an external event's intent, with ``entities``), or ``wait``
    (seconds the clock moves on; the reminders then due are delivered, and the checks apply
    to the last of them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user: str | None = None
    event: str | None = None
    entities: dict[str, Any] = {}
    wait: float | None = Field(None, gt=0, le=366 * 86400)
    intent: str | None = None
    slots: dict[str, Any] | None = None
    missing: list[str] | None = None
    response: str | list[str] | None = Field(
        None, description="the reply's response id; a list: the ids of the turn's replies"
    )
    mode: str | None = Field(None, description="SLOT_FILLING, STEP_BY_STEP or none")
    next_action: str | None = None
    step: int | None = Field(None, ge=1, description="goal_state.current_step + 1")
    says: list[str] = []

    @field_validator("slots")
    @classmethod
    def _dates(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else {k: _plain(v) for k, v in value.items()}

    @field_validator("says", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_input(self) -> Turn:
        given = [self.user is not None, self.event is not None, self.wait is not None]
        if sum(given) != 1:
            raise ValueError("a turn has one of user: (a message), event: (an intent) or wait:")
        if self.entities and self.event is None:
            raise ValueError("entities: come with event:")
        return self

    @property
    def shown(self) -> str:
        """The turn's input as a report shows it."""
        if self.user is not None:
            return self.user
        return f"/{self.event}" if self.event is not None else f"(wait {self.wait:g} s)"


class Conversation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    today: date | None = None
    turns: list[Turn] = Field(min_length=1)
    ends: bool | None = None


class ConversationFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    domain: str | None = None
    today: date | None = None
    conversations: list[Conversation] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class ConversationResult:
    """How one conversation went: failures per turn (1-based), and the routes it took.

    ``inputs`` are the user's messages (personal values masked), ``seconds`` how long it ran.
    """

    name: str
    failures: list[tuple[int, str]] = field(default_factory=list)
    turns: int = 0
    languages: frozenset[str] = frozenset()
    edges: frozenset[tuple[str, str]] = frozenset()
    inputs: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_data(self) -> dict[str, Any]:
        """JSON-ready: name, passed, turns, seconds and each failure with its turn and input."""
        return {
            "name": self.name,
            "passed": self.passed,
            "turns": self.turns,
            "seconds": round(self.seconds, 6),
            "failures": [
                {"turn": turn, "user": self.user_text(turn), "problem": problem}
                for turn, problem in self.failures
            ],
        }

    def user_text(self, turn: int) -> str | None:
        """What the user said at ``turn`` (1-based), masked like the failures."""
        return self.inputs[turn - 1] if 0 < turn <= len(self.inputs) else None


def resolve_conversations_path(source: str | Path) -> Path:
    """The conversation test file ``source`` names: a path, else a shipped example's name.

    Raises:
        DomainError: it is a directory, or neither a file nor a shipped example.
    """
    file = Path(source)
    if file.is_file():
        return file
    shipped = example_path(str(source), ".conversations.yaml")
    if shipped is not None:
        return shipped
    if file.is_dir():
        problem = f"`{source}` is a directory, not a conversation test file; pass the file's path."
    else:
        known = ", ".join(_shipped_conversations()) or "none"
        problem = (
            f"`{source}` does not exist, nor is it a shipped example ({known}); pass the path "
            "of a conversation test file."
        )
    raise DomainError([problem], path=str(source))


def _shipped_conversations() -> list[str]:
    return [name for name in example_names() if example_path(name, ".conversations.yaml")]


def load_conversations(source: str | Path | Mapping[str, Any]) -> ConversationFile:
    """A conversation test file (YAML or JSON), plain data, or a shipped example's name.

    Raises:
        DomainError: the file is missing or does not have the expected shape.
    """
    path: str | None = None
    if isinstance(source, Mapping):
        data: Any = source
    else:
        file = resolve_conversations_path(source)
        path, data = str(file), read_data(file, "conversation test file")
    try:
        return ConversationFile.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}{_yaml_hint(e)}"
            for e in exc.errors(include_url=False, include_input=False)
        ]
        raise DomainError(problems, path=path) from exc


def _yaml_hint(error: Any) -> str:
    """For a message that YAML read as something else (``- user: yes`` is a boolean, ``-
    user: 3`` a number): how to write it."""
    if error["loc"][-1:] == ("user",) and error["type"] == "string_type":
        return ' (YAML reads yes, no, on, off and numbers unquoted as such: write "yes" in quotes)'
    return ""


def run_conversations(
    domain: Domain | Mapping[str, Any] | str | Path,
    conversations: ConversationFile | str | Path | Mapping[str, Any],
    *,
    llm: Any = None,
    actions: Mapping[str, Handler] | None = None,
    on_progress: OnProgress | None = None,
) -> list[ConversationResult]:
    """Run every conversation on a fresh in-memory thread of ``domain``'s flow, each with its
    own empty ledger, so no conversation sees what another one booked.
    ``on_progress(done, total, name)`` is called as each conversation starts, and at the end."""
    domain = load_domain(domain)
    tests = (
        conversations
        if isinstance(conversations, ConversationFile)
        else load_conversations(conversations)
    )
    tz = parse_timezone(domain.timezone)
    results = []
    for index, conversation in enumerate(tests.conversations):
        if on_progress is not None:
            on_progress(index, len(tests.conversations), conversation.name)
        flow = build_flow(domain, actions=actions, ledger=MemoryLedger())
        today = conversation.today or tests.today
        moment = datetime.combine(today, clock_time(9, 0), tzinfo=tz) if today else None
        clock = _Clock(moment)
        runner: Runner[DialogueState] = Runner(flow, llm=llm, clock=clock)
        results.append(_run_one(domain, runner, f"c{index}", conversation, clock))
    if on_progress is not None:
        on_progress(len(results), len(results), "done")
    return results


class _Clock:
    """The conversation's clock: fixed at ``today`` 09:00 (or the wall clock), moved on by
    ``wait:`` turns."""

    def __init__(self, moment: datetime | None) -> None:
        self.moment = moment
        self.shift = timedelta(0)

    def __call__(self) -> datetime:
        return (self.moment or datetime.now(UTC)) + self.shift


def _turn(runner: Runner[Any], thread: str, turn: Turn, clock: _Clock) -> RunResult[Any]:
    if turn.user is not None:
        return runner.resume(thread, {"text": turn.user}, gate=SG)
    if turn.event is not None:
        return runner.resume(thread, {"intent": turn.event, "entities": turn.entities}, gate=SG)
    clock.shift += timedelta(seconds=turn.wait or 0)
    fired = [f.result for f in runner.fire_due() if f.thread_id == thread and f.result]
    if not fired:
        raise _NothingCameError(f"nothing came after waiting {turn.wait:g} s (no reminder was due)")
    return fired[-1]


class _NothingCameError(Exception):
    pass


def _run_one(
    domain: Domain, runner: Runner[Any], thread: str, test: Conversation, clock: _Clock
) -> ConversationResult:
    failures: list[tuple[int, str]] = []
    started = time.perf_counter()
    runner.start(thread, {"thread_id": thread, "domain": domain.name})
    result = None
    pii = domain.pii_slots()
    secrets = {str(v) for t in test.turns for k, v in (t.slots or {}).items() if k in pii and v}
    for number, turn in enumerate(test.turns, 1):
        try:
            before = len(result.state.messages) if result is not None else 0
            result = _turn(runner, thread, turn, clock)
        except _NothingCameError as exc:
            failures.append((number, str(exc)))
            continue
        except FlowkitError as exc:
            failures.append((number, f"{type(exc).__name__}: {exc}"))
            break
        secrets |= {str(v) for k, v in result.state.slots.items() if k in pii and v}
        # Each reply's response and those its message carries after it (``then``), once.
        said = list(
            dict.fromkeys(
                rid
                for m in result.state.messages[before:]
                if m.role == "assistant" and m.response_id
                for rid in _with_following(domain, m.response_id)
            )
        )
        failures += [(number, problem) for problem in _check(domain, turn, result.state, said)]
    if result is not None and test.ends is not None and result.done != test.ends:
        failures.append(
            (
                len(test.turns),
                "expected the conversation to "
                + ("end" if test.ends else "go on")
                + f", it is {result.status}",
            )
        )
    history = runner.history(thread)
    edges = frozenset((c.node, c.next) for c in history if c.node is not None)
    langs = frozenset(m.lang for m in history[-1].state.messages if m.role == "user")
    masked = [(n, _mask(text, secrets)) for n, text in failures]
    inputs = tuple(_mask(t.shown, secrets) for t in test.turns)
    seconds = time.perf_counter() - started
    return ConversationResult(test.name, masked, len(test.turns), langs, edges, inputs, seconds)


def _check(domain: Domain, turn: Turn, state: DialogueState, said: list[str]) -> list[str]:
    """What differs from ``turn``'s expectations; ``said``: the response ids of the replies
    the turn added (a list of expected responses is checked against them)."""
    found = []
    plan = state.response_plan

    def expect(what: str, expected: Any, actual: Any) -> None:
        if expected is not None and expected != actual:
            found.append(f"expected {what} {expected!r}, got {actual!r}")

    expect("intent", turn.intent, _intent_name(domain, turn.intent, state))
    if isinstance(turn.response, list):
        expect("responses", turn.response, said)
    else:
        expect("response", turn.response, plan.id if plan else None)
    expect("next_action", turn.next_action, state.next_action)
    if turn.mode is not None:
        expect("mode", None if turn.mode.lower() == "none" else turn.mode, state.dialogue_mode)
    expect("missing slots", turn.missing, state.missing_slots)
    current = state.goal_state.current_step
    expect("step", turn.step, current + 1 if current is not None else None)
    pii = domain.pii_slots()
    for slot, value in (turn.slots or {}).items():
        actual = state.slots.get(slot)
        if value != actual:
            shown = (MASK, MASK) if slot in pii else (repr(value), repr(actual))
            hint = " (quote times in YAML: '15:00')" if isinstance(value, int) else ""
            found.append(f"expected slot {slot} {shown[0]}, got {shown[1]}{hint}")
    for text in turn.says:
        if text not in (state.final_answer or ""):
            found.append(f"expected the reply to contain {text!r}; it was {state.final_answer!r}")
    return found


def _with_following(domain: Domain, response_id: str) -> list[str]:
    """``response_id`` and the responses its message carries after it (``then``, in order)."""
    found = [response_id]
    todo = [response_id]
    while todo and len(found) < 20:
        spec = domain.responses.get(todo.pop(0))
        for rid in spec.then if spec is not None else []:
            if rid not in found:
                found.append(rid)
                todo.append(rid)
    return found


def _intent_name(domain: Domain, expected: str | None, state: DialogueState) -> str | None:
    """The turn's intent as a test names it: a small-talk intent by its own name when the
    reply is that intent's response (IR reports small talk as ``SMALL_TALK``)."""
    spec = domain.intents.get(expected or "")
    plan = state.response_plan
    if (
        state.intent_type == "SMALL_TALK"
        and spec is not None
        and spec.kind == "small_talk"
        and plan is not None
        and plan.id == spec.response
    ):
        return expected
    return state.intent_type


def _mask(text: str, secrets: set[str]) -> str:
    """Personal slot values (expected or seen) never appear in a report."""
    for value in sorted(secrets, key=len, reverse=True):
        text = text.replace(value, MASK)
    return text


def format_results(results: Sequence[ConversationResult]) -> str:
    """The report ``flowkit dialogue test`` prints: one line per conversation, then failures."""
    lines = []
    for result in results:
        if result.passed:
            lines.append(f"PASS  {result.name} ({result.turns} turns)")
            continue
        lines.append(f"FAIL  {result.name}")
        lines += [f"      turn {turn}: {problem}" for turn, problem in result.failures]
    failed = sum(not r.passed for r in results)
    lines.append(f"{len(results)} conversations: {len(results) - failed} passed, {failed} failed")
    return "\n".join(lines) + "\n"
