"""The re-mapping table in docs/quality.md is what bench/_quality_edits.py computes now."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_table_is_current() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from _quality_edits import detail, run, table
    finally:
        sys.path.remove(str(ROOT / "bench"))
    outcomes = run()
    page = (ROOT / "docs" / "quality.md").read_text(encoding="utf-8")
    assert table(outcomes) in page, "re-run `python bench/_quality_edits.py` into docs/quality.md"
    assert detail(outcomes) in page
    assert len(outcomes) == 18
    automatic = [o for o in outcomes if o.strategy != "manual_confirmation"]
    assert sum(o.correct for o in automatic) >= len(automatic) - 1
