"""``bench/_per_node.py`` runs and reports every figure; timings are printed, never asserted."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_per_node_bench_reports_the_durable_figure_beside_its_floor(tmp_path: Path) -> None:
    script = str(ROOT / "bench" / "_per_node.py")
    run = subprocess.run(
        [sys.executable, script, "--quick", "--json", "--dir", str(tmp_path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout)
    for name in (
        "per_node.durable_us",
        "per_node.floor_us",
        "per_node.ratio",
        "per_node.nosync_us",
        "per_node.new_file_us",
        "per_node.record_bytes",
        "per_node.target",
    ):
        assert math.isfinite(figures[name]) and figures[name] > 0, name
    assert list(tmp_path.iterdir()) == []  # the scratch folder is removed
