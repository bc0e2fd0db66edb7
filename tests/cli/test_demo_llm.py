"""``--llm replay:demo`` names the recorded answers of the demo of the flow being run."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

import flowkit
from flowkit.cli import main
from flowkit.terminal.demo_llm import chosen_llm
from flowkit.terminal.errors import CommandError
from flowkit.workflows import load_flow

ASKS_LLM = f"{Path(__file__).resolve().parent.parent / 'flows' / 'asks_llm.py'}:flow"


def _shipped_cassette(workflow: str) -> Path:
    return Path(flowkit.__file__).resolve().parent / workflow / "demo" / "cassette.json"


@pytest.mark.parametrize("workflow", ["sas", "quality"])
def test_replay_demo_is_the_cassette_shipped_with_the_demo_of_the_flow_run(
    workflow: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLOWKIT_LLM", raising=False)
    llm = chosen_llm(argparse.Namespace(llm="replay:demo"), [load_flow(workflow)])
    assert Path(llm.source).resolve() == _shipped_cassette(workflow)


def test_serving_flows_of_two_demos_with_replay_demo_is_refused() -> None:
    flows = [load_flow("sas"), load_flow("quality")]
    with pytest.raises(CommandError) as caught:
        chosen_llm(argparse.Namespace(llm="replay:demo"), flows)
    assert caught.value.code == 2
    assert "quality and sas ship demo answers of their own" in str(caught.value)


def test_serving_one_demo_flow_beside_flows_without_one_replays_that_demo() -> None:
    llm = chosen_llm(argparse.Namespace(llm="replay:demo"), [load_flow("review"), load_flow("sas")])
    assert Path(llm.source).resolve() == _shipped_cassette("sas")


def test_a_flow_without_a_demo_is_told_so_when_it_asks_the_llm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = ["start", ASKS_LLM, "q", "--llm", "replay:demo", "--input", '{"question": "hi"}']
    assert main([*words, "--json", "--store", str(tmp_path)]) == 1
    message = json.loads(capsys.readouterr().out)["error"]["message"]
    assert "flow `asks_llm` ships no demo answers" in message
    assert "--llm replay:PATH" in message and "--llm openai:MODEL" in message
    assert "flowkit sas" not in message and "--record" not in message


def test_replay_demo_on_a_flow_without_a_demo_imports_no_demo(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from flowkit.cli import main\n"
        f"main(['start', {ASKS_LLM!r}, 'q', '--llm', 'replay:demo', '--input', "
        f"'{{\"question\": \"hi\"}}', '--json', '--store', {str(tmp_path)!r}])\n"
        "print([m for m in ('flowkit.sas.demo', 'flowkit.quality.demo') if m in sys.modules])\n"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=False)  # fmt: skip
    assert ran.returncode == 0, ran.stderr  # main() returned; the script went on
    assert ran.stdout.splitlines()[-1] == "[]"
