"""``flowkit serve`` stops on SIGINT or SIGTERM whatever its clients hold open: an event stream
ends, a WebSocket is closed as going away, a request still running gets a 503, and the process
exits 0 without a traceback (a second Ctrl-C too).

Each test runs the real command in a subprocess and real clients on loopback; the only clock is
a generous timeout on waiting for the process.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from socket import create_connection
from typing import Any

import httpx
import pytest
from _live import read_events
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

TOKEN = "shutdown-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FLOWS = Path(__file__).parent / "serve_flows.py"
#: Ctrl-C, and what `kill` and service managers send (the same path: left to the slow run).
SIGNALS = [
    pytest.param(signal.SIGINT, id="SIGINT"),
    pytest.param(signal.SIGTERM, id="SIGTERM", marks=pytest.mark.slow),
]


class Served:
    """``flowkit serve`` on a port the system picks (``--port 0``), read from what it prints."""

    def __init__(self, store: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "flowkit", "serve", "review", f"{FLOWS}:chat",
             f"{FLOWS}:stuck", "--store", str(store), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "FLOWKIT_SERVER_TOKEN": TOKEN},
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # printed once the socket listens
        found = re.search(r"on http://127\.0\.0\.1:(\d+)/$", line.strip())
        if found is None:
            self.process.kill()
            raise AssertionError(f"no address in {line!r}: {self.process.communicate()[1]}")
        self.base = f"http://127.0.0.1:{found[1]}"

    def stop(self, *signals: signal.Signals) -> tuple[int, str]:
        """Send ``signals`` one after the other, each once the one before was heard; the exit
        code and stderr."""
        for number, sig in enumerate(signals):
            if number:
                self._wait_until_it_stops_listening()
            self.process.send_signal(sig)
        _, err = self.process.communicate(timeout=60)
        return self.process.returncode, err

    def _wait_until_it_stops_listening(self) -> None:
        # Two signals sent at once reach the process as one (a pending signal is not queued
        # twice): the second is sent once the first was handled, which closes the listener.
        port = int(self.base.rsplit(":", 1)[1])
        deadline = time.monotonic() + 30
        while self.process.poll() is None:
            try:
                create_connection(("127.0.0.1", port), timeout=5).close()
            except ConnectionRefusedError:
                return
            assert time.monotonic() < deadline, "still listening 30 s after the signal"
            time.sleep(0.02)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    server = Served(tmp_path / "store")
    yield server
    if server.process.poll() is None:
        server.process.kill()
        server.process.communicate(timeout=30)


def assert_stopped_cleanly(code: int, err: str) -> None:
    assert code == 0, err
    assert "Traceback" not in err and "CancelledError" not in err, err


@pytest.mark.parametrize("sig", SIGNALS)
def test_an_open_event_stream_ends_and_the_server_exits_0(
    served: Served, sig: signal.Signals
) -> None:
    made = httpx.post(
        f"{served.base}/flows/review/threads", json={"thread_id": "r"}, headers=AUTH, timeout=60
    )
    assert made.status_code == 201, made.text
    with httpx.stream(
        "GET", f"{served.base}/threads/r/events", headers=AUTH, timeout=60
    ) as response:
        events = read_events(response)
        assert next(events).event == "ready"
        code, err = served.stop(sig)
        assert list(events) == []  # the stream ended as a stream ends: no error, nothing more
    assert_stopped_cleanly(code, err)
    assert err == ""


@pytest.mark.parametrize("sig", SIGNALS)
def test_an_open_websocket_is_closed_as_going_away(served: Served, sig: signal.Signals) -> None:
    made = httpx.post(
        f"{served.base}/flows/chat/threads", json={"thread_id": "t"}, headers=AUTH, timeout=60
    )
    assert made.status_code == 201, made.text
    url = served.base.replace("http://", "ws://") + "/threads/t/ws"
    with connect(url, additional_headers=AUTH, open_timeout=60) as socket:
        socket.send("hello")
        while '"message"' not in str(socket.recv(timeout=60)):  # subscribed and answering
            pass
        code, err = served.stop(sig)
        with pytest.raises(ConnectionClosed) as closed:
            while True:  # the frames still on their way, then the close
                socket.recv(timeout=60)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    assert_stopped_cleanly(code, err)


def _wait_for_stuck_run(served: Served) -> dict[str, Any]:
    """Start a run that never ends and wait on it in a thread; what the wait got."""
    answer: dict[str, Any] = {}

    def wait() -> None:
        try:
            response = httpx.post(
                f"{served.base}/flows/stuck/threads", json={"thread_id": "s"}, headers=AUTH,
                timeout=60,
            )  # fmt: skip
            answer.update(status=response.status_code, body=response.json())
        except httpx.HTTPError as exc:
            answer["error"] = repr(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    seen = httpx.get(f"{served.base}/threads/s", headers=AUTH, timeout=60)
    while seen.status_code == 404:  # until the run has started the thread
        seen = httpx.get(f"{served.base}/threads/s", headers=AUTH, timeout=60)
    assert seen.status_code == 200, seen.text
    answer["waiter"] = waiter
    return answer


@pytest.mark.parametrize(
    "signals",
    [
        pytest.param((signal.SIGINT,), id="one Ctrl-C: waits its grace", marks=pytest.mark.slow),
        pytest.param((signal.SIGINT, signal.SIGINT), id="a second Ctrl-C: stops at once"),
        pytest.param((signal.SIGTERM, signal.SIGINT), id="SIGTERM, then Ctrl-C"),
    ],
)
def test_a_run_still_going_is_left_to_resume_later_and_its_request_gets_a_503(
    served: Served, signals: tuple[signal.Signals, ...]
) -> None:
    answer = _wait_for_stuck_run(served)
    code, err = served.stop(*signals)
    answer["waiter"].join(timeout=60)
    assert answer.get("status") == 503, answer
    assert answer["body"]["code"] == "shutting_down"
    assert_stopped_cleanly(code, err)
    assert "stopped with runs still going; `flowkit recover` resumes" in err


@pytest.mark.slow
def test_a_browser_with_the_review_page_open_does_not_hold_the_server_up(
    served: Served, browser: Any
) -> None:
    made = httpx.post(
        f"{served.base}/flows/review/threads", json={"thread_id": "r"}, headers=AUTH, timeout=60
    )
    assert made.status_code == 201, made.text
    page = browser.new_page()
    page.goto(served.base + "/")
    page.fill("#token", TOKEN)
    page.click("#token-form button")
    page.goto(served.base + "/#/threads/r")
    page.locator("#live", has_text="live").wait_for()  # following the thread's events
    code, err = served.stop(signal.SIGINT)
    assert_stopped_cleanly(code, err)
    assert err == ""
    page.locator("#live", has_text="reconnecting").wait_for()  # and says so, for a person


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_right_after_the_serving_line_stops_the_server(
    tmp_path: Path, sig: signal.Signals
) -> None:
    # The window between the line and uvicorn taking the signals over: a signal there was
    # once heard by nobody, and the server served on.
    for attempt in range(5):
        server = Served(tmp_path / f"store-{attempt}")
        server.process.send_signal(sig)
        try:
            _, err = server.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.communicate(timeout=30)
            raise AssertionError(
                f"attempt {attempt + 1}: still serving 30 s after {sig.name}"
            ) from None
        assert_stopped_cleanly(server.process.returncode, err)
