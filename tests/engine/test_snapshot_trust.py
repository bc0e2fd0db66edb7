"""A snapshot is a cache: one that does not belong to its journal is never trusted, whatever
its seal says, and a damaged one never makes a thread unreadable (found by a defect hunt;
the settle snapshots made the first two the usual case: a snapshot with no record after it)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from _pg import fresh_schema, require_postgres
from test_snapshot_policy import CHAT

from flowkit import Runner
from flowkit.stores import JsonFileStore
from flowkit.stores._jsonl import seal


def _journal_versions(store: JsonFileStore) -> list[int]:
    lines = (store.root / "threads" / "chat" / "journal.jsonl").read_bytes().splitlines()
    return [json.loads(line)["version"] for line in lines if line.strip(b"\0")]


def _resealed(path: Path, change: str, to: str) -> None:
    body = path.read_bytes()[:-18] + b"}"  # the seal: ,"crc":"<8 hex>"}
    assert change.encode() in body
    path.write_bytes(seal(body.replace(change.encode(), to.encode(), 1)))


def test_a_sealed_snapshot_naming_another_version_is_ignored(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path / "s", fsync=False) as store:
        assert Runner(CHAT, store=store).start("chat", {"stop_at": 300}).version == 300
        snapshot = store.root / "threads" / "chat" / "snapshot.json"
        _resealed(snapshot, '"version":300', '"version":305')
    with JsonFileStore(tmp_path / "s", fsync=False) as store:
        runner = Runner(CHAT, store=store)
        assert runner.get_state("chat").version == 300
        assert runner.resume("chat", {"stop_at": 310}).version == 311
        assert _journal_versions(store) == list(range(312))  # no gap written
        assert len(runner.history("chat")) == 312


def test_a_sealed_snapshot_with_two_versions_never_empties_a_page(tmp_path: Path) -> None:
    """Its head says 100, its parsed body 701: a page before 150 replays from the journal."""
    with JsonFileStore(tmp_path / "s", fsync=False) as store:
        runner = Runner(CHAT, store=store)
        runner.start("chat", {"stop_at": 0, "end_at": 700})
        snapshot = store.root / "threads" / "chat" / "snapshot.json"
        _resealed(snapshot, '{"snapshot":{"v":2,', '{"snapshot":{"v":2,"version":100,')
        expected = [c.version for c in runner.history("chat")][140:150]
    with JsonFileStore(tmp_path / "s", fsync=False) as store:
        page = Runner(CHAT, store=store).history("chat", limit=10, before=150)
        assert [c.version for c in page] == expected


def test_a_folder_where_the_snapshot_should_be_is_ignored(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path / "s", fsync=False) as store:
        Runner(CHAT, store=store).start("chat", {"stop_at": 100})
        snapshot = store.root / "threads" / "chat" / "snapshot.json"
        snapshot.unlink()
        snapshot.mkdir()
    with JsonFileStore(tmp_path / "s", fsync=False) as store:
        assert Runner(CHAT, store=store).get_state("chat").state.count == 100


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_damaged_postgres_snapshot_row_is_rebuilt_from_the_records(damage: str) -> None:

    require_postgres()
    from flowkit.stores.postgres import PostgresStore

    with fresh_schema() as (url, schema):
        with PostgresStore(url, schema=schema) as store:
            truth = Runner(CHAT, store=store).start("chat", {"stop_at": 300}).state
        with psycopg.connect(url, autocommit=True) as conn:
            query = f"SELECT body FROM {schema}.snapshots WHERE thread_id = 'chat'"
            body = bytearray(conn.execute(query).fetchone()[0])
            if damage == "flip":
                body[len(body) // 2] ^= 1
            else:
                del body[len(body) // 2 :]
            conn.execute(
                f"UPDATE {schema}.snapshots SET body = %s WHERE thread_id = 'chat'", (bytes(body),)
            )
        with PostgresStore(url, schema=schema) as store:
            runner = Runner(CHAT, store=store)
            assert runner.get_state("chat").state == truth
            assert runner.resume("chat", {"stop_at": 310}).state.count == 310
