"""ScriptedLLM: ordered rules, replies of every kind, schemas and streams like a real client."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
import structlog
from _pydantic_words import reason
from pydantic import BaseModel

from flowkit.errors import LLMConfigError, LLMSchemaError, LLMTimeoutError
from flowkit.llm import LLM, from_spec
from flowkit.testing.scripted import ScriptedLLM


class Tasks(BaseModel):
    tasks: list[str]


def ask(text: str, system: str = "You plan robot tasks.") -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]


def test_first_matching_rule_wins_and_calls_are_recorded():
    llm = ScriptedLLM([("task", "first"), ("task list", "second"), (re.compile(r"step \d"), "re")])

    assert llm.complete(ask("make a task list")).text == "first"
    assert llm.complete(ask("do step 3")).text == "re"
    assert isinstance(llm, LLM)
    assert llm.prompts == ["make a task list", "do step 3"]
    assert [c.rule for c in llm.calls] == [0, 2]
    assert llm.calls[1].messages == ask("do step 3")
    assert llm.calls[1].text == "re"


def test_rules_match_the_last_user_message_unless_asked_for_the_whole_prompt():
    rules = [("robot", "matched")]
    assert ScriptedLLM(rules, default="no").complete(ask("hello")).text == "no"
    whole = ScriptedLLM(rules, default="no", match_on="prompt")
    assert whole.complete(ask("hello", system="You drive a robot.")).text == "matched"


def test_callable_matchers_and_replies_see_the_prompt():
    llm = ScriptedLLM([(lambda p: p.startswith("count"), lambda p: str(len(p)))])
    assert llm.complete(ask("count me")).text == "8"


def test_dicts_lists_and_models_are_sent_as_json():
    llm = ScriptedLLM([("dict", {"tasks": ["ü"]}), ("list", [1, 2]), ("model", Tasks(tasks=["x"]))])
    assert json.loads(llm.complete(ask("dict")).text) == {"tasks": ["ü"]}
    assert llm.complete(ask("list")).text == "[1, 2]"
    assert llm.complete(ask("model"), schema=Tasks).parsed == Tasks(tasks=["x"])


def test_exception_instances_and_classes_are_raised():
    boom = LLMTimeoutError("scripted timeout")
    llm = ScriptedLLM([("slow", boom), ("down", LLMTimeoutError)])

    with pytest.raises(LLMTimeoutError) as first:
        llm.complete(ask("slow"))
    with pytest.raises(LLMTimeoutError, match="down"):
        llm.complete(ask("down"))

    assert first.value is boom
    assert [c.text for c in llm.calls] == [None, None]


def test_no_rule_and_no_default_names_the_prompt():
    llm = ScriptedLLM([("task list", "x")])
    with pytest.raises(LLMConfigError, match="no rule for the prompt 'what now'"):
        llm.complete(ask("what now"))
    assert llm.prompts == ["what now"]


def test_schema_answers_are_extracted_and_validated_like_real_clients():
    llm = ScriptedLLM([("plan", 'Sure!\n```json\n{"tasks": ["pick", "place"]}\n```')])
    response = llm.complete(ask("plan it"), schema=Tasks)
    assert response.parsed == Tasks(tasks=["pick", "place"])


def test_schema_violation_makes_a_repair_request_a_rule_can_answer():
    llm = ScriptedLLM([("plan", '{"tasks": "pick"}'), ("could not be used", '{"tasks": ["pick"]}')])

    response = llm.complete(ask("plan it"), schema=Tasks)

    assert response.parsed == Tasks(tasks=["pick"])
    assert len(llm.calls) == 2
    repair = llm.calls[1].messages
    assert repair[-2] == {"role": "assistant", "content": '{"tasks": "pick"}'}
    assert f"tasks: {reason(Tasks, {'tasks': 'pick'})}" in repair[-1]["content"]


def test_schema_violation_without_a_repair_rule_raises_the_schema_error():
    llm = ScriptedLLM([("plan", "no json here")])

    with pytest.raises(LLMSchemaError) as caught:
        llm.complete(ask("plan it"), schema=Tasks)

    assert caught.value.raw_text == "no json here"
    assert len(llm.calls) == 2


def test_repair_that_still_fails_raises_with_the_second_answer():
    llm = ScriptedLLM([("plan", "nope")], default='{"tasks": 5}')

    with pytest.raises(LLMSchemaError, match="did not fix it") as caught:
        llm.complete(ask("plan it"), schema=Tasks)

    assert caught.value.raw_text == '{"tasks": 5}'
    assert caught.value.errors[0]["loc"] == ["tasks"]


class Scores(BaseModel):
    scores: dict[str, int]


def test_what_the_model_wrote_as_a_key_stays_out_of_the_log_and_the_error_not_the_repair():
    """The ``loc`` of a schema error holds the dict keys the model wrote: they reached the
    ``llm_repair`` warning (on by default) and the error message (found by a defect hunt).
    The repair prompt, which goes back to the model, still names them."""
    secret = "Patient Jane Roe, diagnosis X"
    answer = json.dumps({"scores": {secret: "high"}})
    llm = ScriptedLLM(default=answer)
    with structlog.testing.capture_logs() as logs, pytest.raises(LLMSchemaError) as caught:
        llm.complete(ask("score it"), schema=Scores)
    assert secret not in str(caught.value) and "scores.[key]" in str(caught.value)
    assert [e for e in logs if e["event"] == "llm_repair"]
    assert all(secret not in str(e) for e in logs)
    repair = llm.calls[1].messages[-1]["content"]
    assert secret in repair  # the model is told which of its keys was wrong


def test_stream_yields_words_then_done():
    llm = ScriptedLLM(default="Hello there  robot")
    chunks = list(llm.stream(ask("hi")))
    assert [c.text for c in chunks] == ["Hello", " there", "  robot", ""]
    assert chunks[-1].done


def test_async_methods_match_the_sync_ones():
    llm = ScriptedLLM([("plan", '{"tasks": []}')])

    async def run():
        response = await llm.acomplete(ask("plan"), schema=Tasks)
        chunks = [c async for c in llm.astream(ask("plan"))]
        return response, chunks

    response, chunks = asyncio.run(run())
    assert response.parsed == Tasks(tasks=[])
    assert "".join(c.text for c in chunks) == '{"tasks": []}'


def test_add_appends_rules_after_the_existing_ones():
    llm = ScriptedLLM([("a", "1")]).add("a", "2").add("b", "3")
    assert [llm.complete(ask(t)).text for t in ("a", "b")] == ["1", "3"]


def test_loads_rules_from_a_json_file_and_a_spec(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(
        json.dumps(
            {
                "rules": [
                    {"match": "task list", "response": {"tasks": ["a"]}},
                    {"regex": "STEP \\d", "ignore_case": True, "response": "a step"},
                    {"match": "fail", "error": "LLMTimeoutError", "message": "too slow"},
                ],
                "default": "fallback",
                "model": "fake-1",
            }
        )
    )

    llm = from_spec(f"scripted:{path}")

    assert isinstance(llm, ScriptedLLM) and llm.model == "fake-1"
    assert llm.complete(ask("the task list"), schema=Tasks).parsed == Tasks(tasks=["a"])
    assert llm.complete(ask("step 2")).text == "a step"
    assert llm.complete(ask("other")).text == "fallback"
    with pytest.raises(LLMTimeoutError, match="too slow"):
        llm.complete(ask("fail"))


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        "[]",
        '{"rules": [{"response": "x"}]}',
        '{"rules": [{"match": "x"}]}',
        '{"rules": [{"regex": "(", "response": "x"}]}',
        '{"rules": [{"match": "x", "error": "KeyError"}]}',
        '{"rules": [], "match_on": "everything"}',
    ],
)
def test_bad_rule_files_raise_config_errors(tmp_path, content):
    path = tmp_path / "rules.json"
    path.write_text(content)
    with pytest.raises(LLMConfigError):
        ScriptedLLM.from_file(path)


def test_missing_rule_file_raises_config_error(tmp_path):
    with pytest.raises(LLMConfigError, match="Cannot read"):
        ScriptedLLM.from_file(tmp_path / "absent.json")


def test_unsupported_reply_type_is_a_config_error():
    llm = ScriptedLLM(default=42)  # type: ignore[arg-type]
    with pytest.raises(LLMConfigError, match="not int"):
        llm.complete(ask("x"))
