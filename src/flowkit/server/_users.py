"""``flowkit serve --auth FILE``: people with their own tokens and roles, from a TOML file.

::

    [users.alice]
    token_hash = "scrypt$16384$8$1$...$..."   # flowkit auth hash < token-file
    roles = ["reviewer"]

The file keeps only salted scrypt hashes and must not be readable by every user of the
machine. :class:`Users` is an ``authenticate`` hook: it maps a bearer token to the user's
:class:`~flowkit.server._roles.Identity`. A hash costs tens of milliseconds, so a token once
proven is remembered (in memory, by a keyed digest, never the token itself).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
import threading
import tomllib
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ServerConfigError
from ..foundation._token_hash import TokenHashError, parse_hash, verify_token
from ._roles import ROLES, Identity

__all__ = ["Users", "load_users"]

_MAX_FILE_BYTES = 1024 * 1024
_MAX_USERS = 1000
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")
_KEYS = frozenset({"token_hash", "roles"})
_REMEMBERED = 1024
#: A user's parsed token hash and roles.
_Entry = tuple[tuple[int, int, int, bytes, bytes], frozenset[str]]


class Users:
    """The users of a users file, as an ``authenticate`` hook: ``users(token)`` is the
    token's :class:`Identity`, or ``None``."""

    def __init__(self, entries: Mapping[str, _Entry]) -> None:
        self._entries = dict(entries)
        self._key = secrets.token_bytes(32)
        self._proven: OrderedDict[bytes, Identity] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        return sorted(self._entries)

    def __call__(self, token: str) -> Identity | None:
        digest = hmac.new(self._key, token.encode(), hashlib.sha256).digest()
        with self._lock:
            known = self._proven.get(digest)
            if known is not None:
                self._proven.move_to_end(digest)
                return known
        for name, (hashed, roles) in self._entries.items():
            if verify_token(token, hashed):
                found = Identity(name, roles)
                with self._lock:
                    self._proven[digest] = found
                    while len(self._proven) > _REMEMBERED:
                        self._proven.popitem(last=False)
                return found
        return None


def load_users(path: str | os.PathLike[str]) -> Users:
    """The users of the TOML users file at ``path``; ``ServerConfigError`` says what is wrong
    with it (missing, unreadable, readable by everyone, malformed)."""
    where = Path(path)
    try:
        data = tomllib.loads(_read(where))
    except tomllib.TOMLDecodeError as exc:
        raise _bad(where, f"it is not valid TOML ({exc})") from None
    users = data.get("users")
    if not isinstance(users, dict) or not users:
        raise _bad(where, "it has no `[users.NAME]` tables (each with token_hash and roles)")
    if len(users) > _MAX_USERS:
        raise _bad(where, f"it lists more than {_MAX_USERS} users")
    extra = sorted(set(data) - {"users"})
    if extra:
        raise _bad(where, f"unknown top-level key `{extra[0][:40]}` (only [users.NAME] tables)")
    entries: dict[str, _Entry] = {}
    for name, entry in users.items():
        entries[name] = _entry(where, name, entry)
    return Users(entries)


def _read(where: Path) -> str:
    try:
        info = where.stat()
    except FileNotFoundError:
        raise ServerConfigError(f"The users file `{where}` does not exist.") from None
    except OSError as exc:
        raise ServerConfigError(
            f"The users file `{where}` cannot be read: {exc.strerror}."
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise ServerConfigError(f"The users file `{where}` is not a regular file.")
    if info.st_mode & (stat.S_IROTH | stat.S_IWOTH):
        raise ServerConfigError(
            f"The users file `{where}` is readable or writable by every user of this machine; "
            f"it holds token hashes: `chmod 600 {where}`."
        )
    if info.st_size > _MAX_FILE_BYTES:
        raise _bad(where, "it is larger than 1 MiB")
    try:
        return where.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
        raise ServerConfigError(f"The users file `{where}` cannot be read: {reason}.") from None


def _entry(where: Path, name: str, entry: Any) -> _Entry:
    if not _NAME.fullmatch(name):
        raise _bad(where, f"user `{name[:40]}`: a name is 1-100 letters, digits and ._@+-")
    if not isinstance(entry, dict):
        raise _bad(where, f"user `{name}` is not a table with token_hash and roles")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise _bad(where, f"user `{name}`: unknown key `{unknown[0][:40]}` (token_hash, roles)")
    token_hash = entry.get("token_hash")
    if not isinstance(token_hash, str):
        raise _bad(where, f"user `{name}` has no token_hash (make one with `flowkit auth hash`)")
    try:
        hashed = parse_hash(token_hash)
    except TokenHashError as exc:
        raise _bad(where, f"user `{name}`: {exc}") from None
    roles = entry.get("roles")
    if not isinstance(roles, list) or not roles or not all(isinstance(r, str) for r in roles):
        raise _bad(where, f'user `{name}` needs roles, a list such as ["reviewer"]')
    unknown_roles = sorted(set(roles) - set(ROLES))
    if unknown_roles:
        raise _bad(
            where,
            f"user `{name}`: unknown role `{unknown_roles[0][:40]}` "
            f"(one of {', '.join(sorted(ROLES))})",
        )
    return hashed, frozenset(roles)


def _bad(where: Path, why: str) -> ServerConfigError:
    return ServerConfigError(f"The users file `{where}` cannot be used: {why}.")
