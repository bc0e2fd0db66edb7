"""Burr's persistence scenarios, as flowkit behaviour.

Ported from Burr's ``tests/core/test_persistence.py`` (apache/burr): saving and loading
state (``test_persistence_saves_and_loads_state``), nothing to load for an unknown app
(``test_persistence_returns_none_when_no_state``), listing app ids
(``test_persistence_lists_app_ids``) and the end-to-end chat that a second application picks
up from the persister (``test_async_save_and_load_from_sqlite_persister_end_to_end``), plus
``initialize_from(..., resume_at_next_action=True)`` from ``test_application.py`` after a
real crash (a killed child process, using ``tests/durability/worker.py``). The stores are
real: a JSON-file store on ``tmp_path`` and PostgreSQL through ``tests/_pg.py``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import pytest
from _pg import fresh_schema, require_postgres
from pydantic import BaseModel

from flowkit import Flow, Gate, Runner, append
from flowkit.errors import ThreadNotFoundError
from flowkit.stores import JsonFileStore, Store

WORKER = Path(__file__).parents[2] / "durability" / "worker.py"


class Chat(BaseModel):
    prompt: str = ""
    response: str = ""
    chat_history: Annotated[list[int], append] = []


class Prompt(BaseModel):
    prompt: str


def _next(state: Chat) -> int:
    return state.chat_history[-1] + 1 if state.chat_history else 1


def take_prompt(state: Chat, value: Prompt) -> dict[str, Any]:
    return {"prompt": value.prompt, "chat_history": [_next(state)]}


async def respond(state: Chat) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"response": "RESPONSE", "chat_history": [_next(state)]}


#: Burr's dummy_input -> dummy_response -> dummy_input, the input taken at a gate.
CHAT = Flow(
    name="burr_chat",
    state=Chat,
    start="dummy_input",
    nodes={"dummy_response": respond},
    gates={"dummy_input": Gate(Prompt, apply=take_prompt)},
    routes={"dummy_input": "dummy_response", "dummy_response": "dummy_input"},
)


@pytest.fixture
def pg_store() -> Iterator[Any]:
    """A PostgresStore on its own migrated schema (skips without PostgreSQL)."""
    require_postgres()
    from flowkit.stores.postgres import PostgresStore

    with fresh_schema() as (url, schema):
        opened: list[PostgresStore] = []

        def open_() -> PostgresStore:
            opened.append(PostgresStore(url, schema=schema))
            return opened[-1]

        yield open_
        for store in opened:
            store.close()


def _chat_twice(open_store: Any) -> None:
    first = open_store()
    runner = Runner(CHAT, store=first)

    async def turn(app: Runner[Chat]) -> Chat:
        return (await app.aresume("test_1", {"prompt": "PROMPT"})).state

    assert asyncio.run(runner.astart("test_1")).waiting
    assert list(asyncio.run(turn(runner)).chat_history) == [1, 2]
    first.close()

    # A new application on a new store object loads the thread and goes on from it.
    again = Runner(CHAT, store=open_store())
    loaded = again.get_state("test_1")
    assert loaded.waiting and loaded.node == "dummy_input"
    assert (loaded.state.prompt, loaded.state.response) == ("PROMPT", "RESPONSE")
    assert list(asyncio.run(turn(again)).chat_history) == [1, 2, 3, 4]


def test_saved_chat_is_loaded_and_continued_by_a_new_app_on_json_files(tmp_path: Path) -> None:
    # test_async_save_and_load_from_sqlite_persister_end_to_end, on the file store
    _chat_twice(lambda: JsonFileStore(tmp_path / "store"))


def test_saved_chat_is_loaded_and_continued_by_a_new_app_on_postgres(pg_store: Any) -> None:
    # the same scenario on PostgreSQL (Burr runs it on its postgres persister too)
    _chat_twice(pg_store)


def test_loading_an_unknown_app_is_a_typed_error(tmp_path: Path) -> None:
    # test_persistence_returns_none_when_no_state
    runner = Runner(CHAT, store=JsonFileStore(tmp_path / "store"))
    with pytest.raises(ThreadNotFoundError) as caught:
        runner.get_state("no-such-app")
    assert caught.value.thread_id == "no-such-app"


def test_stored_app_ids_are_listed(tmp_path: Path) -> None:
    # test_persistence_lists_app_ids
    store: Store = JsonFileStore(tmp_path / "store")
    runner = Runner(CHAT, store=store)
    for app_id in ("app-2", "app-1"):
        runner.start(app_id)
    assert sorted(Runner(CHAT, store=JsonFileStore(tmp_path / "store")).threads()) == [
        "app-1",
        "app-2",
    ]


def _worker() -> ModuleType:
    """``tests/durability/worker.py``, shared with the durability tests under one name."""
    name = "flowkit_durability_worker"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_resume_at_next_action_after_a_killed_process(tmp_path: Path) -> None:
    # initialize_from(persister, resume_at_next_action=True) after a crash: a child runs the
    # 500-step counter and is killed mid-run; a new runner resumes at the next action, and
    # no step is lost or repeated.
    worker = _worker()
    root = tmp_path / "store"
    child = subprocess.Popen(
        [sys.executable, str(WORKER), "count", str(root), "crashed"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("go\n")
    child.stdin.close()
    assert child.stdout.readline() == "ready\n"
    with JsonFileStore(root) as store:
        runner = Runner(worker.COUNTER, store=store)
        # wait for some committed steps, then kill mid-run
        while child.poll() is None:
            time.sleep(0.001)
            try:
                if runner.get_state("crashed").state.count >= 5:
                    break
            except ThreadNotFoundError:
                pass
        child.kill()
        child.wait()
        child.stdout.close()
    with JsonFileStore(root) as store:
        runner = Runner(worker.COUNTER, store=store)
        stopped = runner.get_state("crashed")
        assert stopped.status == "pending" and stopped.node == "loop"
        assert 5 <= stopped.state.count < worker.STEPS
        done = runner.resume("crashed")
    assert done.done and done.state.count == worker.STEPS
    assert list(done.state.items) == list(range(1, worker.STEPS + 1))
