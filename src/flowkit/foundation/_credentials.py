"""Shapes of credentials that turn up in free text: private keys, cloud and chat tokens,
passwords in URLs. ``_logging.mask_pii`` (log lines, a failed node's stored error text)
masks them with ``mask_credentials``.

Every pattern starts only where a run of its characters starts and takes that run
possessively, so a long run that is not a credential is read once, not retried from each
of its characters.
"""

from __future__ import annotations

import re

__all__ = ["mask_credentials", "mask_url_passwords"]

_PATTERNS = (
    # A PEM private key, the whole block; to the end of the text when its end line is cut off.
    re.compile(
        r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----"
        r"(?:[^-]++|-(?!----END [A-Z0-9 ]{0,40}PRIVATE KEY-----))*+"
        r"(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----)?"
    ),
    # AWS access key ids (long-term AKIA, temporary ASIA, and their kin).
    re.compile(
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[A-Z0-9]{16}(?![A-Za-z0-9])"
    ),
    # GitHub tokens: classic and OAuth/app (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained.
    re.compile(r"(?<![\w-])(?:gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_\w{20,}+)"),
    # Slack tokens: bot, user, app-level, refresh ...
    re.compile(r"(?<![\w-])(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}+"),
)
# The password of ``scheme://user:password@host``; the scheme, user and host stay readable.
_URL_PASSWORD = re.compile(
    r"(?i)(?<![\w+.-])(?P<keep>[a-z][a-z0-9+.-]*+://[^\s:/?#@]*+:)[^\s/?#@]++(?=@)"
)
# A bare 40-character secret such as an AWS secret access key: judged by ``_mask_token``.
_TOKEN40 = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
MASK = "***"


def mask_credentials(text: str) -> str:
    """``text`` with every credential of a known shape replaced by ``***``."""
    for pattern in _PATTERNS:
        text = pattern.sub(MASK, text)
    text = mask_url_passwords(text)
    return _TOKEN40.sub(_mask_token, text)


def mask_url_passwords(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@host`` replaced by
    ``***`` (a proxy's ``base_url`` in a ``repr`` or an error message)."""
    return _URL_PASSWORD.sub(lambda m: m.group("keep") + MASK, text)


def _mask_token(match: re.Match[str]) -> str:
    # Upper case, lower case and digits together: a random secret, not a word, a path or a
    # hex digest (a git commit id is lower-case hex and stays readable).
    token = match.group(0)
    mixed = (
        any(c.isupper() for c in token)
        and any(c.islower() for c in token)
        and any(c.isdigit() for c in token)
    )
    return MASK if mixed else token
