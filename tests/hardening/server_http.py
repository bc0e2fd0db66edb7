"""Hostile HTTP against the server: the ASGI app (``create_app``) through a test client, and
a real ``flowkit serve`` process through raw sockets.

A request is refused with a 4xx (the app's own answers are ``application/problem+json``),
or accepted and what it wrote reads back exactly; a 5xx is a raw exception. After every raw
request the process must still answer a normal one.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from ._stores import new_id, opener
from .registry import OK, TYPED, add, expect

TOKEN = "hardening-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON = {**AUTH, "Content-Type": "application/json"}


class ServerFaultError(Exception):
    """The server answered 5xx (a raw exception inside it), or broke a promise of its API."""


@contextmanager
def _client(tmp: Path) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from flowkit.examples.review import flow as review
    from flowkit.server import create_app

    with opener("jsonfile", tmp)() as store:
        app = create_app([review], store=store, token=TOKEN)
        with TestClient(app, raise_server_exceptions=False) as client:
            yield client


def _outcome(response: Any) -> str:
    if response.status_code >= 500:
        raise ServerFaultError(f"HTTP {response.status_code}: {response.text[:300]}")
    if response.status_code >= 400:
        kind = response.headers.get("content-type", "")
        if kind != "application/problem+json":
            raise ServerFaultError(
                f"HTTP {response.status_code} as {kind!r}: {response.text[:200]}"
            )
        return TYPED
    return OK


#: A request: (method, path, headers, body as bytes or JSON-able, what to check on 2xx).
Check = Callable[[Any, Any, str], None]
Request = tuple[str, str, dict[str, str], Any, Check | None]


def _app_case(request: Request) -> Callable[[Path], str]:
    def run(tmp: Path) -> str:
        with _client(tmp) as client:
            doc = new_id("doc")
            started = client.post("/flows/review/threads", json={"thread_id": doc}, headers=AUTH)
            assert started.status_code == 201, started.text
            method, path, headers, body, check = request
            path = path.replace("{doc}", doc)
            if isinstance(body, tuple):  # pieces, sent chunked
                response = client.request(method, path, headers=headers, content=iter(body))
            elif isinstance(body, bytes | str):
                response = client.request(method, path, headers=headers, content=body)
            elif body is None:
                response = client.request(method, path, headers=headers)
            else:
                response = client.request(method, path, headers=headers, json=body)
            outcome = _outcome(response)
            if outcome == OK and check is not None:
                check(client, response, doc)
            after = client.get(f"/threads/{doc}", headers=AUTH)
            expect(after.status_code == 200, f"the thread is gone: {after.status_code}")
            return outcome

    return run


def _nested(depth: int) -> str:
    return '{"input": {"topic": "t", "x": ' + "[" * depth + "]" * depth + "}}"


def _started_with(field: str, value: Any) -> Check:
    def check(client: Any, response: Any, doc: str) -> None:
        thread = response.json()["thread_id"]
        stored = client.get(f"/threads/{thread}", headers=AUTH).json()["state"]
        expect(stored[field] == value, f"{field} read back as {stored[field]!r:.80}")

    return check


def _exists(thread: str) -> Check:
    def check(client: Any, response: Any, doc: str) -> None:
        expect(response.json()["thread_id"] == thread, "started another thread than asked")
        found = client.get(f"/threads/{thread}", headers=AUTH)
        expect(found.status_code == 200, f"thread {thread} reads back as {found.status_code}")

    return check


def _patched(field: str, value: Any) -> Check:
    def check(client: Any, response: Any, doc: str) -> None:
        stored = client.get(f"/threads/{doc}", headers=AUTH).json()["state"]
        expect(stored[field] == value, f"{field} read back as {stored[field]!r:.80}")

    return check


START = "/flows/review/threads"
MB = 1024 * 1024
APP_REQUESTS: dict[str, Request] = {
    "malformed JSON": ("POST", START, JSON, b'{"thread_id": ', None),
    "JSON with a trailing comma": ("POST", START, JSON, b'{"thread_id": "a",}', None),
    "JSON null": ("POST", START, JSON, b"null", None),
    "a JSON list": ("POST", START, JSON, b"[]", None),
    "a JSON string": ("POST", START, JSON, b'"start"', None),
    "an empty body": ("POST", START, JSON, b"", None),
    "JSON sent as text/plain": (
        "POST",
        START,
        {**AUTH, "Content-Type": "text/plain"},
        b'{"thread_id": "p1"}',
        None,
    ),
    "a form instead of JSON": (
        "POST",
        START,
        {**AUTH, "Content-Type": "application/x-www-form-urlencoded"},
        b"thread_id=f1",
        None,
    ),
    "multipart instead of JSON": (
        "POST",
        START,
        {**AUTH, "Content-Type": "multipart/form-data; boundary=xx"},
        b'--xx\r\nContent-Disposition: form-data; name="thread_id"\r\n\r\nm1\r\n--xx--\r\n',
        None,
    ),
    "no content type": ("POST", START, AUTH, b'{"thread_id": "n1"}', None),
    "a 2 MB body": ("POST", START, JSON, b'{"input": {"topic": "' + b"x" * (2 * MB) + b'"}}', None),
    "a 2 MB body, chunked": (
        "POST",
        START,
        JSON,
        (b'{"input": {"topic": "', b"x" * (2 * MB), b'"}}'),
        None,
    ),
    "nested 65 deep": ("POST", START, JSON, _nested(64).encode(), None),
    "nested 100,000 deep": ("POST", START, JSON, _nested(100_000).encode(), None),
    "invalid UTF-8": ("POST", START, JSON, b'{"input": {"topic": "caf\xe9"}}', None),
    "a UTF-16 body": ("POST", START, JSON, '{"thread_id": "u16"}'.encode("utf-16"), _exists("u16")),
    "a lone surrogate escape": ("POST", START, JSON, b'{"input": {"topic": "\\ud800"}}', None),
    "a NUL escape": (
        "POST",
        START,
        JSON,
        b'{"input": {"topic": "a\\u0000b"}}',
        _started_with("topic", "a\0b"),
    ),
    "NaN": ("POST", START, JSON, b'{"input": {"revision": NaN}}', None),
    "Infinity": ("POST", START, JSON, b'{"input": {"x": Infinity}}', None),
    "1e999 for an int": ("POST", START, JSON, b'{"input": {"revision": 1e999}}', None),
    "an int of 5,000 digits": (
        "POST",
        START,
        JSON,
        b'{"input": {"revision": ' + b"9" * 5000 + b"}}",
        None,
    ),
    "an int of 100 digits": (
        "POST",
        START,
        JSON,
        b'{"input": {"revision": ' + b"9" * 100 + b"}}",
        _started_with("revision", int("9" * 100) + 1),  # the draft node counts one more
    ),
    "duplicate keys": (
        "POST",
        START,
        JSON,
        b'{"thread_id": "dup-a", "thread_id": "dup-b"}',
        _exists("dup-b"),
    ),
    "thread id ../x": ("POST", START, AUTH, {"thread_id": "../x"}, None),
    "thread id empty": ("POST", START, AUTH, {"thread_id": ""}, None),
    "thread id of 200 characters": ("POST", START, AUTH, {"thread_id": "x" * 200}, None),
    "thread id that is a number": ("POST", START, AUTH, {"thread_id": 12}, None),
    "thread id with a newline": ("POST", START, AUTH, {"thread_id": "a\nb"}, None),
    "an unknown flow": ("POST", "/flows/..%2Fx/threads", AUTH, {}, None),
    "input that is a list": ("POST", START, AUTH, {"input": [1, 2]}, None),
    "unknown top-level fields": ("POST", START, AUTH, {"thread_id": "u1", "evil": True}, None),
    "GET a thread ../../etc/passwd": ("GET", "/threads/..%2F..%2Fetc%2Fpasswd", AUTH, None, None),
    "GET a thread ..": ("GET", "/threads/%2e%2e", AUTH, None, None),
    "GET a thread with a NUL": ("GET", "/threads/a%00b", AUTH, None, None),
    "GET a thread with invalid UTF-8": ("GET", "/threads/caf%e9", AUTH, None, None),
    "GET a thread id of 5,000 characters": ("GET", "/threads/" + "x" * 5000, AUTH, None, None),
    "GET history with limit=0": ("GET", "/threads/{doc}/history?limit=0", AUTH, None, None),
    "GET history with limit=abc": ("GET", "/threads/{doc}/history?limit=abc", AUTH, None, None),
    "GET history with offset=-1": ("GET", "/threads/{doc}/history?offset=-1", AUTH, None, None),
    "GET history with limit=10**30": (
        "GET",
        "/threads/{doc}/history?limit=" + "1" + "0" * 30,
        AUTH,
        None,
        None,
    ),
    "GET history with 5,000 query parameters": (
        "GET",
        "/threads/{doc}/history?" + "&".join(f"a{i}=1" for i in range(5000)),
        AUTH,
        None,
        None,
    ),
    "resume with a list": ("POST", "/threads/{doc}/resume", AUTH, {"input": [1]}, None),
    "resume with a wrong type": (
        "POST",
        "/threads/{doc}/resume",
        AUTH,
        {"input": {"approved": "yes please"}},
        None,
    ),
    "resume at gate ../x": (
        "POST",
        "/threads/{doc}/resume",
        AUTH,
        {"input": {"approved": True}, "gate": "../x"},
        None,
    ),
    "resume expecting version -1": (
        "POST",
        "/threads/{doc}/resume",
        AUTH,
        {"input": {"approved": True}, "expected_version": -1},
        None,
    ),
    "resume expecting version 10**20": (
        "POST",
        "/threads/{doc}/resume",
        JSON,
        b'{"input": {"approved": true}, "expected_version": 100000000000000000000}',
        None,
    ),
    "resume with 3,000 characters of feedback": (
        "POST",
        "/threads/{doc}/resume",
        AUTH,
        {"input": {"approved": False, "feedback": "f" * 3000}},
        None,
    ),
    "patch an unknown field": ("PATCH", "/threads/{doc}/state", AUTH, {"values": {"no": 1}}, None),
    "patch a field with a wrong type": (
        "PATCH",
        "/threads/{doc}/state",
        AUTH,
        {"values": {"revision": "x"}},
        None,
    ),
    "patch going to ../x": ("PATCH", "/threads/{doc}/state", AUTH, {"goto": "../x"}, None),
    "patch with NUL and bidi text": (
        "PATCH",
        "/threads/{doc}/state",
        AUTH,
        {"values": {"topic": "a\0\u202eb"}},
        _patched("topic", "a\0\u202eb"),
    ),
    "patch with a 2,001-character reason": (
        "PATCH",
        "/threads/{doc}/state",
        AUTH,
        {"reason": "r" * 2001},
        None,
    ),
    "fork to ../x": ("POST", "/threads/{doc}/fork", AUTH, {"new_thread_id": "../x"}, None),
    "fork at a string": ("POST", "/threads/{doc}/fork", AUTH, {"at": "x"}, None),
    "fork at 10**20": ("POST", "/threads/{doc}/fork", JSON, b'{"at": 100000000000000000000}', None),
    "PUT a thread": ("PUT", "/threads/{doc}", AUTH, {}, None),
    "an unknown path": ("GET", "/nowhere/../threads", AUTH, None, None),
    "no token": ("POST", START, {}, {"thread_id": "nt"}, None),
    "a wrong token": ("POST", START, {"Authorization": "Bearer nope"}, {}, None),
    "the token in lower-case scheme": (
        "POST",
        START,
        {"Authorization": f"bearer {TOKEN}"},
        {"thread_id": "lc"},
        _started_with("topic", "flowkit"),
    ),
    "a token with a trailing space": (
        "POST",
        START,
        {"Authorization": f"Bearer {TOKEN} "},
        {},
        None,
    ),
    "a 100 KB token": ("POST", START, {"Authorization": "Bearer " + "t" * 100_000}, {}, None),
    "Basic auth": ("POST", START, {"Authorization": "Basic dXNlcjpwYXNz"}, {}, None),
    "a Latin-1 token": ("POST", START, {"Authorization": b"Bearer caf\xe9"}, {}, None),  # type: ignore[dict-item]
    "delete without a token": ("DELETE", "/threads/{doc}", {}, None, None),
}

for _name, _request in APP_REQUESTS.items():
    add(f"server/app/{_name}", _app_case(_request))


# -- a real `flowkit serve`, through raw sockets -------------------------------------------


@cache
def _serve() -> str:
    """``flowkit serve review`` on a free port for this process's cases; its host:port."""
    root = Path(tempfile.mkdtemp(prefix="hardening-serve-"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with (root / "serve.log").open("ab") as log:  # the child keeps its own copy
        process = subprocess.Popen(
            [sys.executable, "-m", "flowkit", "serve", "review", "--store", str(root / "store"),
             "--port", str(port)],
            stdout=subprocess.DEVNULL, stderr=log,
            env={**os.environ, "FLOWKIT_SERVER_TOKEN": TOKEN},
        )  # fmt: skip
    atexit.register(_stop, process)
    for _ in range(300):
        if process.poll() is not None:
            raise RuntimeError((root / "serve.log").read_text()[-2000:])
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("flowkit serve did not come up in 30 s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)


def _exchange(address: str, data: bytes, *, wait_s: float = 20.0) -> bytes:
    host, port = address.split(":")
    with socket.create_connection((host, int(port)), timeout=wait_s) as conn:
        conn.sendall(data)
        received = b""
        while True:
            try:
                piece = conn.recv(65536)
            except TimeoutError:
                raise TimeoutError(f"no answer in {wait_s} s: {received[:100]!r}") from None
            except ConnectionResetError:
                return received
            if not piece:
                return received
            received += piece
            if b"\r\n\r\n" in received and _complete(received):
                return received


def _complete(received: bytes) -> bool:
    head, _, body = received.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip() or 0)
    return True


def _status(answer: bytes) -> int | None:
    parts = answer.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
        return None
    return int(parts[1])


def _raw_case(data: bytes) -> Callable[[Path], str]:
    def run(tmp: Path) -> str:
        address = _serve()
        answer = _exchange(address, data)
        status = _status(answer)
        healthy = _exchange(
            address,
            f"GET /flows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Connection: close\r\n\r\n".encode(),
        )
        if _status(healthy) != 200:
            raise ServerFaultError(f"a normal request then got {healthy[:200]!r}")
        if status is None:
            return TYPED  # the server closed the connection without an answer
        if status >= 500:
            raise ServerFaultError(f"HTTP {status}: {answer[:300]!r}")
        if status >= 400:
            return TYPED
        body = answer.partition(b"\r\n\r\n")[2]
        expect(bool(body) and _parses(body), f"a {status} that is not JSON: {answer[:200]!r}")
        return OK

    return run


def _parses(body: bytes) -> bool:
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


_A = f"Authorization: Bearer {TOKEN}\r\n".encode()
RAW_REQUESTS: dict[str, bytes] = {
    "a request line of garbage": b"\x00\xff\xfe garbage\r\n\r\n",
    "HTTP/0.9": b"GET /flows\r\n\r\n",
    "an unknown HTTP version": b"GET /flows HTTP/9.9\r\nHost: x\r\n\r\n",
    "a header without a colon": b"GET /flows HTTP/1.1\r\nHost: x\r\nnocolon\r\n\r\n",
    "a header with non-ASCII bytes": b"GET /flows HTTP/1.1\r\nHost: x\r\nX-A: \xff\xfe\r\n"
    b"Connection: close\r\n\r\n",
    "a path with invalid UTF-8": b"GET /threads/\xff\xfe HTTP/1.1\r\nHost: x\r\n"
    + _A
    + b"Connection: close\r\n\r\n",
    "a path of dot segments": b"GET /threads/../../../etc/passwd HTTP/1.1\r\nHost: x\r\n"
    + _A
    + b"Connection: close\r\n\r\n",
    "a 100 KB path": b"GET /threads/" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    "a 1 MB header": b"GET /flows HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * MB + b"\r\n\r\n",
    "Content-Length: -1": b"POST /flows/review/threads HTTP/1.1\r\nHost: x\r\n"
    + _A
    + b"Content-Length: -1\r\n\r\n{}",
    "Content-Length: abc": b"POST /flows/review/threads HTTP/1.1\r\nHost: x\r\n"
    + _A
    + b"Content-Length: abc\r\n\r\n{}",
    "two Content-Lengths that differ": b"POST /flows/review/threads HTTP/1.1\r\nHost: x\r\n"
    + _A
    + b"Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}",
    "Content-Length and chunked together": b"POST /flows/review/threads HTTP/1.1\r\nHost: x\r\n"
    + _A
    + b"Content-Type: application/json\r\nContent-Length: 4\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    "a bad chunk size": b"POST /flows/review/threads HTTP/1.1\r\nHost: x\r\n"
    + _A
    + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    "a body announced as 2 GB": b"POST /flows/review/threads HTTP/1.1\r\nHost: x\r\n"
    + _A
    + b"Content-Type: application/json\r\nContent-Length: 2147483648\r\n\r\n{}",
    "an unknown method": b"BREW /flows HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "a request with no Host": b"GET /flows HTTP/1.1\r\n" + _A + b"Connection: close\r\n\r\n",
}

for _name, _data in RAW_REQUESTS.items():
    add(f"server/flowkit serve/{_name}", _raw_case(_data), bound_s=90)
