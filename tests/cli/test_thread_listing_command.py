"""``flowkit threads`` from the thread index: filters, order, ``--limit`` and ``--cursor``, a
``--json`` array written as it streams, and no journal read; ``flowkit store reindex``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowkit import Runner
from flowkit.cli import main
from flowkit.examples.review import flow as review
from flowkit.stores import JsonFileStore
from flowkit.stores._jsonfile_reader import JsonFileReader


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """Five review threads: w1, w2, w3 waiting; d1, d2 done."""
    root = tmp_path / "store"
    with JsonFileStore(root, fsync=False) as store:
        runner = Runner(review, store=store)
        for thread_id in ("w1", "d1", "w2", "d2", "w3"):
            runner.start(thread_id)
            if thread_id.startswith("d"):
                runner.resume(thread_id, {"approved": True})
    return root


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _ids(out: str) -> list[str]:
    return [line.split()[0] for line in out.splitlines()[1:]]


def test_filters_order_and_pages_of_a_listing(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = ["--store", str(store_dir)]
    assert _ids(_run(capsys, "threads", *where)[1]) == ["d1", "d2", "w1", "w2", "w3"]
    assert _ids(_run(capsys, "threads", *where, "--status", "done")[1]) == ["d1", "d2"]
    both = _run(capsys, "threads", *where, "--status", "done", "--status", "waiting")[1]
    assert _ids(both) == _ids(_run(capsys, "threads", *where, "--status", "waiting,done")[1])
    assert _ids(_run(capsys, "threads", *where, "--flow", "other")[1]) == []
    assert _run(capsys, "threads", *where, "--flow", "other")[1].startswith("No matching threads")
    assert _run(capsys, "threads", *where, "--flow", "")[1].startswith("No matching threads")
    newest = _ids(_run(capsys, "threads", *where, "--order", "updated")[1])
    assert sorted(newest) == ["d1", "d2", "w1", "w2", "w3"] and newest[-1] == "w1"
    code, out, err = _run(capsys, "threads", *where, "--limit", "2")
    assert (code, _ids(out)) == (0, ["d1", "d2"])
    cursor = err.split("--cursor ")[1].split()[0]
    assert _ids(_run(capsys, "threads", *where, "--cursor", cursor)[1]) == ["w1", "w2", "w3"]
    code, out, err = _run(capsys, "threads", *where, "--limit", "5")
    assert len(_ids(out)) == 5 and "--cursor" not in err  # nothing follows


def test_json_is_the_same_array_as_before_written_as_it_streams(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "threads", "--store", str(store_dir), "--json")
    data = json.loads(out)
    assert code == 0 and out == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    assert [d["thread_id"] for d in data] == ["d1", "d2", "w1", "w2", "w3"]
    assert set(data[0]) == {"thread_id", "flow", "status", "next", "version", "updated", "warnings"}
    assert (data[0]["status"], data[0]["next"], data[0]["warnings"]) == ("done", "__end__", [])
    empty = _run(capsys, "threads", "--store", str(store_dir), "--json", "--flow", "none")[1]
    assert empty == "[]\n"


def test_listing_reads_no_journal(
    store_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*_: Any, **__: Any) -> Any:
        raise AssertionError("a listing loaded a journal")

    monkeypatch.setattr(JsonFileReader, "load", refused)
    code, out, _ = _run(capsys, "threads", "--store", str(store_dir), "--json")
    assert code == 0 and len(json.loads(out)) == 5


@pytest.mark.parametrize(
    "argv", [["--status", "sleeping"], ["--limit", "0"], ["--order", "name"], ["--cursor", "x"]]
)
def test_bad_listing_options_are_usage_errors(
    store_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exited:  # argparse's own, or ours with the same code
        code = main(["threads", "--store", str(store_dir), *argv])
        raise SystemExit(code)
    assert exited.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_store_reindex_rebuilds_the_index_and_names_unreadable_threads(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "store", "reindex", "--store", str(store_dir))
    assert (code, out, err) == (0, f"5 threads indexed in {store_dir}, 0 unreadable\n", "")
    (store_dir / "threads" / "w2" / "journal.jsonl").write_bytes(b"garbage\n")
    code, out, err = _run(capsys, "store", "reindex", "--store", str(store_dir))
    assert code == 1 and out.endswith(", 1 unreadable\n")
    assert "thread `w2`" in err and "journal.jsonl:1" in err


def test_store_reindex_of_a_store_without_an_index_to_rebuild(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "store", "reindex", "--store", str(tmp_path))
    assert code == 0 and "has no threads; nothing to rebuild" in out


def test_json_of_warnings_and_unreadable_threads_is_as_write_json_prints_it(
    store_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (store_dir / "threads" / "w1" / "journal.jsonl").open("ab") as handle:
        handle.write(b'{"v":2,"version":2,"ts":1')  # a torn last record
    (store_dir / "threads" / "d1" / "journal.jsonl").write_bytes(b"garbage\n")
    _run(capsys, "store", "reindex", "--store", str(store_dir))  # changed by hand
    code, out, err = _run(capsys, "threads", "--store", str(store_dir), "--json")
    data = json.loads(out)
    assert code == 1 and out == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    assert data[0] == {"thread_id": "d1", "status": "unreadable", "error": data[0]["error"]}
    assert "torn last record skipped" in data[2]["warnings"][0]
    assert "thread `d1`" in err and "torn last record skipped" in err
