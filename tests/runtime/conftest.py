"""Runtime-service fixtures: the sas tests' scripted robot cell, importable from here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

CELL = Path(__file__).resolve().parent.parent / "sas" / "scripted_cell.py"


def _load_cell() -> ModuleType:
    spec = importlib.util.spec_from_file_location("flowkit_runtime_scripted_cell", CELL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def cell() -> ModuleType:
    """``tests/sas/scripted_cell.py``: ``scripted()`` answers and ``teaching_file(folder)``."""
    return sys.modules.get("flowkit_runtime_scripted_cell") or _load_cell()
