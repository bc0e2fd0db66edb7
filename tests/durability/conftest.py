"""Durability fixtures: the child-process worker, importable whatever pytest's import mode."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

WORKER = Path(__file__).with_name("worker.py")


def _load_worker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("flowkit_durability_worker", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def worker() -> ModuleType:
    """The worker module: its flows (``COUNTER``, ``INBOX``) and the path to run it."""
    return sys.modules.get("flowkit_durability_worker") or _load_worker()
