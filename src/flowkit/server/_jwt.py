"""``flowkit serve --jwt``: principals from the bearer JWTs an identity provider signs.

:class:`JwtVerifier` is an ``authenticate`` hook: a token that looks like a JWT is checked with
PyJWT (the ``jwt`` extra, imported only here) against the provider's public keys (a JWKS from
a file, or from a URL fetched with httpx and kept for ``cache_s``), its issuer, audience and
expiry; the principal is its ``sub``, the roles come from ``roles_claim`` (a dotted path, e.g.
``realm_access.roles``). A token that fails is a 401 saying why (expired, another audience,
another issuer), never quoting the token.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ServerConfigError
from ..foundation._distribution import install_hint
from ..foundation._logging import get_logger
from ._problems import Problem
from ._roles import ROLES, Identity

__all__ = ["JwtVerifier"]

#: Public-key algorithms only: a JWKS holds public keys; an HMAC "key" from it is refused.
ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
_MAX_JWKS_BYTES = 1024 * 1024
#: An unknown key id fetches the JWKS again (the provider rotated its keys), at most this often.
_REFETCH_S = 10.0


def _pyjwt() -> Any:
    try:
        import jwt
    except ImportError as exc:
        raise ServerConfigError(f"--jwt needs PyJWT: {install_hint('jwt')}") from exc
    return jwt


class JwtVerifier:
    """Checks bearer JWTs; ``verifier(token)`` is the token's :class:`Identity`, ``None`` for
    a token that is not a JWT at all, and a 401 problem for a JWT that is not valid here."""

    def __init__(
        self,
        *,
        jwks: str,
        issuer: str,
        audience: str,
        roles_claim: str = "roles",
        cache_s: float = 300.0,
        timeout_s: float = 5.0,
    ) -> None:
        self._jwt = _pyjwt()
        if not issuer or not audience:
            raise ServerConfigError(
                "JWTs are checked against an issuer and an audience: give both "
                "(--jwt-issuer, --jwt-audience)."
            )
        if not jwks:
            raise ServerConfigError("--jwt needs --jwt-jwks FILE_OR_URL (the provider's keys).")
        self.issuer, self.audience, self.roles_claim = issuer, audience, roles_claim
        self._url = jwks if jwks.startswith(("https://", "http://")) else None
        if self._url is not None and self._url.startswith("http://") and not _loopback(jwks):
            raise ServerConfigError(
                "The JWKS URL must be https:// (over plain HTTP anyone on the way could hand "
                "the server keys of their own); http:// is for loopback only."
            )
        self._cache_s, self._timeout_s = cache_s, timeout_s
        self._lock = threading.Lock()
        self._keys: dict[str | None, Any] = {}
        self._fetched = float("-inf")
        if self._url is None:
            self._keys = self._parse(_read_file(Path(jwks)), f"`{jwks}`", config=True)
            self._fetched = float("inf")  # a file is read once

    def __call__(self, token: str) -> Identity | None:
        if token.count(".") != 2:
            return None  # not a JWT: another hook (a users file) may know it
        jwt = self._jwt
        try:
            header = jwt.get_unverified_header(token)
            key = self._key(header.get("kid"))
            claims = jwt.decode(
                token,
                key.key,
                algorithms=list(ALGORITHMS),
                audience=self.audience,
                issuer=self.issuer,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise _refused("expired", "The bearer token has expired; get a new one.") from None
        except jwt.InvalidAudienceError:
            raise _refused("audience", "The bearer token is meant for another audience.") from None
        except jwt.InvalidIssuerError:
            raise _refused("issuer", "The bearer token is from another issuer.") from None
        except (jwt.PyJWTError, ValueError, TypeError):
            raise _refused("invalid", "The bearer token is not valid for this server.") from None
        subject = claims.get("sub")
        if not isinstance(subject, str) or not 0 < len(subject) <= 200:
            raise _refused("subject", "The bearer token names no subject (`sub`).")
        return Identity(subject, self._roles(claims))

    def _roles(self, claims: Mapping[str, Any]) -> frozenset[str]:
        found: Any = claims
        for part in self.roles_claim.split("."):
            found = found.get(part) if isinstance(found, Mapping) else None
        if isinstance(found, str):
            found = found.split()
        if not isinstance(found, list):
            return frozenset()
        return frozenset(r for r in found if isinstance(r, str) and r in ROLES)

    def _key(self, kid: Any) -> Any:
        if kid is not None and not isinstance(kid, str):
            raise ValueError("kid")
        with self._lock:
            now = time.monotonic()
            stale = now - self._fetched > self._cache_s
            unknown = self._lookup(kid) is None and now - self._fetched > _REFETCH_S
            if self._url is not None and (stale or unknown):
                self._keys = self._fetch(self._url)
                self._fetched = now
            key = self._lookup(kid)
        if key is None:
            raise ValueError("no such key")
        return key

    def _lookup(self, kid: str | None) -> Any:
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid)

    def _fetch(self, url: str) -> dict[str | None, Any]:
        import httpx

        try:
            with httpx.Client(timeout=self._timeout_s, follow_redirects=False) as client:
                response = client.get(url, headers={"Accept": "application/json"})
            if response.status_code != 200 or len(response.content) > _MAX_JWKS_BYTES:
                raise ValueError(f"HTTP {response.status_code}")
            return self._parse(response.text, "the JWKS URL")
        except (httpx.HTTPError, ValueError) as exc:
            get_logger().warning("server_jwks_unavailable", error_type=type(exc).__name__)
            raise Problem(
                503,
                "jwks_unavailable",
                "The identity provider's keys (JWKS) cannot be fetched now; try again.",
                headers={"Retry-After": "5"},
            ) from None

    def _parse(self, text: str, where: str, *, config: bool = False) -> dict[str | None, Any]:
        try:
            keys = self._jwt.PyJWKSet.from_dict(json.loads(text)).keys
        except (ValueError, TypeError, AttributeError, self._jwt.PyJWTError) as exc:
            if config:
                raise ServerConfigError(f"The JWKS {where} holds no usable public key.") from exc
            raise ValueError("no usable key") from None
        return {key.key_id: key for key in keys}


def _read_file(path: Path) -> str:
    try:
        if path.stat().st_size > _MAX_JWKS_BYTES:
            raise ServerConfigError(f"The JWKS file `{path}` is larger than 1 MiB.")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ServerConfigError(f"The JWKS file `{path}` cannot be read ({exc}).") from None


def _loopback(url: str) -> bool:
    import ipaddress
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _refused(reason: str, detail: str) -> Problem:
    get_logger().info("server_jwt_refused", reason=reason)
    return Problem(401, "unauthorized", detail, headers={"WWW-Authenticate": "Bearer"})
