"""``bench/map.py`` runs and reports every figure; timings are printed, never asserted."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_map_bench_reports_each_target_beside_its_floor(tmp_path: Path) -> None:
    script = str(ROOT / "bench" / "map.py")
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
        "map.parallel_s",
        "floor.gather_s",
        "floor.ideal_s",
        "map.parallel_ratio",
        "map.durable_item_us",
        "floor.durable_step_us",
        "map.durable_ratio",
    ):
        assert math.isfinite(figures[name]) and figures[name] > 0, name
