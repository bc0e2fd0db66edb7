"""``bench/postgres.py`` runs and reports every figure; timings are printed, never asserted."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from _pg import require_postgres

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_postgres_bench_reports_each_figure_beside_its_floor() -> None:
    require_postgres()
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "postgres.py"), "--quick", "--json"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout)
    for name in (
        "workers.1.steps_per_s",
        "workers.2.steps_per_s",
        "workers.4.steps_per_s",
        "step.append_us",
        "floor.insert_us",
        "step.append_ratio",
        "step.engine_us",
        "bytes_per_step.10",
        "bytes_per_step.2000",
        "bytes_per_step.ratio",
    ):
        assert math.isfinite(figures[name]) and figures[name] > 0, name
