"""Seed 001 §2.4's ``error``: the latest failure, with its class, message and retryability.

Seed 001 §8 leaves the classes open (user / external / internal / policy); flowkit decides:

- ``user``: what the user said cannot be acted on (``DialogueUserError``, an action's refusal);
  the reply asks them to say it another way.
- ``external``: a service the turn depends on failed (``DialogueExternalError``, connection and
  timeout errors, the LLM's errors, anything retryable); the reply asks to try again later.
- ``policy``: the request is not allowed (``DialoguePolicyError``); the reply declines.
- ``internal``: anything else, a bug; the reply apologises and the goal is dropped.

The engine turns an exception in a node into a ``NodeError`` (type, message, node, retryable,
attempts); the state's ``error`` field turns that into a ``DialogueError`` by classifying the
exception's type name, so route tables can route on ``error.error_class``.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from ..errors import FlowkitError
from ..records._node_error import NodeError

__all__ = [
    "ERROR_CLASSES",
    "DialogueError",
    "DialogueExternalError",
    "DialogueFailureError",
    "DialoguePolicyError",
    "DialogueUserError",
    "ErrorClass",
    "as_dialogue_error",
    "classify",
]

ErrorClass = Literal["user", "external", "internal", "policy"]
ERROR_CLASSES: Final[tuple[ErrorClass, ...]] = ("user", "external", "internal", "policy")


class DialogueFailureError(FlowkitError):
    """Base of the failures a dialogue node (or an action handler) raises on purpose."""

    error_class: ErrorClass = "internal"


class DialogueUserError(DialogueFailureError):
    """The user's request cannot be acted on as said; ask them to rephrase or correct it."""

    error_class = "user"


class DialogueExternalError(DialogueFailureError):
    """A service the turn needs failed; trying again later may work."""

    error_class = "external"
    retryable = True


class DialoguePolicyError(DialogueFailureError):
    """The request is not allowed by policy; decline it."""

    error_class = "policy"


#: Exception type names (the engine keeps only the name) -> class. Retryable ones not listed
#: here are ``external`` too; everything else is ``internal``.
_BY_NAME: Final[dict[str, ErrorClass]] = {
    "DialogueUserError": "user",
    "ActionRefused": "user",
    "DialogueExternalError": "external",
    "DialoguePolicyError": "policy",
    "TimeoutError": "external",
    "ConnectionError": "external",
    "ConnectionRefusedError": "external",
    "ConnectionResetError": "external",
    "NodeTimeoutError": "external",
    "LLMError": "external",
    "LLMTimeoutError": "external",
    "LLMUnavailableError": "external",
    "LLMResponseError": "external",
    "LLMSchemaError": "external",
    "HTTPError": "external",
    "HTTPStatusError": "external",
    "ConnectError": "external",
    "ReadTimeout": "external",
}


def classify(type_name: str, retryable: bool) -> ErrorClass:
    """The class of a failure from its exception type name and retryability."""
    known = _BY_NAME.get(type_name)
    if known is not None:
        return known
    return "external" if retryable else "internal"


class DialogueError(NodeError):
    """A ``NodeError`` with seed 001's class (``error_class``)."""

    error_class: ErrorClass = "internal"


def as_dialogue_error(value: Any) -> Any:
    """Field validator: a plain ``NodeError`` (from the engine) gains its class."""
    if isinstance(value, DialogueError) or value is None:
        return value
    if isinstance(value, NodeError):
        data = value.model_dump()
    elif isinstance(value, dict) and "error_class" not in value:
        data = dict(value)
    else:
        return value
    data["error_class"] = classify(str(data.get("type", "")), bool(data.get("retryable")))
    return DialogueError.model_validate(data)
