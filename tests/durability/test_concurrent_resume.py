"""Two processes resume the same thread at once, round after round: exactly one wins each time.

Every round both children read the thread's version, then race ``resume(..., expected_version=v)``
with their own value. One must succeed and the other get ``ConflictError`` (from the thread's
lock or, when it comes second, from the version check; every third round is run one after the
other to exercise that path for sure). The thread ends with exactly one value per round, the
winners', in order: nothing lost, nothing doubled.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from flowkit import Runner
from flowkit.stores import JsonFileStore

pytestmark = pytest.mark.slow

ROUNDS = 180  # 120 raced at once, 60 one after the other


class Child:
    """A racing worker process driven one line at a time."""

    def __init__(self, worker: ModuleType, root: Path, name: str, log: Path) -> None:
        self.name = name
        with log.open("a") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, worker.__file__, "race", str(root), "t", name],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.log = log

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def reply(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"{self.name} died:\n{self.log.read_text()}"
        return line.strip()

    def close(self) -> None:
        with self.process:
            if self.process.poll() is None:
                self.send("quit")
            assert self.process.wait() == 0, self.log.read_text()


def test_two_processes_racing_on_one_thread_never_both_win_and_lose_nothing(
    worker: ModuleType, tmp_path: Path
) -> None:
    root, log = tmp_path / "store", tmp_path / "children.log"
    with JsonFileStore(root) as store:
        owner: Runner[object] = Runner(worker.INBOX, store=store)
        assert owner.start("t").status == "waiting"

        children = [Child(worker, root, name, log) for name in ("a", "b")]
        winners: list[str] = []
        wins: Counter[str] = Counter()
        conflicts: Counter[str] = Counter()
        try:
            for round_ in range(ROUNDS):
                for child in children:
                    child.send("read")
                versions = {child.reply() for child in children}
                assert versions == {str(2 * round_)}, "both see the same committed version"
                # Alternate who is told first, so neither has a head start every round.
                order = children if round_ % 2 else children[::-1]
                if round_ % 3 == 2:
                    # The first finishes before the second starts: the second holds a stale
                    # version and must be refused by the version check, not the lock.
                    outcomes = {}
                    for child in order:
                        child.send(f"go {round_} {2 * round_}")
                        outcomes[child.name] = child.reply()
                    assert outcomes[order[1].name] == "conflict version", outcomes
                else:
                    for child in order:
                        child.send(f"go {round_} {2 * round_}")
                    outcomes = {child.name: child.reply() for child in order}
                won = [name for name, outcome in outcomes.items() if outcome.startswith("won")]
                lost = [n for n, outcome in outcomes.items() if outcome.startswith("conflict")]
                assert len(won) == 1 and len(lost) == 1, f"round {round_}: {outcomes}"
                assert outcomes[won[0]] == f"won {2 * round_ + 2}"
                winners.append(f"{won[0]}-{round_}")
                wins[won[0]] += 1
                conflicts[outcomes[lost[0]]] += 1
        finally:
            for child in children:
                child.close()

        assert sum(wins.values()) == sum(conflicts.values()) == ROUNDS
        done = owner.resume("t", {"value": "end", "stop": True})
        assert done.status == "done"
        assert done.state.values == [*winners, "end"]
    with JsonFileStore(root) as reopened:
        history = Runner(worker.INBOX, store=reopened).history("t")
    inputs = [c.update["values"][0] for c in history if c.kind == "input"]
    assert inputs == [*winners, "end"]
    assert [c.version for c in history] == list(range(2 * ROUNDS + 3))
