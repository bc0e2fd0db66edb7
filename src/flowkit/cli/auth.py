"""``flowkit auth hash``: the salted hash of a bearer token, for ``flowkit serve --auth FILE``.

The token is read from standard input (typed without echo on a terminal), never from the
command line, where other users of the machine could read it. See docs/server.md#identities.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from ..terminal.errors import CommandError

__all__ = ["register"]

#: A token is one line; more than this is not a token.
_MAX_TOKEN = 4096


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    auth = commands.add_parser(
        "auth", parents=[common], help="identities for `flowkit serve --auth FILE`"
    )
    sub = auth.add_subparsers(title="auth commands", metavar="COMMAND", required=True)
    hashing = sub.add_parser(
        "hash",
        parents=[common],
        help="print the hash of a token read from stdin, for a users file's token_hash",
    )
    hashing.set_defaults(run=_cmd_hash)


def _cmd_hash(args: argparse.Namespace, out: TextIO) -> int:
    from ..foundation._token_hash import TokenHashError, hash_token

    if sys.stdin.isatty():
        import getpass

        token = getpass.getpass("token: ")
    else:
        token = sys.stdin.readline(_MAX_TOKEN + 1)
    token = token.rstrip("\r\n")
    if not token or len(token) > _MAX_TOKEN:
        raise CommandError("Give the token on standard input, one line (at most 4096 chars).", 2)
    try:
        out.write(hash_token(token) + "\n")
    except TokenHashError as exc:
        raise CommandError(str(exc), code=2) from None
    return 0
