"""Lifecycle fixtures: the child-process worker of the charge test, importable whatever
pytest's import mode."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

WORKER = Path(__file__).with_name("charge_worker.py")


@pytest.fixture(scope="session")
def charge_worker() -> ModuleType:
    """The worker module: the order flow, its fake card service, and the path to run it."""
    name = "flowkit_lifecycle_charge_worker"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
