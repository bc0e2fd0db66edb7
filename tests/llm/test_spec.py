"""Spec strings and environment variables choose and configure the LLM."""

from __future__ import annotations

import subprocess
import sys

import pytest

from flowkit.errors import LLMConfigError
from flowkit.llm import OllamaLLM, OpenAICompatibleLLM, from_spec
from flowkit.llm._spec import ollama_url


def test_openai_spec_reads_base_url_and_key_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://vllm.local:8000/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "k-env")

    llm = from_spec("openai:Qwen/Qwen2.5-7B-Instruct", timeout=5, max_retries=1)

    assert isinstance(llm, OpenAICompatibleLLM)
    assert llm.model == "Qwen/Qwen2.5-7B-Instruct"
    assert llm.base_url == "http://vllm.local:8000/v1"
    assert (llm.timeout, llm.max_retries) == (5.0, 1)
    assert llm._api_key is not None and llm._api_key.get_secret_value() == "k-env"


def test_arguments_win_over_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    llm = from_spec("openai:m", base_url="http://arg:1/v1", api_key="k-arg")
    assert isinstance(llm, OpenAICompatibleLLM)
    assert llm.base_url == "http://arg:1/v1"


def test_openai_defaults():
    llm = from_spec("openai:gpt-4o-mini")
    assert isinstance(llm, OpenAICompatibleLLM)
    assert llm.base_url == "https://api.openai.com/v1"
    assert (llm.timeout, llm.max_retries) == (60.0, 3)
    assert llm._api_key is None


def test_ollama_spec_keeps_colons_in_the_model_name(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11500")
    llm = from_spec("ollama:llama3.1:8b")
    assert isinstance(llm, OllamaLLM)
    assert llm.model == "llama3.1:8b"
    assert llm.base_url == "http://gpu-box:11500"


def test_ollama_defaults_to_localhost():
    llm = from_spec("ollama:llama3.1")
    assert isinstance(llm, OllamaLLM)
    assert llm.base_url == "http://localhost:11434"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("gpu-box", "http://gpu-box:11434"),
        ("gpu-box:8080", "http://gpu-box:8080"),
        ("https://ollama.example.com/", "https://ollama.example.com"),
        ("http://10.0.0.5:11434", "http://10.0.0.5:11434"),
    ],
)
def test_ollama_host_forms(host, url):
    assert ollama_url(host) == url


def test_flowkit_llm_is_read_when_no_spec_is_given(monkeypatch):
    monkeypatch.setenv("FLOWKIT_LLM", "ollama:phi3")
    assert from_spec().model == "phi3"


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "bogus:model", " : "])
def test_bad_specs_list_the_valid_forms(spec):
    with pytest.raises(LLMConfigError, match=r"openai:MODEL.*ollama:MODEL.*replay:PATH"):
        from_spec(spec)


def test_no_spec_and_no_env_says_how_to_configure():
    with pytest.raises(LLMConfigError, match="FLOWKIT_LLM"):
        from_spec()


def test_bad_ollama_host_is_a_config_error(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "host:notaport")
    with pytest.raises(LLMConfigError, match="OLLAMA_HOST"):
        from_spec("ollama:m")


def test_importing_flowkit_llm_does_not_load_httpx():
    code = (
        "import sys, flowkit.llm as llm; "
        "assert 'httpx' not in sys.modules, 'httpx imported eagerly'; "
        "llm.ReplayLLM; llm.from_spec; "
        "assert 'httpx' not in sys.modules, 'replay pulled in httpx'; "
        "llm.OllamaLLM; assert 'httpx' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
