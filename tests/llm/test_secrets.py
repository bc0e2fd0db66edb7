"""An API key from the environment never reaches logs, errors, reprs or recorded responses."""

from __future__ import annotations

import json

import pytest
import structlog
from pydantic import BaseModel

from flowkit.errors import LLMError
from flowkit.llm import RecordingLLM, from_spec

from .conftest import FAST, complete, cut, fail, ok, slow, stream

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
        slow(3.0),
        slow(3.0),  # timeouts
        cut(),  # a stream cut off
        ok(f"the key is {SECRET}"),  # the model itself repeats it
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
            lambda: complete(llm, mode, timeout=0.2),
            lambda: stream(llm, mode, []),
            lambda: complete(dead, mode),
        ):
            with pytest.raises(LLMError) as caught:
                call()
            errors.append(caught.value)
        outputs.append(complete(llm, mode).raw)

    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.requests)
    assert len(errors) == 6 and logs
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
