"""`flowkit threads` and `flowkit show`: reading a JSON-file store, with or without the flow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowkit import Runner
from flowkit.cli import main
from flowkit.examples.review import flow as review_flow
from flowkit.stores import JsonFileStore
from flowkit.workflows import load_flow


@pytest.fixture
def store_dir(tmp_path: Path, good: str) -> Path:
    """A store with a finished review thread, a waiting review thread and a `ticket` thread."""
    root = tmp_path / "store"
    store = JsonFileStore(root, fsync=False)
    review = Runner(review_flow, store=store)
    review.start("done-1")
    review.resume("done-1", {"approved": True})
    review.start("waits-1")
    ticket = Runner(load_flow(good), store=store)
    ticket.start("ticket-1", {"text": "urgent: printer on fire"})
    ticket.resume("ticket-1", {"approved": True})
    store.close()
    return root


def test_threads_lists_every_thread_without_knowing_its_flow(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["threads", "--store", str(store_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["THREAD", "FLOW", "STATUS", "NEXT", "VERSION", "UPDATED"]
    rows = {line.split()[0]: line.split()[1:5] for line in lines[1:]}
    assert rows == {
        "done-1": ["review", "done", "__end__", "3"],
        "ticket-1": ["ticket", "done", "__end__", "3"],
        "waits-1": ["review", "waiting", "review", "1"],
    }


def test_threads_json(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["threads", "--store", str(store_dir), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["thread_id"] for d in data] == ["done-1", "ticket-1", "waits-1"]
    assert data[2] | {"updated": None} == {
        "thread_id": "waits-1",
        "flow": "review",
        "status": "waiting",
        "next": "review",
        "version": 1,
        "updated": None,
        "warnings": [],
    }


def test_threads_on_an_empty_or_missing_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["threads", "--store", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"No threads in {tmp_path}\n"
    assert not (tmp_path / "threads").exists(), "a read-only command must not create the store"
    assert main(["threads", "--store", str(tmp_path / "nope")]) == 2
    assert "No store at" in capsys.readouterr().err


@pytest.mark.parametrize(
    "damage",
    [b"{not json\n", b"[" * 100_000 + b"]" * 100_000 + b"\n"],
    ids=["not json", "nested too deeply"],
)
def test_a_corrupt_thread_is_reported_and_the_others_still_listed(
    store_dir: Path, damage: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = store_dir / "threads" / "done-1" / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(lines[0] + damage + b"".join(lines[2:]))
    # A file changed by hand: the thread index learns of it by a reindex (which says so too).
    assert main(["store", "reindex", "--store", str(store_dir)]) == 1
    reindexed = capsys.readouterr()
    assert "3 threads indexed" in reindexed.out and "journal.jsonl:2" in reindexed.err
    assert main(["threads", "--store", str(store_dir)]) == 1
    captured = capsys.readouterr()
    rows = {line.split()[0]: line.split()[1:] for line in captured.out.splitlines()[1:]}
    assert rows["done-1"] == ["?", "unreadable"]
    assert "waits-1" in captured.out and "ticket-1" in captured.out
    assert "thread `done-1`" in captured.err and "journal.jsonl:2" in captured.err
    assert main(["show", "done-1", "--store", str(store_dir)]) == 1
    assert "journal.jsonl:2" in capsys.readouterr().err


def test_a_torn_last_record_is_skipped_with_a_warning(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = store_dir / "threads" / "waits-1" / "journal.jsonl"
    with journal.open("ab") as handle:
        handle.write(b'{"v":1,"version":2,"ts":1')
    assert main(["store", "reindex", "--store", str(store_dir)]) == 0  # changed by hand
    capsys.readouterr()
    assert main(["threads", "--store", str(store_dir)]) == 0
    captured = capsys.readouterr()
    assert ["waits-1", "review", "waiting"] in [
        line.split()[:3] for line in captured.out.splitlines()
    ]
    assert "torn last record skipped" in captured.err


@pytest.mark.parametrize(
    "command", [["recover"], ["recover", "--dry-run"], ["migrate", "review"], ["stats"]]
)
def test_a_torn_record_is_reported_once_per_command_with_its_own_size(
    store_dir: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    journal = store_dir / "threads" / "waits-1" / "journal.jsonl"
    with JsonFileStore(store_dir) as store:  # preallocates zeros after the records
        Runner(review_flow, store=store).resume("waits-1", {"approved": False})
    data = journal.read_bytes()
    end = len(data.rstrip(b"\0"))
    journal.write_bytes(data[:end] + b'{"v":2,"version":9,"ts":1' + data[end + 25 :])
    main([*command, "--store", str(store_dir)])
    err = capsys.readouterr().err
    assert err.count("torn last record skipped") == 1, err
    assert "torn last record skipped (25 bytes)" in err


def test_show_replays_a_registered_flow_exactly(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "done-1", "--store", str(store_dir), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    expected = Runner(review_flow, store=JsonFileStore(store_dir)).get_state("done-1")
    assert shown["exact"] is True
    assert shown["state"] == expected.state.model_dump(mode="json")
    assert (shown["status"], shown["next"], shown["version"]) == ("done", "__end__", 3)
    assert shown["note"] == "replayed with registered flow `review`"


def test_show_text_names_the_gate_a_thread_waits_at(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "waits-1", "--store", str(store_dir)]) == 0
    out = capsys.readouterr().out
    assert "status   waiting at gate review" in out
    assert '"text": "flowkit: draft 1"' in out


def test_show_without_the_flow_folds_updates_and_says_so(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "ticket-1", "--store", str(store_dir), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["exact"] is False
    assert "flow `ticket` is not registered" in shown["note"]
    assert "messages" in shown["note"]  # an append field the fold cannot reduce
    assert shown["state"]["priority"] == "high"
    assert shown["state"]["approved"] is True


def test_show_with_flow_replays_an_unregistered_flow(
    store_dir: Path, good: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "ticket-1", "--store", str(store_dir), "--flow", good, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["exact"] is True
    assert shown["state"]["messages"] == ["triaged", "resolved"]


def test_show_with_the_wrong_flow_falls_back_and_explains(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "ticket-1", "--store", str(store_dir), "--flow", "review"]) == 0
    out = capsys.readouterr().out
    assert "belongs to flow `ticket`, not `review`" in out


def test_show_history_lists_every_checkpoint(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "done-1", "--store", str(store_dir), "--history"]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n", 1)[1].splitlines()
    assert table[0].split() == ["VERSION", "KIND", "NODE", "NEXT", "STATUS", "CHANGED", "TIME"]
    assert [row.split()[:5] for row in table[1:]] == [
        ["0", "start", "draft", "pending", "(initial"],
        ["1", "step", "draft", "review", "waiting"],
        ["2", "input", "review", "publish", "pending"],
        ["3", "step", "publish", "__end__", "done"],
    ]


def test_show_history_json_includes_updates(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "done-1", "--store", str(store_dir), "--history", "--json"]) == 0
    history = json.loads(capsys.readouterr().out)["history"]
    assert [h["kind"] for h in history] == ["start", "step", "input", "step"]
    assert history[2]["update"] == {"approved": True}
    assert history[2]["changed"] == ["approved"]


def test_history_pages_back_with_limit_and_before(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def versions(*options: str) -> list[int]:
        argv = ["history", "done-1", "--store", str(store_dir), "--json", *options]
        assert main(argv) == 0
        return [h["version"] for h in json.loads(capsys.readouterr().out)]

    assert versions("--limit", "2") == [2, 3]
    assert versions("--limit", "2", "--before", "2") == [0, 1]
    assert versions("--before", "1") == [0]
    assert versions("--before", "0") == []
    assert versions() == [0, 1, 2, 3]
    assert main(["history", "done-1", "--store", str(store_dir), "--limit", "1"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [row.split()[:2] for row in rows[1:]] == [["3", "step"]]
    for bad in (["--limit", "0"], ["--before", "-1"], ["--limit", "x"]):
        with pytest.raises(SystemExit) as caught:
            main(["history", "done-1", "--store", str(store_dir), *bad])
        assert caught.value.code == 2


def test_show_a_patch_names_its_actor(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Runner(review_flow, store=JsonFileStore(store_dir)).update_state(
        "waits-1", {"topic": "Fixed"}, reason="typo", actor="ops"
    )
    assert main(["show", "waits-1", "--store", str(store_dir), "--history"]) == 0
    assert "patch  (ops)" in capsys.readouterr().out


@pytest.mark.parametrize("thread", ["nope", "../../etc"])
def test_show_an_unknown_or_unsafe_thread_fails_cleanly(
    store_dir: Path, thread: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", thread, "--store", str(store_dir)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("flowkit: error: Thread")
    assert "Traceback" not in err
