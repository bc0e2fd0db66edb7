"""`flowkit chat` / `flowkit dialogue ...` as a newcomer meets them: every problem of a domain
at once with its line, `--json` and `--junit` reports, errors on stderr and never a
traceback, nothing created on a failed start, and hints that run as printed."""

from __future__ import annotations

import io
import json
import shlex
import sys
from pathlib import Path

import pytest
from lxml import etree

from flowkit.cli import main

from .test_domain import BROKEN


def run(
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: str = "",
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLOWKIT_STORE", raising=False)
    monkeypatch.delenv("FLOWKIT_LLM", raising=False)


def test_check_lists_every_problem_with_its_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("broken.yaml").write_text(BROKEN, encoding="utf-8")
    code, out, err = run(["dialogue", "check", "broken.yaml"], capsys, monkeypatch)
    assert code == 1 and err == ""
    heading, kind, *others = out.splitlines()
    assert heading == "FAIL broken.yaml: 3 problems"
    assert kind.startswith("- line 8: entities.part.kind: ") and kind.endswith("; fix the value")
    assert others == [
        "- line 21: goals.order.colour: unknown key `colour`; remove it or fix its spelling",
        "- line 14: slots.size.entity: entity `sizes` is not defined; add it under entities "
        "or fix the name",
    ]
    code, out, _ = run(["dialogue", "check", "broken.yaml", "--json"], capsys, monkeypatch)
    data = json.loads(out)
    assert code == 1 and data["ok"] is False and data["name"] is None
    assert data["problems"][2] == {
        "where": "slots.size.entity",
        "line": 14,
        "message": "entity `sizes` is not defined; add it under entities or fix the name",
    }


def test_check_of_a_good_domain(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(["dialogue", "check", "robot_cell"], capsys, monkeypatch)
    assert code == 0 and out.startswith("OK robot_cell: 2 languages")
    code, out, _ = run(["dialogue", "check", "robot_cell", "--json"], capsys, monkeypatch)
    data = json.loads(out)
    assert code == 0 and data["ok"] and data["problems"] == []
    assert data["counts"]["goals"] == 3 and data["name"] == "robot_cell"


def test_check_reports_handlers_that_cannot_be_imported(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = BROKEN.split("entities:")[0] + (
        "goals:\n  order: {intent: order, mode: STEP_BY_STEP, steps: [{en: go}], action: a}\n"
        "actions:\n  a: {handler: 'no_such_module:fn'}\n"
    )
    Path("d.yaml").write_text(text, encoding="utf-8")
    code, out, _ = run(["dialogue", "check", "d.yaml"], capsys, monkeypatch)
    assert code == 1
    assert "- line 9: actions.a.handler: cannot import `no_such_module:fn`" in out


CONVERSATIONS = """\
today: 2025-03-10
conversations:
  - name: books a slot
    turns:
      - user: book maintenance for robot 2 tomorrow at 3 pm
        missing: [requester]
      - {user: Sato, response: booking_done}
  - name: "wrong on purpose <&\\"]]> \\x1b"
    turns:
      - user: hello <b>&amp;
        response: fallback
      - user: book maintenance for robot 2 tomorrow at 3 pm
      - {user: Tanaka, response: booking_done, says: "x]]>y"}
"""


def test_test_writes_json_and_a_junit_report_that_parses(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("c.yaml").write_text(CONVERSATIONS, encoding="utf-8")
    argv = ["dialogue", "test", "robot_cell", "c.yaml", "--junit", "report.xml", "--json"]
    code, out, err = run(argv, capsys, monkeypatch)
    assert code == 1 and err == ""
    data = json.loads(out)
    assert (data["conversations"], data["passed"], data["failed"]) == (2, 1, 1)
    [good, bad] = data["results"]
    assert good["passed"] and good["failures"] == []
    assert bad["failures"][0] == {
        "turn": 1,
        "user": "hello <b>&amp;",
        "problem": "expected response 'fallback', got 'greet'",
    }
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    root = etree.parse("report.xml", parser).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "1"
    [suite] = root
    assert suite.get("name") == "robot_cell" and suite.get("failures") == "1"
    cases = suite.findall("testcase")
    assert [c.get("classname") for c in cases] == ["robot_cell.c"] * 2
    assert cases[0].get("name") == "books a slot" and cases[0].find("failure") is None
    assert cases[1].get("name") == 'wrong on purpose <&"]]> \\x1b'
    failure = cases[1].find("failure")
    assert failure.get("message") == "turn 1: expected response 'fallback', got 'greet'"
    assert "turn 1 (user: 'hello <b>&amp;')" in failure.text
    assert "turn 3 (user: '***')" in failure.text  # the requester's name is masked
    assert "expected the reply to contain 'x]]>y'" in failure.text
    assert "Tanaka" not in Path("report.xml").read_text(encoding="utf-8")


def test_test_refuses_a_junit_path_it_cannot_write_before_running(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["dialogue", "test", "robot_cell", "robot_cell", "--junit", "no/such/dir/r.xml"]
    code, out, err = run(argv, capsys, monkeypatch)
    assert code == 2 and out == ""
    assert "cannot write the JUnit report to `no/such/dir/r.xml`" in err
    assert not Path("no").exists()


BAD_INPUTS = {
    "missing.yaml": None,
    "empty.yaml": b"",
    "latin1.yaml": b"name: caf\xe9\n",
    "nul.yaml": b"name: a\x00\n",
    "big.yaml": b"a: " + b"x" * (5 * 1024 * 1024),
    "deep.yaml": b"[" * 200_000,
    "deep-block.yaml": b"- " * 200_000 + b"x\n",
    "list.yaml": b"- a\n",
}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            "nosuch.yaml",
            "`nosuch.yaml` does not exist, nor is it a shipped example (robot_cell); pass the "
            "path of a conversation test file.",
        ),
        (".", "`.` is a directory, not a conversation test file; pass the file's path."),
    ],
)
def test_test_names_a_conversation_file_that_is_missing_or_a_folder(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    given: str,
    message: str,
) -> None:
    code, out, err = run(["dialogue", "test", "robot_cell", given], capsys, monkeypatch)
    assert (code, out, err) == (2, "", f"flowkit: error: {message}\n")


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
@pytest.mark.parametrize("command", ["chat", "check", "test"])
def test_bad_domain_files_are_plain_errors_and_create_nothing(
    name: str,
    command: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    content = BAD_INPUTS[name]
    if content is not None:
        Path(name).write_bytes(content)
    before = sorted(p.name for p in Path().iterdir())
    argv = {
        "chat": ["chat", name, "--store", "store"],
        "check": ["dialogue", "check", name],
        "test": ["dialogue", "test", name, "robot_cell"],
    }[command]
    code, out, err = run(argv, capsys, monkeypatch, stdin="hello\n")
    assert code != 0
    assert "Traceback" not in err and "Traceback" not in out
    assert len(out) + len(err) < 1000  # the input is never echoed back
    message = out if command == "check" and code == 1 else err
    assert name in message and message.strip()
    assert sorted(p.name for p in Path().iterdir()) == before


def test_chat_hints_run_as_printed_and_the_store_comes_from_the_shared_option(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWKIT_STORE", "from-env")
    code, out, err = run(["chat", "robot_cell"], capsys, monkeypatch, "book maintenance\n")
    assert code == 0 and Path("from-env/threads").is_dir()
    assert (
        out == "bot> Which machine needs maintenance (robot 1, robot 2, robot 3 or the conveyor)?\n"
    )
    hint = err.split("continue later with: ")[1].split(")\n")[0]
    words = shlex.split(hint)
    assert words[:3] == ["flowkit", "chat", "robot_cell"] and "--thread" in words
    code, out, err = run(words[1:], capsys, monkeypatch, "/quit\n")
    assert code == 0 and "continuing conversation" in err

    monkeypatch.delenv("FLOWKIT_STORE")
    argv = ["chat", "robot_cell", "--store", "my store", "--thread", "t"]
    run(argv, capsys, monkeypatch, "bye\n")
    code, out, err = run(argv, capsys, monkeypatch, "hello\n")
    assert code == 1 and out == "" and "has ended" in err
    again = shlex.split(err.split("start a new one with: ")[1].strip())
    assert again == ["flowkit", "chat", "robot_cell", "--store", "my store"]
    code, out, err = run(again[1:], capsys, monkeypatch, "hello\n")
    assert code == 0 and out.startswith("bot> Hello!")


def test_chat_on_a_corrupt_journal_is_an_error_without_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["chat", "robot_cell", "--store", "s", "--thread", "t"]
    run(argv, capsys, monkeypatch, "book maintenance\n")
    journal = Path("s/threads/t/journal.jsonl")
    with journal.open("a", encoding="utf-8") as handle:
        handle.write('{"kind": "step", "v": 1}\n')
    code, out, err = run(argv, capsys, monkeypatch, "robot 2\n")
    assert code == 1 and out == "" and "Traceback" not in err
    assert err.startswith("flowkit: error: ") and "journal.jsonl" in err


@pytest.mark.parametrize("command", ["chat", "test", "eval"])
def test_a_domain_that_cannot_be_loaded_exits_2_like_any_target(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("broken.yaml").write_text(BROKEN)
    Path("examples.yaml").write_text("examples: []\n")
    argv = {
        "chat": ["chat", "broken.yaml", "--store", "store"],
        "test": ["dialogue", "test", "broken.yaml", "robot_cell"],
        "eval": ["dialogue", "eval", "broken.yaml", "examples.yaml"],
    }[command]
    code, out, err = run(argv, capsys, monkeypatch, stdin="hello\n")
    assert (code, out) == (2, "")
    assert "broken.yaml" in err and "Traceback" not in err


def test_a_conversation_file_that_cannot_be_loaded_exits_2_with_a_yaml_hint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("yes.yaml").write_text(
        "conversations:\n- name: yes\n  turns:\n  - user: hello\n  - user: yes\n"
    )
    code, out, err = run(
        ["dialogue", "test", "robot_cell", "yes.yaml", "--json"], capsys, monkeypatch
    )
    assert (code, out) == (2, "")
    assert "conversations.0.turns.1.user" in err and '"yes" in quotes' in err
