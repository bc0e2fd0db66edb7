"""The error boundary of ``main``, thresholds, masking in ``show``, and a light ``--help``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flowkit.cli import main


def test_an_unexpected_exception_is_one_line_and_its_traceback_only_at_vv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("x" * 5000)

    monkeypatch.setattr("flowkit.workflows.registered", boom)
    assert main(["workflows"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("flowkit: error: unexpected ZeroDivisionError: xxx")
    assert "run with -vv for details" in err and "Traceback" not in err
    assert len(err) < 400  # the huge message is not echoed back whole
    assert main(["workflows", "-vv"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "option", ["--max-error-rate=-0.1", "--max-error-rate=2", "--max-checkpoint-mb=-1",
               "--max-avg-seconds=nan", "--max-recoveries-per-hour=-3"],
)  # fmt: skip
def test_nonsense_thresholds_are_usage_errors(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["stats", "--store", str(tmp_path), option])
    assert exit_.value.code == 2
    assert "error: argument" in capsys.readouterr().err


def test_store_defaults_to_flowkit_store_then_dot_flowkit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FLOWKIT_STORE", raising=False)
    assert main(["start", "review", "a"]) == 0
    assert (tmp_path / ".flowkit" / "threads" / "a").is_dir()
    assert "--store" not in capsys.readouterr().out  # the default needs no option
    monkeypatch.setenv("FLOWKIT_STORE", str(tmp_path / "env"))
    assert main(["start", "review", "b"]) == 0
    capsys.readouterr()
    assert main(["threads", "--json"]) == 0
    assert [t["thread_id"] for t in json.loads(capsys.readouterr().out)] == ["b"]


def test_show_masks_personal_slots_like_chat_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flowkit.dialogue import Dialogue
    from flowkit.stores import JsonFileStore

    bot = Dialogue("robot_cell", store=JsonFileStore(tmp_path))
    bot.send("c1", "book maintenance for robot 2 tomorrow at 3 pm")
    bot.send("c1", "Sato")
    assert bot.state("c1").slots["requester"] == "Sato"
    capsys.readouterr()
    assert main(["show", "c1", "--store", str(tmp_path), "--json"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert doc["state"]["slots"]["requester"] == "***"
    assert doc["state"]["slots"]["machine"] == "robot_2"
    assert "Sato" not in out
    assert "personal slots of domain `robot_cell` masked" in doc["note"]


def test_help_and_version_do_not_import_the_engine_or_the_workflows() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from flowkit.cli import main\n"
        "for argv in (['--help'], ['--version'], ['sas', '--help']):\n"
        "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "        main(argv)\n"
        "heavy = ['pydantic', 'flowkit.runner._runner', 'flowkit.sas.workflow',"
        " 'flowkit.dialogue.app', 'flowkit.robot', 'transitions', 'structlog']\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_import_flowkit_loads_the_engine_only_when_a_name_is_used() -> None:
    code = (
        "import sys, flowkit\n"
        "print('flowkit.runner._runner' in sys.modules)\n"
        "flowkit.Runner\n"
        "print('flowkit.runner._runner' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["False", "True"]


def test_history_json_of_a_conversation_masks_personal_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flowkit.dialogue import Dialogue
    from flowkit.stores import JsonFileStore

    bot = Dialogue("robot_cell", store=JsonFileStore(tmp_path))
    bot.send("c1", "book maintenance for robot 2 tomorrow at 3 pm")
    bot.send("c1", "Sato")
    capsys.readouterr()
    for argv in (["history", "c1", "--json"], ["show", "c1", "--history", "--json"]):
        assert main([*argv, "--store", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert "Sato" not in out and '"***"' in out
