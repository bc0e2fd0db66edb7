"""Task-oriented dialogue (seed 001) on the flowkit engine: a domain as data, slot filling and
step-by-step goals, offline understanding with an optional LLM, and conversation tests.

``import flowkit`` does not import this package; importing it is cheap too, since every name
below loads its module on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .actions import ActionCall, ActionRefused, ActionResult, FileArtifacts, MemoryArtifacts
    from .app import Dialogue, Reply
    from .conversations import ConversationResult, load_conversations, run_conversations
    from .domain import Domain, domain_json_schema, load_domain
    from .ledger import FileLedger, Ledger, MemoryLedger
    from .nlu import LLMRecognizer, OfflineRecognizer, TurnContext, Understanding
    from .state import DialogueState
    from .threads import opaque_thread_id
    from .workflow import build_flow, example_flow

__all__ = [
    "ActionCall",
    "ActionRefused",
    "ActionResult",
    "ConversationResult",
    "Dialogue",
    "DialogueState",
    "Domain",
    "FileArtifacts",
    "FileLedger",
    "LLMRecognizer",
    "Ledger",
    "MemoryArtifacts",
    "MemoryLedger",
    "OfflineRecognizer",
    "Reply",
    "TurnContext",
    "Understanding",
    "build_flow",
    "domain_json_schema",
    "example_flow",
    "load_conversations",
    "load_domain",
    "opaque_thread_id",
    "run_conversations",
]

_LAZY = {
    "ActionCall": "actions",
    "ActionRefused": "actions",
    "ActionResult": "actions",
    "FileArtifacts": "actions",
    "MemoryArtifacts": "actions",
    "Dialogue": "app",
    "Reply": "app",
    "ConversationResult": "conversations",
    "load_conversations": "conversations",
    "run_conversations": "conversations",
    "Domain": "domain",
    "domain_json_schema": "domain",
    "load_domain": "domain",
    "FileLedger": "ledger",
    "Ledger": "ledger",
    "MemoryLedger": "ledger",
    "LLMRecognizer": "nlu",
    "OfflineRecognizer": "nlu",
    "TurnContext": "nlu",
    "Understanding": "nlu",
    "DialogueState": "state",
    "opaque_thread_id": "threads",
    "build_flow": "workflow",
    "example_flow": "workflow",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'flowkit.dialogue' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
