"""The hot-path targets of issue #12, each measured beside its floor in the same run.

- ``loop``: per node, no store, one long run around a ring of 10 nodes, beside ``transitions``
  alone making the same transitions (target: <= 1.5x).
- ``memory``: per node with ``MemoryStore`` when every 10-node run starts a new thread (the
  chain of measure 1), beside the same ``transitions`` floor (target: <= 2.5x).
- ``append``: per step of a node appending one message, with 10 and with 100,000 messages
  already in state (target: flat, <= 1.2x).
- ``size``: per node of a 10-node run (new thread each, ``MemoryStore``) in a flow of 11 nodes
  and in one of 10,000 nodes (target: independent of the flow's size, <= 1.2x).

Why: the engine must stay cheap next to the state machine it drives (``transitions`` decides
every state change), and its cost must not grow with history or with the size of the flow.
A figure over its target prints MISS; nothing here fails a run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from _common import Case
from _flows import Chat, loop_flow, message, noop

from flowkit import END, Flow, Route, RouteTable, Runner, field
from flowkit.stores import MemoryStore

RING = 10
BIG_FLOW = 10_000
SMALL_FLOW = RING + 1
MESSAGES = (10, 100_000)


@dataclass(frozen=True)
class Target:
    """One target: the figure, the floor it is divided by, and the highest ratio that passes."""

    label: str
    figure: str
    floor: str
    floor_label: str
    limit: float


TARGETS = [
    Target(
        "per node, no store, long loop",
        "flowkit.hot.loop_us",
        "floor.transitions_us",
        "transitions",
        1.5,
    ),
    Target(
        "per node, new thread per 10-node run, MemoryStore",
        "flowkit.node_us.memory",
        "floor.transitions_us",
        "transitions",
        2.5,
    ),
    Target(
        f"per step @{MESSAGES[1]:,} msgs in state (append)",
        f"flowkit.hot.append_us.{MESSAGES[1]}",
        f"flowkit.hot.append_us.{MESSAGES[0]}",
        f"@{MESSAGES[0]} msgs",
        1.2,
    ),
    Target(
        f"per node in a {BIG_FLOW:,}-node flow",
        f"flowkit.hot.size_us.{BIG_FLOW}",
        f"flowkit.hot.size_us.{SMALL_FLOW}",
        f"{SMALL_FLOW}-node flow",
        1.2,
    ),
]


# -- flows ---------------------------------------------------------------------------------------


def _lap(state: Chat) -> dict[str, Any]:
    n = state.count + 1
    return {"count": n, "done": n >= state.stop_at}


def ring_flow() -> Flow:
    """10 nodes in a ring; the last counts laps and leaves after ``stop_at`` of them."""
    names = [f"n{i}" for i in range(RING)]
    nodes: dict[str, Any] = dict.fromkeys(names, noop)
    nodes[names[-1]] = _lap
    routes: dict[str, str | RouteTable] = {name: names[i + 1] for i, name in enumerate(names[:-1])}
    routes[names[-1]] = RouteTable("lap", [Route(field("done"), END)], default=names[0])
    return Flow(name="bench_ring", state=Chat, start=names[0], nodes=nodes, routes=routes)


def _stop(state: Chat) -> dict[str, Any]:
    return {"done": True}


def sized_flow(size: int) -> Flow:
    """A chain of ``size`` nodes whose runs stop after the first 10 (the rest never run)."""
    names = [f"n{i}" for i in range(size)]
    nodes: dict[str, Any] = dict.fromkeys(names, noop)
    nodes[names[RING - 2]] = _stop
    routes: dict[str, str | RouteTable] = {
        name: (names[i + 1] if i + 1 < size else END) for i, name in enumerate(names)
    }
    routes[names[RING - 1]] = RouteTable("stop", [Route(field("done"), END)], default=names[RING])
    return Flow(name=f"bench_size_{size}", state=Chat, start=names[0], nodes=nodes, routes=routes)


# -- cases ---------------------------------------------------------------------------------------


def loop_case(laps: int) -> Case:
    """One start running ``laps`` laps of the ring, no store."""
    flow = ring_flow()
    counter = iter(range(10**9))

    def make() -> Callable[[], None]:
        runner = Runner(flow, store=None, step_limit=laps * RING + RING)
        tid = f"t{next(counter)}"

        def run() -> None:
            result = runner.start(tid, {"stop_at": laps})
            assert result.status == "done"

        return run

    return Case(make, laps * RING)


def append_case(messages: int, steps: int) -> Case:
    """``steps`` steps appending one message each to a thread holding ``messages`` already."""
    flow = loop_flow()  # one node appending a message per step, then gate `more`
    counter = iter(range(10**9))

    def make() -> Callable[[], None]:
        runner = Runner(flow, store=MemoryStore())
        tid = f"t{next(counter)}"
        # Outside the clock: the thread starts with its history and waits after one step.
        # Only the thread holds the history (no copy kept here): the garbage collector walks
        # every item of every list alive, so a copy of our own would be timed as the engine's.
        start = Chat(messages=[message(i) for i in range(messages)], stop_at=1)
        assert runner.start(tid, start).status == "waiting"
        del start

        def run() -> None:
            result = runner.resume(tid, {"stop_at": steps + 1})
            assert result.state.count == steps + 1

        return run

    return Case(make, steps)


def sized_case(size: int, runs: int) -> Case:
    """``runs`` new threads, 10 nodes each, in a flow of ``size`` nodes (MemoryStore)."""
    flow = sized_flow(size)

    def make() -> Callable[[], None]:
        runner = Runner(flow, store=MemoryStore())
        ids = [f"t{i}" for i in range(runs)]

        def run() -> None:
            for tid in ids:
                runner.start(tid)

        return run

    return Case(make, runs * RING)


# -- report --------------------------------------------------------------------------------------


def verdicts(fig: dict[str, float]) -> list[dict[str, Any]]:
    """Each target with its figure, floor, ratio and PASS/MISS (``None`` when not measured)."""
    out: list[dict[str, Any]] = []
    for target in TARGETS:
        value, floor = fig.get(target.figure), fig.get(target.floor)
        ratio = value / floor if value and floor else None
        out.append(
            {
                "target": target.label,
                "value_us": value,
                "floor": target.floor_label,
                "floor_us": floor,
                "ratio": ratio,
                "limit": target.limit,
                "verdict": None if ratio is None else ("PASS" if ratio <= target.limit else "MISS"),
            }
        )
    return out


def render(rows: list[dict[str, Any]]) -> str:
    lines = []
    width = max(len(r["target"]) for r in rows)
    for r in rows:
        if r["ratio"] is None:
            lines.append(f"{r['target'].ljust(width)} | —")
            continue
        lines.append(
            f"{r['target'].ljust(width)} | {r['value_us']:8.2f} µs | floor {r['floor']} "
            f"{r['floor_us']:.2f} µs | {r['ratio']:.2f}x | target <= {r['limit']}x | "
            f"{r['verdict']}"
        )
    return "\n".join(lines)
