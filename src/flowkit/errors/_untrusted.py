"""Errors of text from outside that breaks a parsing limit (each also a ValueError)."""

from __future__ import annotations

from ._base import FlowkitError

__all__ = [
    "InputTooDeepError",
    "InputTooLargeError",
    "NumberTooLongError",
    "UnsafePatternError",
    "UntrustedInputError",
    "YAMLAliasError",
]


class UntrustedInputError(FlowkitError, ValueError):
    """Text from outside (a file, an LLM answer) breaks a limit of the guarded parsers.

    Also a ``ValueError``, as ``json.JSONDecodeError`` is: code that treats unparsable input
    as a bad value treats input past a limit the same way.

    ``what`` names the input ("route table JSON", "LLM answer"), ``path`` its file if any,
    ``limit`` the limit it broke.
    """

    def __init__(
        self, message: str, *, what: str, limit: int | None = None, path: str | None = None
    ) -> None:
        self.what = what
        self.limit = limit
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class InputTooLargeError(UntrustedInputError):
    """The input is larger than its size limit; it was refused before parsing."""


class InputTooDeepError(UntrustedInputError):
    """The input nests deeper than its limit; it was refused before the parser recursed."""


class YAMLAliasError(UntrustedInputError):
    """YAML anchors or aliases where none are allowed, or aliases that expand past the limit."""


class NumberTooLongError(UntrustedInputError):
    """An integer with more digits than Python converts (``sys.get_int_max_str_digits()``,
    4,300 by default); ``line`` is where it is (1-based), when known, and ``digits`` its
    length."""

    def __init__(
        self,
        message: str,
        *,
        what: str,
        limit: int,
        line: int | None,
        digits: int,
        path: str | None = None,
    ) -> None:
        self.line = line
        self.digits = digits
        super().__init__(message, what=what, limit=limit, path=path)


class UnsafePatternError(UntrustedInputError):
    """A regular expression that cannot run in bounded time (or does not compile)."""
