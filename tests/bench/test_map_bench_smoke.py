"""``bench/map.py`` runs and reports every figure; timings are printed, never asserted."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from _bench_run import bench_json

pytestmark = pytest.mark.slow


def test_map_bench_reports_each_target_beside_its_floor(tmp_path: Path) -> None:
    figures = bench_json("map.py", "--quick", "--json", "--dir", str(tmp_path))
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
