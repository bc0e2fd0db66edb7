"""Pauses on the command line: ``flowkit show`` lists each open pause with its payload (one
line each, cut when long; ``--json`` has all of it), ``flowkit resume --gate ID`` answers one
pause by id (a Map call's too), an ``--input`` mapping answers several, and a bare answer
while several are open is refused with nothing written."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pg import require_postgres, scratch_database

from flowkit.cli import main

FLOWS = Path(__file__).resolve().parent / "cli_pause_flows.py"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def target(name: str) -> str:
    return f"{FLOWS}:{name}"


def controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


@pytest.fixture(params=["folder", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A JSON-file store folder, or a PostgreSQL database with flowkit's schema."""
    if request.param == "folder":
        yield str(tmp_path / "runs")
        return
    require_postgres()
    with scratch_database(migrated=True) as url:
        yield url


def test_show_lists_each_open_map_call_with_its_payload(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "start", target("checks"), "c-1", "--store", store)
    assert code == 0
    assert "c-1: waiting at `check[0]`, `check[2]`" in out
    assert 'payload  check[0]: {"item":1}\n         check[2]: {"item":3}\n' in out
    # Exact with the flow; from the journal alone without it: the same pauses.
    for flow in (["--flow", target("checks")], []):
        code, out, _ = run(capsys, "show", "c-1", "--store", store, *flow)
        assert code == 0
        assert "status   waiting at gates check[0], check[2]\n" in out
        assert 'payload  check[0]: {"item":1}\n         check[2]: {"item":3}\n' in out
        code, out, _ = run(capsys, "show", "c-1", "--store", store, "--json", *flow)
        assert json.loads(out)["pauses"] == [
            {"id": "check[0]", "payload": {"item": 1}},
            {"id": "check[2]", "payload": {"item": 3}},
        ]


def test_answers_name_map_calls_by_id_and_a_mapping_answers_several(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "start", target("checks"), "c-2", "--store", store)
    flow = ("--flow", target("checks"), "--store", store)
    code, out, _ = run(
        capsys, "resume", "c-2", "--gate", "check[2]", "--input", '{"ok": true}', *flow
    )
    assert code == 0 and "waiting at `check[0]`" in out
    for show in ([], ["--flow", target("checks")]):  # the answered call is closed either way
        _, shown, _ = run(capsys, "show", "c-2", "--store", store, "--json", *show)
        assert json.loads(shown)["pauses"] == [{"id": "check[0]", "payload": {"item": 1}}]
    code, out, _ = run(
        capsys, "resume", "c-2", "--input", '{"check[0]": {"ok": false}}', "--json", *flow
    )
    assert code == 0
    result = json.loads(out)
    assert result["status"] == "done" and result["pauses"] == []
    assert result["state"]["results"] == ["no", "auto2", "ok", "auto4"]


def test_a_bare_answer_while_several_are_open_is_refused_and_the_hint_names_one(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, started, _ = run(capsys, "start", target("checks"), "c-3", "--store", store)
    flow = ("--flow", target("checks"), "--store", store)
    code, out, err = run(capsys, "resume", "c-3", "--input", '{"ok": true}', *flow)
    assert code == 1 and out == ""
    assert "check[0]" in err and "check[2]" in err
    _, shown, _ = run(capsys, "show", "c-3", "--store", store, "--json")
    assert json.loads(shown)["version"] == int(started.split("(version ")[1].split(")")[0])
    # The printed next command names the first open pause and runs as printed.
    hint = shlex.split(next(line for line in started.splitlines() if line.startswith("Next: "))[6:])
    assert hint[1:5] == ["resume", "c-3", "--gate", "check[0]"]
    assert json.loads(hint[hint.index("--input") + 1]) == {"ok": False}
    code, out, _ = run(capsys, *hint[1:])
    assert code == 0 and "waiting at `check[2]`" in out


def test_a_node_that_asks_shows_its_question_and_takes_a_bare_answer(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "start", target("interviews"), "i-1", "--store", store)
    assert code == 0
    assert "i-1: waiting at gate `interview`" in out
    assert 'payload  interview: {"question":"What is your name?"}' in out
    code, out, _ = run(capsys, "show", "i-1", "--store", store, "--json")
    assert json.loads(out)["pauses"] == [
        {"id": "interview", "payload": {"question": "What is your name?"}}
    ]
    flow = ("--flow", target("interviews"), "--store", store)
    code, out, _ = run(capsys, "resume", "i-1", "--input", '{"text": "Ann"}', "--json", *flow)
    assert code == 0 and json.loads(out)["state"]["answers"] == ["Ann"]


def test_a_long_payload_is_cut_on_its_line_whole_in_json_and_never_moves_the_terminal(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "start", target("drafts"), "d-1", "--store", store)
    assert code == 0
    (line,) = [line for line in out.splitlines() if line.startswith("payload  review: ")]
    assert line.endswith(" more characters)") and len(line) < 400
    code, shown, _ = run(capsys, "show", "d-1", "--store", store, "--flow", target("drafts"))
    assert code == 0 and 'payload  review: {"draft":"Release notes lorem' in shown
    code, data, _ = run(capsys, "show", "d-1", "--store", store, "--json")
    (pause,) = json.loads(data)["pauses"]
    assert pause["id"] == "review" and pause["payload"]["draft"].endswith("\x1b]0;owned\x07")
    assert len(pause["payload"]["draft"]) > 700
    assert [c for text in (out, err, shown, data) for c in controls(text)] == []
