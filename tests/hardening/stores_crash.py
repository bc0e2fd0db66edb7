"""SIGKILL mid-commit: a child drives a thread (steps, patches, gate answers) and is killed
at random moments, again and again, on both stores.

After every kill a new store object must load the thread as exactly the state an
uninterrupted run had at that version, no older than any version the child saw committed
(or no thread at all, if the start never committed). A last child then finishes the run,
which must end with exactly the uninterrupted run's history.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from flowkit import Runner
from flowkit.errors import ThreadNotFoundError
from flowkit.stores import MemoryStore

from . import _crash_child as child
from ._flows import same
from ._stores import new_id, opener, shared_schema
from .registry import OK, add, expect

CHILD = Path(child.__file__)


@cache
def baseline() -> list[tuple[dict[str, Any], str, str]]:
    """State, status and next node after each version of an uninterrupted run."""
    runner: Runner[Any] = Runner(child.CRASH, store=MemoryStore())
    assert child.drive(runner, "t", report=lambda *_, **__: None) == 0
    return [(c.state.model_dump(), c.status, c.next) for c in runner.history("t")]


class Child:
    """One child process; ``acked`` is the newest version it printed as committed. It imports
    at once but opens its store only at ``go()``, so it can be started while another runs."""

    def __init__(self, argv: list[str], log: Path) -> None:
        with log.open("ab") as err:
            self.process = subprocess.Popen(
                [sys.executable, str(CHILD), *argv], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err, text=True,
            )  # fmt: skip
        self.acked = -1
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line == "ready\n":
                self.ready.set()
            elif line.startswith("v "):
                self.acked = max(self.acked, int(line.split()[1]))

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.close()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.finish()

    def finish(self) -> int:
        code = self.process.wait(120)
        self._reader.join(60)
        assert self.process.stdout is not None and self.process.stdin is not None
        self.process.stdout.close()
        self.process.stdin.close()
        return code


def _crash_case(kind: str, seed: int, kills: int) -> Callable[[Path], str]:
    def run(tmp: Path) -> str:
        expected = baseline()
        thread_id = new_id()
        if kind == "jsonfile":
            argv = ["jsonfile", str(tmp / "store"), thread_id]
            open_store = opener("jsonfile", tmp)
        else:
            url, schema = shared_schema()
            argv = ["postgres", url, schema, thread_id]
            open_store = opener("postgres", tmp)
        log = tmp / "children.log"
        rng = random.Random(seed)
        seen = -1
        # Each child is started (and imports) while the one before it runs and is checked.
        upcoming = Child(argv, log)
        try:
            for _ in range(kills):
                process, upcoming = upcoming, Child(argv, log)
                process.go()
                assert process.ready.wait(60), log.read_text()
                time.sleep(rng.uniform(0.0, 0.4))
                process.kill()
                version = _check(open_store, thread_id, expected)
                expect(version >= process.acked, f"loaded {version}, but {process.acked} committed")
                expect(version >= seen, f"loaded {version} after {seen}: a commit was lost")
                seen = version
            upcoming.go()
            assert upcoming.finish() == 0, log.read_text()
        finally:
            if upcoming.process.poll() is None:  # a check above failed: never leave it waiting
                upcoming.kill()
        expect(_check(open_store, thread_id, expected) == len(expected) - 1, "did not finish")
        with open_store() as store:
            history: list[Any] = Runner(child.CRASH, store=store).history(thread_id)
        got = [(c.state.model_dump(), c.status, c.next) for c in history]
        expect(same(got, expected), "the finished history differs from an uninterrupted run")
        return OK

    return run


def _check(open_store: Callable[[], Any], thread_id: str, expected: list[Any]) -> int:
    """The version a new store object loads (-1: no thread yet); wrong states raise."""
    with open_store() as store:
        try:
            result: Any = Runner(child.CRASH, store=store).get_state(thread_id)
        except ThreadNotFoundError:
            return -1
    version: int = result.version
    expect(0 <= version < len(expected), f"loaded version {version}, never written")
    got = (result.state.model_dump(), result.status, result.node)
    expect(same(got, expected[version]), f"the state at version {version} differs")
    return version


for _kind in ("jsonfile", "postgres"):
    _needs = "postgres" if _kind == "postgres" else None
    add(f"crash/{_kind}/2 kills, seed 0", _crash_case(_kind, 0, 2), needs=_needs, bound_s=120)
    for _seed in range(1, 13):
        add(f"crash/{_kind}/6 kills, seed {_seed}", _crash_case(_kind, _seed, 6), needs=_needs,
            slow=True, bound_s=240)  # fmt: skip
