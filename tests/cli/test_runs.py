"""``flowkit start / resume / fork / update-state / history / delete`` on the user's own flows."""

from __future__ import annotations

import errno
import json
import os
import shlex
from pathlib import Path

import pytest
from _pydantic_words import reason

from flowkit.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def next_command(out: str) -> list[str]:
    line = next(line for line in out.splitlines() if line.startswith("Next: "))
    words = shlex.split(line.removeprefix("Next: "))
    assert words[0] == "flowkit"
    return words[1:]


def test_a_registered_flow_runs_through_its_gate_by_following_the_printed_hints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "runs")
    code, out, _ = run(capsys, "start", "review", "doc-1", "--input", '{"topic": "x"}',
                       "--store", store)  # fmt: skip
    assert code == 0
    assert "doc-1: waiting at gate `review`" in out
    hint = next_command(out)
    assert hint[:2] == ["resume", "doc-1"] and hint[-2:] == ["--store", store]
    assert "--flow" not in hint  # `review` is registered: the thread's record names it
    assert json.loads(hint[3]) == {"approved": False}  # runnable: the gate accepts it
    code, out, _ = run(capsys, *hint[:3], '{"approved": true}', *hint[4:])
    assert code == 0 and "done at" in out
    code, out, _ = run(capsys, *next_command(out))  # history
    assert code == 0 and "VERSION" in out and "input" in out


def test_an_unregistered_flow_needs_flow_and_the_hints_carry_it(
    good: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path)
    code, out, _ = run(capsys, "start", good, "t1", "--input", '{"text": "urgent"}',
                       "--store", store)  # fmt: skip
    assert code == 0
    hint = next_command(out)
    assert hint[hint.index("--flow") + 1] == good
    code, _, err = run(capsys, "resume", "t1", "--input", "{}", "--store", store)
    assert code == 2
    assert "flow `ticket` is not registered; pass --flow TARGET" in err
    code, out, _ = run(capsys, *hint)  # the printed hint runs as printed
    assert code == 0, out


def test_input_from_a_file_and_json_output(
    good: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "in.json").write_text('{"text": "hello"}', encoding="utf-8")
    code, out, _ = run(capsys, "start", good, "t1", "--input", f"@{tmp_path / 'in.json'}",
                       "--store", str(tmp_path), "--json")  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    assert doc["status"] == "done" and doc["state"]["text"] == "hello"
    assert doc["next"].startswith("flowkit history t1")


def test_fork_update_state_and_delete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path)
    assert run(capsys, "start", "review", "a", "--store", store)[0] == 0
    code, out, _ = run(capsys, "fork", "a", "--at", "0", "--store", store, "--json")
    assert code == 0 and json.loads(out)["thread_id"] == "a-fork-1"
    code, out, _ = run(capsys, "fork", "a", "--as", "b", "--store", store)
    assert code == 0 and "forked from a" in out
    code, out, _ = run(capsys, "update-state", "b", "--patch", '{"topic": "patched"}',
                       "--reason", "typo", "--store", store, "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["state"]["topic"] == "patched"
    code, out, _ = run(capsys, "history", "b", "--store", store, "--json")
    assert json.loads(out)[-1]["kind"] == "patch"
    assert run(capsys, "delete", "b", "--store", store)[0] == 0
    code, out, _ = run(capsys, "threads", "--store", store, "--json")
    assert [t["thread_id"] for t in json.loads(out)] == ["a", "a-fork-1"]
    code, _, err = run(capsys, "delete", "b", "--store", store)
    assert code == 1 and "Thread `b` does not exist" in err


def test_update_state_as_a_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path)
    assert run(capsys, "start", "review", "a", "--store", store)[0] == 0  # waits at review
    code, out, _ = run(capsys, "update-state", "a", "--patch", '{"approved": true}',
                       "--as-node", "review", "--store", store, "--json")  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    assert (doc["node"], doc["state"]["approved"]) == ("publish", True)
    code, _, err = run(capsys, "update-state", "a", "--patch", "{}", "--as-node", "nope",
                       "--store", store)  # fmt: skip
    assert code != 0 and "not a node or gate of flow" in err


def test_resume_with_actor_names_who_answered_in_the_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path)
    assert run(capsys, "start", "review", "a", "--store", store)[0] == 0
    code, _, _ = run(capsys, "resume", "a", "--input", '{"approved": false}', "--actor", "rita",
                     "--store", store)  # fmt: skip
    assert code == 0
    assert run(capsys, "resume", "a", "--input", '{"approved": true}', "--store", store)[0] == 0
    code, out, _ = run(capsys, "history", "a", "--store", store, "--json")
    answers = [r.get("actor") for r in json.loads(out) if r["kind"] == "input"]
    assert answers == ["rita", None]
    code, out, _ = run(capsys, "history", "a", "--store", store)
    assert "review (rita)" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--input", "{not json"], "--input {not json is not valid JSON"),
        (["--input", "@/no/such/file.json"], f"`/no/such/file.json`: {os.strerror(errno.ENOENT)}"),
        (["--input", "@"], "--input @: the file name is missing after @; write --input @file.json"),
        (["--input", "@{tmp}"], "is a directory, not a JSON file"),
        (
            ["--input", '{"topic": 5}'],
            f"does not fit Doc: 1 error(s), first: {reason(str, 5)} at topic",
        ),
    ],
)
def test_bad_input_is_a_plain_message(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [word.replace("{tmp}", str(tmp_path)) for word in argv]
    code, out, err = run(capsys, "start", "review", "t", *argv, "--store", str(tmp_path))
    assert code != 0 and out == ""
    assert message in err
    assert "validation error for" not in err and "Traceback" not in err


def test_a_patch_must_be_an_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "start", "review", "a", "--store", str(tmp_path))[0] == 0
    code, _, err = run(capsys, "update-state", "a", "--patch", "[1]", "--store", str(tmp_path))
    assert code == 2 and "--patch must be a JSON object" in err


def test_commands_on_threads_never_create_a_missing_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "typo" / "a"
    for argv in (
        ["resume", "t", "--input", "{}"],
        ["fork", "t"],
        ["update-state", "t", "--patch", "{}"],
        ["delete", "t"],
        ["history", "t"],
    ):
        code, _, err = run(capsys, *argv, "--store", str(typo))
        assert code != 0 and err
    assert list(tmp_path.iterdir()) == []


FAILING_FLOW = """
from pydantic import BaseModel

from flowkit import END, Flow


class S(BaseModel):
    n: int = 0


def boom(state: S) -> dict:
    raise RuntimeError("the axis is not homed")


flow = Flow(name="failing", state=S, start="boom", nodes={"boom": boom}, routes={"boom": END})
"""


def test_a_failed_step_is_reported_on_stderr_and_the_state_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "failing.py").write_text(FAILING_FLOW, encoding="utf-8")
    target, store = f"{tmp_path / 'failing.py'}:flow", str(tmp_path / "runs")
    code, out, err = run(capsys, "start", target, "f1", "--store", store)
    assert code == 1
    assert "error" not in out.lower()  # errors go to stderr, on every command
    assert "RuntimeError: the axis is not homed" in err
    assert "thread f1: failed at `boom`" in out and '"n": 0' in out
    code, out, err = run(capsys, *next_command(out))  # the printed retry, as printed
    assert code == 1 and "error" not in out.lower() and "the axis is not homed" in err


def test_update_state_on_a_failed_thread_says_the_patch_was_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "failing.py").write_text(FAILING_FLOW, encoding="utf-8")
    target, store = f"{tmp_path / 'failing.py'}:flow", str(tmp_path / "runs")
    assert run(capsys, "start", target, "f1", "--store", store)[0] == 1
    code, out, err = run(capsys, "update-state", "f1", "--patch", '{"n": 3}', "--flow", target,
                         "--store", store)  # fmt: skip
    assert code == 0, err
    assert err == ""  # the patch worked: nothing failed now
    assert "thread f1: patch written (version 2); still failed at `boom`" in out
    assert '"n": 3' in out
    assert next_command(out)[:2] == ["resume", "f1"]  # what runs the failed step again
    code, out, err = run(capsys, "update-state", "f1", "--patch", '{"n": 4}', "--flow", target,
                         "--store", store, "--json")  # fmt: skip
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert (doc["status"], doc["version"], doc["state"]["n"]) == ("failed", 3, 4)


@pytest.mark.parametrize("through", ["option", "environment"])
def test_start_and_resume_give_the_flow_the_llm_and_the_hints_run_as_printed(
    through: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flowkit.sas.demo import REQUEST

    store = str(tmp_path / "runs")
    chosen = ["--llm", "replay:demo"] if through == "option" else []
    if through == "environment":
        monkeypatch.setenv("FLOWKIT_LLM", "replay:demo")
    else:
        monkeypatch.delenv("FLOWKIT_LLM", raising=False)
    start_input = json.dumps({"user_input": REQUEST})
    code, out, err = run(capsys, "start", "sas", "s1", "--input", start_input, *chosen,
                         "--store", store)  # fmt: skip
    assert code == 0, err
    assert "waiting at gate `sas_awaiting_task_list_review`" in out
    assert "No language model" not in out
    hint = next_command(out)
    # The sas review gate takes no empty answer: the hint is one it accepts, with the LLM.
    assert json.loads(hint[hint.index("--input") + 1]) == {"action": "approve"}
    assert ("--llm" in hint) == (through == "option")
    code, out, err = run(capsys, *hint)
    assert code == 0, err
    # The demo's cassette holds no module steps for the plan approved unchanged: the model
    # was asked (the LLM reached the resumed run) and had no answer for any task, so step 2
    # failed back to the task-list review; without the LLM it would say none is configured.
    assert "waiting at gate `sas_awaiting_task_list_review`" in out
    assert "could not be generated for any" in out and "No language model" not in out
