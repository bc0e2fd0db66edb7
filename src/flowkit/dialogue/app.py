"""``Dialogue``: the dialogue flow as a small service for apps, one call per user message.

``Dialogue(domain, store=...).send(thread_id, text)`` starts the conversation on first use,
resumes the Start Gate with the message and returns a ``Reply``. Conversations live in the
store, so any process with the same store folder continues them. The engine logs each node's
latency and outcome (``node_finished``, for any ``Runner`` over the dialogue flow), next to
EG's per-turn ``dialogue_turn`` line.

Thread ids go into log lines as they are (they are ids, never masked), so ``Dialogue``
refuses one that looks like an e-mail address or a phone number: derive an opaque id from
such a user key with ``opaque_thread_id``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ..definition._flow import UNSET
from ..errors import DomainError, ThreadNotFoundError
from ..foundation._logging import get_logger
from ..routing.dialogue import SG
from ..runner._result import RunResult
from ..runner._runner import Runner
from ..stores._protocol import Store
from ..stores.memory import MemoryStore
from .actions import Artifacts, FileArtifacts, Handler
from .domain import Domain, load_domain
from .ledger import FileLedger, Ledger, MemoryLedger
from .state import DialogueState, JsonScalar
from .threads import check_opaque
from .workflow import build_flow

__all__ = ["Dialogue", "Reply"]


@dataclass(frozen=True, slots=True)
class Reply:
    """The assistant's answer to one message, and where the conversation stands."""

    thread_id: str
    text: str
    response_id: str | None
    intent_type: str | None
    dialogue_mode: str | None
    slots: Mapping[str, JsonScalar]
    missing_slots: list[str]
    next_action: str | None
    turn_id: int
    done: bool
    state: DialogueState

    @classmethod
    def of(cls, result: RunResult[Any]) -> Reply:
        state: DialogueState = result.state
        plan = state.response_plan
        return cls(
            thread_id=result.thread_id,
            text=state.final_answer or "",
            response_id=plan.id if plan else None,
            intent_type=state.intent_type,
            dialogue_mode=state.dialogue_mode,
            slots=dict(state.slots),
            # A cancelled (or finished) goal needs nothing more, nor does a step-by-step one
            # (a form it replaced may have left its own missing slots in the state).
            missing_slots=list(state.missing_slots)
            if state.goal_state.active and state.dialogue_mode == "SLOT_FILLING"
            else [],
            next_action=state.next_action,
            turn_id=state.turn_id,
            done=result.status == "done",
            state=state,
        )


class Dialogue:
    """Conversations of one domain on one store.

    ``store`` defaults to memory; pass ``JsonFileStore(dir)`` to keep conversations across
    processes (large action results then go to ``dir/artifacts``, and what actions take, such
    as booked slots, to ``dir/ledger``, shared by every process on that folder). ``llm``
    enables the LLM recogniser (``understanding="auto"``) and LLM-phrased responses
    (``style: llm``). ``ledger``: where actions record what they take (default: ``dir/ledger``
    with a ``JsonFileStore``, else this object's memory; on another store shared by several
    processes, such as ``PostgresStore``, pass one all of them share, or each process books
    on its own, and a warning says so).
    """

    def __init__(
        self,
        domain: Domain | Mapping[str, Any] | str,
        *,
        store: Store | None = UNSET,
        llm: Any = None,
        understanding: Literal["auto", "offline", "llm"] = "auto",
        actions: Mapping[str, Handler] | None = None,
        artifacts: Artifacts | None = None,
        clock: Callable[[], datetime] | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        self.domain = load_domain(domain)
        root = getattr(store, "root", None)
        if artifacts is None and root is not None:
            artifacts = FileArtifacts(root / "artifacts")
        if ledger is None and root is not None:
            ledger = FileLedger(root / "ledger")
        elif ledger is None:
            if store is not UNSET and store is not None and not isinstance(store, MemoryStore):
                # Conversations on a shared store, claims in this process only.
                get_logger().warning("dialogue_ledger_in_process", store=type(store).__name__)
            ledger = MemoryLedger()
        self.flow = build_flow(
            self.domain,
            understanding=understanding,
            actions=actions,
            artifacts=artifacts,
            ledger=ledger,
        )
        self.runner: Runner[DialogueState] = Runner(self.flow, store=store, llm=llm, clock=clock)

    def open(self, thread_id: str) -> RunResult[DialogueState]:
        """The conversation ``thread_id``, started if it does not exist yet.

        Raises:
            DomainError: the conversation was started with another domain.
            InvalidThreadIdError: the id looks like personal data (an e-mail address or a
                phone number), which log lines would carry unmasked.
        """
        check_opaque(thread_id)
        try:
            result = self.runner.get_state(thread_id)
        except ThreadNotFoundError:
            start = {"thread_id": thread_id, "domain": self.domain.name}
            return self.runner.start(thread_id, start)
        if result.state.domain != self.domain.name:
            raise DomainError(
                [
                    f"conversation `{thread_id}` belongs to domain `{result.state.domain}`, not "
                    f"`{self.domain.name}`; open it with that domain or use another thread id"
                ]
            )
        return result

    def send(self, thread_id: str, text: str) -> Reply:
        """Run one turn: the user's ``text`` in, the assistant's ``Reply`` out.

        Raises:
            InvalidResumeInputError: empty or too long text (the conversation still waits).
            NotWaitingError: the conversation has ended (the user said goodbye).
        """
        self.open(thread_id)
        return Reply.of(self.runner.resume(thread_id, {"text": text}, gate=SG))

    def trigger(
        self, thread_id: str, intent: str, entities: Mapping[str, JsonScalar] | None = None
    ) -> Reply:
        """An external event: ``intent`` (one of the domain's) with ``entities`` comes into the
        conversation as the user's turn (shown as ``/intent``), and is handled like one.

        Raises:
            DomainError: the domain has no such intent.
            NotWaitingError: the conversation has ended.
        """
        if not isinstance(intent, str) or intent not in self.domain.intents:
            raise DomainError(
                [
                    f"domain `{self.domain.name}` has no intent `{intent}`; trigger one of "
                    "its intents"
                ]
            )
        self.open(thread_id)
        # Entities of the wrong shape are refused by the Start Gate's input model.
        event = {"intent": intent, "entities": {} if entities is None else entities}
        return Reply.of(self.runner.resume(thread_id, event, gate=SG))

    def fire_due(self) -> list[Reply]:
        """Deliver the reminders that are due (by the runner's clock), in every conversation on
        this store: one ``Reply`` per reminder delivered (``Runner.fire_due``)."""
        return [Reply.of(f.result) for f in self.runner.fire_due() if f.result is not None]

    def state(self, thread_id: str) -> DialogueState:
        return self.runner.get_state(thread_id).state

    def transcript(self, thread_id: str) -> list[tuple[str, str]]:
        """(role, text) of every message so far."""
        return [(m.role, m.content) for m in self.state(thread_id).messages]
