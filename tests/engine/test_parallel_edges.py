"""Edge cases of ``Map`` and ``Parallel`` found by trying them as a new user would: user
callbacks around the calls (``over``, ``key``, a ``concurrency`` function, ``merge``) that
raise, and resuming a gate branch that was already answered."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Gate, Map, NodeError, Parallel, Route, RouteTable, Runner, append
from flowkit import field as where
from flowkit.cli import main
from flowkit.errors import NotWaitingError
from flowkit.execution.batch import _checkpoints as checkpoints
from flowkit.stores import JsonFileStore, Store


class Sheet(BaseModel):
    items: list[int] = [1, 2, 3]
    out: Annotated[list[int], append] = []
    error: NodeError | None = None


def double(state: Sheet, item: int) -> dict[str, Any]:
    return {"out": [item * 2]}


def boom(*_: Any) -> Any:
    raise ZeroDivisionError("boom")


def map_flow(routed: bool, **map_args: Any) -> Flow:
    map_args.setdefault("over", lambda s: s.items)
    route: Any = END
    if routed:
        route = RouteTable("after", [Route(where("error.type").eq("Never"), END)], default=END)
    return Flow(
        name="edges",
        state=Sheet,
        start="m",
        nodes={"m": Map(double, **map_args)},
        routes={"m": route},
    )


CALLBACKS = {
    "over raises": {"over": boom},
    "over not iterable": {"over": lambda s: 5},
    "key raises": {"key": boom},
    "concurrency function raises": {"concurrency": boom},
    "concurrency function gives 0": {"concurrency": lambda s: 0},
    "merge raises": {"merge": boom},
}


@pytest.mark.parametrize("case", CALLBACKS)
def test_a_failing_callback_fails_the_node_like_a_failing_call(case: str, store: Store) -> None:
    runner = Runner(map_flow(False, **CALLBACKS[case]), store=store)
    failed = runner.start("t")
    assert failed.status == "failed" and failed.node == "m"
    assert failed.error is not None and failed.error.node == "m"
    assert failed.state.out == []
    assert runner.get_state("t").status == "failed"  # replays to the same place
    assert [c.status for c in runner.history("t")][-1] == "failed"


@pytest.mark.parametrize("case", CALLBACKS)
def test_a_failing_callback_is_routed_by_the_error_field(case: str, store: Store) -> None:
    runner = Runner(map_flow(True, **CALLBACKS[case]), store=store)
    done = runner.start("t")
    assert done.status == "done"
    assert done.error is not None and done.state.error is not None
    assert done.state.error.node == "m"
    assert runner.get_state("t").state == done.state


def test_a_failed_merge_keeps_the_calls_and_resume_runs_only_the_merge(store: Store) -> None:
    calls: list[int] = []
    broken = [True]

    def counted(state: Sheet, item: int) -> dict[str, Any]:
        calls.append(item)
        return {"out": [item]}

    def merge(state: Sheet, updates: list[dict[str, Any]]) -> dict[str, Any]:
        if broken[0]:
            raise RuntimeError("merge bug")
        return {"out": [x for u in updates for x in u["out"]]}

    flow = Flow(
        name="merge",
        state=Sheet,
        start="m",
        nodes={"m": Map(counted, over=lambda s: s.items, merge=merge)},
        routes={"m": END},
    )
    runner = Runner(flow, store=store)
    assert runner.start("t").status == "failed"
    broken[0] = False
    done = runner.resume("t")
    assert done.done and done.state.out == [1, 2, 3]
    assert sorted(calls) == [1, 2, 3]  # no call ran twice


class Legal(BaseModel):
    legal_ok: bool


class Tech(BaseModel):
    tech_ok: bool


class Review(BaseModel):
    legal_ok: bool | None = None
    tech_ok: bool | None = None


def test_resuming_an_answered_gate_branch_says_it_is_answered(store: Store) -> None:
    flow = Flow(
        name="reviews",
        state=Review,
        start="review",
        nodes={"review": Parallel({"legal": Gate(Legal), "tech": Gate(Tech)})},
        routes={"review": END},
    )
    runner = Runner(flow, store=store)
    runner.start("t")
    runner.resume("t", {"legal_ok": True}, gate="legal")
    with pytest.raises(NotWaitingError, match=r"`tech`.*not at `legal`"):
        runner.resume("t", {"legal_ok": False}, gate="legal")
    assert runner.get_state("t").gates == ("tech",)


def test_cli_show_names_the_open_gate_branches(tmp_path: Path, capsys: Any) -> None:
    flow = Flow(
        name="reviews",
        state=Review,
        start="review",
        nodes={"review": Parallel({"legal": Gate(Legal), "tech": Gate(Tech)})},
        routes={"review": END},
    )
    with JsonFileStore(tmp_path) as store:
        runner = Runner(flow, store=store)
        runner.start("t")
        assert main(["show", "t", "--store", str(tmp_path)]) == 0
        assert "status   waiting at gates legal, tech\n" in capsys.readouterr().out
        runner.resume("t", {"legal_ok": True}, gate="legal")
        runner.update_state("t", {"tech_ok": None}, reason="a patch does not move it")
        assert main(["show", "t", "--store", str(tmp_path)]) == 0
        assert "status   waiting at gate tech\n" in capsys.readouterr().out


def test_calls_with_the_same_key_get_names_that_tell_them_apart() -> None:
    labels = [
        c.label
        for c in Map(lambda s, i: {}, over=lambda s: [1, 2, 3], key=lambda i: "x").calls(None)
    ]
    assert labels == ["x", "x#1", "x#2"]


def test_a_map_key_or_branch_that_is_not_a_function_is_refused_when_made() -> None:
    with pytest.raises(TypeError, match="key="):
        Map(lambda s, i: {}, over=lambda s: [], key="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="A node is a function"):
        Parallel({"a": 5})  # type: ignore[dict-item]


@pytest.mark.parametrize("concurrency", [1, 2])
def test_calls_at_concurrency_1_run_in_this_thread_and_are_saved_in_groups(
    concurrency: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Groups of two, whatever the time: what a group holds does not depend on the machine.
    monkeypatch.setattr(checkpoints, "GROUP_RECORDS", 2)
    monkeypatch.setattr(checkpoints, "GROUP_WINDOW_S", 3600.0)
    store = JsonFileStore(tmp_path)
    seen: list[tuple[int, int, bool]] = []  # item, item records stored, in the driving thread
    driver = threading.get_ident()

    def record(state: Sheet, item: int) -> dict[str, Any]:
        kept = [r for r in store.records("t") if r.kind == "item"] if store.threads() else []
        seen.append((item, len(kept), threading.get_ident() == driver))
        return {"out": [item]}

    flow = Flow(
        name="one_by_one",
        state=Sheet,
        start="m",
        nodes={"m": Map(record, over=lambda s: s.items, concurrency=concurrency)},
        routes={"m": END},
    )
    result = Runner(flow, store=store).start("t", {"items": [1, 2, 3, 4]})
    assert result.state.out == [1, 2, 3, 4]
    if concurrency == 1:  # one at a time, in this thread, saved two by two
        assert seen == [(1, 0, True), (2, 0, True), (3, 2, True), (4, 2, True)]
    else:  # side by side in the pool's threads
        assert not any(here for *_, here in seen)


def test_a_call_longer_than_the_group_window_is_saved_before_the_next_one_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoints, "GROUP_WINDOW_S", 0.001)
    store = JsonFileStore(tmp_path)
    seen: list[int] = []  # item records stored when each call began

    def slow(state: Sheet, item: int) -> dict[str, Any]:
        seen.append(sum(r.kind == "item" for r in store.records("t")))
        time.sleep(0.002)  # longer than the window: the next call could keep it waiting long
        return {"out": [item]}

    flow = Flow(
        name="slow_calls",
        state=Sheet,
        start="m",
        nodes={"m": Map(slow, over=lambda s: s.items, concurrency=1)},
        routes={"m": END},
    )
    assert Runner(flow, store=store).start("t", {"items": [1, 2, 3]}).state.out == [1, 2, 3]
    assert seen == [0, 1, 2]
