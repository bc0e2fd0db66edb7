"""Recording calls into a sink, and replaying them exactly, or failing loudly on a mismatch."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel, ConfigDict

from flowkit.errors import LLMConfigError, ReplayMismatchError
from flowkit.llm import LLM, RecordingLLM, ReplayLLM, from_spec, load_cassette, save_cassette
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


def test_replay_reproduces_the_recorded_answers_in_order():
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


def test_changed_prompt_raises_with_the_call_index_and_the_difference():
    replay = ReplayLLM(recorded_session())
    replay.complete(user("plan it"), schema=Tasks)

    with pytest.raises(ReplayMismatchError) as caught:
        replay.complete(user("say hello"))

    message = str(caught.value)
    assert "LLM call 1" in message
    assert "message 0 (user) differs: from character 5" in message
    assert "'say hello'" in message and "'say hi'" in message


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
        ReplayLLM(recorded_session()).complete(messages, schema=schema)


def test_running_out_of_recordings_is_a_mismatch():
    replay = ReplayLLM(recorded_session()[:1])
    replay.complete(user("plan it"), schema=Tasks)
    with pytest.raises(ReplayMismatchError, match="LLM call 1 has no recording"):
        replay.complete(user("plan it"), schema=Tasks)


def test_recorded_answer_that_no_longer_fits_the_schema_is_a_mismatch():
    class Stricter(BaseModel):
        model_config = ConfigDict(title="Tasks")
        tasks: list[int]

    with pytest.raises(ReplayMismatchError, match="no longer fits schema `Tasks`"):
        ReplayLLM(recorded_session()).complete(user("plan it"), schema=Stricter)


def test_non_strict_replay_matches_by_request_in_any_order():
    replay = ReplayLLM(recorded_session(), strict=False)

    assert replay.complete(user("say hi")).text == "Hello robot"
    assert replay.complete(user("plan it"), schema=Tasks).parsed == Tasks(tasks=["pick"])
    with pytest.raises(ReplayMismatchError, match="No unused recording matches"):
        replay.complete(user("say hi"))


def test_cassette_round_trip_and_spec(tmp_path):
    path = tmp_path / "session.json"
    calls = recorded_session()
    save_cassette(path, calls)

    assert json.loads(path.read_text())["format_version"] == 1
    assert load_cassette(path) == calls
    replay = from_spec(f"replay:{path}")
    assert isinstance(replay, ReplayLLM)
    assert replay.complete(user("plan it"), schema=Tasks).parsed == Tasks(tasks=["pick"])
    assert list(tmp_path.iterdir()) == [path]  # no temp files left behind


@pytest.mark.parametrize(
    "content",
    [
        "{broken",
        "[]",
        '{"format_version": 2, "calls": []}',
        '{"format_version": 1, "calls": [{"request": {}}]}',
        '{"format_version": 1, "calls": [{"request": {"messages": []}, "response": {}}]}',
    ],
)
def test_bad_cassettes_raise_config_errors(tmp_path, content):
    path = tmp_path / "bad.json"
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
