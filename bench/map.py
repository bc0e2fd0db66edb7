"""Parallel ``Map`` figures, each beside its floor measured in the same run (issue #12).

1. Wall time of a map of 100 items x 10 ms of async work at concurrency 10, against the floor
   ``asyncio.gather`` of the same sleeps under a semaphore (the ideal ``10 ms x ceil(100/10)``
   plus the event loop's own overhead). Target: <= 1.3x.
2. Durable cost per map item (an ``item`` record, fsync'd) against a durable sequential step
   (a ``step`` record, fsync'd), both on ``JsonFileStore`` in one folder. Target: <= 1.5x.

Timings are printed, never asserted. ``--quick`` for a smoke run, ``--json`` for machines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Case, filesystem_of, interleaved, scratch_dir
from pydantic import BaseModel

from flowkit import END, Flow, Map, Route, RouteTable, Runner, append
from flowkit.stores import JsonFileStore

ITEMS, WORK_S, CONCURRENCY = 100, 0.010, 10


class Items(BaseModel):
    values: list[int] = []
    out: Annotated[list[int], append] = []
    count: int = 0


async def work(state: Items, value: int) -> dict[str, Any]:
    await asyncio.sleep(WORK_S)
    return {"out": [value]}


def nothing(state: Items, value: int) -> dict[str, Any]:
    return {"out": [value]}


def step(state: Items) -> dict[str, Any]:
    return {"out": [state.count], "count": state.count + 1}


def map_flow(fn: Callable[..., Any], concurrency: int) -> Flow:
    return Flow(
        name="bench_map",
        state=Items,
        start="each",
        nodes={"each": Map(fn, over=lambda s: s.values, concurrency=concurrency)},
        routes={"each": END},
    )


def chain_flow(steps: int) -> Flow:
    def finished(state: Items) -> bool:
        return state.count >= steps

    return Flow(
        name="bench_chain",
        state=Items,
        start="step",
        nodes={"step": step},
        routes={"step": RouteTable("until", [Route(finished, END)], default="step")},
    )


def parallel_wall(rounds: int) -> dict[str, float]:
    flow = map_flow(work, CONCURRENCY)
    start = {"values": list(range(ITEMS))}

    def engine() -> Callable[[], object]:
        runner = Runner(flow, store=None)
        return lambda: asyncio.run(runner.astart("t", start))

    def floor() -> Callable[[], object]:
        async def gathered() -> None:
            gate = asyncio.Semaphore(CONCURRENCY)

            async def one() -> None:
                async with gate:
                    await asyncio.sleep(WORK_S)

            await asyncio.gather(*(one() for _ in range(ITEMS)))

        return lambda: asyncio.run(gathered())

    got = interleaved({"map": Case(engine, 1), "floor": Case(floor, 1)}, rounds)
    ideal = WORK_S * math.ceil(ITEMS / CONCURRENCY)
    return {"map_s": got["map"], "floor_s": got["floor"], "ideal_s": ideal}


def durable_per_item(base: Path, items: int, rounds: int) -> dict[str, Any]:
    with scratch_dir(base) as root:
        counter = iter(range(1_000_000))
        mapped = map_flow(nothing, 1)
        chained = chain_flow(items)

        def run_map() -> Callable[[], object]:
            store = JsonFileStore(root / f"m{next(counter)}")
            runner = Runner(mapped, store=store)
            return lambda: runner.start("t", {"values": list(range(items))})

        def run_chain() -> Callable[[], object]:
            store = JsonFileStore(root / f"c{next(counter)}")
            runner = Runner(chained, store=store)
            return lambda: runner.start("t")

        got = interleaved({"item": Case(run_map, items), "step": Case(run_chain, items)}, rounds)
        return {
            "item_us": got["item"] * 1e6,
            "step_us": got["step"] * 1e6,
            "fs": filesystem_of(root),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: few rounds")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--dir", type=Path, default=Path.cwd(), help="where scratch stores go")
    args = parser.parse_args()
    rounds = 2 if args.quick else 7
    wall = parallel_wall(rounds)
    durable = durable_per_item(args.dir, 20 if args.quick else 100, rounds)
    figures: dict[str, Any] = {
        "map.parallel_s": wall["map_s"],
        "floor.gather_s": wall["floor_s"],
        "floor.ideal_s": wall["ideal_s"],
        "map.parallel_ratio": wall["map_s"] / wall["ideal_s"],
        "map.durable_item_us": durable["item_us"],
        "floor.durable_step_us": durable["step_us"],
        "map.durable_ratio": durable["item_us"] / durable["step_us"],
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return

    def verdict(ratio: float, target: float) -> str:
        return "PASS" if ratio <= target else "MISS"

    ratio = figures["map.parallel_ratio"]
    print(f"Map: {ITEMS} items x {WORK_S * 1000:.0f} ms async work, concurrency {CONCURRENCY}")
    print(
        f"  map {wall['map_s'] * 1000:8.1f} ms   ideal {wall['ideal_s'] * 1000:.1f} ms   "
        f"asyncio.gather floor {wall['floor_s'] * 1000:.1f} ms   "
        f"ratio {ratio:.2f}x (target <= 1.3x) {verdict(ratio, 1.3)}"
    )
    ratio = figures["map.durable_ratio"]
    print(f"Durable cost on JsonFileStore ({durable['fs']})")
    print(
        f"  per map item {durable['item_us']:8.1f} us   per sequential step "
        f"{durable['step_us']:.1f} us   ratio {ratio:.2f}x (target <= 1.5x) {verdict(ratio, 1.5)}"
    )


if __name__ == "__main__":
    main()
