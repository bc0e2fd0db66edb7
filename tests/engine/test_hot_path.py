"""The hot path's shortcuts keep behaviour: ``append`` shares items yet every version keeps its
own, the field still reads and serialises as a list, and the per-call checks no longer scan
or import anything. (Timings live in ``bench/``; no test here looks at a clock.)
"""

from __future__ import annotations

import builtins
import copy
import json
import logging
import operator
import pickle
import threading
from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from flowkit import END, Flow, Runner, append
from flowkit.definition._node import check_update
from flowkit.definition._reducers import AppendedList
from flowkit.errors import InvalidUpdateError
from flowkit.execution._invoke import refuse_inside_event_loop
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


# -- the second round of shortcuts: each keeps what it skips ---------------------------------


def _bump(state: Chat) -> dict[str, Any]:
    return {"messages": ["hi"], "count": state.count + 1}


def _bump_flow() -> Flow:
    return Flow(name="chat", state=Chat, start="bump", nodes={"bump": _bump}, routes={"bump": END})


def test_a_start_state_passed_in_is_never_changed_in_place() -> None:
    """A state built by the runner is put in its own form in place; one passed in is copied."""
    mine = Chat(messages=["a"])
    result = Runner(_bump_flow(), store=MemoryStore()).start("t", mine)
    assert type(mine.messages) is list and mine.messages == ["a"]
    assert result.state.messages == ["a", "hi"]
    assert isinstance(Runner(_bump_flow()).start("u").state.messages, AppendedList)


def test_a_node_is_single_call_only_without_context_timeout_and_retry() -> None:
    from flowkit import RetryPolicy
    from flowkit.definition._node import Node

    def with_ctx(state: Chat, ctx: Any) -> dict[str, Any]:
        return {}

    assert Node(_bump).single_call
    assert not Node(with_ctx).single_call
    assert not Node(_bump, timeout=1.0).single_call
    assert not Node(_bump, retry=RetryPolicy(max_attempts=2)).single_call


def test_single_call_nodes_still_record_every_step_and_event() -> None:
    from flowkit.testing import capture_events

    runner = Runner(_bump_flow(), store=MemoryStore())
    with capture_events(runner) as events:
        runner.start("t")
    assert events.kinds()[:2] == ["node_started", "node_finished"]
    (step,) = [r for r in runner.store.records("t") if r.kind == "step"]  # type: ignore[union-attr]
    assert (step.node, step.attempts, step.update["count"]) == ("bump", 1, 1)


def test_the_machine_still_refuses_an_edge_the_flow_does_not_have() -> None:
    from flowkit.errors import RouteError

    machine = _bump_flow().machine
    assert machine.advance("bump", END) == END
    with pytest.raises(RouteError, match="no route from `bump` to `bump`"):
        machine.advance("bump", "bump")


def test_the_machine_moves_without_logging_each_transition(
    caplog: pytest.LogCaptureFixture,
) -> None:
    machine = _bump_flow().machine
    with caplog.at_level(logging.DEBUG, logger="transitions"):
        assert machine.advance("bump", END) == END
    assert caplog.records == []


@pytest.mark.parametrize("allowed", [True, False])
def test_the_quiet_machine_runs_conditions_and_callbacks_as_transitions_does(
    allowed: bool,
) -> None:
    from transitions import Machine

    from flowkit.definition._machine import _Machine

    def trace(machine_class: type[Machine]) -> tuple[list[str], str]:
        calls: list[str] = []

        def note(name: str) -> Any:
            return lambda: calls.append(name)

        class Model:
            state = ""

        model = Model()
        machine = machine_class(
            model=model,
            states=["a", "b"],
            initial="a",
            auto_transitions=False,
            before_state_change=note("machine before"),
            after_state_change=note("machine after"),
            transitions=[
                {
                    "trigger": "go",
                    "source": "a",
                    "dest": "b",
                    "prepare": note("prepare"),
                    "conditions": lambda: calls.append("condition") or allowed,
                    "before": note("before"),
                    "after": note("after"),
                }
            ],
        )
        machine.get_state("a").add_callback("exit", note("exit a"))
        machine.get_state("b").add_callback("enter", note("enter b"))
        model.go()  # type: ignore[attr-defined]
        return calls, model.state

    assert trace(_Machine) == trace(Machine)


def test_debug_lines_are_built_only_where_structlog_would_pass_them() -> None:
    import logging

    import structlog

    from flowkit.foundation._logging import Logger

    try:
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
        assert Logger.debug_enabled() is False
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
        assert Logger.debug_enabled() is True
        structlog.configure(wrapper_class=structlog.BoundLogger)  # decides in its processors
        assert Logger.debug_enabled() is True
    finally:
        structlog.reset_defaults()


def test_thread_ids_seen_to_pass_are_remembered_but_never_a_str_subclass() -> None:
    from flowkit.errors import InvalidThreadIdError
    from flowkit.stores._ids import _PASSED, check_thread_id

    class Sly(str):
        __slots__ = ()

    assert check_thread_id("ok-1") == "ok-1" and "ok-1" in _PASSED
    check_thread_id(Sly("ok-2"))
    assert "ok-2" not in _PASSED
    for bad in ("../x", "", "a/b", "x" * 200):
        with pytest.raises(InvalidThreadIdError):
            check_thread_id(bad)


@pytest.mark.parametrize("hook", ["prepare", "conditions", "before", "after", "exit", "enter"])
def test_an_edge_with_a_callback_runs_it_and_one_without_only_moves(hook: str) -> None:
    """Where nothing is registered, ``advance`` sets the state through the machine without
    running its empty callback lists (a tenth of a step); a callback anywhere on the edge or
    its states sends it through the Transition as before, conditions included."""
    machine = _bump_flow().machine
    assert machine.advance("bump", END) == END  # nothing registered: the short way
    inner = machine._machine
    calls: list[str] = []
    transition, _, source, target = machine._edge_transitions[("bump", END)]
    if hook == "conditions":
        from transitions.core import Condition

        transition.conditions.append(Condition(lambda *_: calls.append(hook) or False))
    elif hook in ("exit", "enter"):
        (source if hook == "exit" else target).add_callback(hook, lambda *_: calls.append(hook))
    else:
        transition.add_callback(hook, lambda *_: calls.append(hook))
    if hook == "conditions":
        from flowkit.errors import RouteError

        with pytest.raises(RouteError, match="did not move"):
            machine.advance("bump", END)
    else:
        assert machine.advance("bump", END) == END
    assert calls == [hook]
    assert inner is machine._machine
