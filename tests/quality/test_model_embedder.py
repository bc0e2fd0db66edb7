"""An embedding model as the quality workflow's embedder, and how a user picks one."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from llm._embed_server import embed_server

from flowkit.cli import main
from flowkit.errors import LLMUnavailableError
from flowkit.llm import OllamaEmbeddings, OpenAIEmbeddings, ReplayEmbeddings
from flowkit.quality.demo import demo_file
from flowkit.quality.embed import (
    EMBEDDER_ENV,
    SIMILARITY_ENV,
    Embedder,
    ModelEmbedder,
    NGramEmbedder,
    default_embedder,
    embedder_from_spec,
)
from flowkit.quality.errors import QualityInputError
from flowkit.quality.remap import (
    SIMILARITY_THRESHOLD,
    Placement,
    Remapper,
    similarity_threshold,
)
from flowkit.quality.services import Workspace

from ._edits import EDITS

__all__ = ["embed_server"]  # the fixture, imported for these tests


class Counting:
    """An ``Embeddings`` whose vectors are made up from each text; records what it was sent."""

    model = "counting"

    def __init__(self) -> None:
        self.sent: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.sent.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


def test_a_model_embedder_is_an_embedder_and_sends_no_blank_text() -> None:
    model = Counting()
    embedder = ModelEmbedder(model)
    assert isinstance(embedder, Embedder)
    assert embedder.embed(["abc", "", "  \n", "de"]) == [
        [3.0, 1.0],
        [0.0, 0.0],
        [0.0, 0.0],
        [2.0, 1.0],
    ]
    assert model.sent == [["abc", "de"]]
    assert embedder.embed(["", " "]) == [[0.0, 0.0], [0.0, 0.0]]  # the length is known now
    assert model.sent == [["abc", "de"]]
    assert embedder.embed([]) == []


def test_blank_texts_before_any_answer_get_zero_vectors_of_the_models_length() -> None:
    model = Counting()
    assert ModelEmbedder(model).embed([" "]) == [[0.0, 0.0]]


def test_one_string_is_refused() -> None:
    with pytest.raises(QualityInputError):
        ModelEmbedder(Counting()).embed("abc")  # type: ignore[arg-type]


def test_the_models_errors_pass_through(tmp_path) -> None:
    class Down(Counting):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            raise LLMUnavailableError("down", model="counting")

    with pytest.raises(LLMUnavailableError):
        ModelEmbedder(Down()).embed(["abc"])


def test_a_spec_picks_the_embedder(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("FLOWKIT_EMBED_BASE_URL", raising=False)
    assert isinstance(embedder_from_spec("ngram"), NGramEmbedder)
    assert isinstance(embedder_from_spec(" NGram "), NGramEmbedder)
    http = embedder_from_spec("openai:multilingual-e5-small")
    assert isinstance(http, ModelEmbedder) and isinstance(http.embeddings, OpenAIEmbeddings)
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box")
    ollama = embedder_from_spec("ollama:bge-m3")
    assert isinstance(ollama, ModelEmbedder) and isinstance(ollama.embeddings, OllamaEmbeddings)
    assert ollama.embeddings.base_url == "http://gpu-box:11434"
    from flowkit.llm import save_cassette
    from flowkit.llm.embedding_replay import embedding_record

    save_cassette(tmp_path / "c.json", [embedding_record("abc", [1.0, 0.0], "m")])
    replayed = embedder_from_spec(f"replay:{tmp_path / 'c.json'}")
    assert isinstance(replayed, ModelEmbedder)
    assert isinstance(replayed.embeddings, ReplayEmbeddings)
    assert replayed.embed(["abc"]) == [[1.0, 0.0]]


@pytest.mark.parametrize("spec", ["", "e5", "cohere:embed", "openai:", "replay:/no/such.json"])
def test_a_bad_spec_is_an_input_error_naming_the_forms(spec: str) -> None:
    with pytest.raises(QualityInputError, match="ngram"):
        embedder_from_spec(spec)


def test_the_default_embedder_is_ngram_unless_the_environment_names_one(monkeypatch) -> None:
    monkeypatch.delenv(EMBEDDER_ENV, raising=False)
    assert isinstance(default_embedder(), NGramEmbedder)
    monkeypatch.setenv(EMBEDDER_ENV, "openai:multilingual-e5-small")
    monkeypatch.setenv("FLOWKIT_EMBED_BASE_URL", "http://127.0.0.1:8000/v1")
    chosen = default_embedder()
    assert isinstance(chosen, ModelEmbedder)
    assert chosen.embeddings.base_url == "http://127.0.0.1:8000/v1"  # type: ignore[attr-defined]
    monkeypatch.setenv(EMBEDDER_ENV, "nonsense")
    with pytest.raises(QualityInputError):
        default_embedder()


def test_a_workspace_uses_the_embedder_the_environment_names(tmp_path, monkeypatch) -> None:
    from flowkit.quality.models import Principal

    monkeypatch.setenv(EMBEDDER_ENV, "openai:multilingual-e5-small")
    monkeypatch.setenv("FLOWKIT_EMBED_BASE_URL", "http://127.0.0.1:8000/v1")
    services = Workspace(tmp_path / "ws").services(Principal(user_id="aki"))
    assert isinstance(services.embedder, ModelEmbedder)
    monkeypatch.delenv(EMBEDDER_ENV)
    services = Workspace(tmp_path / "ws").services(Principal(user_id="aki"))
    assert isinstance(services.embedder, NGramEmbedder)


class Strict(NGramEmbedder):
    """The n-gram embedder, on a scale where only 0.99 means "the same passage"."""

    similarity_threshold = 0.99


def _place_moved(embedder: Embedder) -> Placement:
    edit = next(e for e in EDITS if e.name == "ja-sentence-moved")
    return Remapper(edit.old, edit.new, embedder=embedder).place(edit.range, edit.checksum)


def test_re_mapping_takes_the_embedders_own_similarity_threshold() -> None:
    assert similarity_threshold(NGramEmbedder()) == SIMILARITY_THRESHOLD
    assert similarity_threshold(Strict()) == 0.99
    placed = _place_moved(NGramEmbedder())
    assert placed.method == "semantic_search" and placed.confidence < 0.99
    strict = _place_moved(Strict())
    assert strict.range is None
    assert strict.attempts[-1].strategy == "manual_confirmation"


@pytest.mark.parametrize("threshold", [0, -0.5, 1.5, True, "0.9"])
def test_a_threshold_that_is_not_a_cosine_is_an_input_error(threshold) -> None:
    with pytest.raises(QualityInputError, match="similarity_threshold"):
        ModelEmbedder(Counting(), similarity_threshold=threshold)


def test_a_models_threshold_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv(EMBEDDER_ENV, "openai:multilingual-e5-small")
    monkeypatch.setenv(SIMILARITY_ENV, "0.95")
    chosen = default_embedder()
    assert isinstance(chosen, ModelEmbedder) and chosen.similarity_threshold == 0.95
    assert similarity_threshold(chosen) == 0.95
    monkeypatch.delenv(SIMILARITY_ENV)
    assert similarity_threshold(default_embedder()) == SIMILARITY_THRESHOLD
    for bad in ("high", "2"):
        monkeypatch.setenv(SIMILARITY_ENV, bad)
        with pytest.raises(QualityInputError):
            default_embedder()


def test_the_quality_command_embeds_with_the_model_the_environment_names(
    embed_server, tmp_path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("FLOWKIT_USER", "aki")
    monkeypatch.setenv(EMBEDDER_ENV, "openai:e5")
    monkeypatch.setenv("FLOWKIT_EMBED_BASE_URL", f"{embed_server.url}/v1")
    episode = str(demo_file("episode_en.txt"))
    store = str(tmp_path / "store")
    code = main(["quality", "check", episode, "--episode", "2", "--policy", "count=2",
                 "--llm", "replay:demo", "--store", store])  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 0, err
    sent = [r for r in embed_server.requests if r.path == "/v1/embeddings"]
    assert sent and all(r.body["model"] == "e5" for r in sent)


def test_an_embedder_the_environment_names_wrongly_is_a_usage_error(
    tmp_path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("FLOWKIT_USER", "aki")
    monkeypatch.setenv(EMBEDDER_ENV, "cohere:embed")
    episode = str(demo_file("episode_en.txt"))
    code = main(["quality", "check", episode, "--episode", "2", "--llm", "replay:demo",
                 "--store", str(tmp_path / "store")])  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 2 and EMBEDDER_ENV in err
