"""The benchmark script runs and reports every figure (``bench/run.py --quick --json``).

Only presence and sign are checked: timings depend on the machine and are never asserted
against the targets of BRIEF §4 (those are read from the script's output by people).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MESSAGE_COUNTS = (10, 100, 1000, 2000)

FIGURES = [
    # 1. engine cost per node, and its floors
    "flowkit.node_us.none",
    "flowkit.node_us.memory",
    "floor.transitions_us",
    "floor.plain_us",
    # hot path (issue #12)
    "flowkit.hot.loop_us",
    "flowkit.hot.append_us.10",
    "flowkit.hot.append_us.100000",
    "flowkit.hot.size_us.11",
    "flowkit.hot.size_us.10000",
    # 2. durable cost per node, and its floors
    "flowkit.durable_us.steady",
    "flowkit.durable_us.chain",
    "floor.sqlite_us",
    "floor.fsync_us",
    "floor.record_bytes",
    # 3. bytes per step
    *(f"flowkit.bytes.record.{m}" for m in MESSAGE_COUNTS),
    *(f"flowkit.bytes.amortised.{m}" for m in MESSAGE_COUNTS),
    "flowkit.bytes.growth.record",
    "flowkit.bytes.growth.amortised",
    "floor.message_bytes",
    # 4. import time
    "flowkit.import_ms",
    "floor.import_deps_ms",
    "floor.import_deps_model_ms",
    "floor.python_startup_ms",
    # 5. pause + resume
    "flowkit.resume_ms.jsonfile",
    "flowkit.resume_ms.memory",
    # 6. new process
    "flowkit.newproc_ms.wall",
    "flowkit.newproc_ms.import",
    "flowkit.newproc_ms.load",
    "flowkit.newproc_ms.step",
]


def test_quick_bench_reports_every_figure(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "run.py"),
            "--quick",
            "--json",
            "--dir",
            str(tmp_path),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    figures = report["figures"]

    missing = [name for name in FIGURES if name not in figures]
    assert not missing, f"figures missing from the report: {missing}"
    bad = {k: v for k, v in figures.items() if not (math.isfinite(v) and v > 0)}
    assert not bad, f"figures that are not positive numbers: {bad}"
    # Every hot-path target is reported with a verdict; which one is never asserted.
    verdicts = {row["target"]: row["verdict"] for row in report["details"]["hot_path"]}
    assert len(verdicts) == 4 and set(verdicts.values()) <= {"PASS", "MISS"}, verdicts

    # Peers are optional; whatever peer figures appear must be complete for that peer.
    for peer in report["peers"]:
        assert f"{peer}.import_ms" in figures
        assert f"{peer}.node_us.none" in figures
        assert all(f"{peer}.bytes.record.{m}" in figures for m in MESSAGE_COUNTS)

    # The printed table has a flowkit figure on every row, and the scratch stores are gone.
    assert report["rows"] and all(row["flowkit"] != "—" for row in report["rows"])
    assert not list(tmp_path.glob(".flowkit-bench-*"))
    assert report["details"]["import_breakdown"]["by_package_ms"]
