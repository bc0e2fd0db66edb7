"""Real servers on loopback for the event tests: uvicorn in a thread or in a process, and a
small server-sent-events reader."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

HERE = Path(__file__).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def serve_command(
    store: str, port: int, token: str, *options: str, targets: Sequence[str] = ("review",)
) -> tuple[subprocess.Popen[str], str]:
    """``flowkit serve review --store STORE`` (or other ``targets``) on ``port`` in a process,
    up; and its base URL.

    Its stdout and stderr are pipes (read them with ``communicate`` after ``terminate``)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "flowkit", "serve", *targets, "--store", store,
         "--port", str(port), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "FLOWKIT_SERVER_TOKEN": token},
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base, process)
    except BaseException:
        process.kill()
        process.communicate(timeout=30)
        raise
    return process, base


def wait_until_up(base: str, process: subprocess.Popen[str]) -> None:
    """Return once the server ``process`` started answers at ``base``."""
    for _ in range(300):
        if process.poll() is not None:
            raise AssertionError(
                f"the server exited: {process.stderr.read() if process.stderr else ''}"
            )
        try:
            httpx.get(base + "/openapi.json", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("the server did not come up in 30 s")


class ThreadServer:
    """``app`` served by uvicorn on a loopback port, in a thread of this process."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        for _ in range(300):
            if self.server.started:
                return self
            time.sleep(0.05)
        raise AssertionError("uvicorn did not start in 15 s")

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


class ProcessServer:
    """``server_worker.py`` serving the test flows over a JSON-file store, in a process."""

    def __init__(self, store: Path, token: str, port: int | None = None) -> None:
        self.store = store
        self.token = token
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> ProcessServer:
        log = self.store.parent / f"server-{self.port}.log"
        with log.open("ab") as err:
            self.process = subprocess.Popen(
                [sys.executable, str(HERE / "server_worker.py"), str(self.store), str(self.port)],
                env={**os.environ, "FLOWKIT_SERVER_TOKEN": self.token},
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        for _ in range(600):
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited: {log.read_text()[-2000:]}")
            try:
                httpx.get(self.base + "/openapi.json", timeout=1)
                return self
            except httpx.TransportError:
                time.sleep(0.05)
        raise AssertionError("the server did not come up in 30 s")

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()  # SIGKILL: no shutdown, no flush
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)

    def rss_kib(self) -> int:
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")


@dataclass(frozen=True)
class SSE:
    event: str
    id: str | None
    data: Any


def _parse(lines: list[str]) -> SSE | None:
    event, event_id, data = "message", None, []
    for line in lines:
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "id":
            event_id = value
        elif name == "data":
            data.append(value)
    if not data:
        return None
    return SSE(event, event_id, json.loads("\n".join(data)))


def read_events(response: httpx.Response) -> Iterator[SSE]:
    """The events of a streaming response, as they arrive."""
    pending: list[str] = []
    for line in response.iter_lines():
        if line:
            pending.append(line)
            continue
        found = _parse(pending)
        pending = []
        if found is not None:
            yield found


async def aread_events(response: httpx.Response) -> AsyncIterator[SSE]:
    pending: list[str] = []
    async for line in response.aiter_lines():
        if line:
            pending.append(line)
            continue
        found = _parse(pending)
        pending = []
        if found is not None:
            yield found
