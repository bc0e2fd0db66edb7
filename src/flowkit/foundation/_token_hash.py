"""Salted, slow hashes of bearer tokens, as a users file keeps them.

A hash is one self-describing string, ``scrypt$<n>$<r>$<p>$<salt>$<hash>`` (salt and hash in
unpadded URL-safe base64), so the cost can be raised later without breaking the hashes
already written. Standard library only (``hashlib.scrypt``): ``flowkit auth hash`` needs no
extra.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

__all__ = ["MIN_TOKEN_LENGTH", "TokenHashError", "hash_token", "parse_hash", "verify_token"]

#: The shortest token worth hashing (as the server's own token).
MIN_TOKEN_LENGTH = 16
#: scrypt's cost by default: 16 MiB of memory and some tens of milliseconds per check.
_N, _R, _P = 2**14, 8, 1
#: What a hash may ask for at most: a users file cannot make each check take seconds.
_MAX_MEMORY = 64 * 1024 * 1024
_SALT_BYTES = 16
_HASH_BYTES = 32


class TokenHashError(ValueError):
    """A token hash that is not ``scrypt$n$r$p$salt$hash`` with sane costs."""


def hash_token(token: str, *, n: int = _N, r: int = _R, p: int = _P) -> str:
    """The salted scrypt hash of ``token``, as a users file keeps it."""
    if len(token) < MIN_TOKEN_LENGTH:
        raise TokenHashError(
            f"The token is shorter than {MIN_TOKEN_LENGTH} characters; use a long random one, "
            "e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`."
        )
    _check_costs(n, r, p)
    salt = secrets.token_bytes(_SALT_BYTES)
    digest = _scrypt(token, salt, n, r, p)
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(digest)}"


def parse_hash(text: str) -> tuple[int, int, int, bytes, bytes]:
    """``(n, r, p, salt, hash)`` of a hash string; ``TokenHashError`` says what is wrong."""
    parts = text.split("$")
    if len(parts) != 6 or parts[0] != "scrypt":
        raise TokenHashError(
            "not a token hash: expected `scrypt$n$r$p$salt$hash` (make one with "
            "`flowkit auth hash`); never put a token itself in the file"
        )
    try:
        n, r, p = (int(part) for part in parts[1:4])
        salt, digest = _unb64(parts[4]), _unb64(parts[5])
    except ValueError:
        raise TokenHashError("a token hash's costs or base64 parts cannot be read") from None
    _check_costs(n, r, p)
    if len(salt) < 8 or len(digest) < 16:
        raise TokenHashError("a token hash's salt or hash is too short")
    return n, r, p, salt, digest


def verify_token(token: str, hashed: tuple[int, int, int, bytes, bytes]) -> bool:
    """Whether ``token`` is the one ``hashed`` (from ``parse_hash``) was made from."""
    n, r, p, salt, digest = hashed
    return hmac.compare_digest(_scrypt(token, salt, n, r, p, len(digest)), digest)


def _scrypt(token: str, salt: bytes, n: int, r: int, p: int, size: int = _HASH_BYTES) -> bytes:
    return hashlib.scrypt(
        token.encode(), salt=salt, n=n, r=r, p=p, maxmem=_MAX_MEMORY * 2, dklen=size
    )


def _check_costs(n: int, r: int, p: int) -> None:
    if n < 2 or n & (n - 1) or not 1 <= r <= 64 or not 1 <= p <= 16:
        raise TokenHashError("scrypt costs must be n a power of two, r 1-64, p 1-16")
    if 128 * n * r * p > _MAX_MEMORY:
        raise TokenHashError("scrypt costs ask for more than 64 MiB per check")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    if not text or len(text) > 200:
        raise ValueError(text[:20])
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
