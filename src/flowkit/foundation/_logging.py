"""Logging: flowkit logs like a library should, and never configures anything on import.

Every event goes to the application's structlog pipeline when the application configured
structlog (``structlog.is_configured()``), with ``thread_id`` / ``node`` bound as fields.
Otherwise it goes to the standard ``logging`` logger ``flowkit``, so an unconfigured script
sees warnings and errors on stderr (Python's last-resort handler) and nothing else, exactly
as with httpx; structlog's own default, printing every line to stdout, is never used.

``mask_pii`` is a processor masking sensitive keys, e-mail addresses, phone numbers and
secrets; it runs on every line rendered through ``logging`` and applications add it to their
own structlog chain. Prompt and message text is logged only when ``FLOWKIT_LOG_CONTENT=1``.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from ._credentials import mask_credentials

__all__ = [
    "CONTENT_ENV",
    "LOGGER_NAME",
    "Logger",
    "configure_cli_logging",
    "get_logger",
    "log_content",
    "mask_pii",
    "mask_text",
]

LOGGER_NAME = "flowkit"
#: Set to ``1`` to let debug lines carry prompts, answers and user messages.
CONTENT_ENV = "FLOWKIT_LOG_CONTENT"
MASK = "***"

_DEFAULT_KEYS = frozenset(
    {
        "api_key",
        "apikey",
        "authorization",
        "password",
        "passwd",
        "secret",
        "token",
        "access_token",
        "access_key",  # AWS_SECRET_ACCESS_KEY
        "secret_key",
        "private_key",
    }
)
#: Keys whose values flowkit generates as identifiers: never pattern-masked, because a
#: generated id such as ``sas-20261123-103000-0f9b`` is not a phone number.
_ID_KEYS = frozenset(
    {
        "event",
        "thread_id",
        "new_thread_id",
        "run_id",
        "node",
        "gate",
        "request_id",
        "response_id",
        "turn_id",
        "version",
    }
)
# A phone number stands alone: digits joined to a word by `-` or `_` (``sas-20261123-1030``,
# ``run_0312345678``) are part of an identifier, not a number to call.
_PHONE = re.compile(r"(?<![\w-])\+?\d[\d\s()-]{7,}\d(?![\w-])")
_PATTERNS = (
    # e-mail; tried only where a run of its characters starts, and never giving the run back
    # (a long run without `@` was otherwise retried from each character: quadratic)
    re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]+(?:\.[\w-]+)+"),
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}\b"),  # API-key-like tokens
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]+=*"),
)
_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}
_STD = logging.getLogger(LOGGER_NAME)  # the same object for the life of the process


def get_logger() -> Logger:
    """flowkit's logger; ``.bind(thread_id=..., node=...)`` adds fields to every line."""
    return Logger()


def log_content() -> bool:
    """Whether debug lines may carry prompt and message text (``FLOWKIT_LOG_CONTENT=1``)."""
    return os.environ.get(CONTENT_ENV, "").strip().lower() in {"1", "true", "yes"}


#: Whether each structlog wrapper class seen passes debug lines (a class's level is fixed).
_WRAPPER_PASSES_DEBUG: dict[type, bool] = {}


def _passes_debug(wrapper: type) -> bool:
    known = _WRAPPER_PASSES_DEBUG.get(wrapper)
    if known is None:
        known = True
        if callable(getattr(wrapper, "is_enabled_for", None)):
            try:  # a filtering logger compares the level with its own: no logger needed
                known = bool(wrapper(None, (), {}).is_enabled_for(logging.DEBUG))
            except Exception:  # an unusual wrapper: let its own pipeline decide
                known = True
        _WRAPPER_PASSES_DEBUG[wrapper] = known
    return known


class Logger:
    """A structlog-style logger (``debug`` ... ``exception``, ``bind``) choosing its sink per call.

    Deciding per call, not when the logger is made, lets an application configure structlog
    after importing flowkit (or after a ``Runner`` was built) and still get every event.
    """

    __slots__ = ("_context", "_structlog")

    def __init__(self, context: Mapping[str, Any] | None = None) -> None:
        self._context: dict[str, Any] = dict(context or {})
        # structlog's lazy proxy, made on first use: it follows later `configure` calls by
        # itself, and making one per call cost ~7 µs on every step of a run.
        self._structlog: Any = None

    @staticmethod
    def debug_enabled() -> bool:
        """Whether a debug line could be emitted now: lets a hot path skip building one.

        With structlog configured, a filtering wrapper (``make_filtering_bound_logger``, what
        production apps configure) says whether it passes debug; any other wrapper decides in
        its processors later, so this says yes. Asked once per run, not per line.
        """
        structlog = sys.modules.get("structlog")
        if structlog is not None and structlog.is_configured():
            return _passes_debug(structlog.get_config()["wrapper_class"])
        return _STD.isEnabledFor(logging.DEBUG)

    def bind(self, **values: Any) -> Logger:
        return Logger({**self._context, **values})

    def debug(self, event: str, **fields: Any) -> None:
        self._log("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log("error", event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        fields.setdefault("exc_info", True)
        self._log("error", event, fields)

    def _log(self, method: str, event: str, fields: dict[str, Any]) -> None:
        # An app that never imported structlog cannot have configured it, and importing it
        # here would cost every plain script ~30 ms (it pulls in asyncio) for nothing.
        structlog = sys.modules.get("structlog")
        if structlog is not None and structlog.is_configured():
            logger = self._structlog
            if logger is None:
                logger = self._structlog = structlog.get_logger(LOGGER_NAME, **self._context)
            getattr(logger, method)(event, **fields)
            return
        std = _STD
        level = _LEVELS[method]
        if not std.isEnabledFor(level):
            return
        exc_info = fields.pop("exc_info", None)
        # stacklevel 3: the record names the flowkit line that logged, not this module.
        std.log(level, LogLine(event, {**self._context, **fields}), exc_info=exc_info, stacklevel=3)

    def __repr__(self) -> str:
        return f"Logger({self._context!r})"


class LogLine:
    """The message of a ``logging`` record from flowkit: ``event key=value ...``, PII masked.

    Rendered only when a handler formats the record, so a discarded debug line costs nothing;
    formatters that want the structure read ``record.msg.event`` and ``record.msg.fields``.
    """

    __slots__ = ("event", "fields")

    def __init__(self, event: str, fields: dict[str, Any]) -> None:
        self.event = event
        self.fields = fields

    def __str__(self) -> str:
        masked = _DEFAULT_MASK(None, "", dict(self.fields))
        return " ".join([self.event, *(f"{key}={value!r}" for key, value in masked.items())])

    def __repr__(self) -> str:
        return f"LogLine({self.event!r})"


class mask_pii:  # noqa: N801 - used like a function in processor chains
    """A structlog processor masking sensitive keys and PII patterns in every event value.

    In text, the value a sensitive key is given (``api_key=...``, ``password: ...``) is
    masked too; ``text(value)`` masks one string the same way.

    Identifiers flowkit generates (``thread_id``, ``run_id``, ``node``, ``gate``...) are never
    pattern-masked; name one in ``keys`` to mask it anyway.

    >>> processor = mask_pii(keys={"requester_name"})
    >>> processor(None, "info", {"event": "x", "requester_name": "Sato", "note": "mail a@b.co"})
    {'event': 'x', 'requester_name': '***', 'note': 'mail ***'}
    """

    def __init__(
        self, *, keys: Iterable[str] = (), patterns: Iterable[re.Pattern[str]] = ()
    ) -> None:
        self.keys = _DEFAULT_KEYS | {k.lower() for k in keys}
        self.patterns = (*_PATTERNS, *patterns)
        self._key_values = _key_value_pattern(self.keys)

    def __call__(
        self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        for key, value in list(event_dict.items()):
            event_dict[key] = self._mask(key, value)
        return event_dict

    def _mask(self, key: str, value: Any) -> Any:
        if key.lower() in self.keys and value is not None:
            return MASK
        if key in _ID_KEYS:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self._mask(str(k), v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self._mask(key, v) for v in value)
        return value

    def text(self, value: str) -> str:
        """``value`` with its e-mail addresses, phone numbers and secrets masked."""
        # Credentials first: a URL's `user:password@host` must not be read as an e-mail.
        value = mask_credentials(value)
        for pattern in self.patterns:
            value = pattern.sub(MASK, value)
        value = self._key_values.sub(_mask_value, value)
        return _PHONE.sub(_mask_phone, value)


#: A character of an unquoted value (a quoted one must end where such a run could not go on,
#: or masking it would leave a tail that a second pass masks).
_RUN = r"""[^\s"',;&)\]}\\]"""


def _key_value_pattern(keys: Iterable[str]) -> re.Pattern[str]:
    """``api_key=...``, ``password: ...``, ``"client_secret": "..."`` in free text: the value
    of a word ending in a sensitive key (exception messages and notes quote them so)."""
    # The whole word is taken possessively and its end compared by look-behinds (one per
    # key, each of fixed width): a long run of word characters is read once, not retried
    # from each of its characters.
    ends = "|".join(f"(?<={re.escape(key)})" for key in sorted(keys))
    return re.compile(
        rf"(?i)(?<![\w-])[\w-]*+(?:{ends})"  # the key
        r"""(?P<sep>(?:\\?["'])?[ \t]*[=:][ \t]*)"""  # `=`, `: `, `": ` of JSON (escaped too)
        # the value: quoted (over line breaks: a key read from a file may hold one), or up to
        # a space, a separator or a closing bracket (an unclosed quote included)
        rf"""(?:"[^"]*+"(?!{_RUN})|'[^']*+'(?!{_RUN})|(?:\\?["'])?{_RUN}++)"""
        # and the lines after it that are one token each: the rest of a key with a newline
        r"""(?:\r?\n[\w+/=.~-]++(?![^\r\n]))*+"""
    )


def _mask_value(match: re.Match[str]) -> str:
    # The key stays: the text still says which secret was there.
    return f"{match.string[match.start() : match.end('sep')]}{MASK}"


def _mask_phone(match: re.Match[str]) -> str:
    # Phone numbers have 10+ digits (03-1234-5678, +81 90 1234 5678); dates such as
    # 2024-01-15 have 8 and stay readable.
    digits = sum(ch.isdigit() for ch in match.group(0))
    return MASK if digits >= 10 else match.group(0)


_DEFAULT_MASK = mask_pii()


def mask_text(text: str) -> str:
    """``text`` as ``mask_pii`` masks a log line's values: what a failed node's
    ``NodeError`` keeps of its exception's message unless the runner keeps it raw."""
    return _DEFAULT_MASK.text(text)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time (tests and shells replace it)."""

    def __init__(self, level: int) -> None:
        super().__init__(sys.stderr)
        self.setLevel(level)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def configure_cli_logging(verbosity: int) -> None:
    """How the ``flowkit`` command logs: flowkit's lines on stderr, PII masked, never stdout.

    ``verbosity`` is the count of ``-v``: 0 shows warnings, 1 adds info, 2+ adds debug. The
    command is an application, so it may configure ``logging``; calling this again replaces
    the earlier setup. An application that configured structlog keeps its own pipeline.
    """
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        if isinstance(handler, _StderrHandler):
            logger.removeHandler(handler)
    handler = _StderrHandler(level)
    handler.setFormatter(
        logging.Formatter("%(asctime)s [%(levelname)-7s] %(message)s", datefmt="%H:%M:%S")
    )
    logger.addHandler(handler)
    logger.setLevel(level)
    # stdout carries the command's output; a root handler on stdout must not see our lines.
    logger.propagate = False
