"""What commands read from their arguments: flow TARGETs, JSON values and checked numbers."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from .._plain import shorten
from .._untrusted import parse_json
from ..errors import UntrustedInputError
from ._errors import CommandError

if TYPE_CHECKING:
    from .._flow import Flow

__all__ = ["TARGET_HELP", "load_target", "non_negative", "positive_int", "rate", "read_json"]

TARGET_HELP = (
    "a registered workflow name (see `flowkit workflows`), `module:attribute` or "
    "`path/to/file.py:attribute` naming a Flow or a zero-argument function returning one"
)

#: A JSON argument bigger than this is refused before parsing (state is not a bulk format).
MAX_JSON_BYTES = 16 * 1024 * 1024


def load_target(target: str) -> Flow:
    """The Flow for a TARGET; a target that cannot be loaded ends the command with exit 2."""
    from ..workflows import WorkflowLoadError, load_flow

    try:
        return load_flow(target)
    except WorkflowLoadError as exc:
        raise CommandError(str(exc), code=2) from exc


def read_json(text: str, option: str) -> Any:
    """The value of a JSON option: JSON text, or ``@path`` to read it from a file."""
    from pathlib import Path

    where = f"{option} {shorten(text, 60)}"
    if text.startswith("@"):
        path = Path(text[1:])
        where = f"`{shorten(text[1:])}`"
        try:
            if path.stat().st_size > MAX_JSON_BYTES:
                raise CommandError(f"{where} is larger than {MAX_JSON_BYTES >> 20} MB.", code=2)
            data = path.read_bytes()
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or "cannot be read"
            raise CommandError(f"{where}: {reason}.", code=2) from exc
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CommandError(f"{where} is not UTF-8 text.", code=2) from exc
    try:
        return parse_json(text, what="JSON input", max_bytes=None)
    except UntrustedInputError as exc:
        raise CommandError(f"{where} is nested too deeply.", code=2) from exc
    except ValueError as exc:
        raise CommandError(
            f"{where} is not valid JSON ({shorten(str(exc), 120)}); write it like "
            """'{"field": "value"}' or pass @file.json.""",
            code=2,
        ) from exc


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shorten(text, 40)!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{shorten(text, 40)!r} is not a finite number")
    return value


def non_negative(text: str) -> float:
    """argparse type: a finite number >= 0."""
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative; give 0 or more")
    return value


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shorten(text, 40)!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative; give 0 or more")
    return value


def rate(text: str) -> float:
    """argparse type: a fraction from 0 to 1 (``0.1`` is 10 %)."""
    value = _number(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1 (0.1 means 10 %)")
    return value
