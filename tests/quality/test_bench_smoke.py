"""``bench/quality.py`` and ``bench/_quality_scale.py`` (``--quick --json``) report every
figure; timings are never asserted."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_quality_bench_reports_every_criterion(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "quality.py"), "--quick", "--json",
         "--dir", str(tmp_path)],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout)
    for call in ("record_issue+commit", "get_session", "begin+commit, end+commit"):
        assert math.isfinite(figures["store.json"][call]["median_ms"])
    assert figures["resume"]["median_ms"] > 0 and figures["fetch"]["median_ms"] > 0
    assert figures["qc"] == {"mapped": 20, "cases": 20}
    agreement = figures["agreement"]
    assert agreement["demo_verdicts_agree"] == agreement["demo_verdicts_total"] == 11


def test_quality_scale_bench_reports_both_measures(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "_quality_scale.py"), "--quick", "--json",
         "--dir", str(tmp_path)],
        check=False, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout)
    assert math.isfinite(figures["json.record_commit"]["ratio"])
    assert figures["json.resume_200"]["median_ms"] > 0
