"""Why a request has no recording, in words: its shape, the closest recorded call, and where
the two differ, quoting prompt text only when asked (prompts hold PII).

Kept apart from ``ReplayLLM``, which decides *whether* a request matches; this module only
explains a mismatch so the fix (record again, or undo a prompt change) is plain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flowkit.llm._types import Message

__all__ = ["SHOW_PROMPTS_ENV", "clip", "describe", "difference", "nearest_recording"]

#: Set to ``1`` to let replay errors quote prompt text (off by default: prompts hold PII).
SHOW_PROMPTS_ENV = "FLOWKIT_REPLAY_SHOW_PROMPTS"


def describe(messages: Sequence[Message], schema: str | None) -> str:
    """A request in words without its text: schema, roles and sizes."""
    roles = ", ".join(
        f"{m['role']} {len(m['content']):,} chars"
        + (f" + {len(m['tool_calls'])} tool call(s)" if m.get("tool_calls") else "")
        for m in messages
    )
    return f"schema {schema or 'none (plain text)'} with {len(messages)} message(s) ({roles})"


def nearest_recording(
    recorded: Sequence[Mapping[str, Any]],
    asked: list[Message],
    name: str | None,
    offered: list[str],
    show: bool,
) -> tuple[int, str] | None:
    """The recorded request sharing the longest prefix with ``asked``, and how it differs."""
    best: tuple[int, int] | None = None
    for i, request in enumerate(recorded):
        if request.get("schema") != name:
            continue
        shared = _shared_prefix(request["messages"], asked)
        if best is None or shared > best[1]:
            best = (i, shared)
    if best is None:
        return None
    how = difference(recorded[best[0]], asked, name, show, offered)
    return (best[0], how) if how is not None else None


def _shared_prefix(recorded: Sequence[Any], asked: Sequence[Message]) -> int:
    """How many leading characters two message lists share, counting whole equal messages."""
    total = 0
    for want, got in zip(recorded, asked, strict=False):
        if want == got:
            total += len(str(got.get("content", ""))) + 1
            continue
        if isinstance(want, Mapping) and want.get("role") == got.get("role"):
            a, b = str(want.get("content", "")), str(got.get("content", ""))
            total += next(
                (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)),
            )
        break
    return total


def difference(
    recorded: Mapping[str, Any],
    messages: list[Message],
    schema: str | None,
    show: bool,
    tools: list[str] | None = None,
) -> str | None:
    """How a request differs from a recorded one, in words; ``None`` when it matches."""
    if recorded.get("schema") != schema:
        return f"schema is {schema!r}, the recording has {recorded.get('schema')!r}"
    if (recorded.get("tools") or []) != (tools or []):
        return f"the tools offered are {tools or []}, the recording has {recorded.get('tools')}"
    expected: list[Any] = recorded["messages"]
    for i, (want, got) in enumerate(zip(expected, messages, strict=False)):
        if want == got:
            continue
        if not isinstance(want, Mapping) or want.get("role") != got.get("role"):
            role = want.get("role") if isinstance(want, Mapping) else want
            return f"message {i} has role {got.get('role')!r}, the recording has {role!r}"
        return f"message {i} ({got.get('role')}) differs: {_text_difference(want, got, show)}"
    if len(expected) != len(messages):
        return f"{len(messages)} messages were sent, the recording has {len(expected)}"
    return None


def _text_difference(want: Mapping[str, Any], got: Mapping[str, Any], show: bool) -> str:
    a, b = str(want.get("content", "")), str(got.get("content", ""))
    if a == b:
        return "other keys differ"
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    where = f"from character {at} (sent {len(b):,} chars, recorded {len(a):,})"
    if not show:
        return f"{where}; set {SHOW_PROMPTS_ENV}=1 to see the text"
    start = max(at - 20, 0)
    return f"{where}, sent {clip(b[start:])!r}, recorded {clip(a[start:])!r}"


def clip(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[:limit] + "…"
