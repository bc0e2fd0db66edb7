"""The HTTP embeddings clients against the loopback fake server: vectors in order, batches,
retries, deadlines, the API key, and typed errors for answers that cannot be used."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import structlog

from flowkit.errors import (
    LLMConfigError,
    LLMError,
    LLMResponseError,
    LLMTimeoutError,
    LLMUnavailableError,
)
from flowkit.llm import Embeddings, OllamaEmbeddings, OpenAIEmbeddings, embeddings_from_spec

from ._embed_server import DIMS, connect_embeddings, embed_server, vector_of
from .conftest import drip, fail, huge, malformed, slow

__all__ = ["connect_embeddings", "embed_server"]  # the fixtures, imported for these tests

SECRET = "sk-test-SECRET-0123456789abcdef"
TEXTS = ["吾輩は猫である。", "The cat sat.", "名前はまだ無い"]


def embed(client: Any, mode: str, texts: Any, **options: Any) -> list[list[float]]:
    if mode == "sync":
        vectors: list[list[float]] = client.embed(texts, **options)
        return vectors
    return asyncio.run(client.aembed(texts, **options))  # type: ignore[no-any-return]


def test_each_text_gets_its_own_vector_in_order(embed_server, connect_embeddings, kind, mode):
    client = connect_embeddings(embed_server.url)
    assert isinstance(client, Embeddings)
    assert embed(client, mode, TEXTS) == [vector_of(t) for t in TEXTS]
    (sent,) = embed_server.requests
    assert sent.body["input"] == TEXTS and sent.body["model"] == "embed-test"
    assert sent.path == ("/v1/embeddings" if kind == "openai" else "/api/embed")


def test_many_texts_go_in_batches_and_come_back_in_order(embed_server, connect_embeddings, mode):
    texts = [f"text {i}" + "x" * i for i in range(7)]
    client = connect_embeddings(embed_server.url, batch_size=3)
    assert embed(client, mode, texts) == [vector_of(t) for t in texts]
    assert [r.body["input"] for r in embed_server.requests] == [
        texts[0:3],
        texts[3:6],
        texts[6:7],
    ]


def test_no_texts_is_no_vectors_and_no_request(embed_server, connect_embeddings, mode):
    client = connect_embeddings(embed_server.url)
    assert embed(client, mode, []) == []
    assert embed_server.requests == []


@pytest.mark.parametrize(
    "texts", ["one string", [""], ["ok", 3], [None], b"bytes", ["\udcff bad"]], ids=repr
)
def test_texts_that_cannot_be_sent_are_a_config_error_and_nothing_is_sent(
    embed_server, connect_embeddings, mode, texts
):
    client = connect_embeddings(embed_server.url)
    with pytest.raises(LLMConfigError):
        embed(client, mode, texts)
    assert embed_server.requests == []


@pytest.mark.parametrize("option", [{"batch_size": 0}, {"batch_size": True}, {"dimensions": 0}])
def test_bad_options_are_a_config_error(embed_server, connect_embeddings, option):
    with pytest.raises(LLMConfigError):
        connect_embeddings(embed_server.url, **option)


def test_server_errors_are_retried_then_the_vectors_arrive(embed_server, connect_embeddings, mode):
    embed_server.script(fail(503), fail(429, retry_after="0"))
    client = connect_embeddings(embed_server.url)
    assert embed(client, mode, TEXTS) == [vector_of(t) for t in TEXTS]
    assert len(embed_server.requests) == 3


def test_a_server_that_keeps_failing_is_unavailable_after_the_retries(
    embed_server, connect_embeddings, mode
):
    embed_server.fallback = fail(500)
    client = connect_embeddings(embed_server.url, max_retries=2)
    with pytest.raises(LLMUnavailableError) as caught:
        embed(client, mode, TEXTS)
    assert caught.value.retryable and caught.value.status_code == 500
    assert len(embed_server.requests) == 3


def test_a_rejected_request_is_not_retried(embed_server, connect_embeddings, mode):
    embed_server.script(fail(400, '{"error": {"message": "input too long"}}'))
    client = connect_embeddings(embed_server.url)
    with pytest.raises(LLMResponseError, match="input too long"):
        embed(client, mode, TEXTS)
    assert len(embed_server.requests) == 1


def test_a_refused_connection_is_unavailable(dead_url, connect_embeddings, mode):
    client = connect_embeddings(dead_url, max_retries=1)
    with pytest.raises(LLMUnavailableError):
        embed(client, mode, TEXTS)


@pytest.mark.parametrize("reply", [slow(3.0), drip(0.05)], ids=["silent", "dripping"])
def test_the_timeout_is_a_deadline_for_each_attempt(embed_server, connect_embeddings, mode, reply):
    embed_server.fallback = reply
    client = connect_embeddings(embed_server.url, timeout=0.3, max_retries=1)
    with pytest.raises(LLMTimeoutError):
        embed(client, mode, TEXTS)
    assert len(embed_server.requests) == 2


def test_a_call_may_set_its_own_timeout(embed_server, connect_embeddings, mode):
    embed_server.script(slow(3.0))
    client = connect_embeddings(embed_server.url, timeout=30.0, max_retries=0)
    with pytest.raises(LLMTimeoutError):
        embed(client, mode, TEXTS, timeout=0.3)
    with pytest.raises(LLMConfigError):
        embed(client, mode, TEXTS, timeout=0)


def test_an_answer_past_the_size_limit_is_refused(embed_server, connect_embeddings, mode):
    embed_server.script(huge(2))
    client = connect_embeddings(embed_server.url, max_response_bytes=1024 * 1024)
    with pytest.raises(LLMResponseError):
        embed(client, mode, TEXTS)


def _openai(vectors: list[Any], **extra: Any) -> str:
    import json

    data = [{"index": i, "embedding": v} for i, v in enumerate(vectors)]
    return json.dumps({"data": data, **extra})


def _ollama(vectors: list[Any]) -> str:
    import json

    return json.dumps({"embeddings": vectors})


GOOD = [1.0, 2.0, 3.0, 4.0]
#: Answers to three texts that cannot be used, by what is wrong with them.
BAD_VECTORS = {
    "too few": [GOOD, GOOD],
    "too many": [GOOD, GOOD, GOOD, GOOD],
    "one shorter": [GOOD, [1.0, 2.0, 3.0], GOOD],
    "one empty": [GOOD, [], GOOD],
    "a string": [GOOD, [1.0, "2", 3.0, 4.0], GOOD],
    "a boolean": [GOOD, [1.0, True, 3.0, 4.0], GOOD],
    "a null": [GOOD, [1.0, None, 3.0, 4.0], GOOD],
    "a nested list": [GOOD, [1.0, [2.0], 3.0, 4.0], GOOD],
    "not a list": [GOOD, "AAAA", GOOD],
    "an integer past float's range": [GOOD, [1, 10**400, 3, 4], GOOD],
}


@pytest.mark.parametrize("why", list(BAD_VECTORS))
def test_vectors_that_cannot_be_used_are_a_response_error(
    embed_server, connect_embeddings, kind, mode, why
):
    body = (_openai if kind == "openai" else _ollama)(BAD_VECTORS[why])
    embed_server.script(fail(200, body))
    client = connect_embeddings(embed_server.url)
    with pytest.raises(LLMResponseError) as caught:
        embed(client, mode, TEXTS)
    assert not caught.value.retryable
    assert caught.value.raw_text == body
    assert len(embed_server.requests) == 1


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_nan_and_infinite_numbers_are_a_response_error(
    embed_server, connect_embeddings, kind, mode, number
):
    vector = f"[1.0, {number}, 3.0, 4.0]"
    good = "[1.0, 2.0, 3.0, 4.0]"
    if kind == "openai":
        items = ", ".join(
            f'{{"index": {i}, "embedding": {v}}}' for i, v in enumerate([good, vector, good])
        )
        body = f'{{"data": [{items}]}}'
    else:
        body = f'{{"embeddings": [{good}, {vector}, {good}]}}'
    embed_server.script(fail(200, body))
    client = connect_embeddings(embed_server.url)
    with pytest.raises(LLMResponseError, match="finite"):
        embed(client, mode, TEXTS)


@pytest.mark.parametrize(
    "body",
    ["{}", '{"data": {}}', '{"embeddings": 3}', "[]", '"text"', "null"],
)
def test_a_body_that_is_not_an_embeddings_answer_is_a_response_error(
    embed_server, connect_embeddings, mode, body
):
    embed_server.script(fail(200, body))
    client = connect_embeddings(embed_server.url)
    with pytest.raises(LLMResponseError):
        embed(client, mode, TEXTS)


def test_a_body_that_is_not_json_is_a_response_error(embed_server, connect_embeddings, mode):
    embed_server.script(malformed())
    client = connect_embeddings(embed_server.url)
    with pytest.raises(LLMResponseError, match="not an embeddings answer"):
        embed(client, mode, TEXTS)


@pytest.mark.parametrize("indexes", [[0, 0, 1], [1, 2, 3]])
def test_openai_indexes_that_do_not_number_the_texts_are_a_response_error(
    embed_server, mode, indexes
):
    import json

    data = [{"index": i, "embedding": GOOD} for i in indexes]
    embed_server.script(fail(200, json.dumps({"data": data})))
    client = OpenAIEmbeddings(model="m", base_url=f"{embed_server.url}/v1", max_retries=0)
    with pytest.raises(LLMResponseError):
        embed(client, mode, TEXTS)


def test_vectors_of_another_length_than_asked_for_are_a_response_error(
    embed_server, connect_embeddings, mode
):
    client = connect_embeddings(embed_server.url, dimensions=DIMS + 1)
    with pytest.raises(LLMResponseError, match="dimensions"):
        embed(client, mode, TEXTS)


def test_vectors_of_another_length_than_earlier_answers_are_a_response_error(
    embed_server, connect_embeddings, kind, mode
):
    client = connect_embeddings(embed_server.url)
    assert len(embed(client, mode, TEXTS)[0]) == DIMS
    longer = [[*GOOD, 5.0]] * 3
    embed_server.script(fail(200, (_openai if kind == "openai" else _ollama)(longer)))
    with pytest.raises(LLMResponseError, match="dimensions"):
        embed(client, mode, TEXTS)


def test_the_openai_body_asks_for_floats_and_carries_extra_options(embed_server, mode):
    client = OpenAIEmbeddings(
        model="e5", base_url=f"{embed_server.url}/v1", extra_body={"input_type": "query"}
    )
    embed(client, mode, ["a text"])
    body = embed_server.requests[0].body
    assert body == {
        "model": "e5",
        "input": ["a text"],
        "encoding_format": "float",
        "input_type": "query",
    }


def test_the_ollama_body_carries_its_options(embed_server, mode):
    client = OllamaEmbeddings(
        model="bge-m3",
        base_url=embed_server.url,
        options={"num_ctx": 512},
        truncate=False,
        keep_alive="5m",
    )
    embed(client, mode, ["a text"])
    body = embed_server.requests[0].body
    assert body == {
        "model": "bge-m3",
        "input": ["a text"],
        "options": {"num_ctx": 512},
        "truncate": False,
        "keep_alive": "5m",
    }


# -- the API key ---------------------------------------------------------------------------------


def test_the_key_goes_only_in_the_authorization_header(embed_server, mode):
    client = OpenAIEmbeddings(model="m", base_url=f"{embed_server.url}/v1", api_key=SECRET + "\n")
    embed(client, mode, TEXTS)
    sent = embed_server.requests[0]
    assert sent.headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in str(sent.body)
    assert SECRET not in repr(client) and "***" in repr(client)


def test_the_key_never_reaches_errors_or_logs(embed_server, dead_url, mode):
    echoed = f'{{"error": {{"message": "bad key {SECRET}"}}}}'
    bad_vectors = _openai([GOOD], note=f"Authorization: Bearer {SECRET}")
    embed_server.script(fail(401, echoed), fail(503, echoed), fail(200, bad_vectors))
    client = OpenAIEmbeddings(
        model="m", base_url=f"{embed_server.url}/v1", api_key=SECRET, max_retries=0
    )
    dead = OpenAIEmbeddings(model="m", base_url=f"{dead_url}/v1", api_key=SECRET, max_retries=0)
    errors: list[LLMError] = []
    with structlog.testing.capture_logs() as logs:
        for target in (client, client, client, dead):
            with pytest.raises(LLMError) as caught:
                embed(target, mode, TEXTS)
            errors.append(caught.value)
    assert [type(e) for e in errors] == [
        LLMResponseError,
        LLMUnavailableError,
        LLMResponseError,
        LLMUnavailableError,
    ]
    for error in errors:
        assert SECRET not in str(error) and SECRET not in getattr(error, "raw_text", "")
        cause = error.__cause__
        while cause is not None:
            assert SECRET not in str(cause)
            cause = cause.__cause__
    assert SECRET not in str(logs)


def test_from_spec_sends_the_openai_key_only_to_the_openai_url(embed_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.example.invalid/v1")
    monkeypatch.setenv("FLOWKIT_EMBED_BASE_URL", f"{embed_server.url}/v1")
    client = embeddings_from_spec("openai:e5")
    assert client.embed(["a text"]) == [vector_of("a text")]
    assert "authorization" not in embed_server.requests[0].headers
    monkeypatch.setenv("FLOWKIT_EMBED_API_KEY", "local-key-123")
    embeddings_from_spec("openai:e5").embed(["a text"])
    assert embed_server.requests[1].headers["authorization"] == "Bearer local-key-123"


def test_from_spec_builds_each_backend_and_refuses_unknown_forms(embed_server, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", embed_server.url)
    ollama = embeddings_from_spec("ollama:bge-m3:latest")
    assert isinstance(ollama, OllamaEmbeddings) and ollama.model == "bge-m3:latest"
    assert ollama.embed(["x"]) == [vector_of("x")]
    openai = embeddings_from_spec("openai:e5", base_url="http://h:1/v1", timeout=5, max_retries=0)
    assert isinstance(openai, OpenAIEmbeddings) and openai.base_url == "http://h:1/v1"
    for spec in ("", "openai", "openai:", "cohere:embed", "scripted:x.json"):
        with pytest.raises(LLMConfigError, match="openai:MODEL"):
            embeddings_from_spec(spec)


def test_each_batch_is_logged_without_its_text(embed_server, connect_embeddings):
    client = connect_embeddings(embed_server.url, batch_size=2)
    with structlog.testing.capture_logs() as logs:
        client.embed(TEXTS)
    lines = [line for line in logs if line["event"] == "llm_embeddings"]
    assert [line["texts"] for line in lines] == [2, 1]
    assert all(line["dimensions"] == DIMS and line["model"] == "embed-test" for line in lines)
    assert not any(text in str(logs) for text in TEXTS)
