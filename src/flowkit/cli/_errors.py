"""How a command fails: every exception turned into one plain line.

``main`` catches everything at its boundary and prints ``explain(exc)`` on stderr, so no input
ever shows a Python traceback (``-vv`` adds it, for bug reports). ``CommandError`` itself lives
in ``flowkit.terminal.errors``, where the workflows' commands raise it too.
"""

from __future__ import annotations

import argparse

from ..foundation._plain import shorten
from ..terminal.errors import CommandError

__all__ = ["explain"]

#: How much of a file is read to tell whether it is the one that is not UTF-8.
_SNIFF_BYTES = 1 << 20


def explain(exc: BaseException, args: argparse.Namespace | None) -> tuple[str, int, bool]:
    """The message, exit code and whether it was unexpected (a bug worth a traceback)."""
    from pydantic import ValidationError

    from ..errors import FlowkitError, LLMConfigError
    from ..foundation._plain import describe_validation_error

    if isinstance(exc, CommandError):
        return str(exc), exc.code, False
    if isinstance(exc, LLMConfigError):  # a bad --llm spec or option: bad usage, as argparse's
        return str(exc), 2, False
    if isinstance(exc, FlowkitError):
        return str(exc), 1, False
    if isinstance(exc, ValidationError):
        return f"The input is not valid: {describe_validation_error(exc)}", 1, False
    if isinstance(exc, UnicodeDecodeError):
        name = _undecodable_file(args)
        what = f"`{shorten(name)}`" if name else "A file it read"
        return f"{what} is not UTF-8 text; save it as UTF-8 and try again.", 1, False
    if isinstance(exc, RecursionError):
        return "The input is nested too deeply to read.", 1, False
    if isinstance(exc, MemoryError):
        return "The input is too large to read into memory.", 1, False
    if isinstance(exc, OSError):
        return _os_message(exc), 1, False
    if isinstance(exc, ValueError) and "null byte" in str(exc):
        return "A path or value contains a NUL byte; remove it.", 1, False
    return (
        f"unexpected {type(exc).__name__}: {shorten(str(exc))} (a bug in flowkit; run with "
        "-vv for details)",
        1,
        True,
    )


def _os_message(exc: OSError) -> str:
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None:
        return f"{reason}: `{shorten(str(exc.filename))}`"
    return reason


def _undecodable_file(args: argparse.Namespace | None) -> str | None:
    """The first file named on the command line that is not UTF-8 text, if any (judged by
    its first ``_SNIFF_BYTES``: a file of gigabytes is never read whole for a message)."""
    import codecs
    from pathlib import Path

    for value in vars(args).values() if args is not None else ():
        candidates = [value] if isinstance(value, str) else []
        for candidate in candidates:
            path = Path(candidate.removeprefix("@"))
            try:
                if path.is_file():
                    with path.open("rb") as handle:
                        codecs.getincrementaldecoder("utf-8")().decode(handle.read(_SNIFF_BYTES))
            except UnicodeDecodeError:
                return candidate.removeprefix("@")
            except (OSError, ValueError):
                continue
    return None
