"""``flowkit serve``: the HTTP API, events and review page for flows, over a store folder or
a PostgreSQL database.

Needs the ``server`` extra. Changes need the bearer token in ``$FLOWKIT_SERVER_TOKEN`` (never
on the command line, where other users of the machine could read it), or people's own tokens
(``--auth FILE``, ``--jwt``); ``--read-only`` serves without one. From PostgreSQL, the steps
other processes (``flowkit worker``) commit reach the event streams as they commit: an
``EventFeed`` tells the server's hub which thread changed.
See docs/server.md and docs/scale-out.md.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from ..foundation._distribution import install_hint
from ..terminal.errors import CommandError
from ..terminal.inputs import TARGET_HELP, add_llm_option, load_target
from ..terminal.store import (
    add_store_option,
    is_database_url,
    open_for_writing,
    shown,
    store_location,
)

if TYPE_CHECKING:
    from ..stores.postgres import EventFeed

__all__ = ["register"]

_EXTRA = install_hint("server")
#: Seconds a stopping server waits for running requests, then for runs still going.
_GRACE_S = 5


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    serve = commands.add_parser(
        "serve",
        parents=[common],
        help="serve flows over HTTP: API, live events, review page (needs the server extra)",
    )
    serve.add_argument("targets", nargs="+", metavar="TARGET", help=TARGET_HELP)
    add_store_option(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8000, help="port to listen on (8000)")
    add_llm_option(serve, used_by="every served flow's nodes use")
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
    serve.add_argument(
        "--auth", metavar="FILE",
        help="a TOML users file: names, token hashes (`flowkit auth hash`) and roles",
    )  # fmt: skip
    serve.add_argument(
        "--jwt", action="store_true",
        help="accept bearer JWTs of an identity provider (needs the jwt extra)",
    )  # fmt: skip
    serve.add_argument("--jwt-issuer", metavar="ISS", help="the JWTs' issuer (`iss`)")
    serve.add_argument("--jwt-audience", metavar="AUD", help="this server's audience (`aud`)")
    serve.add_argument(
        "--jwt-jwks", metavar="FILE_OR_URL", help="the provider's public keys (a JWKS)"
    )
    serve.add_argument(
        "--jwt-roles-claim", default="roles", metavar="CLAIM",
        help="the claim listing a user's roles, a dotted path for nested ones (roles)",
    )  # fmt: skip
    serve.add_argument(
        "--max-connections", type=_whole, default=1000, metavar="N",
        help="open connections at most; more are answered 503 (1000, less if `ulimit -n` is low)",
    )  # fmt: skip
    serve.add_argument(
        "--header-timeout", type=_seconds, default=10.0, metavar="SECONDS",
        help="close a connection whose request headers have not all come by then (10)",
    )  # fmt: skip
    serve.add_argument(
        "--body-timeout", type=_seconds, default=30.0, metavar="SECONDS",
        help="close a connection whose request body has not all come by then (30)",
    )  # fmt: skip
    serve.add_argument(
        "--timer-poll", type=_seconds, default=2.0, metavar="SECONDS",
        help="how often due timers (deadlines, wake-ups) are fired (2)",
    )  # fmt: skip
    serve.add_argument(
        "--no-timers", action="store_true",
        help="fire no timers here (workers or another server do)",
    )  # fmt: skip
    serve.set_defaults(run=_cmd_serve)


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a number of seconds") from None
    if not 0 < value < 86400:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"{text[:20]} is not between 0 and 86400 seconds")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0-65535)")
    return value


def _cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    from ..terminal.demo_llm import chosen_llm

    try:
        from ..server import TOKEN_ENV, create_app
    except ImportError as exc:
        raise CommandError(f"`flowkit serve` needs the server extra: {_EXTRA}", code=1) from exc
    token = os.environ.get(TOKEN_ENV) or None
    authenticate = _identities(args)
    if token is None and authenticate is None and not args.read_only:
        raise CommandError(
            f"Set {TOKEN_ENV} to the bearer token clients must send to change threads (e.g. "
            "`export FLOWKIT_SERVER_TOKEN=$(python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')`), give users (--auth FILE, --jwt), or pass "
            "--read-only.",
            code=2,
        )
    if token is not None and len(token) < 16:
        raise CommandError(f"{TOKEN_ENV} is shorter than 16 characters; use a long random one.", 2)
    flows = [load_target(target) for target in args.targets]
    llm = chosen_llm(args, flows)
    location = store_location(args)
    app = create_app(
        flows,
        # Requests and background runs each hold a connection while they touch the store.
        store=open_for_writing(location, connections=10),
        llm=llm,
        token=None if args.read_only else token,
        open_reads=args.open_reads,
        authenticate=None if args.read_only else authenticate,
        cors_origins=args.cors_origin,
        timer_poll_s=None if args.no_timers else args.timer_poll,
    )
    names = ", ".join(f.name for f in flows)
    sock = _listen(args.host, args.port)
    port = sock.getsockname()[1]  # --port 0: the one the system chose
    host = f"[{args.host}]" if ":" in args.host else args.host
    from ..server._limits import Limits
    from ..server._uvicorn import run

    limits = Limits(
        max_connections=args.max_connections,
        header_timeout_s=args.header_timeout,
        body_timeout_s=args.body_timeout,
    )

    hurry = threading.Event()

    def ready() -> None:
        out.write(f"serving {names} from store {shown(location)} on http://{host}:{port}/\n")
        out.flush()

    with _following(location, app.state.flowkit.hub.changed):
        # Ours for after the server: ``run`` stops the server on a signal while it serves
        # (from before ``ready`` says so) and puts these back when it stops, so a signal from
        # then on is heard here (never a KeyboardInterrupt).
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: hurry.set())
        if run(app, sock, grace_s=_GRACE_S, ready=ready, limits=limits):
            hurry.set()
    _let_runs_finish(hurry, _GRACE_S)
    return 0


def _identities(args: argparse.Namespace) -> Callable[[str], Any] | None:
    """The ``authenticate`` hook of ``--auth`` and ``--jwt`` (both: a JWT-looking token is
    checked as a JWT, any other against the users file), or ``None``."""
    jwt_options = (args.jwt_issuer, args.jwt_audience, args.jwt_jwks)
    if not args.jwt and any(jwt_options):
        raise CommandError("--jwt-issuer, --jwt-audience and --jwt-jwks go with --jwt.", 2)
    hooks: list[Callable[[str], Any]] = []
    if args.jwt:
        from ..server import JwtVerifier

        hooks.append(
            JwtVerifier(
                jwks=args.jwt_jwks or "",
                issuer=args.jwt_issuer or "",
                audience=args.jwt_audience or "",
                roles_claim=args.jwt_roles_claim,
            )
        )
    if args.auth:
        from ..server import load_users

        hooks.append(load_users(args.auth))
    if len(hooks) < 2:
        return hooks[0] if hooks else None

    def either(token: str) -> Any:
        for hook in hooks:
            found = hook(token)
            if found is not None:
                return found
        return None

    return either


@contextmanager
def _following(location: str, changed: Callable[[str], None]) -> Iterator[None]:
    """While serving from PostgreSQL, call ``changed(thread_id)`` for each commit to a thread
    from now on, whichever process made it (the hub reads the thread then, not at its poll)."""
    if not is_database_url(location):
        yield
        return
    from ..stores.postgres import EventFeed

    feed = EventFeed(location)
    try:
        feed.skip_ahead()  # what is committed already, the hub reads from the store itself
    except BaseException:
        feed.close()
        raise
    stop = threading.Event()
    reader = threading.Thread(
        target=_follow, args=(feed, changed, stop), name="flowkit-feed", daemon=True
    )
    reader.start()
    try:
        yield
    finally:
        stop.set()
        reader.join()


def _follow(feed: EventFeed, changed: Callable[[str], None], stop: threading.Event) -> None:
    """Deliver ``feed`` until ``stop``. A lost connection is the feed's own to make again,
    from its cursor (``EventFeed.run``); the hub's poll finds the commits meanwhile."""
    feed.subscribe(lambda event: changed(event.thread_id))
    try:
        feed.run(stop)
    finally:
        feed.close()


def _let_runs_finish(hurry: threading.Event, grace_s: float) -> None:
    """Give runs still going in worker threads ``grace_s`` to finish (another Ctrl-C: none),
    then leave them.

    Python waits for such threads before it exits, which could be minutes of LLM calls. The
    journal holds every finished step, so a run cut here resumes from its last checkpoint.
    """

    def busy() -> list[threading.Thread]:
        here = threading.current_thread()
        return [t for t in threading.enumerate() if not t.daemon and t is not here]

    deadline = time.monotonic() + grace_s
    running = busy()
    while running and not hurry.is_set() and time.monotonic() < deadline:
        running[0].join(0.1)
        running = busy()
    if running:
        print(
            # Threads, not runs, are what can be counted here (a run may hold several).
            "flowkit: stopped with runs still going; `flowkit recover` resumes their threads "
            "from the last checkpoint.",
            file=sys.stderr,
        )
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # skip waiting for those threads: nothing else is left to do


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``, bound before anything says the server is up."""
    where = f"Port {port} on {host}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError):
        raise CommandError(f"Cannot find the address {host!r}; give one with --host.", 2) from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart at once
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise CommandError(_cannot_listen(exc, where, host), code=2) from None
    return sock


def _cannot_listen(exc: OSError, where: str, host: str) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"{where} is in use; pick another with --port."
    if exc.errno == errno.EACCES:
        return f"{where} needs privileges this user lacks; pick one above 1023 with --port."
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine; pick another with --host."
    return f"Cannot listen on {where.lower()}: {exc.strerror or exc}."
