"""Worker processes for the Postgres tests: ``flowkit worker`` on the test flows, and SQL
counts read straight from the tables (what the chaos and crash tests verify)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FLOWS = Path(__file__).with_name("flows.py")
TARGET = f"{FLOWS}:STEPS"


def spawn_worker(
    url: str,
    schema: str,
    *,
    concurrency: int = 1,
    lease: float = 1.5,
    pause: float = 0.0,
    grace: float = 30.0,
    log: Path | None = None,
) -> subprocess.Popen[bytes]:
    """``flowkit worker`` on ``STEPS`` in a new process; its output goes to ``log`` (both
    streams, appended) or nowhere."""
    env = {**os.environ, "FLOWKIT_TEST_STEP_PAUSE": str(pause)}
    command = [sys.executable, "-m", "flowkit", "worker", TARGET, "--store", url]
    command += ["--schema", schema, "--concurrency", str(concurrency)]
    command += ["--lease", str(lease), "--grace", str(grace)]
    if log is None:
        return subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
    with open(log, "ab") as out:  # the child keeps its own descriptor
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


def query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql.encode(), params).fetchall()


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
