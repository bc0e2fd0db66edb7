"""Integers too long for Python to convert: where one sits in a JSON or YAML document, and
whether one may be saved.

CPython refuses to turn more than ``sys.get_int_max_str_digits()`` decimal digits into an
``int`` (a guard against quadratic conversion), and neither ``json`` nor PyYAML says where the
number was. The loaders in ``_untrusted`` call here only after such a refusal, to report it as
``NumberTooLongError`` with its line, like their other problems. ``_jsonform`` asks
``int_too_long`` before a value is saved: an integer no reader can load would lose the thread.
"""

from __future__ import annotations

import math
import re
import sys
from functools import cache
from typing import TYPE_CHECKING

from ..errors import NumberTooLongError

if TYPE_CHECKING:
    import yaml

__all__ = [
    "INT_TOO_LONG",
    "SAFE_BITS",
    "int_too_long",
    "long_json_integer",
    "long_yaml_integer",
    "storable_digits",
]

#: What CPython says when int() refuses a long run of decimal digits.
INT_TOO_LONG = "integer string conversion"
_YAML_INT_TAG = "tag:yaml.org,2002:int"
# Just above log10(2), so a bit count times it never under-counts the digits.
_LOG10_2_UP = 0.30103
#: Integers of at most this many bits have at most 617 digits, under the lowest limit CPython
#: accepts (640): always storable, decided without a call (the engine's hot path).
SAFE_BITS = 2048


def storable_digits() -> int:
    """The most decimal digits a saved integer may have: what every flowkit process reads
    back, the CPython default (4,300), or this process's limit when set lower."""
    default = sys.int_info.default_max_str_digits
    current = sys.get_int_max_str_digits()
    return min(current, default) if current else default


def int_too_long(value: int) -> str | None:
    """Why ``value`` cannot be saved (more digits than ``storable_digits``), or None."""
    bits = abs(value).bit_length()
    limit = storable_digits()
    if bits * _LOG10_2_UP < limit:  # at most ``limit`` digits: the common case, no arithmetic
        return None
    size = abs(value)
    digits = int((bits - 1) * math.log10(2)) + 1  # the digits of 2**(bits-1), up to rounding
    while size >= 10**digits:
        digits += 1
    while digits > 1 and size < 10 ** (digits - 1):
        digits -= 1
    if digits <= limit:
        return None
    return (
        f"an integer of {digits:,} digits (over the {limit:,} Python reads back; store it as "
        "text, e.g. str(n))"
    )


#: A JSON string, escapes and all: the one pattern every JSON scanner here skips strings with.
JSON_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'


@cache
def _json_numbers() -> re.Pattern[str]:
    """A JSON string (skipped whole) or a JSON number."""
    return re.compile(JSON_STRING + r"|-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def _number_too_long(*, what: str, path: str | None, line: int | None, digits: int) -> Exception:
    limit = sys.get_int_max_str_digits()
    return NumberTooLongError(
        f"an integer of {digits:,} digits, over the {limit:,} Python reads; write a smaller "
        "number, or quote it to keep it as text",
        what=what,
        limit=limit,
        line=line,
        digits=digits,
        path=path,
    )


def long_json_integer(text: str, *, what: str, path: str | None) -> Exception:
    """The first integer of ``text`` past the limit (json.loads does not say where it is)."""
    limit = sys.get_int_max_str_digits()
    for found in _json_numbers().finditer(text):
        number = found.group()
        digits = len(number.lstrip("-"))
        if digits > limit and number[0] != '"' and not any(c in number for c in ".eE"):
            line = text.count("\n", 0, found.start()) + 1
            return _number_too_long(what=what, path=path, line=line, digits=digits)
    return _number_too_long(what=what, path=path, line=None, digits=0)


def long_yaml_integer(root: yaml.Node, *, what: str, path: str | None) -> Exception:
    """The first integer scalar of the tree past the limit (PyYAML does not say which)."""
    import yaml

    limit = sys.get_int_max_str_digits()
    found: list[tuple[int, int, int]] = []  # (offset, line, digits)
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _YAML_INT_TAG:
                runs = re.findall(r"[0-9]+", str(node.value).replace("_", ""))
                digits = max(map(len, runs), default=0)
                if digits > limit:
                    mark = node.start_mark
                    found.append((mark.index, mark.line + 1, digits))
        elif isinstance(node, yaml.MappingNode):
            stack.extend(part for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    if not found:
        return _number_too_long(what=what, path=path, line=None, digits=0)
    _, line, digits = min(found)
    return _number_too_long(what=what, path=path, line=line, digits=digits)
