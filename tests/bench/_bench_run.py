"""Run one of ``bench/``'s scripts the way a person would, for the smoke tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def bench_json(script: str, *args: str, timeout: float = 300) -> Any:
    """``python bench/<script> <args>``'s JSON output (it must exit 0)."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)
