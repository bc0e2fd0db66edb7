"""Group commit of a ``Map``'s calls: the calls that finish together are saved with one
append, at most ``GROUP_RECORDS`` of them, and a call's events follow its save.

Each test fixes the group's size and makes its time window an hour, so what a group holds does
not depend on the machine's speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Map, NodeFinished, Runner, Subflow, append
from flowkit.errors import UnstorableValueError
from flowkit.execution.batch import _checkpoints as checkpoints
from flowkit.stores import Store


class Sheet(BaseModel):
    items: list[float] = []
    out: Annotated[list[float], append] = []
    total: float = 0.0


def copy(state: Sheet, item: float) -> dict[str, Any]:
    return {"out": [item]}


def map_flow(concurrency: int = 1) -> Flow:
    return Flow(
        name="groups",
        state=Sheet,
        start="each",
        nodes={"each": Map(copy, over=lambda s: s.items, concurrency=concurrency)},
        routes={"each": END},
    )


@pytest.fixture(autouse=True)
def groups_of_three(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoints, "GROUP_RECORDS", 3)
    monkeypatch.setattr(checkpoints, "GROUP_WINDOW_S", 3600.0)


def appends(store: Store) -> list[list[str]]:
    """Record the kinds of the records of every append to ``store`` from now on."""
    seen: list[list[str]] = []
    real = store.append

    def counted(thread_id: str, records: Sequence[Any], *, expected_version: int) -> None:
        real(thread_id, records, expected_version=expected_version)
        seen.append([r.kind for r in records])

    store.append = counted  # type: ignore[method-assign]
    return seen


@pytest.mark.parametrize("concurrency", [1, 4])
def test_calls_are_saved_in_groups_of_at_most_the_group_size(
    every_store: Store, concurrency: int
) -> None:
    store = every_store
    seen = appends(store)
    items = [float(i) for i in range(7)]
    result = Runner(map_flow(concurrency), store=store).start("t", {"items": items})
    assert result.done and list(result.state.out) == items
    groups = [len(kinds) for kinds in seen if kinds[0] == "item"]
    assert sum(groups) == 7 and max(groups) <= 3
    if concurrency == 1:  # calls one by one: every group is full but the last
        assert groups == [3, 3, 1]
    replayed = Runner(map_flow(concurrency), store=store).get_state("t")
    assert replayed.state == result.state and replayed.version == result.version


def test_a_map_inside_a_subflow_saves_its_groups_in_the_parent_journal(store: Store) -> None:
    class Doc(BaseModel):
        items: list[float] = []
        total: float = 0.0

    parent = Flow(
        name="doc",
        state=Doc,
        start="sum",
        nodes={"sum": Subflow(map_flow(), output=lambda p, c: {"total": sum(c.out)})},
        routes={"sum": END},
    )
    seen = appends(store)
    result = Runner(parent, store=store).start("d", {"items": [1.0, 2.0, 3.0, 4.0]})
    assert result.done and result.state.total == 10.0
    assert [kinds for kinds in seen if len(kinds) > 1] == [["sub", "sub", "sub"]]
    inner = [r.record.kind for r in store.records("d") if r.kind == "sub"]
    assert inner == ["start", "item", "item", "item", "item", "join"]
    assert Runner(parent, store=store).get_state("d").state == result.state


def test_calls_finished_before_an_error_are_saved_on_the_way_out(store: Store) -> None:
    ran: list[float] = []

    def careful(state: Sheet, item: float) -> dict[str, Any]:
        ran.append(item)
        return {"out": [float("nan") if item == 4.0 and ran.count(4.0) == 1 else item]}

    flow = Flow(
        name="groups",
        state=Sheet,
        start="each",
        nodes={"each": Map(careful, over=lambda s: s.items, concurrency=1)},
        routes={"each": END},
    )
    runner = Runner(flow, store=store)
    with pytest.raises(UnstorableValueError):
        runner.start("t", {"items": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]})
    # 0-2 were saved as a group, 3 on the way out; only 4 and 5 run again.
    kept = [r.index for r in store.records("t") if r.kind == "item"]
    assert kept == [0, 1, 2, 3]
    assert list(Runner(flow, store=store).resume("t").state.out) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert ran == [0.0, 1.0, 2.0, 3.0, 4.0, 4.0, 5.0]


def test_a_calls_event_comes_once_it_is_saved(store: Store) -> None:
    saved_then: list[tuple[str, int]] = []
    runner = Runner(map_flow(), store=store)

    def watch(event: Any) -> None:
        if isinstance(event, NodeFinished) and "[" in event.node:
            saved_then.append((event.node, sum(r.kind == "item" for r in store.records("t"))))

    runner.subscribe(watch)
    runner.start("t", {"items": [1.0, 2.0, 3.0, 4.0]})
    assert saved_then == [("each[0]", 3), ("each[1]", 3), ("each[2]", 3), ("each[3]", 4)]
