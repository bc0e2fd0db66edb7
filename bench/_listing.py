"""Thread listing as the store grows (issue 25, acceptance 1): what a listing costs at 200 and
at 100,000 threads, in the same run.

``JsonFileStore`` folders of each size measured (``--quick``: the smaller sizes):

- ``cli_s.N`` (200, 2,000, 20,000; quick: 200, 1,000): ``flowkit threads --json --store DIR``
  in a fresh process, wall seconds (start-up included, as a person waits for it): a store per
  size, their runs interleaved, the median of 5 rounds (quick: 1). Target: 20,000 threads <=
  3x 200 threads (``cli_ratio``; quick: the largest size over 200).
- ``page_ms.N`` (1,000, 10,000, 100,000; quick: 1,000, 2,000): ``GET /threads?limit=50``,
  the first page, from the server app (``flowkit.server.create_app``) in this process through
  starlette's ``TestClient``: one store grown from size to size, a new app at each, one
  request to warm it, then the median of 9 (quick: 3). Target: <= 100 ms at 100,000 threads.
- ``scandir_ms.N`` (every size): one ``os.scandir`` of the threads folder, the least any
  listing of a folder per thread costs (the issue's floor: 86 ms at 100,000).

Threads are built fast but as the store writes them: two threads of the ``review`` flow are
run by a ``Runner`` (one waits at its gate, one is done), and every other thread is a copy of
one of their journals under a new id; a store with a thread index is then reindexed
(``JsonFileStore.reindex``), outside the clock. Timings are printed, never asserted.

usage: python bench/_listing.py [--quick] [--json] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _common import run_python, scratch_dir  # noqa: E402
from _flows import quiet_logging  # noqa: E402

CLI_SIZES = (200, 2_000, 20_000)
PAGE_SIZES = (1_000, 10_000, 100_000)
QUICK_CLI_SIZES = (200, 1_000)  # quick is a smoke run: every figure, none meaningful
QUICK_PAGE_SIZES = (1_000, 2_000)
#: Acceptance 1: ``flowkit threads --json`` at 20,000 threads <= 3x at 200; a first page at
#: 100,000 threads <= 100 ms.
CLI_TARGET = 3.0
PAGE_TARGET_MS = 100.0
PAGE = "/threads?limit=50"


def _templates(folder: Path) -> list[bytes]:
    """The journals of two real threads of the ``review`` flow: one waiting, one done."""
    from flowkit import Runner
    from flowkit.examples.review import flow
    from flowkit.stores import JsonFileStore

    with JsonFileStore(folder, fsync=False) as store:
        runner = Runner(flow, store=store)
        runner.start("waiting")
        runner.start("done")
        runner.resume("done", {"approved": True})
    return [
        (folder / "threads" / name / "journal.jsonl").read_bytes() for name in ("waiting", "done")
    ]


def _grow(root: Path, have: int, want: int, journals: list[bytes]) -> None:
    """Threads ``have`` .. ``want - 1`` of the store at ``root``, copies of ``journals``."""
    threads = root / "threads"
    threads.mkdir(parents=True, exist_ok=True)
    for number in range(have, want):
        folder = threads / f"t{number:06d}"
        folder.mkdir()
        (folder / "journal.jsonl").write_bytes(journals[number % len(journals)])


def _reindex(root: Path) -> None:
    """Let a store with a thread index know of the copied threads (outside the clock)."""
    from flowkit.stores import JsonFileStore

    with JsonFileStore(root, fsync=False) as store:
        reindex = getattr(store, "reindex", None)
        if reindex is not None:
            reindex()


def _scandir_ms(root: Path, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        with os.scandir(root / "threads") as entries:
            count = sum(1 for _ in entries)
        samples.append(time.perf_counter() - started)
        assert count > 0
    return statistics.median(samples) * 1e3


def _cli_s(stores: dict[int, Path], rounds: int) -> dict[int, float]:
    """Median wall seconds of ``flowkit threads --json`` on each store (by its size), the
    rounds of the sizes interleaved, after one round thrown away (first imports, caches)."""
    samples: dict[int, list[float]] = {size: [] for size in stores}
    for round_no in range(rounds + 1):
        for size, root in stores.items():
            argv = ["-m", "flowkit", "threads", "--json", "--store", str(root)]
            seconds, done = run_python(argv)
            listed = len(json.loads(done.stdout))
            if listed != size:
                raise RuntimeError(f"`flowkit threads` listed {listed} of {size} threads")
            if round_no:
                samples[size].append(seconds)
    return {size: statistics.median(values) for size, values in samples.items()}


def _page_ms(root: Path, runs: int) -> float:
    from fastapi.testclient import TestClient

    from flowkit.examples.review import flow
    from flowkit.server import create_app
    from flowkit.stores import JsonFileStore

    with JsonFileStore(root, fsync=False) as store:
        app = create_app([flow], store=store, token=None, open_reads=True, timer_poll_s=None)
        with TestClient(app) as client:
            client.get(PAGE).raise_for_status()  # warm: the app's first request, the index open
            samples = []
            for _ in range(runs):
                started = time.perf_counter()
                response = client.get(PAGE)
                samples.append(time.perf_counter() - started)
                response.raise_for_status()
    return statistics.median(samples) * 1e3


def _quiet() -> None:
    """Warnings and errors only: the served app logs every request at info."""
    import logging

    import structlog

    quiet_logging()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))


def measure(quick: bool, *, base: Path | None = None) -> dict[str, float]:
    """Every figure, as ``{"listing.cli_s.200": ..., "listing.page_ms.1000": ...}``; the store
    goes in a scratch folder under ``base`` (a real disk; default: the current folder)."""
    _quiet()
    cli_sizes = QUICK_CLI_SIZES if quick else CLI_SIZES
    page_sizes = QUICK_PAGE_SIZES if quick else PAGE_SIZES
    cli_rounds, page_runs = (1, 3) if quick else (5, 9)
    figures: dict[str, float] = {}
    with scratch_dir(base or Path.cwd()) as scratch:
        journals = _templates(scratch / "templates")
        # The command's sizes each have a store, so their rounds can alternate.
        stores = {size: scratch / f"cli-{size}" for size in cli_sizes}
        for size, root in stores.items():
            _grow(root, 0, size, journals)
            _reindex(root)
            figures[f"listing.scandir_ms.{size}"] = _scandir_ms(root, 5)
        for size, seconds in _cli_s(stores, cli_rounds).items():
            figures[f"listing.cli_s.{size}"] = seconds
        # The server's sizes: one store, grown from one to the next.
        root, have = scratch / "served", 0
        for size in page_sizes:
            _grow(root, have, size, journals)
            _reindex(root)
            have = size
            figures[f"listing.scandir_ms.{size}"] = _scandir_ms(root, 5)
            figures[f"listing.page_ms.{size}"] = _page_ms(root, page_runs)
    figures["listing.cli_ratio"] = (
        figures[f"listing.cli_s.{cli_sizes[-1]}"] / figures[f"listing.cli_s.{cli_sizes[0]}"]
    )
    return figures


def render(figures: dict[str, float]) -> str:
    """The figures as lines, each target with PASS/MISS."""
    lines = []
    for key, value in sorted(figures.items(), key=lambda kv: (kv[0].rsplit(".", 1)[0], _n(kv[0]))):
        unit = "s" if "_s." in key else ("ms" if "_ms." in key else "x")
        lines.append(f"{key:32} {value:10.3f} {unit}")
    cli = [k for k in figures if k.startswith("listing.cli_s.")]
    largest = max(cli, key=_n)
    ratio = figures["listing.cli_ratio"]
    lines.append(
        f"flowkit threads --json, {_n(largest):,} / 200 threads: {ratio:.2f}x "
        f"(target <= {CLI_TARGET}x) {'PASS' if ratio <= CLI_TARGET else 'MISS'}"
    )
    pages = [k for k in figures if k.startswith("listing.page_ms.")]
    biggest = max(pages, key=_n)
    page = figures[biggest]
    lines.append(
        f"GET {PAGE} at {_n(biggest):,} threads: {page:.1f} ms (target <= {PAGE_TARGET_MS:.0f} ms"
        f" at 100,000) {'PASS' if page <= PAGE_TARGET_MS else 'MISS'}"
    )
    return "\n".join(lines)


def _n(key: str) -> int:
    tail = key.rsplit(".", 1)[1]
    return int(tail) if tail.isdigit() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller stores, fewer runs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--dir", type=Path, default=Path.cwd(), help="where the store goes")
    args = parser.parse_args()
    figures: dict[str, Any] = measure(args.quick, base=args.dir)
    print(json.dumps(figures, indent=2) if args.json else render(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
