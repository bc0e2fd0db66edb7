"""flowkit start-up benchmark: the CLI's ``--version`` / ``--help`` and ``import flowkit``.

Each figure is the median wall time of N fresh interpreters, printed beside two floors
measured in the same run, interleaved with it: ``python -c "import transitions, pydantic,
structlog"`` (flowkit's own dependencies, imported and nothing more) and ``python -c pass``
(the interpreter alone). Why: a robot cell controller or a shell user runs ``flowkit`` often;
the targets (issue 9) are <= 150 ms for ``--help`` / ``--version`` and ``import flowkit``
<= 1.3x the dependency floor. Timings are never asserted anywhere.

usage: python bench/startup.py [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# The installed console script when there is one (what a shell user runs), else `-m flowkit`.
_SCRIPT = Path(sys.executable).with_name("flowkit")
_FLOWKIT = [str(_SCRIPT)] if _SCRIPT.exists() else ["-m", "flowkit"]

CASES = {
    "flowkit --version": [*_FLOWKIT, "--version"],
    "flowkit --help": [*_FLOWKIT, "--help"],
    "import flowkit": ["-c", "import flowkit"],
    "from flowkit import Flow, Runner (engine loaded)": ["-c", "from flowkit import Flow, Runner"],
    "floor: import transitions, pydantic, structlog": [
        "-c",
        "import transitions, pydantic, structlog",
    ],
    "floor: python -c pass": ["-c", "pass"],
}
DEPS = "floor: import transitions, pydantic, structlog"
BARE = "floor: python -c pass"


def _once(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "0"},
    )
    return time.perf_counter() - started


def measure(runs: int) -> dict[str, float]:
    """Median milliseconds per case; rounds interleave the cases so load hits all alike."""
    for argv in CASES.values():  # warm the file cache and the bytecode
        _once(argv)
    samples: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(runs):
        for name, argv in CASES.items():
            samples[name].append(_once(argv))
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def report(figures: dict[str, float], runs: int) -> str:
    deps, bare = figures[DEPS], figures[BARE]
    lines = [
        f"start-up, median of {runs} fresh interpreters (python {sys.version.split()[0]})",
        f"{'':50} {'ms':>7} {'x deps floor':>13} {'x python':>9}",
    ]
    for name, ms in figures.items():
        lines.append(f"{name:50} {ms:7.1f} {ms / deps:13.2f} {ms / bare:9.2f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="interpreters per case (median)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures = measure(max(1, args.runs))
    if args.json:
        print(json.dumps({"runs": args.runs, "ms": figures}, indent=2))
    else:
        print(report(figures, args.runs))


if __name__ == "__main__":
    main()
