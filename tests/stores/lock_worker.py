"""Child process of the lock race test: lock, create, append, compact and delete one thread.

python lock_worker.py ROOT THREAD NAME SEED ROUNDS   (starts when a line arrives on stdin)

Every hold of the thread's lock, including the ones ``delete`` and ``compact`` take inside the
store, is instrumented: on entry the holder finds ``ROOT/holders`` empty, leaves its marker
there, and adds one to the number in ``ROOT/count`` (a read and a write, not atomic); on exit
it finds only its own marker. A second holder at any moment shows up as a foreign marker
(appended to ``ROOT/violations``) or as a lost increment. The last line printed is how many
holds this process had, so the parent can check the count comes out exact.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

from flowkit.errors import ConflictError, StoreError, ThreadExistsError, ThreadNotFoundError
from flowkit.records._records import StartRecord, StepRecord
from flowkit.stores import JsonFileStore
from flowkit.stores._locks import ThreadLockFile

#: Attempts per round while the lock is busy (bounded, so a child always finishes).
BUSY_RETRIES = 1000


class Holds:
    """The checks every lock holder makes, and how many holds this process had."""

    def __init__(self, root: Path, name: str) -> None:
        self.markers = root / "holders"
        self.count = root / "count"
        self.violations = root / "violations"
        self.name = name
        self.held = 0

    def violation(self, what: str) -> None:
        with self.violations.open("a") as out:
            out.write(f"{self.name}: {what}\n")

    def enter(self) -> None:
        others = os.listdir(self.markers)
        if others:
            self.violation(f"took the lock while {others} held it")
        (self.markers / self.name).touch()
        value = int(self.count.read_text() or "0")
        os.sched_yield()  # widen the window a second holder would need
        self.count.write_text(str(value + 1))
        self.held += 1

    def exit(self) -> None:
        others = sorted(set(os.listdir(self.markers)) - {self.name})
        if others:
            self.violation(f"held the lock together with {others}")
        (self.markers / self.name).unlink()


class CheckedLock(ThreadLockFile):
    """The store's lock, whose holder runs ``Holds``' checks while it holds it (the file is
    unlinked, when it is, after the exit check: the holder's last act)."""

    __slots__ = ("holds",)

    def __enter__(self) -> None:
        super().__enter__()
        self.holds.enter()

    def __exit__(self, *exc: object) -> None:
        try:
            self.holds.exit()
        finally:
            super().__exit__(*exc)


class CheckedStore(JsonFileStore):
    """Every hold is checked: ``lock`` and the ones ``delete`` and ``compact`` take inside."""

    holds: Holds

    def _lock_file(self, thread_id: str) -> ThreadLockFile:
        lock = CheckedLock(self.root / "locks" / f"{thread_id}.lock", thread_id, self._exists)
        lock.holds = self.holds
        return lock


def start(version: int = 0) -> StartRecord:
    return StartRecord(version=version, ts=0.0, next="n", status="pending", flow="f", state={})


def step(version: int) -> StepRecord:
    return StepRecord(
        version=version, ts=0.0, next="n", status="pending", node="n", update={"v": version}
    )


def one_round(store: CheckedStore, thread: str, op: str) -> None:
    if op == "delete":
        store.delete(thread)
    elif op == "compact":
        last = store.records(thread)[-1].version
        store.compact(thread, start(last))
    else:
        with store.lock(thread):
            if op == "create":
                store.create(thread, start())
            elif op == "append":
                version = store.records(thread)[-1].version
                store.append(thread, [step(version + 1)], expected_version=version)


def main() -> None:
    root, thread, name, seed, rounds = sys.argv[1:6]
    store = CheckedStore(Path(root) / "store", fsync=False)
    store.holds = Holds(Path(root), name)
    rng = random.Random(int(seed))
    ops = ["hold", "create", "create", "append", "append", "compact", "delete", "delete"]
    sys.stdin.readline()  # all children start together, so their rounds overlap
    for _ in range(int(rounds)):
        op = rng.choice(ops)
        for _busy in range(BUSY_RETRIES):
            try:
                one_round(store, thread, op)
            except ConflictError:
                # Busy: try again at once (giving up the CPU), so the children keep racing
                # for the lock instead of one finishing its rounds while another holds it.
                os.sched_yield()
                continue
            except (ThreadExistsError, ThreadNotFoundError):
                pass  # the thread was (not) there: the race is the point
            except StoreError as exc:  # compacting at a version a recreated thread lacks
                if "compact" not in str(exc):
                    raise
            break
    print(store.holds.held)


if __name__ == "__main__":
    main()
