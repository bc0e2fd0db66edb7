"""Each character on its own model and provider: a loopback server speaking the OpenAI and
Ollama chat APIs sees every request go to the model of the character whose turn it is, with
that character's generation settings; no API key and no person's text reach a log line."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from flowkit.memory import InProcessMemory
from flowkit.roundtable.app import Roundtable
from flowkit.roundtable.logs import RoundLogs

from .conftest import table

KEY = "sk-roundtable-test-key-0123456789"
SECRET = "my private plan about Zanzibar 42"


def answer(model: str, body: dict[str, Any]) -> str:
    system = body["messages"][0]["content"]
    if system.startswith("Summarise"):
        return '{"summary": "We talked.", "keywords": ["a", "b", "c", "d", "e"]}'
    who = {"gpt-lumina": "Lumina", "llama-nox": "Nox", "qwen-claris": "Claris"}[model]
    following = {"Lumina": "NOX", "Nox": "CLARIS", "Claris": "LUMINA"}[who]
    return f"{who} speaks. [Next: {following}]"


@pytest.fixture
def server(loopback: Any) -> Any:
    return loopback(answer)


def config(url: str) -> dict[str, Any]:
    data = table(language="en")
    lumina, claris, nox = data["characters"]
    lumina.update(
        provider="openai",
        model="gpt-lumina",
        base_url=f"{url}/v1",
        api_key_env="RT_TEST_KEY",
        generation={"temperature": 0.8, "top_p": 0.9, "num_predict": 64},
    )
    nox.update(
        provider="ollama",
        model="llama-nox",
        base_url=url,
        generation={"temperature": 0.2, "repeat_penalty": 1.1, "num_predict": 32},
    )
    claris.update(llm="ollama:qwen-claris", base_url=url)
    return data


def test_each_request_goes_to_its_characters_model(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RT_TEST_KEY", KEY)
    with Roundtable(config(server.url), memory=InProcessMemory()) as bot:
        result = bot.send("s", "Where shall we start?")
    assert result.texts == [
        ("ルミナ", "Lumina speaks."),
        ("ノクス", "Nox speaks."),
        ("クラリス", "Claris speaks."),
    ]
    turns = [(path, body["model"]) for path, body, _ in server.requests]
    assert turns == [
        ("/v1/chat/completions", "gpt-lumina"),  # LUMINA: OpenAI-compatible
        ("/api/chat", "llama-nox"),  # NOX: Ollama
        ("/api/chat", "qwen-claris"),  # CLARIS: Ollama, from an `llm:` spec
        ("/v1/chat/completions", "gpt-lumina"),  # the round summary: the first character's
    ]
    for path, body, headers in server.requests:
        if path == "/v1/chat/completions":
            assert headers["authorization"] == f"Bearer {KEY}"
        else:
            assert "authorization" not in headers
        system = body["messages"][0]["content"]
        if not system.startswith("Summarise"):
            assert body["messages"][1] == {"role": "user", "content": "Where shall we start?"}
    lumina, nox = server.requests[0][1], server.requests[1][1]
    assert (lumina["temperature"], lumina["top_p"], lumina["max_tokens"]) == (0.8, 0.9, 64)
    assert nox["options"] == {"temperature": 0.2, "repeat_penalty": 1.1, "num_predict": 32}
    # Each prompt is its own character's: its persona and the others at the table.
    assert "進行役。" in lumina["messages"][0]["content"]
    assert "ノクス (NOX)" in lumina["messages"][0]["content"]
    assert "要約役。" in nox["messages"][0]["content"]


def test_a_missing_key_variable_fails_that_characters_turn_only(server: Any) -> None:
    bot = Roundtable(config(server.url), memory=None)  # RT_TEST_KEY is not set
    result = bot.send("s", "Hello?")
    assert [s for s, _ in result.texts] == ["クラリス", "ノクス"]
    failure = next(c.update["error"] for c in bot.runner.history("s") if c.update.get("error"))
    assert failure["type"] == "LLMConfigError" and "RT_TEST_KEY" in failure["message"]
    (only,) = result.failures
    assert (only.internal_id, only.error.type) == ("LUMINA", "LLMConfigError")
    assert "RT_TEST_KEY" in only.line()


def test_no_api_key_and_no_persons_text_in_any_log_line(
    server: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Any
) -> None:
    monkeypatch.setenv("RT_TEST_KEY", KEY)
    logs = RoundLogs(conversation_dir=tmp_path / "conv", operation_dir=tmp_path / "ops")
    caplog.set_level(logging.DEBUG, logger="flowkit")  # stricter than the default level
    with Roundtable(config(server.url), memory=InProcessMemory(), logs=logs) as bot:
        bot.send("s", SECRET)
        bot.send("s", "and " + SECRET)
    lines = [r.getMessage() for r in caplog.records]
    assert any("roundtable_llm_request" in line for line in lines)
    operation = (tmp_path / "ops" / "operation_s.log").read_text(encoding="utf-8")
    assert "[INFO] [LLM] roundtable_llm_request" in operation
    for text in [*lines, operation]:
        assert KEY not in text
        assert "Zanzibar" not in text
    # The transcript is content: the person's words are there, the key is not.
    transcript = (tmp_path / "conv" / "conversation_s.log").read_text(encoding="utf-8")
    assert f"USER: {SECRET}" in transcript and KEY not in transcript
    assert transcript.count("\n") == 8  # 2 person lines + 6 characters' lines
