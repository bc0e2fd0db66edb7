"""``flowkit quality ...`` and ``flowkit demo quality`` as a user runs them."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from _pydantic_words import reason

from flowkit.cli import main
from flowkit.quality.demo import demo_file
from flowkit.quality.models import IterationPolicy


def run(*words: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(words))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("FLOWKIT_USER", "aki")
    monkeypatch.delenv("FLOWKIT_QUALITY_ADMINS", raising=False)
    return str(tmp_path / "store")


def test_check_status_history_and_a_rerun(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    ep = str(demo_file("episode_en.txt"))
    code, out, err = run("quality", "check", ep, "--episode", "2", "--policy", "count=2",
                         "--llm", "replay:demo", "--store", store, capsys=capsys)  # fmt: skip
    assert code == 0, err
    assert "completed (round 2, decision count_exhausted)" in out
    assert "Recurrence" in out and "Resolved" in out and err == ""
    code, out, _ = run("quality", "status", "--episode", "2", "--store", store, capsys=capsys)
    assert code == 0 and "completed  lock released" in out and "1 New" in out
    code, out, _ = run("quality", "status", "--episode", "2", "--json", "--store", store,
                       capsys=capsys)  # fmt: skip
    data = json.loads(out)
    assert data["session"]["initiator"] == "aki" and data["thread"]["status"] == "done"
    code, out, _ = run("quality", "history", "--store", store, capsys=capsys)
    assert code == 0 and out.startswith("QC_EP002_") and "by aki" in out


def test_another_user_sees_nothing_and_an_admin_everything(
    store: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ep = str(demo_file("episode_en.txt"))
    run("quality", "check", ep, "--episode", "2", "--llm", "replay:demo", "--store", store,
        "--policy", "count=2", capsys=capsys)  # fmt: skip
    code, _, err = run("quality", "status", "--episode", "2", "--user", "ben", "--store", store,
                       capsys=capsys)  # fmt: skip
    assert code == 1 and "that you may read" in err
    code, out, _ = run("quality", "history", "--user", "ben", "--store", store, capsys=capsys)
    assert out == "no sessions you may read\n"
    monkeypatch.setenv("FLOWKIT_QUALITY_ADMINS", "root, ben")
    code, out, _ = run("quality", "history", "--user", "ben", "--store", store, capsys=capsys)
    assert "by aki" in out


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["check", "missing.txt", "--episode", "1"], "no such file"),
        (["check", "EP", "--episode", "0"], "from 1 to 9999"),
        (["check", "EP", "--episode", "1", "--policy", "count=zero"], "not valid"),
        (["check", "EP", "--episode", "1", "--policy", "speed=3"], "not one of"),
        (["check", "EP", "--episode", "1"], "No LLM is configured"),
        (["resolve", "ISSUE-1", "--defer", "x"], "should match pattern"),
        (["resolve", "ISSUE-1758963600000-0123abcd", "--range", "a:b"], "not START:END"),
        (["resolve", "ISSUE-1758963600000-0123abcd", "--defer", "x"], "No issue"),
        (["upload", "QC_EP001_20250101_0000", "EP"], "No session"),
        (["upload", "../../etc", "EP"], "not a session id"),
        (["status", "--episode", "3"], "No quality sessions in store"),
    ],
)
def test_bad_input_is_one_line_on_stderr(
    store: str, words: list[str], message: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    if message == "No LLM is configured":
        monkeypatch.delenv("FLOWKIT_LLM", raising=False)
    else:
        monkeypatch.setenv("FLOWKIT_LLM", "replay:demo")
    ep = str(demo_file("episode_ja.txt"))
    words = [ep if w == "EP" else w for w in words]
    code, out, err = run("quality", *words, "--store", store, capsys=capsys)
    assert code in (1, 2) and out == ""
    assert err.startswith("flowkit: error: ") and message in err, err
    assert "Traceback" not in err


def test_flowkit_demo_quality_runs_offline(tmp_path: Path) -> None:
    out = io.StringIO()
    from flowkit.quality.demo import run_quality_demo

    assert run_quality_demo(str(tmp_path), out) == 0
    text = out.getvalue()
    assert text.count("session completed (count_exhausted); 1 open") == 2
    assert "came back as ISSUE-" in text and "QC-012" in text
    assert "round 2: 1 fix applied, 1 needs a tool that is not available (QC-012)" in text
    assert "round 2: re-check reported 1 problem\n" in text
    assert "round 1: 4 fixes applied, 1 needs a tool" in text
    assert "round 1: re-check reported 2 problems\n" in text
    assert (tmp_path / "quality" / "audit").is_dir()
    again = io.StringIO()
    assert run_quality_demo(str(tmp_path), again) == 0
    assert again.getvalue().count("checked in this store before") == 2


def test_flowkit_demo_without_a_name_still_runs_sas(capsys: pytest.CaptureFixture[str]) -> None:
    from flowkit.cli import build_parser

    args = build_parser().parse_args(["demo"])
    assert args.name == "sas"
    assert build_parser().parse_args(["demo", "quality"]).name == "quality"


def test_the_cassette_is_what_the_scripted_editor_answers(tmp_path: Path) -> None:
    from flowkit.quality.demo import record_cassette

    fresh = record_cassette(tmp_path / "cassette.json")
    recorded = json.loads(demo_file("cassette.json").read_text(encoding="utf-8"))
    again = json.loads(fresh.read_text(encoding="utf-8"))
    assert sorted(c["key"] for c in again["calls"]) == sorted(c["key"] for c in recorded["calls"])


def test_a_policy_value_of_the_wrong_type_is_named_in_one_line(
    store: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWKIT_LLM", "replay:demo")
    ep = str(demo_file("episode_ja.txt"))
    words = ["check", ep, "--episode", "1", "--policy", "count=abc", "--store", store]
    code, out, err = run("quality", *words, capsys=capsys)
    assert (code, out) == (2, "")
    why = reason(IterationPolicy, {"count": "abc"})  # pydantic's words, passed on as they are
    assert err == f"flowkit: error: Policy 'count=abc' is not valid: count: {why}\n"


def test_the_demo_module_has_a_real_argument_parser(tmp_path: Path) -> None:
    def demo(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "flowkit.quality.demo", *words],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              check=False)  # fmt: skip

    helped = demo("--help")
    assert helped.returncode == 0
    assert helped.stdout.startswith("usage: python -m flowkit.quality.demo")
    assert "--record" in helped.stdout and "--store" in helped.stdout
    assert "--output-dir" not in helped.stdout  # the quality demo writes no program
    assert "flowkit demo quality:" not in helped.stdout  # the demo did not run
    wrong = demo("--nope")
    assert wrong.returncode == 2 and "unrecognized arguments: --nope" in wrong.stderr
    ran = demo("--store", "st")
    assert ran.returncode == 0, ran.stderr
    assert "flowkit demo quality:" in ran.stdout and (tmp_path / "st" / "quality").is_dir()


def test_a_check_the_demo_cassette_cannot_answer_gives_the_demos_advice(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine.txt"
    mine.write_text("Hello wrold. This is my own manuscrpt.\n", encoding="utf-8")
    code, _, err = run("quality", "check", str(mine), "--episode", "3", "--llm", "replay:demo",
                       "--store", store, capsys=capsys)  # fmt: skip
    assert code == 1
    assert "answer only the checks of the demo's own manuscripts" in err
    assert "flowkit demo quality" in err and "--llm openai:MODEL" in err
    assert "--record" not in err  # re-recording the shipped cassette helps nobody
