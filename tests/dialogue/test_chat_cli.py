"""Acceptance 5: `flowkit chat` talks over piped stdin and a conversation interrupted in one
process continues in a new one with --thread."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def chat(store: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONIOENCODING": "utf-8"}
    env.pop("FLOWKIT_LLM", None)
    return subprocess.run(
        [sys.executable, "-m", "flowkit", "chat", "robot_cell", "--store", str(store), *args],
        input=text,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.slow
def test_a_conversation_interrupted_midway_resumes_in_a_new_process(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = chat(store, "Book maintenance for robot 2 tomorrow at 3 pm\n\n", "--thread", "op-1")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().splitlines() == [
        "bot> Who is requesting it? Please tell me your name."
    ]
    assert "new conversation op-1" in first.stderr
    second = chat(store, "/state\nSato\nbye\n", "--thread", "op-1")
    assert second.returncode == 0, second.stderr
    lines = second.stdout.strip().splitlines()
    assert "continuing conversation op-1" in second.stderr
    assert lines[0] == "bot> Who is requesting it? Please tell me your name."
    assert "missing ['requester']" in second.stdout
    assert lines[-2].startswith("bot> Booked maintenance of robot 2 on ")
    assert lines[-1] == "bot> Goodbye, and have a safe shift."
    ended = chat(store, "hello\n", "--thread", "op-1")
    assert ended.returncode == 1 and "has ended" in ended.stderr


@pytest.mark.slow
def test_chat_in_japanese_with_a_generated_thread_id(tmp_path: Path) -> None:
    result = chat(tmp_path, "段取り替えを始めたい\n次へ\n/quit\n次へ\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "bot> 手順 1/5：ラインを停止し、セルを手動モードに切り替えてください。",
        "bot> 手順 2/5：現在のグリッパー爪を外し、トレイAに置いてください。",
    ]
    thread = result.stderr.split("new conversation ")[1].split()[0]
    assert thread.startswith("chat-") and (tmp_path / "threads" / thread).exists()


#: A line too long for a message, a line that is not UTF-8, then a line the domain answers.
REFUSED_THEN_GOOD = (
    b"x" * 2001 + b"\ncaf\xe9 au lait\nBook maintenance for robot 2 tomorrow at 3 pm\n"
)
REFUSALS = [
    "flowkit: error: that line has 2,001 characters, more than the 2,000 a message may have; "
    "it was skipped, nothing was sent.",
    "flowkit: error: that line is not UTF-8 text (its byte 4 is 0xe9); it was skipped, "
    "nothing was sent.",
]


@pytest.mark.parametrize("errors", ["strict", "surrogateescape"])
def test_a_line_too_long_or_not_utf8_is_refused_and_the_chat_goes_on(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    errors: str,
) -> None:
    import io

    from flowkit.cli import main

    monkeypatch.delenv("FLOWKIT_LLM", raising=False)
    stdin = io.TextIOWrapper(io.BytesIO(REFUSED_THEN_GOOD), encoding="utf-8", errors=errors)
    monkeypatch.setattr(sys, "stdin", stdin)
    code = main(["chat", "robot_cell", "--store", str(tmp_path), "--thread", "c"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.splitlines() == ["bot> Who is requesting it? Please tell me your name."]
    assert [line for line in captured.err.splitlines() if "error" in line] == REFUSALS


def test_a_line_that_is_not_utf8_is_refused_in_a_real_process_too(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("FLOWKIT_LLM", None)
    env.pop("PYTHONIOENCODING", None)
    done = subprocess.run(
        [sys.executable, "-m", "flowkit", "chat", "robot_cell", "--store", str(tmp_path)],
        input=REFUSED_THEN_GOOD, capture_output=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == [
        "bot> Who is requesting it? Please tell me your name."
    ]
    errors = [line for line in done.stderr.decode().splitlines() if "error" in line]
    assert errors == REFUSALS
