"""``flowkit serve`` against clients that send slowly or nothing: a request's head and body must
come within their timeouts, or the connection is answered 408 and closed; past the connection
cap a new one is answered 503 at once; normal requests go on being served throughout.

A real server process on loopback; the only clock is a bounded wait for each socket to be
closed by the server (30 s), far above the 1 s timeouts set here.
"""

from __future__ import annotations

import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _live import free_port, serve_command
from serve_common import AUTH, TOKEN

pytestmark = pytest.mark.slow

WAIT_S = 30.0


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[object]:
    processes: list[subprocess.Popen[str]] = []

    def start(*options: str) -> str:
        process, base = serve_command(str(tmp_path / "store"), free_port(), TOKEN, *options)
        processes.append(process)
        return base

    yield start
    for process in processes:
        process.terminate()
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate(timeout=30)


def connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=WAIT_S)


def until_closed(sockets: list[socket.socket]) -> dict[socket.socket, bytes]:
    """What the server sent each socket before closing it; fails if any stays open."""
    received = {sock: b"" for sock in sockets}
    open_ = set(sockets)
    with selectors.DefaultSelector() as selector:
        for sock in sockets:
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ)
        deadline = time.monotonic() + WAIT_S
        while open_ and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=1.0):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    chunk = sock.recv(65536)
                except ConnectionResetError:
                    chunk = b""
                if chunk:
                    received[sock] += chunk
                else:
                    selector.unregister(sock)
                    open_.discard(sock)
    assert not open_, f"{len(open_)} of {len(sockets)} connections still open after {WAIT_S} s"
    return received


def status_of(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1]) if raw.startswith(b"HTTP/1.1 ") else 0


def test_half_sent_requests_are_closed_and_normal_requests_go_on(serve: object) -> None:
    base = serve("--header-timeout", "1", "--body-timeout", "1")  # type: ignore[operator]
    silent = [connect(base) for _ in range(100)]  # connected, nothing sent
    half_heads = []
    for _ in range(200):
        sock = connect(base)
        sock.sendall(b"GET /flows HTTP/1.1\r\nHost: x\r\nAuthorization: Bear")
        half_heads.append(sock)
    half_bodies = []
    for _ in range(50):
        sock = connect(base)
        sock.sendall(
            b"POST /flows/review/threads HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
            b"\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: 100\r\n\r\n"
            b'{"thread_id": "slow'
        )
        half_bodies.append(sock)
    try:
        normal = httpx.get(f"{base}/flows", headers=AUTH, timeout=WAIT_S)
        assert normal.status_code == 200, normal.text
        received = until_closed(silent + half_heads + half_bodies)
        assert {status_of(received[s]) for s in half_heads + half_bodies} == {408}
        assert all(b'"code": "request_timeout"' in received[s] for s in half_bodies)
        # A body cut short never reaches the app as if it were whole.
        threads = httpx.get(f"{base}/threads", headers=AUTH, timeout=WAIT_S).json()
        assert threads["total"] == 0
        assert httpx.get(f"{base}/flows", headers=AUTH, timeout=WAIT_S).status_code == 200
    finally:
        for sock in silent + half_heads + half_bodies:
            sock.close()


def test_past_the_connection_cap_new_connections_get_503_until_the_stale_ones_time_out(
    serve: object,
) -> None:
    base = serve("--max-connections", "20", "--header-timeout", "5")  # type: ignore[operator]
    held = [connect(base) for _ in range(20)]
    over: list[socket.socket] = []
    try:
        over += [connect(base) for _ in range(30)]
        refused = until_closed(over)  # answered and closed at once, not held open
        answered = [status_of(raw) for raw in refused.values()]
        assert set(answered) <= {503, 408} and 503 in answered, answered
        until_closed(held)  # the stale ones time out and free their places
        after = httpx.get(f"{base}/flows", headers=AUTH, timeout=WAIT_S)
        assert after.status_code == 200, after.text
    finally:
        for sock in held + over:
            sock.close()


def test_a_request_sent_whole_is_served_on_a_kept_alive_connection(serve: object) -> None:
    base = serve("--header-timeout", "5", "--body-timeout", "5")  # type: ignore[operator]
    with httpx.Client(headers=AUTH, timeout=WAIT_S) as client:
        for _ in range(3):  # the deadlines start again with each request
            made = client.post(f"{base}/flows/review/threads", json={})
            assert made.status_code == 201, made.text


def test_limits_that_make_no_sense_are_refused_by_the_command(tmp_path: Path) -> None:
    for option, value in (("--max-connections", "0"), ("--header-timeout", "nan"),
                          ("--body-timeout", "-1")):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "flowkit", "serve", "review", "--store", str(tmp_path),
             option, value],
            check=False, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert option in done.stderr
