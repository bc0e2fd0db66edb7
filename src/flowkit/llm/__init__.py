"""Pluggable LLMs: the ``LLM`` protocol, HTTP clients (OpenAI-compatible, Ollama), tool
calling with a prebuilt tool loop, recording and replay of calls, and embeddings (the
``Embeddings`` protocol, its HTTP clients and their record and replay).

Importing this package is cheap: the HTTP clients (and httpx) load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from flowkit.llm._embeddings import Embeddings
from flowkit.llm._protocol import LLM
from flowkit.llm._retry import Backoff
from flowkit.llm._types import Chunk, LLMResponse, Message, ToolCall, Usage

if TYPE_CHECKING:
    from flowkit.llm._embed_spec import embeddings_from_spec
    from flowkit.llm._extract import extract_json
    from flowkit.llm._spec import from_spec
    from flowkit.llm._structured import parse_answer, schema_name
    from flowkit.llm._tools import Tool, tool_message
    from flowkit.llm.embedding_replay import RecordingEmbeddings, ReplayEmbeddings
    from flowkit.llm.ollama import OllamaLLM
    from flowkit.llm.ollama_embed import OllamaEmbeddings
    from flowkit.llm.openai import OpenAICompatibleLLM
    from flowkit.llm.openai_embed import OpenAIEmbeddings
    from flowkit.llm.recording import RecordingLLM
    from flowkit.llm.replay import ReplayLLM, load_cassette, save_cassette
    from flowkit.llm.tool_loop import ToolLoop, ToolLoopResult, ToolLoopState

__all__ = [
    "LLM",
    "Backoff",
    "Chunk",
    "Embeddings",
    "LLMResponse",
    "Message",
    "OllamaEmbeddings",
    "OllamaLLM",
    "OpenAICompatibleLLM",
    "OpenAIEmbeddings",
    "RecordingEmbeddings",
    "RecordingLLM",
    "ReplayEmbeddings",
    "ReplayLLM",
    "Tool",
    "ToolCall",
    "ToolLoop",
    "ToolLoopResult",
    "ToolLoopState",
    "Usage",
    "embeddings_from_spec",
    "extract_json",
    "from_spec",
    "load_cassette",
    "parse_answer",
    "save_cassette",
    "schema_name",
    "tool_message",
]

_LAZY = {
    "OllamaEmbeddings": "flowkit.llm.ollama_embed",
    "OllamaLLM": "flowkit.llm.ollama",
    "OpenAICompatibleLLM": "flowkit.llm.openai",
    "OpenAIEmbeddings": "flowkit.llm.openai_embed",
    "RecordingEmbeddings": "flowkit.llm.embedding_replay",
    "RecordingLLM": "flowkit.llm.recording",
    "ReplayEmbeddings": "flowkit.llm.embedding_replay",
    "ReplayLLM": "flowkit.llm.replay",
    "Tool": "flowkit.llm._tools",
    "ToolLoop": "flowkit.llm.tool_loop",
    "ToolLoopResult": "flowkit.llm.tool_loop",
    "ToolLoopState": "flowkit.llm.tool_loop",
    "embeddings_from_spec": "flowkit.llm._embed_spec",
    "extract_json": "flowkit.llm._extract",
    "from_spec": "flowkit.llm._spec",
    "load_cassette": "flowkit.llm.replay",
    "parse_answer": "flowkit.llm._structured",
    "save_cassette": "flowkit.llm.replay",
    "schema_name": "flowkit.llm._structured",
    "tool_message": "flowkit.llm._tools",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'flowkit.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
