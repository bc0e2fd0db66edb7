"""``bench/startup.py`` runs and reports every start-up figure with its floors (never timed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_startup_bench_reports_each_figure_beside_its_floors() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "startup.py"), "--runs", "1", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    figures = json.loads(done.stdout)["ms"]
    assert set(figures) == {
        "flowkit --version",
        "flowkit --help",
        "import flowkit",
        "from flowkit import Flow, Runner (engine loaded)",
        "floor: import transitions, pydantic, structlog",
        "floor: python -c pass",
    }
    assert all(value > 0 for value in figures.values())
