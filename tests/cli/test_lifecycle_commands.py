"""`flowkit delete` and `flowkit prune`: remove threads from a store, with --dry-run and
--json; errors on stderr, never a traceback; a thread being run is never removed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowkit import Runner
from flowkit.cli import main
from flowkit.cli.lifecycle import parse_age
from flowkit.examples.review import flow as review_flow
from flowkit.stores import JsonFileStore


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """done-1 and done-2 finished, waits-1 waiting at its gate."""
    root = tmp_path / "store"
    with JsonFileStore(root, fsync=False) as store:
        review = Runner(review_flow, store=store)
        for thread in ("done-1", "done-2", "waits-1"):
            review.start(thread)
        review.resume("done-1", {"approved": True})
        review.resume("done-2", {"approved": True})
    return root


def threads(root: Path) -> list[str]:
    with JsonFileStore(root) as store:
        return store.threads()


def lock_files(root: Path) -> list[str]:
    return sorted(path.name for path in (root / "locks").iterdir())


def test_delete_removes_a_thread_and_says_so(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["delete", "done-1", "--store", str(store_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Deleted thread `done-1` (review, done, version")
    assert threads(store_dir) == ["done-2", "waits-1"]
    assert lock_files(store_dir) == ["done-2.lock", "waits-1.lock"]


@pytest.mark.parametrize("dry_run", [False, True])
def test_an_id_named_twice_is_deleted_once(
    store_dir: Path, capsys: pytest.CaptureFixture[str], dry_run: bool
) -> None:
    """It deleted the thread, then failed on the second mention with exit 1 (a dry run
    listed it twice); found by a defect hunt."""
    extra = ["--dry-run"] if dry_run else []
    argv = ["delete", "done-1", "done-1", "--json", *extra, "--store", str(store_dir)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert [d["thread_id"] for d in json.loads(captured.out)["deleted"]] == ["done-1"]
    assert captured.err == ""
    assert ("done-1" in threads(store_dir)) is dry_run


def test_delete_dry_run_and_json_change_nothing(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["delete", "done-1", "waits-1", "--dry-run", "--json", "--store", str(store_dir)]) == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["dry_run"] is True
    assert [(d["thread_id"], d["status"]) for d in data["deleted"]] == [
        ("done-1", "done"),
        ("waits-1", "waiting"),
    ]
    assert threads(store_dir) == ["done-1", "done-2", "waits-1"]


@pytest.mark.parametrize("thread", ["missing", "../../etc"])
def test_delete_of_an_unknown_or_bad_thread_fails_on_stderr(
    store_dir: Path, capsys: pytest.CaptureFixture[str], thread: str
) -> None:
    assert main(["delete", thread, "done-1", "--store", str(store_dir)]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("flowkit: error: ")
    assert "Traceback" not in captured.err
    assert "Deleted thread `done-1`" in captured.out  # the others still go
    assert threads(store_dir) == ["done-2", "waits-1"]


@pytest.mark.parametrize(
    ("content", "listed_as"),
    [
        (b"garbage\n", "journal.jsonl:1"),  # damage: named with its file and line
        (b'{"v":2,"version":0,"ts":1.5,"ne', "does not exist"),  # a create that crashed
    ],
)
def test_a_thread_that_cannot_be_read_is_listed_as_such_and_delete_cleans_it_up(
    store_dir: Path, capsys: pytest.CaptureFixture[str], content: bytes, listed_as: str
) -> None:
    journal = store_dir / "threads" / "junk" / "journal.jsonl"
    journal.parent.mkdir()
    journal.write_bytes(content)
    assert main(["store", "reindex", "--store", str(store_dir)]) == 1  # made by hand
    capsys.readouterr()
    assert main(["threads", "--store", str(store_dir)]) == 1
    captured = capsys.readouterr()
    assert ["junk", "?", "unreadable"] in [line.split() for line in captured.out.splitlines()]
    assert "thread `junk`: " in captured.err and listed_as in captured.err
    assert main(["delete", "junk", "--store", str(store_dir)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "Deleted thread `junk` (?, unreadable, version -1).\n", captured.err
    assert threads(store_dir) == ["done-1", "done-2", "waits-1"]
    assert not journal.parent.exists()


def test_delete_of_a_thread_being_run_is_refused(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with JsonFileStore(store_dir) as store, store.lock("waits-1"):
        assert main(["delete", "waits-1", "--store", str(store_dir)]) == 1
    assert "being run" in capsys.readouterr().err
    assert "waits-1" in threads(store_dir)


@pytest.mark.parametrize(
    "words",
    [
        ["delete", "waits-1"],
        ["update-state", "waits-1", "--patch", '{"feedback": "x"}'],
        ["resume", "waits-1", "--input", '{"approved": true}'],
    ],
)
def test_a_command_refused_because_the_thread_is_running_gets_advice_that_fits_it(
    store_dir: Path, capsys: pytest.CaptureFixture[str], words: list[str]
) -> None:
    with JsonFileStore(store_dir) as store, store.lock("waits-1"):
        assert main([*words, "--store", str(store_dir)]) == 1
    err = capsys.readouterr().err
    assert err == (
        "flowkit: error: Thread `waits-1` is being run by another process or runner right "
        "now, so nothing was changed; try again once that run has finished.\n"
    )


def test_delete_in_a_missing_store_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["delete", "t", "--store", str(tmp_path / "nowhere")]) == 2
    assert "No store at" in capsys.readouterr().err


def test_prune_deletes_done_threads_by_default(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prune", "--store", str(store_dir)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Deleted 2 threads:"
    assert [line.split()[:3] for line in out[2:]] == [
        ["done-1", "review", "done"],
        ["done-2", "review", "done"],
    ]
    assert threads(store_dir) == ["waits-1"]
    assert lock_files(store_dir) == ["waits-1.lock"]


def test_prune_by_age_status_and_flow_with_json(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(store_dir)
    assert (
        main(["prune", "--older-than", "30d", "--status", "any", "--json", "--store", store]) == 0
    )
    assert json.loads(capsys.readouterr().out)["deleted"] == []  # all of them are new
    assert main(["prune", "--status", "waiting,done", "--flow", "other", "--store", store]) == 0
    assert capsys.readouterr().out == "No threads to prune.\n"
    assert main(["prune", "--status", "waiting", "--dry-run", "--json", "--store", store]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["deleted"], data["dry_run"]) == (["waits-1"], True)
    assert threads(store_dir) == ["done-1", "done-2", "waits-1"]
    assert main(["prune", "--older-than", "0s", "--status", "any", "--json", "--store", store]) == 0
    assert json.loads(capsys.readouterr().out)["deleted"] == ["done-1", "done-2", "waits-1"]
    assert threads(store_dir) == []


def test_prune_keeps_a_thread_being_run_and_warns(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with JsonFileStore(store_dir) as store, store.lock("done-1"):
        assert main(["prune", "--json", "--store", str(store_dir)]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert (data["deleted"], data["busy"]) == (["done-2"], ["done-1"])
    assert "being run; kept it" in captured.err


@pytest.mark.parametrize(
    "args",
    [
        ["--older-than", "30"],
        ["--older-than", "3 days"],
        ["--older-than=-1d"],
        ["--status", "finished"],
        ["--status", ","],
    ],
)
def test_prune_refuses_bad_options_as_usage_errors(
    store_dir: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert main(["prune", *args, "--store", str(store_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("flowkit: error: ") and "Traceback" not in err
    assert len(threads(store_dir)) == 3


def test_ages_read_as_seconds() -> None:
    assert parse_age("45s") == 45
    assert parse_age("90m") == 5400
    assert parse_age("1h30m") == 5400
    assert parse_age("2w") == 14 * 86_400
    assert parse_age("1.5d") == 1.5 * 86_400
