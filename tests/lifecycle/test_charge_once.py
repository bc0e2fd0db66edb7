"""Crash test for idempotency: a node charges a card through a fake idempotent service, keyed
by ``ctx.step_key``; child processes are SIGKILLed at random moments and right after the
charge (before the step is committed), again and again; every card is charged exactly once.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from flowkit import Runner
from flowkit.errors import ThreadNotFoundError
from flowkit.stores import JsonFileStore

pytestmark = pytest.mark.slow

SEED = 20_260_105
ORDERS = 5
#: The kill points each order goes through before a last run finishes it: right after the
#: charge and before its commit (the case idempotency is for), before it, at random moments,
#: and once the charge is saved.
PLAN = ["random", "after_charge", "before_charge", "after_charge", "random", "random"]
PLAN += ["after_commit"]
#: Each node pauses 20 ms, so a kill within 30 ms of "ready" lands inside the run.
MAX_DELAY_S = 0.03
#: Where a run killed at random kills itself if the parent has not yet: the first run of an
#: order at its charge (a parent that oversleeps on a loaded machine would otherwise let it
#: save the charge, leaving the after_charge runs that follow nothing to kill), later ones never.
RANDOM_AT_THE_LATEST = ["after_charge"] + ["never"] * (len(PLAN) - 1)


class Children:
    """Worker processes run one at a time, each started (imports and all) while the one
    before it runs: it is told its thread and kill point only when its turn comes."""

    def __init__(self, worker: ModuleType, root: Path, log: Path) -> None:
        self.worker, self.root, self.log = worker, root, log
        self._next = self._spawn()

    def _spawn(self) -> subprocess.Popen[str]:
        with self.log.open("a") as stderr:
            return subprocess.Popen(
                [sys.executable, self.worker.__file__, str(self.root)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )

    def run(self, thread: str, kill_at: str, delay: float | None) -> int:
        child, self._next = self._next, self._spawn()
        with child:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(f"{thread} {kill_at}\n")
            child.stdin.close()
            line = child.stdout.readline()
            assert line == "ready\n", f"worker did not start: {line!r}\n{self.log.read_text()}"
            if delay is not None:
                time.sleep(delay)
                child.send_signal(signal.SIGKILL)
            return child.wait(timeout=120)

    def close(self) -> None:
        """Stop the one started ahead, never told to run."""
        self._next.kill()
        self._next.wait(timeout=120)
        for stream in (self._next.stdin, self._next.stdout):
            if stream is not None:
                stream.close()


def state_of(worker: ModuleType, root: Path, thread: str) -> object | None:
    with JsonFileStore(root / "store") as store:
        try:
            return Runner(worker.ORDER, store=store).get_state(thread)
        except ThreadNotFoundError:
            return None


def test_sigkilled_runs_charge_every_card_exactly_once(
    charge_worker: ModuleType, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    log = tmp_path / "children.log"
    root = tmp_path / "shop"
    kills: dict[str, int] = {}
    children = Children(charge_worker, root, log)
    try:
        for order in range(ORDERS):
            thread = f"order-{order}"
            for kill_at, latest in zip(PLAN, RANDOM_AT_THE_LATEST, strict=True):
                current = state_of(charge_worker, root, thread)
                if current is not None and current.done:  # type: ignore[attr-defined]
                    break
                delay = rng.uniform(0.0, MAX_DELAY_S) if kill_at == "random" else None
                point = latest if delay is not None else kill_at
                code = children.run(thread, point, delay)
                if code == -signal.SIGKILL:
                    kills[kill_at] = kills.get(kill_at, 0) + 1
                else:
                    assert code == 0, log.read_text()
            if not state_of(charge_worker, root, thread).done:  # type: ignore[union-attr]
                assert children.run(thread, "never", None) == 0
    finally:
        children.close()

    assert sum(kills.values()) >= 20, kills
    assert kills.get("after_charge", 0) >= 2 * ORDERS, kills

    charges = charge_worker.CardService(root / "service").charges()
    assert sorted(c["key"].split("/")[0] for c in charges) == [
        f"order-{n}" for n in range(ORDERS)
    ], "a card was charged twice, or not at all"
    with JsonFileStore(root / "store") as store:
        runner = Runner(charge_worker.ORDER, store=store)
        for charge in charges:
            thread = charge["key"].split("/")[0]
            final = runner.get_state(thread)
            assert final.done
            assert final.state.charge_id == charge["id"]
            assert final.state.receipt == f"paid 1999 with {charge['id']}"
            steps = [c.node for c in runner.history(thread) if c.kind == "step"]
            assert steps == ["prepare", "charge", "receipt"]
