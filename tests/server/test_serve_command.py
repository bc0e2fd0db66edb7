"""``flowkit serve``: what it needs (the extra, a token), and a real server on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

EXTRA = "pip install 'flowkit[server]'"
TOKEN = "serve-token-0123456789abcdef"


def _python(code: str, *, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_import_flowkit_and_the_command_tree_load_nothing_of_the_server() -> None:
    done = _python(
        "import sys, flowkit; from flowkit.cli._main import build_parser; build_parser(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('fastapi', 'starlette', 'uvicorn') or m.startswith('flowkit.server')))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_missing_extra_says_exactly_what_to_install(tmp_path: Path) -> None:
    blocked = "import sys; sys.modules['fastapi'] = None; "
    done = _python(blocked + "import flowkit.server")
    assert done.returncode == 1
    assert EXTRA in done.stderr and "ImportError" in done.stderr
    done = _python(
        blocked + f"from flowkit.cli import main; sys.exit(main(['serve', 'review', '--store', "
        f"{str(tmp_path)!r}]))",
        env={"FLOWKIT_SERVER_TOKEN": TOKEN},
    )
    assert done.returncode == 1
    assert done.stderr.strip() == f"flowkit: error: `flowkit serve` needs the server extra: {EXTRA}"
    assert "Traceback" not in done.stderr


def test_serve_wants_a_token_unless_read_only(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "FLOWKIT_SERVER_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "flowkit", "serve", "review", "--store", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert "Set FLOWKIT_SERVER_TOKEN" in done.stderr and "--read-only" in done.stderr
    short = subprocess.run(
        [sys.executable, "-m", "flowkit", "serve", "review", "--store", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "FLOWKIT_SERVER_TOKEN": "short"},
        check=False,
    )
    assert short.returncode == 2 and "shorter than 16" in short.stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_until_up(base: str, process: subprocess.Popen[str]) -> None:
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


@pytest.mark.slow
def test_serve_runs_the_api_on_loopback(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "flowkit", "serve", "review", "--store", str(tmp_path),
         "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "FLOWKIT_SERVER_TOKEN": TOKEN},
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base, process)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        made = httpx.post(f"{base}/flows/review/threads", json={"thread_id": "t"}, headers=auth)
        assert made.status_code == 201 and made.json()["status"] == "waiting"
        assert httpx.post(f"{base}/flows/review/threads", json={}).status_code == 401
    finally:
        process.terminate()
        out, err = process.communicate(timeout=30)
    assert f"serving review from store {tmp_path} on {base}/" in out
    assert TOKEN not in out + err
    assert (tmp_path / "threads" / "t").is_dir()
