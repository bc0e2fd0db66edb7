"""The hot path's shortcuts keep behaviour: ``append`` shares items yet every version keeps its
own, the field still reads and serialises as a list, and the per-call checks no longer scan
or import anything. (Timings live in ``bench/``; no test here looks at a clock.)
"""

from __future__ import annotations

import builtins
import copy
import json
import operator
import pickle
import threading
from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from flowkit import END, Flow, Runner, append
from flowkit._invoke import refuse_inside_event_loop
from flowkit._node import check_update
from flowkit._reducers import AppendedList
from flowkit.errors import InvalidUpdateError
from flowkit.stores import MemoryStore


class Chat(BaseModel):
    messages: Annotated[list[str], append] = []
    count: int = 0


class PlainChat(BaseModel):
    messages: list[str] = []
    count: int = 0


def _grown(*batches: list[str]) -> Any:
    value: Any = []
    for batch in batches:
        value = append(value, batch)
    return value


# -- AppendedList reads like the list it stands for -------------------------------------------

READS = [
    ("len", len),
    ("index", lambda v: v[1]),
    ("negative index", lambda v: v[-1]),
    ("slice", lambda v: v[1:]),
    ("step slice", lambda v: v[::-2]),
    ("iterate", lambda v: [x for x in v]),
    ("reversed", lambda v: list(reversed(v))),
    ("contains", lambda v: "b" in v),
    ("not contains", lambda v: "z" in v),
    ("equals list", lambda v: v == ["a", "b", "c"]),
    ("list equals", lambda v: operator.eq(["a", "b", "c"], v)),
    ("differs", lambda v: v != ["a", "b"]),
    ("not a tuple", lambda v: v == ("a", "b", "c")),
    ("plus list", lambda v: operator.add(v, ["d"])),
    ("list plus", lambda v: operator.add(["z"], v)),
    ("list()", list),
    ("copy", lambda v: v.copy()),
    ("repr", repr),
    ("str", str),
    ("index()", lambda v: v.index("c")),
    ("count()", lambda v: v.count("a")),
    ("bool", bool),
    ("json of list()", lambda v: json.dumps(list(v))),
    ("reverse slice to start", lambda v: v[1::-1]),
    ("empty slice", lambda v: v[5:]),
    ("too far", lambda v: _raised(lambda: v[3])),
    ("too far back", lambda v: _raised(lambda: v[-4])),
]


def _raised(read: Any) -> str:
    try:
        read()
    except IndexError as exc:
        return f"IndexError: {exc}"
    return "no error"


def _newest() -> Any:
    return _grown(["a"], ["b", "c"])


def _older() -> Any:
    """A version that later versions grew past: it still reads only its own three items."""
    version = _grown(["a"], ["b", "c"])
    append(version, ["later"])
    return version


@pytest.mark.parametrize("version", [_newest, _older], ids=["newest", "older"])
@pytest.mark.parametrize(("what", "read"), READS, ids=[r[0] for r in READS])
def test_appended_list_reads_like_a_list(what: str, read: Any, version: Any) -> None:
    shared = version()
    assert isinstance(shared, AppendedList)
    assert read(shared) == read(["a", "b", "c"])


def test_slices_are_plain_lists_and_it_is_unhashable_like_a_list() -> None:
    shared = _grown(["a", "b"])
    assert type(shared[:1]) is list
    with pytest.raises(TypeError):
        hash(shared)


@given(st.lists(st.tuples(st.integers(0, 50), st.lists(st.text(max_size=3), max_size=3))))
def test_every_version_keeps_exactly_its_own_items(script: list[tuple[int, list[str]]]) -> None:
    """Appending to any earlier version (a fork, a replay, a branch) never changes another."""
    versions: list[Any] = [[]]
    expected: list[list[str]] = [[]]
    for pick, items in script:
        base = pick % len(versions)
        versions.append(append(versions[base], items))
        expected.append([*expected[base], *items])
    for got, want in zip(versions, expected, strict=True):
        assert list(got) == want
        assert got == want


# -- the field stays a list to pydantic and to JSON -------------------------------------------


def test_state_dumps_and_round_trips_exactly_like_a_plain_list() -> None:
    state = Chat().model_copy(update={"messages": _grown(["a"], ["b"]), "count": 2})
    plain = PlainChat(messages=["a", "b"], count=2)
    assert state.model_dump() == plain.model_dump()
    assert type(state.model_dump()["messages"]) is list
    assert state.model_dump(mode="json") == plain.model_dump(mode="json")
    assert state.model_dump_json() == plain.model_dump_json()
    assert Chat.model_validate_json(state.model_dump_json()) == state
    assert Chat.model_json_schema()["properties"] == PlainChat.model_json_schema()["properties"]


def test_an_appended_list_is_accepted_where_a_list_is() -> None:
    state = Chat().model_copy(update={"messages": _grown(["a"], ["b"])})
    again = Chat(messages=state.messages)
    assert again == state and type(again.messages) is list
    assert PlainChat.model_validate(state.model_dump()).messages == ["a", "b"]


def test_copies_and_pickles_are_equal_and_independent() -> None:
    state = Chat().model_copy(update={"messages": _grown(["a"], ["b"])})
    for other in (
        copy.copy(state),
        copy.deepcopy(state),
        state.model_copy(deep=True),
        pickle.loads(pickle.dumps(state)),
    ):
        assert other == state
        assert other.messages == ["a", "b"]


def _say(state: Chat) -> dict[str, Any]:
    return {"messages": [f"m{state.count}"], "count": state.count + 1}


def _chat_flow() -> Flow:
    return Flow(name="chat", state=Chat, start="say", nodes={"say": _say}, routes={"say": END})


def test_results_history_and_forks_each_keep_their_own_messages() -> None:
    runner = Runner(_chat_flow(), store=MemoryStore())
    first = runner.start("t", {"messages": ["hi"]})
    assert first.state.messages == ["hi", "m0"]
    runner.fork("t", "u", at=0)
    forked = runner.resume("u")
    assert forked.state.messages == ["hi", "m0"]
    assert first.state.messages == ["hi", "m0"]  # the first result did not move
    assert [c.state.messages for c in runner.history("t")] == [["hi"], ["hi", "m0"]]


# -- per-call checks scan and import nothing --------------------------------------------------


def test_check_update_imports_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("check_update imported a module")

    monkeypatch.setattr(builtins, "__import__", refuse)
    assert check_update(None, "n") == {}
    assert check_update({"a": 1}, "n") == {"a": 1}
    with pytest.raises(InvalidUpdateError):
        check_update(3, "n")


async def _async_node(state: Chat) -> None:
    return None


def _sync_node(state: Chat) -> None:
    return None


def test_has_async_is_known_when_the_flow_is_built() -> None:
    def flow(node: Any) -> Flow:
        return Flow(name="f", state=Chat, start="n", nodes={"n": node}, routes={"n": END})

    assert flow(_async_node).has_async is True
    assert flow(_sync_node).has_async is False


def test_refuse_inside_event_loop_reads_the_cached_answer() -> None:
    class NoScan:
        name = "big"
        has_async = False

        @property
        def nodes(self) -> Any:
            raise AssertionError("the flow's nodes were scanned")

    refuse_inside_event_loop(NoScan(), "t")  # type: ignore[arg-type]


def test_every_path_to_a_state_gives_its_append_field_the_same_type() -> None:
    """Started, stepped, replayed, loaded from a snapshot: identical states, type for type."""
    runner = Runner(_chat_flow(), store=MemoryStore())
    done = runner.start("t", {"messages": ["hi"]})
    states = [done.state, *(c.state for c in runner.history("t"))]
    fresh = Runner(_chat_flow(), store=runner.store)
    states.append(fresh.get_state("t").state)
    assert {type(s.messages) for s in states} == {AppendedList}


def test_threads_appending_to_one_version_each_get_their_own() -> None:
    """Parallel branches grow the same state: one extends the shared list, the rest copy."""
    base = _grown(["a"])
    got: dict[int, list[Any]] = {}

    def grow(n: int) -> None:
        got[n] = [append(base, [f"{n}.{k}"]) for k in range(200)]

    workers = [threading.Thread(target=grow, args=(n,)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for n, versions in got.items():
        assert [list(v) for v in versions] == [["a", f"{n}.{k}"] for k in range(200)]
    assert base == ["a"]
