"""``Runner.rewind``: a thread put back where it stood at an earlier checkpoint, on the same
thread, as a new checkpoint holding that whole position; history keeps every earlier one."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pg import fresh_schema, require_postgres

from flowkit import Runner
from flowkit.errors import CheckpointNotFoundError, ConflictError
from flowkit.examples.review import flow
from flowkit.stores import JsonFileStore, Store


def _reviewed(store: Store) -> Runner:
    """A thread of the review flow: drafted, sent back once, drafted again (waits at
    ``review``): checkpoints 0 (start), 1 (draft 1), 2 (answer), 3 (draft 2)."""
    runner = Runner(flow, store=store)
    runner.start("t", {"topic": "cats"})
    runner.resume("t", {"approved": False, "feedback": "shorter"})
    return runner


def test_rewinding_to_a_node_runs_it_again_on_the_same_thread(store: Store) -> None:
    runner = _reviewed(store)
    back = runner.rewind("t", 0, reason="time travel to checkpoint 0", actor="ann")
    assert (back.status, back.node, back.version) == ("pending", "draft", 4)
    assert back.state.messages == [] and back.state.revision == 0  # whole, not reduced
    again = runner.resume("t")
    assert (again.status, again.node) == ("waiting", "review")
    assert again.state.text == "cats: draft 1" and again.state.messages == ["draft 1 written"]
    history = runner.history("t")
    assert [point.version for point in history] == list(range(6))  # nothing rewritten
    rewound = history[4]
    assert (rewound.kind, rewound.reason, rewound.actor) == (
        "patch", "time travel to checkpoint 0", "ann",
    )  # fmt: skip
    assert history[3].state.revision == 2  # the old branch is still there


def test_rewinding_to_a_pause_waits_there_again(store: Store) -> None:
    runner = _reviewed(store)
    back = runner.rewind("t", 1)
    assert (back.status, back.node, back.gates) == ("waiting", "review", ("review",))
    assert back.state.text == "cats: draft 1" and back.state.feedback == ""
    done = runner.resume("t", {"approved": True})
    assert done.status == "done" and done.state.published is True
    assert done.state.messages == ["draft 1 written", "published: cats: draft 1"]


def test_a_rewind_reads_back_the_same_after_a_restart(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        runner = _reviewed(store)
        runner.rewind("t", 1)
        runner.resume("t", {"approved": True})
        kept = runner.get_state("t")
    with JsonFileStore(tmp_path, fsync=False) as store:
        fresh = Runner(flow, store=store).get_state("t")
    assert (fresh.status, fresh.version, fresh.state) == (kept.status, kept.version, kept.state)


def test_a_rewind_reads_back_the_same_from_postgresql_in_a_fresh_store() -> None:
    require_postgres()
    from flowkit.stores.postgres import PostgresStore

    with fresh_schema() as (url, schema):
        with PostgresStore(url, schema=schema) as store:
            runner = _reviewed(store)
            back = runner.rewind("t", 1, reason="undo", actor="ada")
            kept = runner.history("t")
        with PostgresStore(url, schema=schema) as store:
            fresh = Runner(flow, store=store)
            state = fresh.get_state("t")
            assert (state.status, state.gates, state.state) == (back.status, back.gates, back.state)
            assert fresh.history("t") == kept
            done = fresh.resume("t", {"approved": True}, actor="rita")
    assert done.state.messages == ["draft 1 written", "published: cats: draft 1"]


def test_an_unknown_checkpoint_or_a_moved_thread_is_refused(store: Store) -> None:
    runner = _reviewed(store)
    for at in (-1, 9):
        with pytest.raises(CheckpointNotFoundError, match="versions run from 0 to 3"):
            runner.rewind("t", at)
    with pytest.raises(ConflictError):
        runner.rewind("t", 0, expected_version=1)
    assert runner.get_state("t").version == 3  # nothing written
