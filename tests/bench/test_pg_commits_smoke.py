"""``bench/_pg_commits.py`` runs and reports every figure; counts and timings are printed,
never asserted."""

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


def test_the_commits_bench_reports_commits_and_round_trips_per_thread() -> None:
    require_postgres()
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "_pg_commits.py"), "--quick", "--json"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout)
    for name in ("pg.commits", "pg.round_trips", "pg.round_trips_submit", "pg.steps_per_s"):
        assert math.isfinite(figures[name]) and figures[name] > 0, name
