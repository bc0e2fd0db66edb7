"""End to end with a scripted LLM per character: tags, fuzzy names, missing tags, a refused
self-nomination, an exception and a timeout each take their route; auto_loops bounds the
characters' turns; status and message events have the origin's shapes; memory records are
written and reach the next session's prompt."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from flowkit import Emitted, Runner
from flowkit.errors import LLMTimeoutError, LLMUnavailableError
from flowkit.memory import InProcessMemory
from flowkit.roundtable.app import Roundtable
from flowkit.testing import ScriptedLLM

from .conftest import SUMMARY, noon, path_of, table, turns


def decisions(runner: Runner[Any], thread: str) -> list[tuple[str, str | None]]:
    """(speaker, reason) of each characters' turn, from the thread's history."""
    found = []
    speaker = ""
    for checkpoint in runner.history(thread):
        update = checkpoint.update
        if checkpoint.node == "prepare_context":
            speaker = update["current_internal_id"]
        if checkpoint.node in ("extract_next", "choose_next_fallback") and update.get(
            "decision_reason"
        ):
            found.append((speaker, update["decision_reason"]))
    return found


def test_tags_fuzzy_names_missing_tags_errors_and_timeouts_take_their_routes() -> None:
    llms = {
        "LUMINA": turns(
            "m-lumina",
            "こんにちは！今日は晴れです。[Next: ノクス]",  # round 1: a tag (display name)
            LLMUnavailableError("server down"),  # round 2: an exception
            "三回目です。[Next: LUMINA]",  # round 3: nominates itself
        ),
        "CLARIS": turns(
            "m-claris",
            "晴れは高気圧のおかげです。",  # round 1: no tag at all
            LLMTimeoutError("too slow"),  # round 2: a timeout
            "説明します。[Next: USER]",  # round 3: nominates the person
        ),
        "NOX": turns(
            "m-nox",
            "要点：晴れ。[Next: CLARISS]",  # round 1: a misspelt name, matched fuzzily
            "要点：雨。[Next: NOX]",  # round 2: self-nomination, refused
            "要点。[Next: BOB]",  # round 3: nobody of that name
        ),
    }
    bot = Roundtable(table(), llms=llms, memory=InProcessMemory(), clock=noon)

    first = bot.send("s", "今日の天気は？")
    assert first.texts == [
        ("ルミナ", "今日は晴れです。"),
        ("ノクス", "要点：晴れ。"),
        ("クラリス", "晴れは高気圧のおかげです。"),
    ]
    assert decisions(bot.runner, "s") == [
        ("LUMINA", "tag"),
        ("NOX", "fuzzy"),
        ("CLARIS", "none"),  # no tag, and everyone has spoken: the round ends
    ]
    mark = len(bot.runner.history("s")) - 1

    second = bot.send("s", "明日は？")
    assert second.texts == [("ノクス", "要点：雨。")]  # LUMINA and CLARIS failed: no message
    path = path_of(bot.runner, "s", mark)
    assert path[:4] == ["start_round", "prepare_context", "update_status_thinking", "call_llm"]
    assert path[4] == "choose_next_fallback"  # the exception skipped the reply
    assert path.count("choose_next_fallback") == 3  # exception, timeout, self-nomination
    errors = [c.update.get("error") for c in bot.runner.history("s")[mark:] if c.node == "call_llm"]
    assert [e["type"] if e else None for e in errors] == [
        "LLMUnavailableError",
        "LLMTimeoutError",
        None,
    ]
    assert decisions(bot.runner, "s")[3:] == [
        ("LUMINA", "round_robin"),
        ("CLARIS", "round_robin"),
        ("NOX", "none"),
    ]
    assert second.state.refusal == "self"
    assert [(f.internal_id, f.character, f.error.type, f.error.node) for f in second.failures] == [
        ("LUMINA", "ルミナ", "LLMUnavailableError", "call_llm"),
        ("CLARIS", "クラリス", "LLMTimeoutError", "call_llm"),
    ]
    assert second.failures[0].line() == "ルミナ could not answer: LLMUnavailableError: server down"
    assert first.failures == []

    third = bot.send("s", "ありがとう")
    assert [speaker for speaker, _ in third.texts] == ["ルミナ", "クラリス", "ノクス"]
    assert third.failures == []  # each round has its own
    state = bot.state("s")
    assert state.round_index == 3 and state.turn_index == 9
    assert [e.speaker for e in state.conversation_log].count("USER") == 3
    assert bot.runner.get_state("s").status == "waiting"  # the table waits for the person


def test_the_person_may_address_a_character_first() -> None:
    llms = {name: turns(name, "はい。") for name in ("LUMINA", "CLARIS", "NOX")}
    bot = Roundtable(table(), llms=llms, memory=None)
    round_ = bot.send("s", "ノクスに聞きたい [Next: ノクス]")
    assert round_.texts[0][0] == "ノクス"


@pytest.mark.parametrize("blank", ["", "   ", "\n\t\u3000"])
def test_a_blank_message_is_refused_and_no_character_is_asked(blank: str) -> None:
    from flowkit.errors import InvalidResumeInputError

    llms = {name: turns(name, "はい。") for name in ("LUMINA", "CLARIS", "NOX")}
    bot = Roundtable(table(), llms=llms, memory=None)
    bot.send("s", "こんにちは")
    with pytest.raises(InvalidResumeInputError):
        bot.send("s", blank)
    state = bot.state("s")
    assert state.round_index == 1 and state.turn_index == 3  # no second round
    assert [e.speaker for e in state.conversation_log].count("USER") == 1


@pytest.mark.parametrize("auto_loops", [1, 2, 5])
def test_auto_loops_bounds_the_characters_turns(auto_loops: int) -> None:
    chatty = {
        "LUMINA": turns("a", *["ルミナです。[Next: CLARIS]"] * 10),
        "CLARIS": turns("b", *["クラリスです。[Next: LUMINA]"] * 10),
        "NOX": turns("c", *["ノクスです。[Next: LUMINA]"] * 10),
    }
    config = table(conversation={"auto_loops": auto_loops, "max_turns": 8})
    bot = Roundtable(config, llms=chatty, memory=None)
    for message in ("一", "二"):
        result = bot.send("s", message)
        assert len(result.texts) == auto_loops
        assert result.state.round_turns == auto_loops
    # With auto_loops, characters may speak again: LUMINA <-> CLARIS.
    assert [s for s, _ in bot.send("s", "三").texts] == (["ルミナ", "クラリス"] * 3)[:auto_loops]


def test_max_turns_bounds_auto_loops_even_when_every_call_fails() -> None:
    broken = {
        name: turns(name, *[RuntimeError("boom")] * 20) for name in ("LUMINA", "CLARIS", "NOX")
    }
    config = table(conversation={"auto_loops": 4, "max_turns": 4})
    bot = Roundtable(config, llms=broken, memory=None)
    result = bot.send("s", "こんにちは")
    assert result.texts == []
    assert result.state.round_turns == 4
    assert [(f.internal_id, f.error.type) for f in result.failures] == [
        ("LUMINA", "RuntimeError"),
        ("CLARIS", "RuntimeError"),
        ("NOX", "RuntimeError"),
        ("LUMINA", "RuntimeError"),
    ]
    assert bot.runner.get_state("s").status == "waiting"


@pytest.fixture
def release() -> Iterator[threading.Event]:
    gate = threading.Event()
    yield gate
    gate.set()  # let the abandoned call return


def test_an_llm_that_hangs_is_given_up_at_the_timeout(release: threading.Event) -> None:
    def hang(prompt: str) -> str:
        release.wait(30)
        return "遅すぎた。"

    llms = {
        "LUMINA": ScriptedLLM(default=hang, model="slow"),
        "CLARIS": turns("b", "間に合いました。"),
        "NOX": turns("c", "要点。"),
    }
    config = table(conversation={"timeout_s": 0.2})
    bot = Roundtable(config, llms=llms, memory=None)
    result = bot.send("s", "どうぞ")
    assert result.texts == [("クラリス", "間に合いました。"), ("ノクス", "要点。")]
    failures = [c.update["error"] for c in bot.runner.history("s") if c.update.get("error")]
    assert failures[0]["type"] == "LLMTimeoutError" and failures[0]["node"] == "call_llm"


def test_events_have_the_origins_websocket_shapes() -> None:
    llms = {
        "LUMINA": turns("a", "一言。[Next: NOX]"),
        "CLARIS": turns("b", "二言。"),
        "NOX": turns("c", "三言。[Next: CLARIS]"),
    }
    bot = Roundtable(table(), llms=llms, memory=None)
    seen: list[Any] = []
    bot.runner.subscribe(lambda e: seen.append(e.value) if isinstance(e, Emitted) else None)
    bot.send("s", "始めよう")
    names = ["ルミナ", "クラリス", "ノクス"]
    expected: list[dict[str, str]] = [
        {"type": "status", "character": n, "status": "IDLE"} for n in names
    ]
    for speaker, text in (("ルミナ", "一言。"), ("ノクス", "三言。"), ("クラリス", "二言。")):
        expected += [
            {"type": "status", "character": speaker, "status": "THINKING"},
            {"type": "message", "speaker": speaker, "text": text},
        ]
        if speaker != "クラリス":  # the last speaker's turn ends the round: ACTIVE for all
            expected.append({"type": "status", "character": speaker, "status": "IDLE"})
    expected += [{"type": "status", "character": n, "status": "ACTIVE"} for n in names]
    assert seen == expected


def test_an_empty_reply_is_shown_as_no_response() -> None:
    llms = {
        "LUMINA": turns("a", "<think>考え中</think>[Next: NOX]"),
        "CLARIS": turns("b", "はい。"),
        "NOX": turns("c", "はい。"),
    }
    bot = Roundtable(table(), llms=llms, memory=None)
    assert bot.send("s", "?").texts[0] == ("ルミナ", "（応答なし）")


def test_round_summaries_are_kept_and_reach_the_next_sessions_prompt() -> None:
    memory = InProcessMemory()
    llms = {name: turns(name, "はい。", "いいえ。") for name in ("LUMINA", "CLARIS", "NOX")}
    bot = Roundtable(table(), llms=llms, memory=memory, clock=noon)
    bot.send("first", "晴れ？")
    bot.send("first", "雨？")
    items = memory.search(("roundtable", "trio", "sessions"), limit=100)
    assert [(i.namespace, i.key) for i in items] == [
        (("roundtable", "trio", "sessions", "first"), "000001"),
        (("roundtable", "trio", "sessions", "first"), "000002"),
    ]
    records = bot.summaries("first")
    assert records == [i.value for i in items]
    assert [(r["session_id"], r["thread_id"]) for r in records] == [("first", 1), ("first", 2)]
    record = records[0]
    assert record["summary"] == SUMMARY["summary"] and record["keywords"] == SUMMARY["keywords"]
    assert record["ts_start"] == record["ts_end"] == "2025-03-10T12:00:00Z"
    assert record["domain"] == "generic" and record["embedding"] is None
    assert "USER: 晴れ？" in record["full_log"] and "雨？" not in record["full_log"]
    # The summary request went to the first character's LLM.
    assert any(c.schema is not None for c in llms["LUMINA"].calls)
    assert not any(c.schema is not None for c in llms["NOX"].calls)

    bot.send("second", "前回の続き")
    assert SUMMARY["summary"] in bot.state("second").prompt
    assert "天気, 晴れ" in bot.state("second").memory_context


def test_a_failed_summary_falls_back_to_the_last_log_lines_and_never_raises() -> None:
    memory = InProcessMemory()
    plain = {
        name: ScriptedLLM(default="了解です。", model=name) for name in ("LUMINA", "CLARIS", "NOX")
    }
    bot = Roundtable(table(), llms=plain, memory=memory)
    bot.send("s", "要約できる？")
    (record,) = bot.summaries("s")
    assert record["keywords"] == [] and record["by"] == "fallback"
    assert record["summary"].startswith("[") and len(record["summary"]) <= 200

    class BrokenMemory(InProcessMemory):
        def put(self, namespace: Any, key: str, value: Any) -> None:
            raise OSError("disk full")

        def get(self, namespace: Any, key: str) -> Any:
            raise OSError("disk gone")

    bot = Roundtable(table(), llms=plain, memory=BrokenMemory())
    result = bot.send("s", "それでも続く？")
    assert len(result.texts) == 3 and result.state.last_summary is None


def test_characters_without_an_llm_use_the_runners_or_are_refused() -> None:
    from flowkit.roundtable import RoundtableConfigError

    with pytest.raises(RoundtableConfigError, match="have no LLM"):
        Roundtable(table())
    shared = ScriptedLLM(default="共有です。", model="shared")
    bot = Roundtable(table(), llm=shared, memory=None)
    assert len(bot.send("s", "やあ").texts) == 3
    assert bot.runner.llm_calls("s")  # the runner's LLM is journaled with the thread


def test_a_session_of_one_table_is_not_continued_at_another(tmp_path: Any) -> None:
    from flowkit.roundtable import RoundtableConfigError
    from flowkit.stores import JsonFileStore

    store = JsonFileStore(tmp_path)
    llms = {name: turns(name, "はい。") for name in ("LUMINA", "CLARIS", "NOX")}
    Roundtable(table(), llms=llms, store=store, memory=None).send("s", "こんにちは")
    other = Roundtable(table(name="other"), llms=llms, store=store, memory=None)
    with pytest.raises(RoundtableConfigError, match="`trio`"):
        other.send("s", "もう一度")
    kept = Roundtable(table(), llms=llms, store=store, memory=None).state("s")
    assert kept.round_index == 1 and kept.config_name == "trio"
