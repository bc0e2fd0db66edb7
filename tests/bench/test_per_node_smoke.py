"""``bench/_per_node.py`` runs and reports every figure; timings are printed, never asserted."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from _bench_run import bench_json

pytestmark = pytest.mark.slow


def test_per_node_bench_reports_the_durable_figure_beside_its_floor(tmp_path: Path) -> None:
    figures = bench_json("_per_node.py", "--quick", "--json", "--dir", str(tmp_path))
    for name in (
        "per_node.durable_us",
        "per_node.floor_us",
        "per_node.ratio",
        "per_node.nosync_us",
        "per_node.new_file_us",
        "per_node.record_bytes",
        "per_node.record_us",
        "per_node.record_ratio",
        "per_node.target",
    ):
        assert math.isfinite(figures[name]) and figures[name] > 0, name
    assert figures["per_node.lines_per_run"] == 11  # the floor writes the run's own lines
    assert list(tmp_path.iterdir()) == []  # the scratch folder is removed
