"""The PostgreSQL driver behind the ``postgres`` extra, loaded only when used.

``load_driver`` imports psycopg 3 and its pool, or says exactly what to install. ``pg_error``
maps the driver's errors to ``StoreError`` at the boundary, with the URL's password hidden.
"""

from __future__ import annotations

import re
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ...errors import StoreError
from ...foundation._distribution import install_hint

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "INSTALL",
    "check_url",
    "connect",
    "load_driver",
    "pg_error",
    "redact",
    "valid_schema",
]

#: What to run when the driver is missing (the exact words the error carries).
INSTALL = install_hint("postgres")

_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_USERINFO = re.compile(r"(://[^:/@\s]*:)\S*@")
_PASSWORD_PARAM = re.compile(r"([?&]password=)[^&\s]*", re.IGNORECASE)


def load_driver() -> tuple[ModuleType, ModuleType]:
    """``psycopg`` and ``psycopg_pool``, or a ``StoreError`` naming the extra to install."""
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise StoreError(
            f"PostgresStore needs psycopg 3 and psycopg-pool, which are not installed "
            f"({exc.name or 'psycopg'} is missing): {INSTALL}"
        ) from exc
    return psycopg, psycopg_pool


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (URLs end up in messages and logs).

    Hides everything from ``user:`` to the *last* ``@`` (a password with an unencoded ``@``
    must not half show) and the value of a ``password=`` query parameter; hiding too much is
    harmless, too little is not. Works on whole messages that contain URLs, too.
    """
    hidden = _USERINFO.sub(r"\1***@", url)
    return _PASSWORD_PARAM.sub(r"\1***", hidden)


def valid_schema(name: object) -> str:
    """``name`` if it is a plain lower-case SQL identifier; else ``StoreError``."""
    if not isinstance(name, str) or not _SCHEMA.fullmatch(name):
        raise StoreError(
            f"Schema name {name!r:.80} is not usable: use lower-case letters, digits and "
            "underscores, starting with a letter (e.g. `flowkit`)."
        )
    return name


def check_url(url: object) -> str:
    """``url`` if it looks like a PostgreSQL connection URL; else ``StoreError``."""
    if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
        shown = redact(url) if isinstance(url, str) else repr(url)
        raise StoreError(
            f"`{shown:.120}` is not a PostgreSQL URL; use postgresql://USER@HOST:PORT/DATABASE."
        )
    return url


def _passwords(url: str) -> list[str]:
    """The password(s) ``url`` carries, as written and percent-decoded, longest first."""
    found: list[str] = []
    userinfo = re.search(r"://[^:/@\s]*:(\S*)@", url)
    if userinfo:
        found.append(userinfo.group(1))
    found += re.findall(r"[?&]password=([^&\s]*)", url, flags=re.IGNORECASE)
    found += [unquote(value) for value in found]
    return sorted({value for value in found if value}, key=len, reverse=True)


def without_password(text: str, url: str) -> str:
    """``text`` (a driver's message about ``url``) with the URL's password gone wherever the
    driver quoted it, whole or in part: a password with a bad ``%`` escape is quoted whole,
    and one with an unencoded ``@`` is split, its tail taken for part of the host."""
    for password in _passwords(url):
        text = text.replace(password, "***")
        for tail in password.split("@")[1:]:  # "hunter@2": host "2@127.0.0.1"
            if tail:
                text = text.replace(f"{tail}@", "***@")
    return redact(text)


def pg_error(exc: Exception, url: str, action: str, *, thread_id: str | None = None) -> StoreError:
    """A driver error as a ``StoreError`` that says what failed and what to do (the URL's
    password never in it, however the driver quoted it)."""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreError(
        f"PostgreSQL at {redact(url)} could not {action}: {without_password(detail, url)}. "
        "Check that the "
        "server runs and the URL is right; nothing was changed by the failed call.",
        thread_id=thread_id,
    )


def connect(url: str, *, timeout: float) -> psycopg.Connection[tuple[Any, ...]]:
    """One autocommit connection to ``url``, or a ``StoreError`` with the server's reason."""
    driver, _ = load_driver()
    try:
        conn: psycopg.Connection[tuple[Any, ...]] = driver.connect(
            url, autocommit=True, connect_timeout=max(1, round(timeout))
        )
    except driver.Error as exc:
        raise pg_error(exc, url, "be reached") from exc
    return conn
