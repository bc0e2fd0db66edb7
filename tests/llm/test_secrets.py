"""An API key from the environment never reaches logs, errors, reprs or recorded responses."""

from __future__ import annotations

import asyncio
import json

import pytest
import structlog
from pydantic import BaseModel

from flowkit.errors import LLMError
from flowkit.llm import RecordingLLM, from_spec

from ._tool_server import tool_server
from .conftest import FAST, USER, complete, cut, fail, ok, slow, stream

__all__ = ["tool_server"]  # the fixture, imported for these tests

SECRET = "sk-test-SECRET-0123456789abcdef"


class Answer(BaseModel):
    answer: int


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def test_api_key_never_leaks(server, dead_url, monkeypatch, mode):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    llm = from_spec("openai:gpt-test", base_url=f"{server.url}/v1", max_retries=1)
    dead = from_spec("openai:gpt-test", base_url=f"{dead_url}/v1", max_retries=1)
    llm.backoff = dead.backoff = FAST
    # A server that echoes the key back in bodies, as some gateways do in error messages.
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {SECRET}"}})
    server.script(
        fail(500, echo),
        ok("fine"),  # success after a retry
        fail(401, echo),  # rejected
        fail(503, echo),
        fail(503, echo),  # unavailable after the budget
        ok(json.dumps({"answer": SECRET})),  # schema violation ...
        ok("still not a number"),  # ... and a failed repair
        cut(),  # a stream cut off
        ok(f"the key is {SECRET}"),  # the model itself repeats it: its answer, handed over
    )
    records: list[dict] = []
    recorder = RecordingLLM(llm, records.append)
    errors: list[BaseException] = []
    outputs: list[object] = []

    with structlog.testing.capture_logs() as logs:
        outputs.append(complete(recorder, mode))
        for call in (
            lambda: complete(llm, mode),
            lambda: complete(llm, mode),
            lambda: complete(llm, mode, schema=Answer),
            lambda: stream(llm, mode, []),
            lambda: complete(dead, mode),
        ):
            with pytest.raises(LLMError) as caught:
                call()
            errors.append(caught.value)
        answer = complete(llm, mode)
        # Timeouts last, answered by the fallback: an attempt given up on may reach the server
        # after the next call's request does, and would take that call's scripted reply.
        server.fallback = slow(3.0)
        with pytest.raises(LLMError) as caught:
            complete(llm, mode, timeout=0.2)
        errors.append(caught.value)

    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.requests)
    assert len(errors) == 6 and logs
    assert answer.text == f"the key is {SECRET}"  # what the model said is not error text
    assert any(e["event"] == "llm_retry" for e in logs)
    texts = [repr(llm), repr(dead), repr(recorder), repr(logs), json.dumps(records)]
    texts += [repr(o) for o in outputs]
    for error in errors:
        for exc in _chain(error):
            texts += [str(exc), repr(exc), repr(vars(exc))]
    leaks = [text for text in texts if SECRET in text]
    assert leaks == []
    llm.close()
    dead.close()


def test_api_key_never_reaches_events_logs_or_the_journal_of_a_run(server, monkeypatch, tmp_path):
    from pydantic import BaseModel as Model

    from flowkit import END, Flow, Runner
    from flowkit.stores import JsonFileStore
    from flowkit.testing import capture_events

    class State(Model):
        reply: str = ""

    def ask(state, ctx):
        text = "".join(c.text for c in ctx.llm.stream([{"role": "user", "content": "hi"}]))
        answer = ctx.llm.complete([{"role": "user", "content": "again"}])
        return {"reply": text + answer.text}

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    server.script(ok("streamed"), fail(500), ok("fine"))
    llm = from_spec("openai:gpt-test", max_retries=2)
    llm.backoff = FAST
    flow = Flow(name="chat", state=State, start="ask", nodes={"ask": ask}, routes={"ask": END})
    runner = Runner(flow, store=JsonFileStore(tmp_path), llm=llm)
    with structlog.testing.capture_logs() as logs, capture_events(runner) as events:
        result = runner.start("t1")
    assert result.state.reply == "streamedfine"
    assert any(e["event"] == "llm_retry" for e in logs)
    journal = (tmp_path / "threads" / "t1" / "journal.jsonl").read_text()
    assert len(runner.llm_calls("t1")) == 2
    for text in (repr(logs), repr(list(events)), journal, repr(result)):
        assert SECRET not in text


def test_prompts_and_answers_reach_debug_lines_only_when_opted_in(server, monkeypatch, mode):
    monkeypatch.delenv("FLOWKIT_LOG_CONTENT", raising=False)
    prompt = [{"role": "user", "content": "Book robot 2 for Tanaka Hiroshi"}]
    llm = from_spec("openai:gpt-test", base_url=f"{server.url}/v1", api_key=SECRET)
    server.script(ok("Booked for Tanaka Hiroshi"), ok("Booked for Tanaka Hiroshi"))

    with structlog.testing.capture_logs() as logs:
        complete(llm, mode, prompt)
    request = next(e for e in logs if e["event"] == "llm_request")
    assert (request["messages"], request["prompt_chars"]) == (1, len(prompt[0]["content"]))
    assert "Tanaka" not in repr(logs)

    monkeypatch.setenv("FLOWKIT_LOG_CONTENT", "1")
    with structlog.testing.capture_logs() as logs:
        complete(llm, mode, prompt)
    events = {e["event"]: e for e in logs}
    assert events["llm_request"]["content"] == prompt
    assert events["llm_response"]["content"] == "Booked for Tanaka Hiroshi"
    llm.close()


# -- a key as configuration files deliver it: with a trailing newline ---------------------------

NEWLINE_KEY = SECRET + "\n"


def test_surrounding_whitespace_is_stripped_from_the_key(server, mode):
    from flowkit.llm.openai import OpenAICompatibleLLM

    key = f"  {NEWLINE_KEY}\r\n"
    llm = OpenAICompatibleLLM(model="gpt-test", base_url=f"{server.url}/v1", api_key=key)
    complete(llm, mode)
    assert server.requests[-1].headers["authorization"] == f"Bearer {SECRET}"
    llm.close()


@pytest.mark.parametrize(
    "key",
    [
        SECRET + "é",
        "sk-ключ-0123",
        SECRET[:10] + " " + SECRET[10:],
        SECRET[:10] + "\n" + SECRET[10:],
    ],
    ids=["latin", "cyrillic", "inner-space", "inner-newline"],
)
def test_a_key_no_header_can_carry_is_refused_without_being_shown(key):
    from flowkit.errors import LLMConfigError
    from flowkit.llm.openai import OpenAICompatibleLLM

    with pytest.raises(LLMConfigError, match="api_key contains") as caught:
        OpenAICompatibleLLM(model="gpt-test", api_key=key)
    assert SECRET[:10] not in str(caught.value) and "ключ" not in str(caught.value)


@pytest.mark.parametrize("key", ["\n", "   ", 123])
def test_a_blank_or_non_string_key_is_a_config_error(key):
    from flowkit.errors import LLMConfigError
    from flowkit.llm.openai import OpenAICompatibleLLM

    with pytest.raises(LLMConfigError, match="api_key"):
        OpenAICompatibleLLM(model="gpt-test", api_key=key)


def test_a_rejected_key_is_not_retried(server, mode):
    from flowkit.errors import LLMResponseError

    llm = from_spec("openai:gpt-test", base_url=f"{server.url}/v1", api_key=NEWLINE_KEY)
    llm.backoff = FAST
    server.fallback = fail(401, json.dumps({"error": {"message": f"bad key {SECRET}"}}))

    with pytest.raises(LLMResponseError, match="HTTP 401") as caught:
        complete(llm, mode)
    assert len(server.requests) == 1
    assert SECRET not in str(caught.value) and SECRET not in caught.value.raw_text
    llm.close()


def test_credentials_a_server_quotes_in_an_error_are_redacted(server, mode):
    from flowkit.errors import LLMResponseError

    llm = from_spec("openai:gpt-test", base_url=f"{server.url}/v1", api_key=SECRET)
    other = "Bearer sk-other-9876543210"
    server.fallback = fail(400, json.dumps({"error": {"message": f"got Authorization: {other}"}}))

    with pytest.raises(LLMResponseError) as caught:
        complete(llm, mode)
    assert "sk-other" not in str(caught.value) and "sk-other" not in caught.value.raw_text
    assert "Bearer ***" in str(caught.value)
    llm.close()


def test_a_newline_key_appears_in_no_journal_event_error_log_or_cli_output(
    server, monkeypatch, tmp_path, capsys, caplog
):
    """Acceptance: a real run against the loopback server, then the CLI over its store."""
    import logging

    from pydantic import BaseModel as Model

    from flowkit import END, Flow, Runner
    from flowkit.cli import main
    from flowkit.stores import JsonFileStore
    from flowkit.testing import capture_events

    class State(Model):
        reply: str = ""

    def ask(state, ctx):
        text = "".join(c.text for c in ctx.llm.stream([{"role": "user", "content": "hi"}]))
        return {"reply": text + ctx.llm.complete([{"role": "user", "content": "again"}]).text}

    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {NEWLINE_KEY}"}})
    server.script(ok("streamed"), fail(500, echo), ok("fine"), fail(401, echo))
    llm = from_spec("openai:gpt-test", base_url=f"{server.url}/v1", api_key=NEWLINE_KEY)
    llm.backoff = FAST
    flow = Flow(name="chat", state=State, start="ask", nodes={"ask": ask}, routes={"ask": END})
    runner = Runner(flow, store=JsonFileStore(tmp_path), llm=llm)
    errors: list[BaseException] = []
    caplog.set_level(logging.DEBUG, logger="flowkit")
    with structlog.testing.capture_logs() as logs, capture_events(runner) as events:
        results = [runner.start("ok")]
        try:
            results.append(runner.start("rejected"))
        except LLMError as exc:
            errors.append(exc)

    assert results[0].state.reply.startswith("streamedfine")
    assert len(server.requests) == 4  # the 401 was asked once: not retried
    outputs = []
    for command in (["threads"], ["show", "ok"], ["show", "rejected"], ["history", "rejected"]):
        main([*command, "--store", str(tmp_path)])
        captured = capsys.readouterr()
        outputs += [captured.out, captured.err]
    # Every file of the store, the (binary) thread index too: its text would show a key.
    journals = [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()]
    texts = [repr(logs), caplog.text, repr(list(events)), repr(results), *journals, *outputs]
    for error in errors:
        texts += [str(e) for e in _chain(error)]
    assert any("401" in text for text in texts)  # the rejection is reported somewhere ...
    assert [text for text in texts if SECRET in text] == []  # ... without the key
    llm.close()


# -- the key is redacted from error text and logs, never from what the model said (item 18) ----

ANSWER = "Osaka is in Kansai; the EMPTY box holds ollama's llama."


# The OpenAI-compatible client (Ollama's and vLLM's compatible APIs take any key); the
# native Ollama client sends none.
@pytest.mark.parametrize("key", ["k", "EMPTY", "ollama", SECRET])
def test_answers_and_chunks_are_handed_over_as_the_model_wrote_them(server, mode, key):
    from .conftest import make_llm

    server.script(ok(ANSWER), ok(ANSWER))
    with make_llm("openai", server.url, api_key=key) as llm:
        assert complete(llm, mode).text == ANSWER
        assert "".join(c.text for c in stream(llm, mode, [])) == ANSWER
    assert all(r.headers["authorization"] == f"Bearer {key}" for r in server.requests)


def get_weather(city: str, note: str = "") -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize("key", ["k", "EMPTY", "ollama", SECRET])
def test_tool_call_arguments_are_handed_over_as_the_model_wrote_them(tool_server, mode, key):
    from ._tool_server import Call, calls
    from .conftest import make_llm

    arguments = {"city": "Osaka", "note": f"key {key} is EMPTY"}
    tool_server.script(calls(Call("get_weather", arguments)), calls(Call("get_weather", arguments)))
    with make_llm("openai", tool_server.url, api_key=key) as llm:
        whole = complete(llm, mode, tools=[get_weather]).tool_calls[0]
        if mode == "sync":
            chunks = list(llm.stream(USER, tools=[get_weather]))
        else:

            async def collect() -> list:
                return [c async for c in llm.astream(USER, tools=[get_weather])]

            chunks = asyncio.run(collect())
    assert (
        json.loads(whole.arguments) == json.loads(chunks[-1].tool_calls[0].arguments) == arguments
    )


@pytest.mark.parametrize("key", ["k", SECRET])
def test_errors_and_logged_answers_lose_the_key_whatever_its_length(server, mode, key, monkeypatch):
    from .conftest import make_llm

    monkeypatch.setenv("FLOWKIT_LOG_CONTENT", "1")
    echo = json.dumps({"error": {"message": f"bad key: {key}"}})
    server.script(fail(401, echo), ok(json.dumps({"answer": key})), ok(f"still {key}"), ok(key))
    with (
        make_llm("openai", server.url, api_key=key) as llm,
        structlog.testing.capture_logs() as logs,
    ):
        with pytest.raises(LLMError) as rejected:
            complete(llm, mode)
        with pytest.raises(LLMError) as unfit:
            complete(llm, mode, schema=Answer)
        assert complete(llm, mode).text == key
    for error in (rejected.value, unfit.value):
        for exc in _chain(error):
            assert key not in str(exc) + repr(vars(exc))
    contents = [line["content"] for line in logs if line["event"] == "llm_response"]
    assert contents and all(key not in text for text in contents)
