"""Test helpers for flowkit users: what we use to test flowkit, shipped for your flows.

- ``assert_routes(table, cases)``: table-driven checks of a route table, no engine needed.
- ``capture_events(runner)``: collect a runner's events in a list.
- ``StoreContract``: the store contract suite; subclass it to check your own store.
- ``MemoryContract``: the same for a long-term memory (``flowkit.memory.Memory``).
- ``ScriptedLLM``: an LLM that answers from rules, for tests and offline examples.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._events import EventLog, capture_events
from ._routes import RouteCase, assert_routes

if TYPE_CHECKING:
    from .memory_contract import MemoryContract
    from .scripted import ScriptedLLM
    from .store_contract import StoreContract

__all__ = [
    "EventLog",
    "MemoryContract",
    "RouteCase",
    "ScriptedLLM",
    "StoreContract",
    "assert_routes",
    "capture_events",
]

_LAZY = {
    "MemoryContract": ".memory_contract",
    "ScriptedLLM": ".scripted",
    "StoreContract": ".store_contract",
}


def __getattr__(name: str) -> Any:
    # Loaded on first use: the contract suite imports pytest, the scripted LLM its parser.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'flowkit.testing' has no attribute {name!r}")
