"""``flowkit serve``: what it needs (the extra, a token), and a real server on loopback."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _live import free_port, serve_command

from flowkit.cli import main

EXTRA = "pip install 'flowkit-workflows[server]'"
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


@pytest.mark.slow
def test_serve_runs_the_api_on_loopback(tmp_path: Path) -> None:
    process, base = serve_command(str(tmp_path), free_port(), TOKEN)
    try:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        made = httpx.post(
            f"{base}/flows/review/threads", json={"thread_id": "t"}, headers=auth, timeout=60
        )
        assert made.status_code == 201 and made.json()["status"] == "waiting"
        refused = httpx.post(f"{base}/flows/review/threads", json={}, timeout=60)
        assert refused.status_code == 401
    finally:
        process.terminate()
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err  # SIGTERM: a clean stop
    assert f"serving review from store {tmp_path} on {base}/" in out
    assert TOKEN not in out + err
    assert (tmp_path / "threads" / "t").is_dir()


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another process (here: this one) listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port: int = holder.getsockname()[1]
        yield port


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("held", "Port {port} on 127.0.0.1 is in use; pick another with --port."),
        ("192.0.2.1", "192.0.2.1 is not an address of this machine; pick another with --host."),
        ("nosuch.invalid", "Cannot find the address 'nosuch.invalid'; give one with --host."),
    ],
    ids=["port in use", "not this machine's", "no such host"],
)
def test_where_it_cannot_listen_is_one_line_and_exit_2_before_it_says_it_serves(
    where: str,
    message: str,
    held_port: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLOWKIT_SERVER_TOKEN", TOKEN)
    host = ["--host", where] if where != "held" else []
    code = main(["serve", "review", "--store", str(tmp_path), "--port", str(held_port), *host])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err == f"flowkit: error: {message.format(port=held_port)}\n"


@pytest.mark.parametrize(
    ("number", "says"),
    [
        (errno.EADDRINUSE, "Port 80 on 0.0.0.0 is in use; pick another with --port."),
        (errno.EACCES, "Port 80 on 0.0.0.0 needs privileges this user lacks; pick one above"),
        (errno.EADDRNOTAVAIL, "0.0.0.0 is not an address of this machine; pick another"),
        (errno.EMFILE, "Cannot listen on port 80 on 0.0.0.0: Too many open files."),
    ],
)
def test_each_reason_it_cannot_listen_says_what_to_change(number: int, says: str) -> None:
    from flowkit.cli.serve import _cannot_listen

    error = OSError(number, os.strerror(number))
    assert _cannot_listen(error, "Port 80 on 0.0.0.0", "0.0.0.0").startswith(says)
