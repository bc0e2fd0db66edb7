"""The sas demo served as docs/server.md shows it: `flowkit serve sas --llm replay:demo`, no
`--teaching`, and any number of threads asking the demo's request."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from flowkit.sas.demo import FEEDBACK, REQUEST

pytestmark = pytest.mark.slow

TOKEN = "sas-demo-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _serve(store: Path, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "flowkit", "serve", "sas", "--store", str(store),
         "--port", "0", "--llm", "replay:demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, "FLOWKIT_SERVER_TOKEN": TOKEN},
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()  # `serving sas from store ... on http://HOST:PORT/`
    if not line.startswith("serving "):
        process.kill()
        raise AssertionError(f"the server did not start: {line}{process.communicate()[1]}")
    return process, line.rsplit(" on ", 1)[1].strip().rstrip("/")


def _settled(base: str, thread: str) -> dict[str, Any]:
    """The thread once no run of it is going on."""
    for _ in range(1200):
        got = httpx.get(f"{base}/threads/{thread}", headers=AUTH, timeout=60)
        data: dict[str, Any] = got.json()
        if data["status"] not in ("pending", "running"):
            return data
        time.sleep(0.1)
    raise AssertionError(f"thread {thread} still running after 120 s")


def _through_the_cycle(base: str, thread: str) -> dict[str, Any]:
    made = httpx.post(
        f"{base}/flows/sas/threads",
        json={"thread_id": thread, "input": {"user_input": REQUEST}},
        headers=AUTH,
        timeout=120,
    )
    assert made.status_code == 201, made.text
    for answer in ({"action": "feedback", "message": FEEDBACK}, {"action": "approve"}, None):
        data = _settled(base, thread)
        assert data["status"] == "waiting" and not data["state"]["is_error"], (
            thread,
            data["node"],
            data["state"]["error_message"],
        )
        given = answer or {"action": "approve"}
        sent = httpx.post(
            f"{base}/threads/{thread}/resume", json={"input": given}, headers=AUTH, timeout=120
        )
        assert sent.status_code == 200, sent.text
    return _settled(base, thread)


def test_every_thread_asking_the_demo_request_gets_the_recorded_answers(tmp_path: Path) -> None:
    process, base = _serve(tmp_path / "store", tmp_path)
    try:
        finished = [_through_the_cycle(base, thread) for thread in ("first", "second")]
    finally:
        process.terminate()
        process.communicate(timeout=30)
    for data in finished:
        state = data["state"]
        assert (data["status"], state["is_error"]) == ("done", False), state["error_message"]
        assert Path(state["final_flow_xml_path"]).is_file()
        # No --teaching: the demo's own table named the points (P1 is its taught safe point).
        assert "safe point" in state["sas_step3_mapping_report"]
