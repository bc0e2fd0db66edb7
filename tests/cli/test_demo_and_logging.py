"""`flowkit demo` and the CLI's logging setup (-v / -vv, stderr only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowkit import Runner
from flowkit.cli import main
from flowkit.examples.review import flow as review_flow
from flowkit.stores import JsonFileStore


def test_demo_review_narrates_the_run_and_leaves_the_thread_in_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "review", "--store", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for expected in [
        f"store: {tmp_path} (JsonFileStore), thread: review-1",
        "ran node `draft`",
        "waiting at gate `review` (checkpoint 1)",
        "reviewer: not yet",
        "waiting at gate `review` (checkpoint 3)",
        "reviewer: approved",
        "ran node `publish`",
        "status: done, checkpoints: 6",
        "reloaded from disk by a new runner: same state",
        f"flowkit history review-1 --store {tmp_path}",
    ]:
        assert expected in out
    result = Runner(review_flow, store=JsonFileStore(tmp_path)).get_state("review-1")
    assert result.status == "done" and result.state.published


def test_review_demo_picks_a_free_thread_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "review", "--store", str(tmp_path)]) == 0
    assert main(["demo", "review", "--store", str(tmp_path)]) == 0
    assert "thread: review-2" in capsys.readouterr().out
    assert JsonFileStore(tmp_path).threads() == ["review-1", "review-2"]


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_dialogue_demo_runs_offline_and_again_on_the_same_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lang: str
) -> None:
    """Three conversations end as they should, the last continued by a new Dialogue; a second
    run on the same store books a week later, so its booking ledger has the slot free."""
    store = str(tmp_path / "store")
    assert main(["demo", "dialogue", "--lang", lang, "--store", store]) == 0
    assert main(["demo", "dialogue", "--lang", lang, "--store", store]) == 0
    out = capsys.readouterr().out
    assert "2025-03-11" in out and "2025-03-18" in out
    assert "(a new Dialogue on the same store continues)" in out
    assert len(JsonFileStore(store).threads()) == 6


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (
            ["quality", "--lang", "ja"],
            "--lang is for `flowkit demo roundtable` and `flowkit demo dialogue` only",
        ),
        (
            ["review", "--lang", "en"],
            "--lang is for `flowkit demo roundtable` and `flowkit demo dialogue` only",
        ),
        (["roundtable", "--output-dir", "out"], "--output-dir is for `flowkit demo sas` only"),
    ],
)
def test_a_demo_option_the_chosen_demo_has_no_use_for_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: list[str], message: str
) -> None:
    assert main(["demo", *words, "--store", str(tmp_path / "store")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"flowkit: error: {message}")
    assert captured.err.count("\n") == 1
    assert not (tmp_path / "store").exists(), "nothing ran"


def test_logs_go_to_stderr_at_warning_level_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--store", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "run_done" not in captured.out


@pytest.mark.parametrize(
    ("flags", "shown", "hidden"),
    [(["-v"], [], ["cli_command"]), (["-vv"], ["cli_command"], [])],
)
def test_verbose_flags_raise_the_log_level(
    flags: list[str],
    shown: list[str],
    hidden: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*flags, "demo", "review", "--store", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    for event in shown:
        assert event in captured.err
    for event in hidden:
        assert event not in captured.err
    assert "run_done" not in captured.out


def test_verbose_flag_is_accepted_after_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "review", "--store", str(tmp_path), "-vv"]) == 0
    assert "cli_command" in capsys.readouterr().err


def test_log_lines_mask_pii(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from flowkit.foundation._logging import get_logger

    main(["-v", "threads", "--store", str(tmp_path)])
    get_logger().warning("contact", email="ada@example.com")
    err = capsys.readouterr().err
    assert "contact" in err and "ada@example.com" not in err
