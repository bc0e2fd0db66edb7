"""``Roundtable``: the roundtable flow as a small service for apps and the command line.

``Roundtable(config, store=...)`` builds the flow with its characters' LLMs and the log
folders and runs it with a long-term memory for the round summaries; ``send(session, text)``
runs one round and returns the characters' messages and the characters who could not answer;
``stream(session, text)`` yields the
origin's event payloads as they happen. Sessions live in the store, so any process with the
same store continues them; with a ``JsonFileStore`` the summaries go to a ``JsonFileMemory``
in ``<store>/memory`` (shared by every session at the table, across processes).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from ..definition._flow import UNSET
from ..errors import ThreadNotFoundError
from ..llm import LLM
from ..memory import InProcessMemory, JsonFileMemory, Memory
from ..routing.roundtable import PERSON
from ..runner._result import RunResult
from ..runner._runner import Runner
from ..runner._stream import Stream
from ..stores._protocol import Store
from .config import RoundtableConfig, load_config
from .errors import RoundtableConfigError
from .events import MessageEvent
from .logs import RoundLogs
from .memory import session_records
from .state import LogEntry, RoundtableState, TurnFailure
from .workflow import build

__all__ = ["Round", "Roundtable", "memory_folder"]


def memory_folder(store_root: str | os.PathLike[str]) -> Path:
    """Where ``Roundtable`` keeps the long-term memory of a ``JsonFileStore`` at ``store_root``."""
    return Path(store_root) / "memory"


@dataclass(frozen=True, slots=True)
class Round:
    """What one message of the person brought: the characters' messages, in order, and the
    characters whose turn failed (no model reachable, a missing key, a timeout)."""

    session: str
    messages: list[MessageEvent]
    state: RoundtableState

    @property
    def texts(self) -> list[tuple[str, str]]:
        """(speaker, text) of each message."""
        return [(m["speaker"], m["text"]) for m in self.messages]

    @property
    def failures(self) -> list[TurnFailure]:
        """Each character who could not answer this round, with its error, in turn order."""
        return list(self.state.round_failures)


class Roundtable:
    """Sessions at one table on one store (see the module docstring).

    ``llm`` is the runner's LLM, used by characters whose configuration names none; ``llms``
    gives characters their own by internal id. ``memory`` (a ``flowkit.memory.Memory``)
    defaults to a ``JsonFileMemory`` in the store's folder (a ``JsonFileStore``), else to an
    ``InProcessMemory``; pass ``None`` for no summaries.

    Raises:
        RoundtableConfigError: the configuration has problems, or a character has no LLM
            (none of its own and no ``llm``).
    """

    def __init__(
        self,
        config: RoundtableConfig | Mapping[str, Any] | str | os.PathLike[str],
        *,
        store: Store | None = UNSET,
        llm: LLM | None = None,
        llms: Mapping[str, LLM] | None = None,
        memory: Memory | None = UNSET,
        logs: RoundLogs | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.config = load_config(config)
        if memory is UNSET:
            root = getattr(store, "root", None)
            memory = JsonFileMemory(memory_folder(root)) if root else InProcessMemory()
        self.memory: Memory | None = memory
        self.flow, self.services = build(self.config, llms=llms, logs=logs)
        missing = [
            c.id
            for c in self.config.characters
            if llm is None and not self.services.cast.has_own(c.id)
        ]
        if missing:
            raise RoundtableConfigError(
                [
                    f"characters {', '.join(missing)} have no LLM: give each `llm:` in the "
                    "configuration, or pass llm= (the CLI's --llm) for all of them"
                ]
            )
        self.runner: Runner[RoundtableState] = Runner(
            self.flow, store=store, llm=llm, clock=clock, memory=memory
        )

    def open(self, session: str) -> RunResult[RoundtableState]:
        """Session ``session``, started (waiting for the person) if it does not exist yet. A
        round that was cut short (a stream left early, Ctrl-C, a crash mid-round) is run to
        its end first, so the session waits for the person again (its messages are in the
        transcript).

        Raises:
            RoundtableConfigError: the session was started at another table (its characters,
                memory and transcript are that table's).
        """
        try:
            result = self.runner.get_state(session)
        except ThreadNotFoundError:
            return self.runner.start(
                session, {"session_id": session, "config_name": self.config.name}
            )
        started_at = result.state.config_name
        if started_at and started_at != self.config.name:
            raise RoundtableConfigError(
                [
                    f"session `{session}` belongs to table `{started_at}`, not "
                    f"`{self.config.name}`; open it with that table or use another session id"
                ]
            )
        if result.status in ("pending", "failed"):  # cut short: finish the round first
            result = self.runner.resume(session)
        return result

    def stream(self, session: str, text: str) -> Stream[RoundtableState]:
        """Run one round for the person's ``text``, yielding each event payload (status and
        message dicts) as it is emitted. ``.result`` of the returned stream is set at the end."""
        self.open(session)
        return self.runner.stream(session, {"text": text}, mode="custom", gate=PERSON)

    def send(self, session: str, text: str) -> Round:
        """Run one round for the person's ``text``; the characters' messages in order."""
        stream = self.stream(session, text)
        messages = [cast(MessageEvent, item) for item in stream if _is_message(item)]
        assert stream.result is not None  # set once the stream is exhausted
        return Round(session, messages, stream.result.state)

    def state(self, session: str) -> RoundtableState:
        return self.runner.get_state(session).state

    def summaries(self, session: str) -> list[dict[str, Any]]:
        """The memory records of the session's rounds, in round order ([] without memory)."""
        if self.memory is None:
            return []
        return session_records(self.memory, self.config.name, session)

    def transcript(self, session: str) -> list[LogEntry]:
        """Every utterance of the session so far, the person's included."""
        return list(self.state(session).conversation_log)

    def close(self) -> None:
        """Close the HTTP clients the table built for its characters."""
        self.services.cast.close()

    def __enter__(self) -> Roundtable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "message"
