"""Child process for the card-charge crash test; also imported by it for the flow and service.

python charge_worker.py ROOT [THREAD KILL_AT]
    start (or resume) the order THREAD in the store under ROOT, print "ready" just before it
    runs, and SIGKILL itself at KILL_AT: ``before_charge`` / ``after_charge`` (inside the charge
    node, around the service call, so after the charge and before the commit), ``after_commit``
    (in the next node, once the charge step is saved), or ``never`` (the parent may kill it at
    any moment instead). Without THREAD and KILL_AT, they come as one line on stdin: the
    parent starts the process ahead, while another runs, and says what to do when its turn
    comes.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flowkit import END, Context, Flow, Runner
from flowkit.errors import ThreadNotFoundError
from flowkit.stores import JsonFileStore

#: Each node takes at least this long, so kills at random moments land inside the run.
PAUSE_S = 0.02


class CardService:
    """A fake payment service that is idempotent the way real ones are: a charge made with an
    idempotency key already seen returns the first charge instead of charging again.

    Each charge is one file named after its key, created atomically and exclusively (written
    aside, then ``os.link``-ed into place), so a service killed mid-charge has charged fully
    or not at all.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def charge(self, key: str, card: str, cents: int) -> str:
        path = self.root / f"{hashlib.sha256(key.encode()).hexdigest()}.json"
        if path.exists():
            return str(json.loads(path.read_text())["id"])
        charge = {"id": f"ch_{os.urandom(6).hex()}", "key": key, "card": card, "cents": cents}
        tmp = self.root / f".{path.name}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(charge))
        time.sleep(PAUSE_S)  # the bank takes its time
        try:
            os.link(tmp, path)
        except FileExistsError:
            return str(json.loads(path.read_text())["id"])
        finally:
            tmp.unlink()
        return str(charge["id"])

    def charges(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted(self.root.glob("*.json"))]


@dataclass
class Deps:
    cards: CardService
    kill_at: str = "never"

    def maybe_die(self, point: str) -> None:
        if self.kill_at == point:
            os.kill(os.getpid(), signal.SIGKILL)


class Order(BaseModel):
    card: str = "4242"
    cents: int = 1999
    prepared: bool = False
    charge_id: str = ""
    receipt: str = ""


def prepare(state: Order) -> dict[str, Any]:
    time.sleep(PAUSE_S)
    return {"prepared": True}


def charge(state: Order, ctx: Context[Deps]) -> dict[str, Any]:
    """The guarded side effect: the step key makes the service charge once per step."""
    ctx.deps.maybe_die("before_charge")
    charge_id = ctx.deps.cards.charge(ctx.step_key, state.card, state.cents)
    ctx.deps.maybe_die("after_charge")
    return {"charge_id": charge_id}


def receipt(state: Order, ctx: Context[Deps]) -> dict[str, Any]:
    ctx.deps.maybe_die("after_commit")
    time.sleep(PAUSE_S)
    return {"receipt": f"paid {state.cents} with {state.charge_id}"}


ORDER = Flow(
    name="order",
    state=Order,
    start="prepare",
    nodes={"prepare": prepare, "charge": charge, "receipt": receipt},
    routes={"prepare": "charge", "charge": "receipt", "receipt": END},
)


def main(root: Path, thread_id: str, kill_at: str) -> None:
    deps = Deps(CardService(root / "service"), kill_at)
    with JsonFileStore(root / "store", fsync=False) as store:
        runner: Runner[Order, Deps] = Runner(ORDER, store=store, deps=deps)
        try:
            runner.get_state(thread_id)
            new = False
        except ThreadNotFoundError:
            new = True
        print("ready", flush=True)
        if new:
            runner.start(thread_id)
        else:
            runner.resume(thread_id)


if __name__ == "__main__":
    thread_id, kill_at = sys.argv[2:] or sys.stdin.readline().split()
    main(Path(sys.argv[1]), thread_id, kill_at)
