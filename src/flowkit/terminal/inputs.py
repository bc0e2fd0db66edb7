"""What commands read from their arguments: flow TARGETs, JSON values, files and numbers.

The LLM a command runs with (``--llm``, ``add_llm_option`` here) is chosen by ``demo_llm``,
which commands import only when they run: it loads the LLM clients.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from ..errors import InputTooLargeError, UntrustedInputError
from ..foundation._plain import shorten
from ..foundation._untrusted import parse_json
from .errors import CommandError, tidy

if TYPE_CHECKING:
    import os

    from ..definition._flow import Flow

__all__ = [
    "DEMO_LLM",
    "TARGET_HELP",
    "add_llm_option",
    "load_target",
    "non_negative",
    "positive_int",
    "rate",
    "read_json",
    "read_limited",
    "whole_number",
]

TARGET_HELP = (
    "a registered workflow name (see `flowkit workflows`), `module:attribute` or "
    "`path/to/file.py:attribute` naming a Flow or a zero-argument function returning one"
)

#: The LLM spec naming the recorded answers shipped with the demo of the flow being run
#: (``demo_llm`` resolves it).
DEMO_LLM = "replay:demo"

#: A JSON argument (or ``@file``) bigger than this is refused unparsed: state is not a bulk
#: format. docs/cli.md states it.
MAX_JSON_BYTES = 16 * 1024 * 1024


def read_limited(path: str | os.PathLike[str], *, what: str, max_bytes: int) -> bytes:
    """The bytes of the file a command argument names, at most ``max_bytes`` of them.

    Pipes and devices are read too (``@/dev/stdin``, ``@<(jq ...)``), so size is checked as
    bytes arrive: reading stops at ``max_bytes + 1``, and a regular file whose size already
    says it is too large (a sparse one of gigabytes) is refused before any byte is read.

    Raises:
        InputTooLargeError: there is more than ``max_bytes`` (``.path``, ``.limit``).
        OSError: it cannot be opened or read (a directory: ``IsADirectoryError``).
    """
    import os
    import stat

    where = os.fspath(path)
    with open(where, "rb") as handle:
        info = os.fstat(handle.fileno())
        size = info.st_size if stat.S_ISREG(info.st_mode) else 0
        data = b"" if size > max_bytes else handle.read(max_bytes + 1)
    if size > max_bytes or len(data) > max_bytes:
        raise InputTooLargeError(
            f"the {what} is larger than {_megabytes(max_bytes)}, its limit; pass a smaller one",
            what=what,
            limit=max_bytes,
            path=where,
        )
    return data


def _megabytes(count: int) -> str:
    return f"{count / 2**20:g} MB" if count >= 2**20 else f"{count:,} bytes"


def load_target(target: str) -> Flow:
    """The Flow for a TARGET; a target that cannot be loaded ends the command with exit 2."""
    from ..workflows import WorkflowLoadError, load_flow

    try:
        return load_flow(target)
    except WorkflowLoadError as exc:
        # Its message quotes the target, which may be anything the shell passed.
        raise CommandError(tidy(str(exc)), code=2) from exc


def add_llm_option(parser: argparse.ArgumentParser, *, used_by: str) -> None:
    """Add ``--llm SPEC``: the LLM the nodes of the flows a command runs call."""
    parser.add_argument(
        "--llm",
        metavar="SPEC",
        help=f"the LLM {used_by} (openai:MODEL, ollama:MODEL, replay:PATH, replay:demo ...; "
        "default: $FLOWKIT_LLM)",
    )


def read_json(text: str, option: str) -> Any:
    """The value of a JSON option: JSON text, or ``@path`` to read it from a file."""
    from pathlib import Path

    where = f"{option} {shorten(text, 60)}"
    if text.startswith("@"):
        if not text[1:].strip():
            raise CommandError(
                f"{option} @: the file name is missing after @; write {option} @file.json.",
                code=2,
            )
        path = Path(text[1:])
        where = f"`{shorten(text[1:])}`"
        if path.is_dir():
            raise CommandError(f"{where} is a directory, not a JSON file.", code=2)
        try:
            data = read_limited(path, what=f"{option} file", max_bytes=MAX_JSON_BYTES)
        except InputTooLargeError as exc:
            raise CommandError(
                f"{where} is larger than {_megabytes(MAX_JSON_BYTES)}, the limit of {option} "
                "@file; it was not read to its end. Pass the JSON of the state itself.",
                code=2,
            ) from exc
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


def whole_number(text: str) -> int:
    """argparse type: a whole number >= 0."""
    return _whole_number(text, least=0)


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1 (a count of workers, say)."""
    return _whole_number(text, least=1)


def _whole_number(text: str, *, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shorten(text, 40)!r} is not a whole number") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{text} is too small; give {least} or more")
    return value


def rate(text: str) -> float:
    """argparse type: a fraction from 0 to 1 (``0.1`` is 10 %)."""
    value = _number(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1 (0.1 means 10 %)")
    return value
