"""Embeddings recorded once from a model and replayed from a cassette, offline."""

from __future__ import annotations

import asyncio
import json

import pytest

from flowkit.errors import LLMConfigError, ReplayMismatchError
from flowkit.llm import (
    Embeddings,
    RecordingEmbeddings,
    RecordingLLM,
    ReplayEmbeddings,
    ReplayLLM,
    embeddings_from_spec,
    load_cassette,
    save_cassette,
)
from flowkit.testing import ScriptedLLM

from ._embed_server import embed_server, make_embeddings, vector_of

__all__ = ["embed_server"]  # the fixture, imported for these tests

TEXTS = ["吾輩は猫である。", "The cat sat.", "名前はまだ無い"]


def test_recorded_embeddings_replay_offline_in_any_batches(embed_server, tmp_path):
    calls: list[dict] = []
    live = make_embeddings("openai", embed_server.url)
    recorder = RecordingEmbeddings(live, calls.append)
    assert isinstance(recorder, Embeddings) and recorder.model == "embed-test"
    assert recorder.embed(TEXTS) == [vector_of(t) for t in TEXTS]
    assert asyncio.run(recorder.aembed([TEXTS[0], "new"])) == [
        vector_of(TEXTS[0]),
        vector_of("new"),
    ]
    assert len(calls) == 4  # a text embedded again is recorded once
    cassette = tmp_path / "embeddings.json"
    save_cassette(cassette, calls, record_with="make record-embeddings")

    embed_server.shutdown()  # from here on, nothing answers over HTTP
    replay = ReplayEmbeddings.from_file(cassette)
    assert replay.model == "embed-test"
    wanted = ["new", TEXTS[2], TEXTS[0], TEXTS[0]]
    assert replay.embed(wanted) == [vector_of(t) for t in wanted]
    assert asyncio.run(replay.aembed(TEXTS)) == [vector_of(t) for t in TEXTS]
    assert embeddings_from_spec(f"replay:{cassette}").embed(["new"]) == [vector_of("new")]
    assert replay.embed([]) == []


def test_an_unrecorded_text_is_a_mismatch_never_a_made_up_vector(tmp_path):
    cassette = tmp_path / "c.json"
    save_cassette(cassette, [_record("known", [1.0, 2.0])], record_with="make record")
    replay = ReplayEmbeddings.from_file(cassette)
    with pytest.raises(ReplayMismatchError) as caught:
        replay.embed(["known", "unknown text"])
    message = str(caught.value)
    assert str(cassette) in message and "make record" in message
    assert "unknown text" not in message  # texts are quoted only when asked for


def test_one_cassette_holds_chat_and_embedding_calls(tmp_path):
    calls: list[dict] = []
    RecordingLLM(ScriptedLLM(default="Hello."), calls.append).complete(
        [{"role": "user", "content": "The cat sat."}]
    )
    calls.append(_record("The cat sat.", [0.5, 0.25]))
    cassette = tmp_path / "both.json"
    save_cassette(cassette, calls)
    assert len(load_cassette(cassette)) == 2
    assert ReplayEmbeddings.from_file(cassette).embed(["The cat sat."]) == [[0.5, 0.25]]
    chat = ReplayLLM.from_file(cassette)
    assert chat.complete([{"role": "user", "content": "The cat sat."}]).text == "Hello."


@pytest.mark.parametrize(
    "vectors",
    [[[1.0, 2.0], [1.0]], [[1.0, float("nan")], [1.0, 2.0]], [[1.0, "2"], [1.0, 2.0]]],
    ids=["lengths differ", "nan", "a string"],
)
def test_recorded_vectors_that_cannot_be_used_are_a_config_error(tmp_path, vectors):
    cassette = tmp_path / "bad.json"
    save_cassette(cassette, [_record(f"t{i}", v) for i, v in enumerate(vectors)])
    with pytest.raises(LLMConfigError, match="Record it again"):
        ReplayEmbeddings.from_file(cassette).embed(["t0", "t1"])


def test_a_recorded_embedding_is_plain_json_in_the_cassette(embed_server, tmp_path):
    calls: list[dict] = []
    RecordingEmbeddings(make_embeddings("ollama", embed_server.url), calls.append).embed(["a"])
    cassette = tmp_path / "c.json"
    save_cassette(cassette, calls)
    (call,) = json.loads(cassette.read_text(encoding="utf-8"))["calls"]
    assert call["request"]["messages"] == [{"role": "embed", "content": "a"}]
    assert call["response"]["parsed"] == vector_of("a")


def _record(text: str, vector: list) -> dict:
    from flowkit.llm.embedding_replay import embedding_record

    record = embedding_record(text, [0.0] * len(vector), "m")
    record["response"]["parsed"] = vector
    return record
