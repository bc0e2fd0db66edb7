"""``flowkit store copy``: JSON-file store <-> PostgreSQL, record for record."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from flowkit import Runner
from flowkit.cli import main
from flowkit.examples.review import flow as review_flow
from flowkit.stores import JsonFileStore
from flowkit.stores.postgres import SCHEMA_VERSION, PostgresStore

from .flows import STEPS


def _json_store(root: Path) -> JsonFileStore:
    """Threads of two flows: finished, waiting, patched, forked, snapshotted, with markers."""
    store = JsonFileStore(root, fsync=False, min_snapshot_bytes=0, snapshot_ratio=0.5)
    steps = Runner(STEPS, store=store, track_attempts=True)
    steps.start("done", {"seed": 2})
    steps.resume("done", {"by": "ann", "bonus": 4})
    steps.start("waits", {"seed": 3})
    steps.update_state("waits", {"seed": 9}, reason="typo", actor="bob")
    steps.fork("done", "forked", at=5)
    review = Runner(review_flow, store=store)
    review.start("review-1", {"topic": "ünïcode 🤖"})
    return store


def _url(pg: tuple[str, str]) -> list[str]:
    return [pg[0], "--schema", pg[1]]


def test_json_to_postgres_and_back_keeps_every_record_snapshot_and_marker(
    pg: tuple[str, str],
    open_pg: Callable[..., PostgresStore],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = _json_store(tmp_path / "src")
    assert main(["store", "copy", str(tmp_path / "src"), *_url(pg)]) == 0
    assert "4 copied, 0 failed" in capsys.readouterr().out
    postgres = open_pg()
    assert postgres.threads() == source.threads()
    for thread_id in source.threads():
        assert postgres.records(thread_id) == source.records(thread_id)
        assert postgres.load(thread_id).snapshot == source.load(thread_id).snapshot
        assert postgres.last_attempt(thread_id) == source.last_attempt(thread_id)
    assert source.load("done").snapshot is not None, "the copy carried a snapshot"

    assert main(["store", "copy", *_url(pg)[:1], str(tmp_path / "back"), "--schema", pg[1]]) == 0
    back = JsonFileStore(tmp_path / "back")
    for thread_id in source.threads():
        assert back.records(thread_id) == source.records(thread_id)
    on_pg = Runner(STEPS, store=postgres).resume("waits", {"by": "cy"})
    on_json = Runner(STEPS, store=source).resume("waits", {"by": "cy"})
    assert (on_pg.state, on_pg.version) == (on_json.state, on_json.version)


def test_a_thread_already_in_the_destination_is_left_alone_and_reported(
    pg: tuple[str, str],
    open_pg: Callable[..., PostgresStore],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _json_store(tmp_path / "src")
    Runner(STEPS, store=open_pg()).start("waits", {"seed": 100})
    code = main(["store", "copy", str(tmp_path / "src"), *_url(pg), "--thread", "waits"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "thread `waits` not copied" in err and "0 copied, 1 failed" in out
    assert Runner(STEPS, store=open_pg()).get_state("waits").state.seed == 100


def test_copy_from_a_folder_that_is_no_store_creates_nothing(
    pg: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "copy", str(tmp_path / "typo"), *_url(pg)]) == 2
    assert "No store at" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()


def test_store_init_creates_the_schema_once(
    capsys: pytest.CaptureFixture[str], pg: tuple[str, str]
) -> None:
    url, _ = pg
    assert main(["store", "init", url, "--schema", "fresh_init"]) == 0
    assert f"migrated from version 0 to {SCHEMA_VERSION}" in capsys.readouterr().out
    assert main(["store", "init", url, "--schema", "fresh_init"]) == 0
    assert "nothing to do" in capsys.readouterr().out
    with PostgresStore(url, schema="fresh_init") as store:
        assert store.threads() == []
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA fresh_init CASCADE")


def test_a_compacted_thread_copies_both_ways(
    open_pg: Callable[..., PostgresStore], tmp_path: Path
) -> None:
    from flowkit.stores.postgres import copy_threads

    source = JsonFileStore(tmp_path / "src", fsync=False)
    runner = Runner(STEPS, store=source)
    runner.start("t", {"seed": 4})
    assert runner.compact("t", keep=3) > 0
    first = source.records("t")[0]
    assert first.kind == "start" and first.version == 8
    postgres = open_pg()
    assert copy_threads(source, postgres).copied == {"t": 3}
    back = JsonFileStore(tmp_path / "back", fsync=False)
    assert copy_threads(postgres, back).copied == {"t": 3}
    assert back.records("t") == postgres.records("t") == source.records("t")
    done = Runner(STEPS, store=postgres).resume("t", {"by": "ann"})
    assert done.state == Runner(STEPS, store=source).resume("t", {"by": "ann"}).state
