"""``flowkit roundtable`` and ``flowkit demo roundtable``: a terminal conversation over piped
stdin that continues in a new process with --thread, --check / --schema, errors on stderr
with the right exit codes, and the offline demo in both languages."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flowkit.cli import main

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = {
    "rules": [
        {"match": "] USER: ", "response": {"summary": "s", "keywords": ["a", "b", "c", "d", "e"]}},
        {"match": "rain", "response": "Take an umbrella. Really. [Next: NOX]"},
    ],
    "default": "Noted. [Next: CLARIS]",
    "model": "scripted-all",
}


@pytest.fixture
def replies(tmp_path: Path) -> str:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(SCRIPT), encoding="utf-8")
    return f"scripted:{path}"


def run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stdin: str, *words: str
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(words))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_piped_conversation_and_its_continuation(
    tmp_path: Path,
    replies: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = str(tmp_path / "store")
    args = ["roundtable", "trio-en", "--store", store, "--llm", replies, "--thread", "t1"]
    code, out, err = run(monkeypatch, capsys, "Will it rain?\n\n", *args)
    assert code == 0, err
    assert out.splitlines() == [
        "Lumina> Take an umbrella. Really.",
        "Nox> Take an umbrella. Really.",  # NOX nominates itself: refused, round robin
        "Claris> Take an umbrella. Really.",
    ]
    assert "new session t1 at trio-en" in err
    assert "--thread t1" in err
    code, out, err = run(monkeypatch, capsys, "Thanks\n/log\n/quit\nignored\n", *args)
    assert code == 0, err
    assert "continuing session t1" in err
    lines = out.splitlines()
    assert lines[:3] == ["Lumina> Noted.", "Claris> Noted.", "Nox> Noted."]
    assert [line.split("] ", 1)[1] for line in lines[3:]] == [
        "USER: Will it rain?",
        "Lumina: Take an umbrella. Really.",
        "Nox: Take an umbrella. Really.",
        "Claris: Take an umbrella. Really.",
        "USER: Thanks",
        "Lumina: Noted.",
        "Claris: Noted.",
        "Nox: Noted.",
    ]
    from flowkit.memory import JsonFileMemory

    kept = JsonFileMemory(Path(store) / "memory").search(("roundtable", "trio-en", "sessions"))
    assert [(item.value["session_id"], item.value["thread_id"]) for item in kept] == [
        ("t1", 1),
        ("t1", 2),
    ]


def test_a_session_belongs_to_its_table(
    tmp_path: Path,
    replies: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = str(tmp_path)
    run(
        monkeypatch,
        capsys,
        "hi\n",
        "roundtable",
        "trio-en",
        "--store",
        store,
        "--llm",
        replies,
        "--thread",
        "t",
    )
    code, _, err = run(
        monkeypatch,
        capsys,
        "hi\n",
        "roundtable",
        "trio-ja",
        "--store",
        store,
        "--llm",
        replies,
        "--thread",
        "t",
    )
    assert code == 1 and "is at table `trio-en`, not `trio-ja`" in err


def test_check_and_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(monkeypatch, capsys, "", "roundtable", "trio-ja", "--check")
    assert code == 0 and out.startswith("OK trio-ja: 3 characters: ルミナ (LUMINA)")
    code, out, _ = run(monkeypatch, capsys, "", "roundtable", "--schema")
    schema = (ROOT / "schemas" / "roundtable-config.schema.json").read_text(encoding="utf-8")
    assert code == 0 and out == schema
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\ncharacters:\n  - id: A\n    display_name: a\n", encoding="utf-8")
    code, out, err = run(monkeypatch, capsys, "", "roundtable", str(broken), "--check")
    assert code == 1 and out == ""
    assert "line 3: characters.0: `A` has no persona" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("words", "code", "message"),
    [
        (["roundtable"], 2, "name a configuration"),
        (["roundtable", "no-such-table"], 2, "neither a file nor a shipped example"),
        (["roundtable", "trio-en", "--llm", "nonsense"], 2, "is not valid"),  # bad usage
    ],
)
def test_errors_go_to_stderr_without_a_traceback(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    words: list[str],
    code: int,
    message: str,
) -> None:
    got, out, err = run(monkeypatch, capsys, "hello\n", *words, "--store", str(tmp_path))
    assert (got, out) == (code, "")
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_offline_demo(
    tmp_path: Path, lang: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        monkeypatch, capsys, "", "demo", "roundtable", "--lang", lang, "--store", str(tmp_path)
    )
    assert code == 0, err
    assert "(fuzzy)" in out and "refused (self)" in out and "(round_robin)" in out
    assert "rounds: 2, characters' turns: 6" in out
    assert out.count("memory, round") == 2
    assert ("ルミナ> " if lang == "ja" else "Lumina> ") in out


@pytest.mark.slow
def test_the_command_resumes_across_processes(tmp_path: Path, replies: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONIOENCODING": "utf-8"}
    env.pop("FLOWKIT_LLM", None)

    def talk(text: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flowkit", "roundtable", "trio-ja", "--store", str(tmp_path),
             "--llm", replies, "--thread", "p"],
            input=text, capture_output=True, text=True, encoding="utf-8", env=env, timeout=60,
            check=False,
        )  # fmt: skip

    first = talk("雨は降る？ rain\n")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0] == "ルミナ> Take an umbrella. Really."
    second = talk("ありがとう\n/log\n")
    assert second.returncode == 0, second.stderr
    assert "continuing session p" in second.stderr
    assert second.stdout.count("USER: ") == 2


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_table_with_no_model_reachable_says_so_per_character_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from .conftest import table

    url = f"http://127.0.0.1:{_closed_port()}"
    data = table(language="en", memory={"enabled": False})
    for character in data["characters"]:
        character.update(llm=f"ollama:model-{character['id'].lower()}", base_url=url)
    config = tmp_path / "table.json"
    config.write_text(json.dumps(data), encoding="utf-8")
    args = ["roundtable", str(config), "--store", str(tmp_path / "store"), "--thread", "t"]
    code, out, err = run(monkeypatch, capsys, "hello\n", *args)
    assert (code, out) == (1, "")
    failed = [line for line in err.splitlines() if line.startswith("flowkit: error: ")]
    assert [line.split(" could not answer: ")[0] for line in failed] == [
        "flowkit: error: ルミナ",
        "flowkit: error: クラリス",
        "flowkit: error: ノクス",
    ]
    assert all("LLMUnavailableError" in line for line in failed)


def test_a_character_that_fails_is_named_but_the_others_answers_keep_exit_0(
    tmp_path: Path,
    replies: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from .conftest import table

    data = table(language="en", memory={"enabled": False})
    lumina = data["characters"][0]
    lumina.update(provider="openai", model="m", base_url="http://127.0.0.1:9/v1",
                  api_key_env="RT_UNSET_KEY")  # fmt: skip
    for character in data["characters"][1:]:
        character["llm"] = replies
    config = tmp_path / "table.json"
    config.write_text(json.dumps(data), encoding="utf-8")
    args = ["roundtable", str(config), "--store", str(tmp_path / "store"), "--thread", "t"]
    code, out, err = run(monkeypatch, capsys, "hello\n", *args)
    assert code == 0, err
    assert [line.split(">")[0] for line in out.splitlines()] == ["クラリス", "ノクス"]
    (failed,) = [line for line in err.splitlines() if line.startswith("flowkit: error: ")]
    assert failed.startswith("flowkit: error: ルミナ could not answer: LLMConfigError: ")
    assert "RT_UNSET_KEY" in failed


def test_a_line_too_long_for_the_table_is_refused_and_the_talk_goes_on(
    tmp_path: Path,
    replies: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["roundtable", "trio-en", "--store", str(tmp_path), "--llm", replies, "--thread", "t"]
    code, out, err = run(monkeypatch, capsys, "x" * 4001 + "\nWill it rain?\n", *args)
    assert code == 0, err
    assert out.splitlines()[0] == "Lumina> Take an umbrella. Really."
    assert (
        "flowkit: error: that line has 4,001 characters, more than the 4,000 a message may "
        "have; it was skipped, nothing was sent.\n" in err
    )
