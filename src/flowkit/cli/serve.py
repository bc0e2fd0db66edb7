"""``flowkit serve``: the HTTP API, events and review page for flows, over a JSON-file store.

Needs the ``server`` extra. Changes need the bearer token in ``$FLOWKIT_SERVER_TOKEN`` (never
on the command line, where other users of the machine could read it); ``--read-only`` serves
without one. See docs/server.md.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, TextIO

from ._inputs import TARGET_HELP, load_target
from ._store import add_store_option, open_for_writing, store_path

__all__ = ["register"]

_EXTRA = "pip install 'flowkit[server]'"


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    serve = commands.add_parser(
        "serve",
        parents=[common],
        help="serve flows over HTTP: API, live events, review page (needs flowkit[server])",
    )
    serve.add_argument("targets", nargs="+", metavar="TARGET", help=TARGET_HELP)
    add_store_option(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8000, help="port to listen on (8000)")
    serve.add_argument(
        "--llm", metavar="SPEC",
        help="the LLM every served flow's nodes use (openai:MODEL, ollama:MODEL, replay:PATH, "
        "replay:demo ...; default: $FLOWKIT_LLM)",
    )  # fmt: skip
    serve.add_argument(
        "--open-reads", action="store_true",
        help="let requests without the token read threads (personal data masked for them)",
    )  # fmt: skip
    serve.add_argument(
        "--cors-origin", action="append", default=[], metavar="ORIGIN",
        help="a web origin allowed to call the API from a browser (repeat; default: none)",
    )  # fmt: skip
    serve.add_argument(
        "--read-only", action="store_true",
        help="serve without $FLOWKIT_SERVER_TOKEN: nothing can be changed",
    )  # fmt: skip
    serve.set_defaults(run=_cmd_serve)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0-65535)")
    return value


def _cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    from ._errors import CommandError

    try:
        import uvicorn

        from ..server import TOKEN_ENV, create_app
    except ImportError as exc:
        raise CommandError(f"`flowkit serve` needs the server extra: {_EXTRA}", code=1) from exc
    token = os.environ.get(TOKEN_ENV) or None
    if token is None and not args.read_only:
        raise CommandError(
            f"Set {TOKEN_ENV} to the bearer token clients must send to change threads (e.g. "
            "`export FLOWKIT_SERVER_TOKEN=$(python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')`), or pass --read-only.",
            code=2,
        )
    if token is not None and len(token) < 16:
        raise CommandError(f"{TOKEN_ENV} is shorter than 16 characters; use a long random one.", 2)
    flows = [load_target(target) for target in args.targets]
    llm = None
    if args.llm or os.environ.get("FLOWKIT_LLM"):
        from ..llm import from_spec
        from ..sas.cli import resolve_llm_spec

        llm = from_spec(resolve_llm_spec(args.llm) if args.llm else None)
    directory = store_path(args)
    app = create_app(
        flows,
        store=open_for_writing(directory),
        llm=llm,
        token=None if args.read_only else token,
        open_reads=args.open_reads,
        cors_origins=args.cors_origin,
    )
    names = ", ".join(f.name for f in flows)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    out.write(f"serving {names} from store {directory} on http://{shown}:{args.port}/\n")
    out.flush()
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        access_log=False,  # the app logs each request itself, without query strings
        log_level="warning",
        server_header=False,
    )
    uvicorn.Server(config).run()
    return 0
