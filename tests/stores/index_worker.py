"""A process that writes a JSON-file store, for the thread index's crash and concurrency tests.

usage: python index_worker.py ROOT MODE NAME [N]

- ``churn``: forever, as fast as it can: create threads ``NAME-<k>``, append steps to them,
  delete some; prints ``ready`` after its first commits (the test kills it at random).
- ``commits``: create ``N`` threads ``NAME-<k>`` with 5 steps each, then close and exit.
- ``die-in-commit``: create ``NAME``, then die (SIGKILL) inside the next commit, after its
  journal write and before its index row is updated.
- ``die-with-steps-waiting``: create ``NAME``, append 3 steps of a running thread (their rows
  deferred), then die (SIGKILL) before any of them is written.
- ``steps-then-wait``: like ``die-with-steps-waiting`` but prints ``ready`` and waits for a
  line on stdin, then closes the store and exits.
- ``die-rebuilding``: die (SIGKILL) in the middle of ``reindex``, after its first batch.
"""

from __future__ import annotations

import os
import random
import signal
import sys
from pathlib import Path
from typing import Any

from flowkit.stores import JsonFileStore
from flowkit.testing._contract_flows import start_record, step_record

STEPS = 5


def _step(version: int, status: str = "pending") -> Any:
    return step_record(version).model_copy(update={"status": status})


def churn(store: JsonFileStore, name: str) -> None:
    rng = random.Random(os.getpid())
    versions: dict[str, int] = {}
    made = 0
    while True:
        roll = rng.random()
        if roll < 0.2 or not versions:
            thread_id = f"{name}-{made}"
            made += 1
            store.create(thread_id, start_record())
            versions[thread_id] = 0
            if made == 3:
                print("ready", flush=True)
        elif roll < 0.25:
            thread_id = rng.choice(sorted(versions))
            store.delete(thread_id)
            del versions[thread_id]
        else:
            thread_id = rng.choice(sorted(versions))
            version = versions[thread_id] + 1
            status = rng.choice(["pending", "waiting", "done"])
            store.append(thread_id, [_step(version, status)], expected_version=version - 1)
            versions[thread_id] = version


def commits(store: JsonFileStore, name: str, count: int) -> None:
    for index in range(count):
        thread_id = f"{name}-{index}"
        store.create(thread_id, start_record())
        for version in range(1, STEPS + 1):
            store.append(thread_id, [_step(version)], expected_version=version - 1)


def die_in_commit(store: JsonFileStore, name: str) -> None:
    from flowkit.stores._thread_index import JsonThreadIndex

    store.create(name, start_record())

    def killed(*_: Any, **__: Any) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    JsonThreadIndex.committed = killed  # type: ignore[method-assign]
    store.append(name, [_step(1, "waiting")], expected_version=0)


def die_with_steps_waiting(store: JsonFileStore, name: str) -> None:
    store.create(name, start_record())
    for version in range(1, 4):
        store.append(name, [_step(version)], expected_version=version - 1)
    os.kill(os.getpid(), signal.SIGKILL)


def steps_then_wait(store: JsonFileStore, name: str) -> None:
    store.create(name, start_record())
    for version in range(1, 4):
        store.append(name, [_step(version)], expected_version=version - 1)
    print("ready", flush=True)
    sys.stdin.readline()


def die_rebuilding(store: JsonFileStore) -> None:
    from flowkit.stores import _index_repair

    real = _index_repair.IndexDB.replace
    batches = [0]

    def replace(self: Any, rows: Any) -> None:
        real(self, rows)
        batches[0] += 1
        if batches[0] == 2:
            os.kill(os.getpid(), signal.SIGKILL)

    _index_repair.IndexDB.replace = replace  # type: ignore[method-assign]
    store.reindex()


def main() -> None:
    root, mode, name = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    store = JsonFileStore(root, fsync=False)
    if mode == "churn":
        churn(store, name)
    elif mode == "commits":
        commits(store, name, int(sys.argv[4]))
    elif mode == "die-in-commit":
        die_in_commit(store, name)
    elif mode == "die-with-steps-waiting":
        die_with_steps_waiting(store, name)
    elif mode == "steps-then-wait":
        steps_then_wait(store, name)
    elif mode == "die-rebuilding":
        die_rebuilding(store)
    store.close()


if __name__ == "__main__":
    main()
