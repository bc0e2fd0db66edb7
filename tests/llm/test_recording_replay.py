"""Recording calls into a sink, and replaying them exactly, or failing loudly on a mismatch."""

from __future__ import annotations

import asyncio
import json

import pytest
from _pydantic_words import reason
from pydantic import BaseModel, ConfigDict

from flowkit.errors import LLMConfigError, ReplayMismatchError
from flowkit.llm import LLM, RecordingLLM, ReplayLLM, from_spec, load_cassette, save_cassette
from flowkit.llm.replay import SHOW_PROMPTS_ENV, request_key
from flowkit.testing.scripted import ScriptedLLM


class Tasks(BaseModel):
    tasks: list[str]


class Renamed(BaseModel):
    model_config = ConfigDict(title="Tasks")
    tasks: list[str]


class Other(BaseModel):
    count: int


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def recorded_session() -> list[dict]:
    calls: list[dict] = []
    inner = ScriptedLLM([("plan", '{"tasks": ["pick"]}'), ("hi", "Hello robot")])
    llm = RecordingLLM(inner, calls.append)
    llm.complete(user("plan it"), schema=Tasks)
    llm.complete(user("say hi"))
    list(llm.stream(user("hi again")))
    return calls


def test_recording_passes_answers_through_and_records_plain_json():
    calls = recorded_session()

    assert len(calls) == 3
    assert json.loads(json.dumps(calls)) == calls
    first = calls[0]
    assert first["request"] == {
        "messages": user("plan it"),
        "schema": "Tasks",
        "model": "scripted",
    }
    assert first["response"]["parsed"] == {"tasks": ["pick"]}
    assert calls[2]["request"]["schema"] is None
    assert calls[2]["response"]["text"] == "Hello robot"


def test_recording_is_an_llm_and_skips_failed_and_abandoned_calls():
    calls: list[dict] = []
    llm = RecordingLLM(ScriptedLLM([("x", "a b c d")]), calls.append)
    assert isinstance(llm, LLM) and llm.model == "scripted"

    with pytest.raises(LLMConfigError):
        llm.complete(user("unmatched"))
    stream = llm.stream(user("x"))
    next(stream)
    stream.close()

    assert calls == []


def test_async_recording():
    calls: list[dict] = []
    llm = RecordingLLM(ScriptedLLM(default="ok"), calls.append)

    async def run():
        await llm.acomplete(user("a"))
        return [c async for c in llm.astream(user("b"))]

    chunks = asyncio.run(run())
    assert chunks[-1].done
    assert [c["response"]["text"] for c in calls] == ["ok", "ok"]


def test_replay_reproduces_the_recorded_answers():
    replay = ReplayLLM(recorded_session())

    response = replay.complete(user("plan it"), schema=Tasks)
    assert response.parsed == Tasks(tasks=["pick"])
    assert replay.complete(user("say hi")).text == "Hello robot"
    assert [c.text for c in replay.stream(user("hi again"))] == ["Hello robot"]
    assert replay.remaining == 0
    assert replay.model == "scripted"


def test_replay_revalidates_under_a_renamed_model_with_the_same_title():
    replay = ReplayLLM(recorded_session())
    assert replay.complete(user("plan it"), schema=Renamed).parsed == Renamed(tasks=["pick"])


def test_replay_matches_by_content_in_any_order():
    replay = ReplayLLM(recorded_session())

    assert replay.complete(user("say hi")).text == "Hello robot"
    assert replay.complete(user("plan it"), schema=Tasks).parsed == Tasks(tasks=["pick"])
    with pytest.raises(ReplayMismatchError, match="already played in this process"):
        replay.complete(user("say hi"))


def test_a_later_process_finds_its_own_answers_in_the_same_cassette(tmp_path):
    path = tmp_path / "session.json"
    save_cassette(path, recorded_session())

    # Each "process" is a fresh ReplayLLM: one asks only for the third call, another only
    # for the first; neither needs the calls before it.
    assert [c.text for c in ReplayLLM.from_file(path).stream(user("hi again"))] == ["Hello robot"]
    assert ReplayLLM.from_file(path).complete(user("plan it"), schema=Tasks).parsed == Tasks(
        tasks=["pick"]
    )


def test_equal_requests_recorded_with_different_answers_play_in_order():
    calls: list[dict] = []
    answers = iter(["one", "two"])
    inner = ScriptedLLM([("roll", lambda prompt: next(answers))])
    llm = RecordingLLM(inner, calls.append)
    llm.complete(user("roll a die"))
    llm.complete(user("roll a die"))
    replay = ReplayLLM(calls)

    assert [replay.complete(user("roll a die")).text for _ in range(2)] == ["one", "two"]


def test_the_key_ignores_json_key_order_and_the_model_but_not_the_schema():
    a = [{"role": "user", "content": "x"}]
    b = [{"content": "x", "role": "user"}]
    assert request_key(a, "Tasks") == request_key(b, "Tasks")
    assert request_key(a, "Tasks") != request_key(a, None)
    assert request_key(a, None) != request_key([{"role": "system", "content": "x"}], None)
    recorded = recorded_session()
    recorded[0]["request"]["model"] = "another-model"
    assert ReplayLLM(recorded).complete(user("plan it"), schema=Tasks).parsed.tasks == ["pick"]


def test_an_unrecorded_request_names_the_cassette_without_quoting_the_prompt(tmp_path, monkeypatch):
    monkeypatch.delenv(SHOW_PROMPTS_ENV, raising=False)
    path = tmp_path / "session.json"
    save_cassette(path, recorded_session(), record_with="python -m myproject.record")
    secret = "plan it for Alice Smith, phone 555-0100"

    with pytest.raises(ReplayMismatchError) as caught:
        ReplayLLM.from_file(path).complete(user(secret), schema=Tasks)

    message = str(caught.value)
    assert str(path) in message
    assert "schema Tasks with 1 message(s) (user 39 chars)" in message
    assert "key sha256:" in message
    assert "closest, recorded call 0, differs: message 0 (user) differs: from character 7" in (
        message
    )
    assert (
        "A cassette answers only the requests recorded in it: send one of those, or record "
        "the cassette again: python -m myproject.record." in message
    )
    assert "Alice" not in message and "plan it" not in message


def test_a_miss_on_a_cassette_without_a_record_command_says_how_to_record_one(tmp_path):
    path = tmp_path / "mine.json"
    save_cassette(path, recorded_session())
    with pytest.raises(ReplayMismatchError) as caught:
        ReplayLLM.from_file(path).complete(user("something else"), schema=Tasks)
    message = str(caught.value)
    assert "A cassette answers only the requests recorded in it: send one of those, or" in message
    assert "record a cassette from a real model with save_cassette" in message
    assert "runner.llm_calls" in message and 'docs/llm.md, "Record and replay"' in message


def test_prompt_text_appears_only_when_asked_for(monkeypatch):
    with pytest.raises(ReplayMismatchError, match="sent 'say hello'"):
        ReplayLLM(recorded_session(), show_prompts=True).complete(user("say hello"))
    monkeypatch.setenv(SHOW_PROMPTS_ENV, "1")
    with pytest.raises(ReplayMismatchError, match="recorded 'say hi'"):
        ReplayLLM(recorded_session()).complete(user("say hello"))


def test_strict_replay_wants_the_recorded_order():
    replay = ReplayLLM(recorded_session(), strict=True)
    replay.complete(user("plan it"), schema=Tasks)

    with pytest.raises(ReplayMismatchError) as caught:
        replay.complete(user("say hello"))

    message = str(caught.value)
    assert "LLM call 1 does not match the recording" in message
    assert "message 0 (user) differs: from character 5" in message
    assert "say hello" not in message


@pytest.mark.parametrize(
    ("messages", "schema", "expected"),
    [
        (user("plan it"), None, "schema is None, the recording has 'Tasks'"),
        (user("plan it"), Other, "schema is 'Other'"),
        (user("plan it") * 2, Tasks, "2 messages were sent, the recording has 1"),
        ([{"role": "system", "content": "plan it"}], Tasks, "message 0 has role 'system'"),
    ],
)
def test_every_kind_of_mismatch_is_described(messages, schema, expected):
    with pytest.raises(ReplayMismatchError, match=expected):
        ReplayLLM(recorded_session(), strict=True).complete(messages, schema=schema)


def test_running_out_of_recordings_is_a_mismatch():
    replay = ReplayLLM(recorded_session()[:1])
    replay.complete(user("plan it"), schema=Tasks)
    with pytest.raises(ReplayMismatchError, match="LLM call 1 has no recording"):
        replay.complete(user("plan it"), schema=Tasks)
    strict = ReplayLLM(recorded_session()[:1], strict=True)
    strict.complete(user("plan it"), schema=Tasks)
    with pytest.raises(ReplayMismatchError, match="LLM call 1 has no recording"):
        strict.complete(user("plan it"), schema=Tasks)


@pytest.mark.parametrize("recorded_as", ["parsed", "text"])
def test_recorded_answer_that_no_longer_fits_the_schema_is_a_one_line_mismatch(recorded_as):
    class Stricter(BaseModel):
        model_config = ConfigDict(title="Tasks")
        tasks: list[int]

    calls = recorded_session()
    if recorded_as == "text":
        calls[0]["response"]["parsed"] = None  # the answer's text is parsed again
    with pytest.raises(ReplayMismatchError, match="no longer fits schema `Tasks`") as caught:
        ReplayLLM(calls).complete(user("plan it"), schema=Stricter)
    message = str(caught.value)
    assert "\n" not in message and "errors.pydantic.dev" not in message
    assert f"tasks.0: {reason(Stricter, {'tasks': ['pick']})}" in message


def test_cassette_round_trip_and_spec(tmp_path):
    path = tmp_path / "session.json"
    calls = recorded_session()
    save_cassette(path, calls)

    data = json.loads(path.read_text())
    assert data["format_version"] == 2
    assert [c["key"] for c in data["calls"]] == [
        request_key(c["request"]["messages"], c["request"]["schema"]) for c in calls
    ]
    assert [{k: v for k, v in c.items() if k != "key"} for c in load_cassette(path)] == calls
    replay = from_spec(f"replay:{path}")
    assert isinstance(replay, ReplayLLM)
    assert replay.complete(user("plan it"), schema=Tasks).parsed == Tasks(tasks=["pick"])
    assert list(tmp_path.iterdir()) == [path]  # no temp files left behind


def test_version_1_cassettes_are_still_read(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"format_version": 1, "calls": recorded_session()}))

    replay = ReplayLLM.from_file(path)

    assert replay.complete(user("say hi")).text == "Hello robot"


@pytest.mark.parametrize(
    "content",
    [
        "{broken",
        "[]",
        '{"format_version": 3, "calls": []}',
        '{"format_version": 1, "calls": [{"request": {}}]}',
        '{"format_version": 1, "calls": [{"request": {"messages": []}, "response": {}}]}',
        b"\xff\xfe\x00not utf-8",
    ],
)
def test_bad_cassettes_raise_config_errors(tmp_path, content):
    path = tmp_path / "bad.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(LLMConfigError):
        ReplayLLM.from_file(path)


def test_missing_cassette_raises_config_error(tmp_path):
    with pytest.raises(LLMConfigError, match="Cannot read cassette"):
        from_spec(f"replay:{tmp_path / 'absent.json'}")


def test_recording_an_http_client_then_replaying_needs_no_server(server):
    from .conftest import make_llm
    from .conftest import ok as ok_reply

    calls: list[dict] = []
    server.script(ok_reply('Plan: {"tasks": ["weld"]}'))
    with make_llm("openai", server.url) as http:
        first = RecordingLLM(http, calls.append).complete(user("plan"), schema=Tasks)
    server.server_close()

    again = ReplayLLM(json.loads(json.dumps(calls))).complete(user("plan"), schema=Tasks)

    assert again.parsed == first.parsed == Tasks(tasks=["weld"])
    assert again.text == first.text
    assert again.usage == first.usage
