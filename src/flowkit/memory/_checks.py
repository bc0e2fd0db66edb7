"""The rules every memory implementation applies to namespaces, keys, values and searches.

Values are checked by type, exactly (a ``tuple`` would come back as a ``list``, a subclass of
``str`` as ``str``), and encoded once: what ``put`` accepts is exactly what ``get`` returns.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import MemoryItemError, StoreError
from ._protocol import JSONValue, Namespace

__all__ = [
    "MAX_DEPTH",
    "MAX_KEY",
    "MAX_LABEL",
    "MAX_LABELS",
    "MAX_VALUE_BYTES",
    "check_filter",
    "check_key",
    "check_max_value_bytes",
    "check_namespace",
    "check_page",
    "check_prefix",
    "decode_value",
    "encode_value",
    "matches",
    "value_problem",
]

#: Labels in a namespace, characters per label, characters per key.
MAX_LABELS = 16
MAX_LABEL = 128
MAX_KEY = 256
#: Containers nested in a value (JSON readers refuse deep nesting, so it would not come back).
MAX_DEPTH = 64
#: Bytes of a value's JSON form, by default (implementations take ``max_value_bytes``).
MAX_VALUE_BYTES = 1024 * 1024


def check_max_value_bytes(value: Any, *, owner: str) -> int:
    """A memory's ``max_value_bytes`` option, checked when the memory is built (a string or
    ``None`` would otherwise fail only at the first ``put``, with a ``TypeError``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise StoreError(
            f"{owner} max_value_bytes must be an integer >= 1 (bytes of a value's JSON form), "
            f"not {_shown(value)}; leave it out for the default {MAX_VALUE_BYTES}."
        )
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _label_problem(label: Any, limit: int) -> str | None:
    if not isinstance(label, str) or type(label) is not str:
        return f"is a {type(label).__name__}, not a str"
    if not label:
        return "is empty"
    if len(label) > limit:
        return f"is longer than {limit} characters"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in label):
        return "holds control characters"
    try:
        label.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone surrogate (not valid Unicode text)"
    return None


def check_prefix(namespace: Any, *, allow_empty: bool = True) -> Namespace:
    """``namespace`` as a tuple of valid labels; ``MemoryItemError`` if it is not one."""
    if isinstance(namespace, str) or not isinstance(namespace, Sequence):
        raise MemoryItemError(
            f"Namespace {_shown(namespace)} is not a tuple of labels; write it as "
            '("user", "42") (a one-label namespace is ("user",)).',
            namespace=_shown(namespace),
        )
    labels = tuple(namespace)
    if not labels and not allow_empty:
        raise MemoryItemError(
            'The namespace is empty; give at least one label, e.g. ("user", user_id).',
            namespace=(),
        )
    if len(labels) > MAX_LABELS:
        raise MemoryItemError(
            f"Namespace has {len(labels)} labels; at most {MAX_LABELS} are allowed.",
            namespace=tuple(_shown(x) for x in labels[:3]),
        )
    for index, label in enumerate(labels):
        problem = _label_problem(label, MAX_LABEL)
        if problem is not None:
            raise MemoryItemError(
                f"Label {index} of the namespace ({_shown(label)}) {problem}; labels are "
                f"1-{MAX_LABEL} characters of text without control characters.",
                namespace=tuple(_shown(x) for x in labels),
            )
    return labels


def check_namespace(namespace: Any) -> Namespace:
    """A namespace items are stored under: at least one label."""
    return check_prefix(namespace, allow_empty=False)


def check_key(namespace: Namespace, key: Any) -> str:
    problem = _label_problem(key, MAX_KEY)
    if problem is not None:
        raise MemoryItemError(
            f"Key {_shown(key)} in namespace {namespace!r} {problem}; keys are 1-{MAX_KEY} "
            "characters of text without control characters.",
            namespace=namespace,
            key=_shown(key),
        )
    return str(key)


def check_page(limit: Any, offset: Any) -> tuple[int, int]:
    for name, value in (("limit", limit), ("offset", offset)):
        if type(value) is not int or value < 0:
            raise MemoryItemError(
                f"search {name}={_shown(value)}: give a whole number >= 0.", namespace=None
            )
    return limit, offset


def check_filter(filter: Any) -> None:
    if filter is None:
        return
    if not isinstance(filter, Mapping) or not all(type(k) is str for k in filter):
        raise MemoryItemError(
            f"search filter={_shown(filter)}: give a dict of value keys to the values they "
            'must have, e.g. {"kind": "summary"}.',
            namespace=None,
        )


def value_problem(value: Any, depth: int = 0) -> str | None:
    """Why JSON cannot carry ``value`` exactly (nested ``depth`` levels in), or ``None``."""
    kind = type(value)
    if kind is str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a string with a lone surrogate (not valid Unicode text)"
        return None
    if kind is int or kind is bool or value is None:
        return None
    if kind is float:
        return None if math.isfinite(value) else f"{value!r} (JSON has no NaN or infinity)"
    if kind is dict or kind is list:
        if depth >= MAX_DEPTH:
            return f"containers nested more than {MAX_DEPTH} levels deep"
        if kind is dict:
            for k, item in value.items():
                if type(k) is not str:
                    return f"a dict key {_shown(k)} that is not a str (JSON keys are text)"
                found = value_problem(k, depth) or value_problem(item, depth + 1)
                if found is not None:
                    return found
        else:
            for item in value:
                found = value_problem(item, depth + 1)
                if found is not None:
                    return found
        return None
    if kind is tuple:
        return "a tuple (it would come back as a list; store a list)"
    return f"a {kind.__name__} (no JSON form; store dicts, lists, text, numbers, bools, None)"


def encode_value(
    namespace: Namespace, key: str, value: JSONValue, *, max_bytes: int = MAX_VALUE_BYTES
) -> str:
    """The JSON text of ``value``; ``MemoryItemError`` (nothing written) if JSON cannot carry
    it exactly or it is bigger than ``max_bytes``."""
    problem = value_problem(value, 0)
    text = ""
    if problem is None:
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except (ValueError, TypeError, RecursionError) as exc:  # e.g. an int too long to print
            problem = f"a value JSON cannot hold ({str(exc)[:120]})"
    if problem is None:
        size = len(text.encode("utf-8"))
        if size > max_bytes:
            problem = f"{size} bytes of JSON, over the limit of {max_bytes}"
    if problem is not None:
        raise MemoryItemError(
            f"Cannot store {namespace!r} / {key!r}: the value is {problem}. Nothing was written.",
            namespace=namespace,
            key=key,
        )
    return text


def decode_value(text: str) -> JSONValue:
    return json.loads(text)


def matches(value: JSONValue, filter: Mapping[str, JSONValue] | None) -> bool:
    """Whether ``value`` is a dict holding every key of ``filter`` with an equal value."""
    if not filter:
        return True
    if type(value) is not dict:
        return False
    return all(k in value and value[k] == v for k, v in filter.items())
