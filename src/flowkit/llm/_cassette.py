"""The cassette file: recorded LLM calls with their content keys, read and written safely.

A cassette is ``{"format_version": 2, "record_with": ..., "calls": [...]}``, each call in the
shape :func:`flowkit.llm.recording.call_record` writes. The format (its versions, the
content key, the checks a call must pass) is kept apart from ``ReplayLLM``, which only
matches requests against calls already read.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from flowkit.errors import LLMConfigError, UntrustedInputError
from flowkit.foundation._untrusted import parse_json, read_regular_file
from flowkit.llm._replay_mismatch import clip
from flowkit.llm._types import LLMResponse

from ..foundation._atomic import write_atomically

__all__ = [
    "CASSETTE_FORMAT_VERSION",
    "MAX_CASSETTE_BYTES",
    "checked_call",
    "key_of",
    "load_cassette",
    "read_cassette",
    "request_key",
    "save_cassette",
]

#: Version 2 adds each call's ``key`` and the optional ``record_with`` command; version 1
#: files (no keys) are read as well, their keys computed on load.
CASSETTE_FORMAT_VERSION = 2
_READABLE = (1, 2)
#: A cassette larger than this is refused unread (recordings of long sessions stay far below).
MAX_CASSETTE_BYTES = 64 * 1024 * 1024


def request_key(
    messages: Sequence[Mapping[str, Any]],
    schema: str | None,
    tools: Sequence[str] | None = None,
) -> str:
    """The content key of a request: a hash of its messages, its schema name and its tools.

    Significant: every message with all its keys (role, content, tool calls ...), in order,
    the schema name and the names of the tools offered, in order. Not significant: the model
    name (the replaying LLM stands in for whatever model recorded), the timeout, the tools'
    descriptions and schemas, and JSON key order (keys are sorted before hashing). A request
    without tools has the key it had before tool calling existed.
    """
    content: dict[str, Any] = {"messages": [dict(m) for m in messages], "schema": schema}
    if tools:
        content["tools"] = list(tools)
    canonical = json.dumps(
        content,
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def save_cassette(
    path: str | os.PathLike[str],
    calls: Sequence[Mapping[str, Any]],
    *,
    record_with: str | None = None,
) -> None:
    """Write ``calls`` to a cassette file atomically (temp file, fsync, rename).

    Each call gets its content ``key`` (for reading and diffing; replay recomputes it).
    ``record_with`` is the command that records the cassette again, quoted in replay errors.
    """
    target = Path(path)
    written = []
    for index, call in enumerate(calls):
        request, _ = checked_call(index, call)
        written.append({"key": key_of(request), **{k: v for k, v in call.items() if k != "key"}})
    data: dict[str, Any] = {"format_version": CASSETTE_FORMAT_VERSION}
    if record_with:
        data["record_with"] = record_with
    data["calls"] = written
    write_atomically(target, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def load_cassette(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read the calls of a cassette file (format version 1 or 2).

    Raises:
        LLMConfigError: the file is missing, not JSON, or not a cassette of a known version.
    """
    calls: list[dict[str, Any]] = read_cassette(path)["calls"]
    return calls


def read_cassette(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The whole cassette object (``calls`` checked to be a list, the version known)."""
    try:
        raw = read_regular_file(path, what="cassette", max_bytes=MAX_CASSETTE_BYTES)
        data = parse_json(raw, what="cassette", max_bytes=None)
    except OSError as exc:
        raise LLMConfigError(
            f"Cannot read cassette {str(path)!r}: {exc.strerror or exc}; check the path."
        ) from exc
    except UntrustedInputError as exc:
        raise LLMConfigError(f"Cassette {str(path)!r} is refused: {exc}.") from exc
    except ValueError as exc:  # also UnicodeDecodeError
        raise LLMConfigError(
            f"Cassette {str(path)!r} is not a JSON file ({clip(str(exc), 120)})."
        ) from exc
    if not isinstance(data, dict) or not isinstance(data.get("calls"), list):
        raise LLMConfigError(
            f'Cassette {str(path)!r} must be an object {{"format_version": '
            f'{CASSETTE_FORMAT_VERSION}, "calls": [...]}}.'
        )
    if data.get("format_version") not in _READABLE:
        raise LLMConfigError(
            f"Cassette {str(path)!r} has format_version {data.get('format_version')!r}; this "
            f"flowkit reads versions {', '.join(map(str, _READABLE))}. Record it again."
        )
    return data


def checked_call(index: int, call: Mapping[str, Any]) -> tuple[dict[str, Any], LLMResponse]:
    """Call ``index``'s request and its validated response; ``LLMConfigError`` if malformed."""
    try:
        request = call["request"]
        messages = request["messages"]
        if not isinstance(messages, list):
            raise TypeError("request.messages is not a list")
        return dict(request), LLMResponse.model_validate(call["response"])
    except (KeyError, TypeError, ValidationError) as exc:
        raise LLMConfigError(
            f"Recorded LLM call {index} is malformed ({clip(str(exc), 200)}); each call must "
            'be {"request": {"messages": [...], "schema": ...}, "response": {"text": ..., ...}}.'
        ) from exc


def key_of(request: Mapping[str, Any]) -> str:
    """The content key of a recorded request (as :func:`request_key` computes it)."""
    schema = request.get("schema")
    tools = request.get("tools")
    return request_key(
        request["messages"],
        schema if isinstance(schema, str) else None,
        [str(t) for t in tools] if isinstance(tools, list) else None,
    )
