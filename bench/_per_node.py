"""Per node, durable, a new thread per 10-node run, beside an append + fdatasync of the same bytes.

Issue #25's acceptance 6: a 10-node chain (``_flows.chain_flow``) started as a new thread each
time in a ``JsonFileStore`` with fsync on, time / 10, must cost at most 1.5x ``os.write`` +
``os.fdatasync`` of the same bytes: the floor writes the run's own journal lines (its start
record and its ten step records), each appended to a file in the same folder and
fdatasync'd, time / 10. All run in the same interleaved rounds (``_common.interleaved``), so a
slow spell of this noisy machine hits them alike, and after each case's batch, outside the
clock, ``os.sync()`` writes out what it left dirty (the ``fsync=False`` runs leave folders by
the hundred), so no case pays for another's writeback. Printed beside them, to read the ratio by:

- ``record``: one step record per node (write + fdatasync of one step line, no start
  record): the stricter floor the bench used before, which leaves the start record's sync
  out of the floor but not out of the run;

- ``nosync``: the same runs with ``fsync=False`` (the engine's CPU and write syscalls, and
  each thread's folder, journal and lock file made on the spot: no spares without fsync);
- ``no_pause``: durable again, in a store without spare folders: what a process that starts
  threads back to back without a pause pays, its refill never getting a quiet moment;
- ``new_file``: the least a file-per-thread layout can do: per run a new file in a new folder,
  the start line and each of the 10 step lines written and fdatasync'd, the new folder and
  its parent fsync'd (what makes a new file survive a power loss), / 10;
- durable minus nosync: what the syncs themselves add per node. When that alone is past the
  target, no engine work reaches it: only fewer syncs per run would.

Why: starting threads is what a robot cell controller does all day; its cost per node should
be the disk's, not the engine's. Run from a folder on the disk you care about (``--dir``): on
tmpfs fsync costs nothing and the ratio means nothing.

usage: python bench/_per_node.py [--quick] [--json] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from _common import Case, filesystem_of, interleaved, scratch_dir
from _flows import CHAIN_LENGTH, chain_flow, quiet_logging

from flowkit import Runner
from flowkit.stores import JsonFileStore

#: Acceptance 6: per node durable <= this many times the append + fdatasync floor.
TARGET = 1.5


def _chain_case(
    folder: Path, runs: int, *, fsync: bool, stores: list[JsonFileStore], spares: int | None = None
) -> Case:
    """``runs`` new threads of the 10-node chain per batch, in one store made once (outside
    the clock) and kept, as a process that starts threads all day keeps its store: its spare
    thread folders (``JsonFileStore(spares=)``) are made by its own background refill, which
    waits for the store's commits to pause (``_spares.QUIET_S``): it runs between the batches,
    outside the clock (``spares=0``: the store of a process that never pauses, whose refill
    never runs, every thread's folder, journal and lock file made on the spot)."""
    flow = chain_flow()
    counter = iter(range(10**9))
    store = JsonFileStore(folder / f"store-{fsync}-{spares}", fsync=fsync, spares=spares)
    stores.append(store)  # closed by ``measure`` (its spares removed)
    runner = Runner(flow, store=store)

    def make() -> Callable[[], None]:
        batch = next(counter)
        ids = [f"t{batch}-{i}" for i in range(runs)]

        def run() -> None:
            for tid in ids:
                runner.start(tid)

        return run

    return Case(make, runs * CHAIN_LENGTH, after=store._spares.wait)


def _append_case(folder: Path, payload: bytes, writes: int) -> Case:
    """``writes`` appends of ``payload`` to one file, each followed by ``os.fdatasync``."""
    fd = os.open(folder / "floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def make() -> Callable[[], None]:
        def run() -> None:
            for _ in range(writes):
                os.write(fd, payload)
                os.fdatasync(fd)

        return run

    return Case(make, writes)


def _same_bytes_case(folder: Path, lines: list[bytes], runs: int) -> Case:
    """Per run: the run's journal ``lines`` appended to one file, each followed by
    ``os.fdatasync`` (the same bytes, the same number of syncs, no engine, no new file)."""
    fd = os.open(folder / "same-bytes.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def make() -> Callable[[], None]:
        def run() -> None:
            for _ in range(runs):
                for line in lines:
                    os.write(fd, line)
                    os.fdatasync(fd)

        return run

    return Case(make, runs * CHAIN_LENGTH)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _new_file_case(folder: Path, lines: list[bytes], runs: int) -> Case:
    """Per run: a new folder and file holding ``lines``, each line written and fdatasync'd."""
    counter = iter(range(10**9))

    def make() -> Callable[[], None]:
        base = folder / f"files-{next(counter)}"
        base.mkdir()

        def run() -> None:
            for i in range(runs):
                directory = base / f"t{i}"
                directory.mkdir()
                fd = os.open(directory / "journal.jsonl", os.O_WRONLY | os.O_CREAT, 0o644)
                try:
                    for n, line in enumerate(lines):
                        os.write(fd, line)
                        os.fdatasync(fd)
                        if n == 0:  # the new file's name, then the new folder's
                            _fsync_dir(directory)
                            _fsync_dir(base)
                finally:
                    os.close(fd)

        return run

    return Case(make, runs * CHAIN_LENGTH)


def _chain_lines(folder: Path) -> list[bytes]:
    """The journal lines of one 10-node chain run: its start record, then one per node."""
    with JsonFileStore(folder / "probe", fsync=False) as store:
        Runner(chain_flow(), store=store).start("probe")
        data = (store.root / "threads" / "probe" / "journal.jsonl").read_bytes()
    return [line + b"\n" for line in data.rstrip(b"\0").splitlines()]


def _settled(case: Case) -> Case:
    """``case`` followed, outside the clock, by a write-out of every dirty page (``os.sync``):
    what one case left to the kernel's writeback (the fsync=False runs leave folders and
    journals by the hundred) is never flushed in the next case's time."""
    after = case.after

    def settle() -> None:
        if after is not None:
            after()
        os.sync()

    return Case(case.make, case.units, after=settle)


def measure(quick: bool, folder: Path | None = None) -> dict[str, float]:
    """The figures, in µs per node (and bytes), measured in a scratch folder under ``folder``
    (default: the current folder), removed afterwards."""
    rounds, runs, writes = (3, 3, 30) if quick else (9, 20, 200)
    stores: list[JsonFileStore] = []
    with scratch_dir(folder or Path.cwd()) as scratch:
        lines = _chain_lines(scratch)
        step_line = lines[len(lines) // 2]
        cases = {
            "durable": _chain_case(scratch, runs, fsync=True, stores=stores),
            "floor": _same_bytes_case(scratch, lines, runs),
            "record": _append_case(scratch, step_line, writes),
            "nosync": _chain_case(scratch, runs, fsync=False, stores=stores),
            "no_pause": _chain_case(scratch, runs, fsync=True, stores=stores, spares=0),
            "new_file": _new_file_case(scratch, lines, runs),
        }
        got = interleaved({name: _settled(case) for name, case in cases.items()}, rounds)
        for store in stores:
            store.close()
    return {
        "per_node.durable_us": got["durable"] * 1e6,
        "per_node.floor_us": got["floor"] * 1e6,
        "per_node.ratio": got["durable"] / got["floor"],
        "per_node.record_us": got["record"] * 1e6,
        "per_node.record_ratio": got["durable"] / got["record"],
        "per_node.lines_per_run": float(len(lines)),
        "per_node.nosync_us": got["nosync"] * 1e6,
        "per_node.new_file_us": got["new_file"] * 1e6,
        "per_node.no_pause_us": got["no_pause"] * 1e6,
        "per_node.record_bytes": float(len(step_line)),
        "per_node.target": TARGET,
    }


def render(fig: dict[str, float]) -> str:
    ratio = fig["per_node.ratio"]
    verdict = "PASS" if ratio <= TARGET else "MISS"
    floor = fig["per_node.floor_us"]
    syncs = fig["per_node.durable_us"] - fig["per_node.nosync_us"]
    return "\n".join(
        [
            f"per node durable, new thread per 10-node run | {fig['per_node.durable_us']:8.1f} µs"
            f" | {ratio:.2f}x | target <= {TARGET}x | {verdict}",
            f"floor: the run's {fig['per_node.lines_per_run']:.0f} lines, each write+fdatasync,"
            f" / 10 | {floor:8.1f} µs",
            f"one {fig['per_node.record_bytes']:.0f}-byte step record, write+fdatasync     "
            f"| {fig['per_node.record_us']:8.1f} µs | durable {fig['per_node.record_ratio']:.2f}x",
            f"same runs, fsync=False                       | {fig['per_node.nosync_us']:8.1f} µs"
            f" | {fig['per_node.nosync_us'] / floor:.2f}x",
            f"a new file per run (11 lines, 2 dir fsyncs)  | {fig['per_node.new_file_us']:8.1f} µs"
            f" | {fig['per_node.new_file_us'] / floor:.2f}x",
            f"durable - fsync=False (the syncs' own share) | {syncs:8.1f} µs"
            f" | {syncs / floor:.2f}x",
            f"durable, never a pause (spares=0)            | {fig['per_node.no_pause_us']:8.1f} µs"
            f" | {fig['per_node.no_pause_us'] / floor:.2f}x",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    if filesystem_of(args.dir) == "tmpfs":
        print(f"warning: {args.dir} is on tmpfs; fsync figures mean nothing", file=sys.stderr)
    quiet_logging()
    fig = measure(args.quick, args.dir)
    print(json.dumps(fig, indent=2) if args.json else render(fig))


if __name__ == "__main__":
    main()
