"""Running the app under uvicorn until SIGINT or SIGTERM, then stopping in bounded time.

uvicorn waits for every open response before it stops an app, and an event stream or a
WebSocket never ends by itself: a browser with the review page open kept the server up for
good. Here the first signal ends every stream (a WebSocket closes with 1001, going away), waits
up to ``grace_s`` for the requests still running, then stops the app; a second signal stops the
waiting. Neither prints a traceback, and the process goes on to exit normally.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Callable
from dataclasses import replace
from types import FrameType

import uvicorn
from fastapi import FastAPI

from ..foundation._logging import get_logger
from ._context import Server
from ._hub import Hub
from ._limits import Limits, fitting_connections, guarded_protocol

__all__ = ["run"]


def run(
    app: FastAPI,
    sock: socket.socket,
    *,
    grace_s: int = 5,
    ready: Callable[[], None] = lambda: None,
    limits: Limits | None = None,
) -> bool:
    """Serve ``app`` on the listening ``sock`` until SIGINT or SIGTERM; return once stopped,
    whether a second signal hurried it (then nothing else should wait either).

    ``ready`` is called (to say the server is up) once a signal already stops the server:
    uvicorn takes the signals over only later, once its loop runs, and a signal in between
    must not be lost. ``limits``: connections and request deadlines (``Limits()``)."""
    limits = limits or Limits()
    cap = fitting_connections(limits.max_connections)
    if cap < limits.max_connections:
        get_logger().warning(
            "server_connections_capped", asked=limits.max_connections, cap=cap,
            reason="open-files limit (ulimit -n)",
        )  # fmt: skip
        limits = replace(limits, max_connections=cap)
    config = uvicorn.Config(
        app,
        http=guarded_protocol(limits),
        access_log=False,  # the app logs each request itself, without query strings
        log_level="warning",
        server_header=False,
        timeout_graceful_shutdown=grace_s,
    )
    errors = logging.getLogger("uvicorn.error")
    cut_short = _CutShort()
    errors.addFilter(cut_short)
    served: Server = app.state.flowkit
    server = _Server(config, served.hub)
    previous = {sig: signal.signal(sig, server.handle_exit) for sig in _SIGNALS}
    try:
        ready()
        server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        errors.removeFilter(cut_short)
    return server.force_exit


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, hub: Hub) -> None:
        super().__init__(config)
        self._hub = hub

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Not uvicorn's own: once stopped, it raises each signal it caught again, so the
        # process would end in a KeyboardInterrupt or be killed by the SIGTERM.
        if self.should_exit:
            self.force_exit = True  # a second signal: stop waiting for running requests
        self.should_exit = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._hub.close_streams()
        # Let the stream handlers say goodbye (a WebSocket's 1001) before uvicorn closes
        # what is still open its own way (1012, "service restart").
        await self._hub.streams_closed(timeout_s=1.0)
        await super().shutdown(sockets)
        if self.force_exit:
            # uvicorn skips the app's own shutdown when forced; the hub and the run pool
            # still stop in order (quickly: neither waits for a run).
            await self.lifespan.shutdown()


class _CutShort(logging.Filter):
    """uvicorn logs a request cancelled at shutdown as an error with a whole traceback: a run
    the request waited for was still going. One line says so instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, asyncio.CancelledError):
            record.msg = "A request still running at shutdown was cut short."
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True
