"""``flowkit worker --timer-poll S``: the worker fires its flow's due timers every S seconds
(on the wall clock) and says how many it fired when it stops; ``0`` fires none."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _pg import require_postgres, scratch_database

from flowkit import Runner
from flowkit.cli import main
from flowkit.stores.postgres import PostgresStore
from flowkit.workflows import load_flow

TARGET = f"{Path(__file__).resolve().parent.parent / 'flows' / 'short_deadline.py'}:flow"


def test_a_worker_fires_a_deadline_that_passes_while_it_runs(tmp_path: Path) -> None:
    require_postgres()
    log = tmp_path / "worker.log"
    with scratch_database(migrated=True) as database, PostgresStore(database) as store:
        client = Runner(load_flow(TARGET), store=store)
        client.start("ticket")
        with log.open("wb") as out:
            worker = subprocess.Popen(
                [sys.executable, "-m", "flowkit", "worker", TARGET, "--timer-poll", "0.05"],
                env={**os.environ, "FLOWKIT_STORE": database},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + 60
            while client.get_state("ticket").status != "done" and time.monotonic() < deadline:
                assert worker.poll() is None, log.read_text()
                time.sleep(0.05)
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(60) == 0, log.read_text()
        chased = client.get_state("ticket")
        timers = [r.kind for r in store.records("ticket")].count("timer")
    assert (chased.status, chased.state.chased, timers) == ("done", 1, 1)
    assert "1 timers fired" in log.read_text()


@pytest.mark.parametrize("poll", ["-1", "inf", "soon"])
def test_a_timer_poll_that_is_no_time_is_a_usage_error(poll: str) -> None:
    argv = ["worker", TARGET, "--store", "postgresql://x@127.0.0.1/none", "--timer-poll", poll]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2


def test_history_names_the_gate_whose_deadline_fired(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import UTC, datetime, timedelta

    from flowkit.stores import JsonFileStore

    start = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
    with JsonFileStore(tmp_path, fsync=False) as store:
        runner = Runner(load_flow(TARGET), store=store, clock=lambda: start)
        runner.start("ticket")
        assert len(runner.fire_due(now=start + timedelta(minutes=1))) == 1
    assert main(["history", "ticket", "--store", str(tmp_path)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["1", "timer", "wait", "chase"] in [row[:4] for row in rows]


def test_serve_refuses_a_timer_poll_that_is_no_time() -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["serve", TARGET, "--store", "runs", "--timer-poll", "0"])
    assert stopped.value.code == 2
