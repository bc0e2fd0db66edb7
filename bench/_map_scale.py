"""A durable ``Map`` as it grows (issue 25, acceptance 3): wall time of a map of 10, 100, 1,000
and 10,000 items on ``JsonFileStore`` with fsync on and off, side by side in the same run.

Three shapes of item function, each trivial so that what is measured is the engine and its
commits: a sync function one call at a time (``concurrency=1``: calls run in the calling
thread), a sync function at the default concurrency (a thread pool), and an async function at
the default concurrency (under ``astart``). For each run the journal appends are counted, so
the table shows how many commits (fsyncs) the items took. Target: the durable map of 10,000
items <= 3 s, printed beside the no-fsync figure of the same run.

``measure(quick)`` returns the figures (``bench/scale.py`` calls it); run this file for a
table, or ``--json``. Scratch stores go under ``--dir`` (a real disk, not tmpfs). Timings are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import filesystem_of, scratch_dir
from _flows import quiet_logging
from pydantic import BaseModel

from flowkit import END, Flow, Map, Runner, append
from flowkit.stores import JsonFileStore

SIZES = (10, 100, 1_000, 10_000)
#: Acceptance 3: seconds for a durable map of 10,000 items.
TARGET_S, TARGET_ITEMS = 3.0, 10_000


class Items(BaseModel):
    values: list[int] = []
    out: Annotated[list[int], append] = []


def one(state: Items, value: int) -> dict[str, Any]:
    return {"out": [value]}


async def one_async(state: Items, value: int) -> dict[str, Any]:
    return {"out": [value]}


#: shape -> (item function, concurrency; None: the Map's default)
SHAPES: dict[str, tuple[Callable[..., Any], int | None]] = {
    "sync_1": (one, 1),
    "sync_pool": (one, None),
    "async": (one_async, None),
}


def _flow(shape: str) -> Flow:
    fn, concurrency = SHAPES[shape]
    each = (
        Map(fn, over=lambda s: s.values)
        if concurrency is None
        else (Map(fn, over=lambda s: s.values, concurrency=concurrency))
    )
    return Flow(name="map_scale", state=Items, start="each", nodes={"each": each},
                routes={"each": END})  # fmt: skip


def _once(root: Path, shape: str, items: int, fsync: bool) -> tuple[float, int]:
    """Seconds for one map of ``items`` items in a fresh store, and the journal appends."""
    store = JsonFileStore(root, fsync=fsync)
    appends = count()
    real = store.append

    def counted(*args: Any, **kwargs: Any) -> None:
        next(appends)
        real(*args, **kwargs)

    store.append = counted  # type: ignore[method-assign]
    runner = Runner(_flow(shape), store=store)
    start = {"values": list(range(items))}
    started = time.perf_counter()
    if shape == "async":
        result = asyncio.run(runner.astart("t", start))
    else:
        result = runner.start("t", start)
    elapsed = time.perf_counter() - started
    assert result.done and len(result.state.out) == items
    store.close()
    return elapsed, next(appends)


def measure(quick: bool, *, base: Path | None = None) -> dict[str, Any]:
    """Median seconds of each shape x size x fsync, the fsync'd runs interleaved with the
    others; scratch stores under ``base`` (default: the current folder). ``quick``: up to
    1,000 items, one round."""
    sizes = SIZES[:3] if quick else SIZES
    figures: dict[str, Any] = {}
    with scratch_dir(base or Path.cwd()) as root:
        figures["fs"] = filesystem_of(root)
        folders = count()
        for shape in SHAPES:
            _once(root / f"warm{next(folders)}", shape, 10, True)  # imports, first files
            for items in sizes:
                rounds = 1 if quick else (3 if items >= 10_000 else 5)
                samples: dict[bool, list[float]] = {True: [], False: []}
                appends: dict[bool, int] = {}
                for _ in range(rounds):
                    for fsync in (True, False):
                        seconds, appends[fsync] = _once(
                            root / f"s{next(folders)}", shape, items, fsync
                        )
                        samples[fsync].append(seconds)
                for fsync, name in ((True, "fsync"), (False, "nofsync")):
                    key = f"map.{shape}.{items}.{name}"
                    figures[f"{key}_s"] = statistics.median(samples[fsync])
                    figures[f"{key}_appends"] = appends[fsync]
    if not quick:
        durable = max(figures[f"map.{s}.{TARGET_ITEMS}.fsync_s"] for s in SHAPES)
        figures["map.durable_10k_s"] = durable
        figures["map.nofsync_10k_s"] = max(
            figures[f"map.{s}.{TARGET_ITEMS}.nofsync_s"] for s in SHAPES
        )
        figures["map.acceptance_3"] = "PASS" if durable <= TARGET_S else "MISS"
    return figures


def report(figures: dict[str, Any]) -> str:
    """The figures as a table: per shape and size, fsync'd and not, and the appends made."""
    sizes = sorted({int(k.split(".")[2]) for k in figures if k.count(".") == 3})
    lines = [f"Map on JsonFileStore ({figures['fs']}): seconds (journal appends)"]
    head = f"{'shape':<10}{'items':>7}  {'fsync':>18}  {'no fsync':>18}  {'ratio':>6}"
    lines += [head, "-" * len(head)]
    for shape in SHAPES:
        for items in sizes:
            key = f"map.{shape}.{items}"
            on, off = figures[f"{key}.fsync_s"], figures[f"{key}.nofsync_s"]
            cells = [
                f"{figures[f'{key}.{n}_s']:9.3f} ({figures[f'{key}.{n}_appends']:>5})"
                for n in ("fsync", "nofsync")
            ]
            lines.append(f"{shape:<10}{items:>7}  {cells[0]:>18}  {cells[1]:>18}  {on / off:5.2f}x")
    if "map.acceptance_3" in figures:
        lines.append(
            f"Acceptance 3: durable map of {TARGET_ITEMS:,} items "
            f"{figures['map.durable_10k_s']:.2f} s (slowest shape; no fsync "
            f"{figures['map.nofsync_10k_s']:.2f} s), target <= {TARGET_S:.0f} s: "
            f"{figures['map.acceptance_3']}"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="up to 1,000 items, one round")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--dir", default=".", help="where scratch stores go (default: .)")
    args = parser.parse_args()
    quiet_logging()  # the bench is about figures, not the engine's log lines
    figures = measure(args.quick, base=Path(args.dir))
    print(json.dumps(figures, indent=2) if args.json else report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
