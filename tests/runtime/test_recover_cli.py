"""`flowkit recover`: a thread SIGKILLed inside a node is found, recovered and finishes.

The child process (``crash_worker.py``) starts a thread whose node ``slow`` prints "inside"
and sleeps; the parent kills it there, then uses the command line as an operator would.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from flowkit import Runner
from flowkit.cli import main
from flowkit.stores import AttemptMarker, JsonFileStore
from flowkit.workflows import load_flow

WORKER = Path(__file__).with_name("crash_worker.py")
TARGET = f"{WORKER}:flow"


def kill_inside_slow(root: Path, thread_id: str, *, markers: bool = True) -> None:
    env = {**os.environ, "FLOWKIT_CRASH_SLEEP": "1"}
    args = [sys.executable, str(WORKER), str(root), thread_id]
    args += [] if markers else ["--no-markers"]
    with subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=env) as child:
        assert child.stdout is not None
        assert child.stdout.readline() == "inside\n", "the worker never reached `slow`"
        child.send_signal(signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.parametrize(
    ("markers", "rule"), [(True, "node_never_finished"), (False, "interrupted_run")]
)
def test_a_thread_killed_mid_node_is_detected_recovered_and_finishes(
    markers: bool,
    rule: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FLOWKIT_CRASH_SLEEP", raising=False)
    root = tmp_path / "store"
    kill_inside_slow(root, "job-1", markers=markers)
    journal = root / "threads" / "job-1" / "journal.jsonl"
    before = journal.read_bytes()

    assert main(["recover", "--store", str(root), "--dry-run", "--flow", TARGET]) == 0
    out = capsys.readouterr().out
    assert out.startswith("job-1  flow crashy: pending at slow (version 1)\n")
    assert f"  problem   {rule}: " in out
    assert "  strategy  resume -> slow\n" in out
    assert out.endswith("  result    dry run: nothing written\n")
    assert journal.read_bytes() == before

    assert main(["recover", "--store", str(root), "--flow", TARGET]) == 0
    out = capsys.readouterr().out
    assert "  result    recovered: version 2 written; resume the thread to continue\n" in out
    assert journal.read_bytes().startswith(
        before.rstrip(b"\0")
    )  # zeros after the records are free space

    flow = load_flow(TARGET)
    with JsonFileStore(root) as store:
        done = Runner(flow, store=store).resume("job-1")
        kinds = [(c.kind, c.actor) for c in Runner(flow, store=store).history("job-1")]
    assert done.done and done.state.log == ["prepared", "slow done", "finished"]  # type: ignore[attr-defined]
    assert kinds == [
        ("start", None),
        ("step", None),
        ("patch", "flowkit-recover"),
        ("step", None),
        ("step", None),
    ]


@pytest.fixture
def crashed_store(tmp_path: Path) -> Path:
    """`fine`: done. `stuck`: moved back to `slow`, where a process then died (its marker)."""
    flow = load_flow(TARGET)
    root = tmp_path / "store"
    with JsonFileStore(root, fsync=False) as store:
        runner = Runner(flow, store=store)
        runner.start("fine")
        runner.start("stuck")
        runner.update_state("stuck", goto="slow", actor="test")
        store.mark_attempt("stuck", AttemptMarker(version=4, node="slow", ts=1.0))
    return root


def test_recover_prints_healthy_threads_on_one_line_and_json_on_request(
    crashed_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["recover", "--store", str(crashed_store), "--dry-run", "--flow", TARGET]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "fine  healthy: done at __end__ (version 3)"
    assert "stuck  flow crashy: pending at slow (version 4)" in out
    args = ["recover", "--store", str(crashed_store), "stuck", "--json", "--flow", TARGET]
    assert main(args) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report | {"problems": None} == {
        "thread_id": "stuck",
        "flow": "crashy",
        "outcome": "recovered",
        "status": "pending",
        "node": "slow",
        "version": 4,
        "problems": None,
        "strategy": "resume",
        "patch": {"goto": "slow", "values": {}},
        "notes": ["resume runs `slow` again from version 4"],
        "applied_version": 5,
    }
    assert [p["rule"] for p in report["problems"]] == ["node_never_finished"]


def test_recover_with_a_strategy_override(
    crashed_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["recover", "--store", str(crashed_store), "stuck", "--flow", TARGET]
    assert main([*args, "--strategy", "reset"]) == 0
    out = capsys.readouterr().out
    assert "  strategy  reset -> prepare\n" in out
    assert "  patch     goto prepare; prepared=false, result=null\n" in out
    assert "  note      append-only fields keep their newer entries: log\n" in out


def test_recover_needs_the_flow_of_an_unregistered_thread(
    crashed_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["recover", "--store", str(crashed_store), "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "thread `stuck`: flow `crashy` is not registered; pass --flow TARGET" in err


def test_recover_reports_a_missing_thread_and_an_empty_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["recover", "--store", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"No threads in {tmp_path}\n"
    assert main(["recover", "--store", str(tmp_path), "ghost"]) == 1
    assert "Thread `ghost` does not exist" in capsys.readouterr().err


FAILING_FLOW = """
from pydantic import BaseModel

from flowkit import END, Flow


class S(BaseModel):
    n: int = 0


def boom(state: S) -> dict:
    raise RuntimeError("the axis is not homed")


flow = Flow(name="failing", state=S, start="boom", nodes={"boom": boom}, routes={"boom": END})
"""


def test_a_failed_thread_is_not_called_healthy_and_the_printed_retry_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "failing.py").write_text(FAILING_FLOW, encoding="utf-8")
    target, store = f"{tmp_path / 'failing.py'}:flow", str(tmp_path / "runs")
    assert main(["start", target, "f1", "--store", store]) == 1
    capsys.readouterr()
    assert main(["recover", "--store", store, "--dry-run", "--flow", target]) == 0
    out = capsys.readouterr().out
    assert "healthy" not in out
    line = out.splitlines()[0]
    assert line.startswith("f1  not stuck: failed at boom (version 1)")
    retry = line.split("`")[1]
    assert retry.startswith("flowkit resume f1 ")
    assert main(shlex.split(retry)[1:]) == 1  # runs as printed (and fails again, as it should)
    assert "the axis is not homed" in capsys.readouterr().err
