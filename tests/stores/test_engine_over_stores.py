"""Runner behaviour that depends on what the records and snapshots carry.

A failed step's error survives a snapshot, and history says who patched a thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pg import fresh_schema, require_postgres
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import END, Flow, Runner
from flowkit.records._records import Snapshot
from flowkit.stores import JsonFileStore, MemoryStore, Store


class Plain(BaseModel):
    n: int = 0


def explode(state: Plain) -> dict[str, Any]:
    raise RuntimeError("disk on fire")


def count(state: Plain) -> dict[str, Any]:
    return {"n": state.n + 1}


FAILING = Flow(
    name="failing",
    state=Plain,
    start="explode",
    nodes={"explode": explode},
    routes={"explode": END},
)
COUNTING = Flow(
    name="counting", state=Plain, start="count", nodes={"count": count}, routes={"count": END}
)


@pytest.fixture(params=["memory", "jsonfile", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "postgres":
        require_postgres()
        from flowkit.stores.postgres import PostgresStore

        with fresh_schema() as (url, schema), PostgresStore(url, schema=schema) as pg_store:
            yield pg_store
    else:
        with JsonFileStore(tmp_path) as file_store:
            yield file_store


def test_the_error_of_a_failed_step_survives_loading_from_a_snapshot(store: Store) -> None:
    with capture_logs():
        live = Runner(FAILING, store=store).start("t")
    assert live.status == "failed" and live.error is not None
    store.write_snapshot(
        "t",
        Snapshot(
            version=live.version,
            ts=0.0,
            next=live.node,
            status=live.status,
            flow=FAILING.name,
            state=live.state.model_dump(mode="json"),
            error=live.error.model_dump(),
        ),
    )
    reloaded = Runner(FAILING, store=store).get_state("t")
    assert reloaded.status == "failed"
    assert reloaded.error == live.error


def test_history_says_who_patched_the_thread(store: Store) -> None:
    runner: Runner[Any] = Runner(COUNTING, store=store)
    runner.start("t")
    runner.update_state("t", {"n": 41}, reason="fix the count", actor="alice")
    patch = runner.history("t")[-1]
    assert (patch.kind, patch.reason) == ("patch", "fix the count")
    assert patch.actor == "alice"


def test_a_held_lock_refuses_in_words_that_fit_any_operation(store: Store) -> None:
    from flowkit.errors import ConflictError

    runner = Runner(FAILING, store=store)
    runner.start("t")
    with store.lock("t"), pytest.raises(ConflictError) as caught, store.lock("t"):
        pass
    assert str(caught.value) == (
        "Thread `t` is being run by another process or runner right now, so nothing was "
        "changed; try again once that run has finished."
    )
