"""Round summaries in ``flowkit.memory``: one item per round of each session, an index of the
newest for the next sessions' prompts, the summary request and its fallback."""

from __future__ import annotations

from typing import Any

from flowkit import Runner
from flowkit.memory import InProcessMemory, JsonFileMemory, Memory
from flowkit.roundtable.memory import (
    fallback_summary,
    recent_summaries,
    remember,
    session_records,
    summary_messages,
)
from flowkit.roundtable.workflow import build_flow

from .conftest import table, turns


def record(session: str, round_index: int, ts: str) -> dict[str, Any]:
    return {
        "session_id": session,
        "thread_id": round_index,
        "ts_start": ts,
        "ts_end": ts,
        "domain": "generic",
        "summary": f"{session} round {round_index}",
        "keywords": [],
        "embedding": None,
        "full_log": "",
        "by": "fallback",
    }


def check_index(memory: Memory) -> None:
    remember(memory, "t", record("a", 1, "1"))
    remember(memory, "t", record("b", 1, "2"))
    remember(memory, "t", record("a", 2, "3"))
    remember(memory, "t", record("a", 2, "3"))  # persisted twice (a crash before the commit)
    assert [r["thread_id"] for r in session_records(memory, "t", "a")] == [1, 2]
    newest = recent_summaries(memory, "t", exclude_session="c", limit=10)
    assert [r["summary"] for r in newest] == ["a round 2", "b round 1", "a round 1"]
    assert [r["summary"] for r in recent_summaries(memory, "t", exclude_session="a", limit=5)] == [
        "b round 1"
    ]
    assert recent_summaries(memory, "t", exclude_session="a", limit=0) == []
    assert recent_summaries(memory, "other", exclude_session="a", limit=3) == []


def test_the_index_in_process() -> None:
    check_index(InProcessMemory())


def test_the_index_on_disk(tmp_path: Any) -> None:
    check_index(JsonFileMemory(tmp_path / "memory", fsync=False))


def test_the_summary_request_and_its_fallback() -> None:
    ja, en = summary_messages(["[12:00:00] USER: やあ"], "ja"), summary_messages([], "en")
    assert ja[0]["content"].startswith("次の会話を要約") and "200" in ja[0]["content"]
    assert en[0]["content"].startswith("Summarise") and en[1]["content"] == "(empty)"
    lines = [f"[12:00:{i:02d}] X: line {i}" for i in range(30)]
    summary = fallback_summary(lines)
    assert summary.startswith("[12:00:20]") and len(summary) <= 200


def test_a_plain_runner_with_memory_keeps_summaries_and_one_without_keeps_none() -> None:
    llms = {name: turns(name, "はい。") for name in ("LUMINA", "CLARIS", "NOX")}
    flow = build_flow(table(), llms=llms)
    memory = InProcessMemory()
    runner: Runner[Any] = Runner(flow, memory=memory)
    runner.start("s")
    assert runner.resume("s", {"text": "こんにちは"}).state.last_summary == "天気の話をした。"
    assert len(session_records(memory, "trio", "s")) == 1
    bare: Runner[Any] = Runner(flow)
    bare.start("s")
    assert bare.resume("s", {"text": "こんにちは"}).state.last_summary is None
