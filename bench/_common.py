"""Shared helpers for the benchmark: interleaved timing rounds, medians, scratch folders.

Every measure runs in rounds and the rounds of the cases compared with each other are
interleaved (A, B, C, A, B, C, ...), so that a slow spell of a noisy machine hits all of them
alike; the figure reported is the median over rounds. Nothing here knows about flowkit.
"""

from __future__ import annotations

import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: ``make()`` prepares one batch outside the clock and returns the function that runs it.
Batch = Callable[[], Callable[[], object]]


@dataclass(frozen=True)
class Case:
    """One timed thing: ``make`` builds a batch; each batch counts ``units`` operations.
    ``after``, if any, runs after each batch, outside the clock (work the batch set going in
    the background finishes there, not in the next case's time)."""

    make: Batch
    units: int
    after: Callable[[], object] | None = None


def interleaved(cases: Mapping[str, Case], rounds: int) -> dict[str, float]:
    """Median seconds per unit for each case, over ``rounds`` interleaved rounds.

    One extra round runs first and is thrown away (imports, caches, first-file costs).
    """
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for round_no in range(rounds + 1):
        for name, case in cases.items():
            run = case.make()
            gc.collect()
            started = time.perf_counter()
            run()
            elapsed = time.perf_counter() - started
            if case.after is not None:
                case.after()
            if round_no:
                samples[name].append(elapsed / case.units)
    return {name: statistics.median(values) for name, values in samples.items()}


def median(values: list[float]) -> float:
    return statistics.median(values)


def filesystem_of(path: Path) -> str:
    """The file system type holding ``path`` (from /proc/mounts; "unknown" elsewhere)."""
    best, kind = "", "unknown"
    target = str(path.resolve())
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mount = parts[1]
                inside = target == mount or target.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) > len(best):
                    best, kind = mount, parts[2]
    except OSError:
        pass
    return kind


@contextmanager
def scratch_dir(base: Path) -> Iterator[Path]:
    """A fresh folder under ``base`` (which must be on a real disk), removed afterwards."""
    base.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=".flowkit-bench-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def run_python(
    argv: list[str], *, python: str = sys.executable, env: Mapping[str, str] | None = None
) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``python *argv`` in a fresh interpreter; its wall seconds and its result."""
    command = [python, *argv]
    started = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, env={**os.environ, **(env or {})}
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return elapsed, done
