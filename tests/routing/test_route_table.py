"""Route tables: conditions, ordering, explanation, static problems and the JSON form."""

from __future__ import annotations

import enum
import functools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from flowkit import END, Route, RouteTable
from flowkit.errors import FlowDefinitionError, RouteError
from flowkit.routing import all_of, always, any_of, condition_from_data, field, not_, when


class Mode(enum.Enum):
    SLOT = "SLOT_FILLING"
    STEP = "STEP_BY_STEP"


class Goal(BaseModel):
    current_step: int = 0


class State(BaseModel):
    ok: bool = False
    mode: Mode = Mode.SLOT
    intent: str = ""
    goal: Goal = Goal()
    count: int = 0


def test_first_matching_rule_wins_in_order() -> None:
    table = RouteTable("t", [Route(field("ok"), "a"), Route(always(), "b")])
    assert table.resolve(State(ok=True)) == "a"
    assert table.resolve(State(ok=False)) == "b"


def test_equals_matches_enum_fields_by_value() -> None:
    table = RouteTable("t", [Route(field("mode").eq("STEP_BY_STEP"), "step")], default="slot")
    assert table.resolve(State(mode=Mode.STEP)) == "step"
    assert table.resolve(State(mode=Mode.SLOT)) == "slot"


def test_in_matches_any_listed_value() -> None:
    table = RouteTable(
        "np", [Route(field("intent").is_in(["OOS", "QUESTION", "SMALL_TALK"]), "np")], default="gst"
    )
    assert table.resolve(State(intent="QUESTION")) == "np"
    assert table.resolve(State(intent="BOOK")) == "gst"


def test_dotted_paths_read_nested_models_and_mappings() -> None:
    table = RouteTable("t", [Route(field("goal.current_step").eq(2), "two")], default="other")
    assert table.resolve(State(goal=Goal(current_step=2))) == "two"
    assert table.resolve({"goal": {"current_step": 2}}) == "two"
    assert table.resolve({"goal": None}) == "other"


def test_combinators_and_operators_agree() -> None:
    a, b = field("ok"), field("count").eq(3)
    state = State(ok=True, count=3)
    assert (a & b)(state) and all_of(a, b)(state)
    assert (a | b)(State(count=3)) and any_of(a, b)(State(count=3))
    assert (~a)(State()) and not_(a)(State())


def test_named_callables_route_and_serialise_by_name() -> None:
    big = when("is_big", lambda s: s.count > 10)
    table = RouteTable("t", [Route(big, "big")], default="small")
    assert table.resolve(State(count=11)) == "big"
    data = table.to_data()
    assert data["rules"][0]["when"] == {"call": "is_big"}
    again = RouteTable.from_data(data, callables={"is_big": big.fn})
    assert again.resolve(State(count=11)) == "big"


def test_missing_callable_on_load_says_what_to_pass() -> None:
    data = {"name": "t", "rules": [{"when": {"call": "nope"}, "to": "x"}], "default": "y"}
    with pytest.raises(FlowDefinitionError, match="callables=\\{'nope'"):
        RouteTable.from_data(data)


def test_explain_names_the_rule_or_default() -> None:
    table = RouteTable("t", [Route(field("ok"), "a")], default="b")
    assert table.explain(State(ok=True)).rule == 0
    assert table.explain(State()).rule is None
    assert table.explain(State()).reason == "default"


def test_no_rule_and_no_default_is_a_route_error() -> None:
    table = RouteTable("t", [Route(field("ok"), "a")])
    with pytest.raises(RouteError, match="no default"):
        table.resolve(State())


def test_a_raising_condition_becomes_a_route_error_naming_the_table() -> None:
    table = RouteTable("t", [Route(when("boom", lambda s: 1 / 0), "a")], default="b")
    with pytest.raises(RouteError, match=r"`t`.*boom"):
        table.resolve(State())


def test_problems_report_shadowed_rules_duplicates_and_missing_default() -> None:
    table = RouteTable(
        "t",
        [
            Route(field("ok"), "a"),
            Route(field("ok"), "b"),
            Route(always(), "c"),
            Route(field("count").eq(1), "d"),
        ],
        default="e",
    )
    problems = table.problems()
    assert any("rule 1 repeats the condition of rule 0" in p for p in problems)
    assert any("rule 3" in p and "unconditional" in p for p in problems)
    assert any("default `e` can never be used" in p for p in problems)
    assert (
        RouteTable("u", [Route(field("ok"), "a")])
        .problems()[0]
        .startswith("Route table `u` has no default")
    )


def is_error(state: Any) -> bool:
    return bool(read(state, "intent") == "error")


def read(state: Any, key: str) -> Any:
    return state[key] if isinstance(state, dict) else getattr(state, key)


class Checker:
    def __call__(self, state: Any) -> bool:
        return True


@pytest.mark.parametrize(
    ("state", "target"),
    [
        (State(intent="error"), END),
        (State(intent="hi"), "reply"),
        ({"intent": "error"}, END),
        ({"intent": ""}, "reply"),
    ],
)
def test_a_named_function_routes_like_when(state: Any, target: str) -> None:
    plain = RouteTable("t", [Route(is_error, END)], default="reply")
    wrapped = RouteTable("t", [Route(when("is_error", is_error), END)], default="reply")
    assert plain.resolve(state) == wrapped.resolve(state) == target
    assert plain == wrapped
    assert plain.explain(state) == wrapped.explain(state)


def test_a_named_function_serialises_by_name_like_when() -> None:
    table = RouteTable("t", [Route(is_error, END)], default="reply")
    assert table.to_data() == {
        "name": "t",
        "rules": [{"when": {"call": "is_error"}, "to": END}],
        "default": "reply",
    }
    assert table.rules[0].condition.describe() == "is_error()"
    assert RouteTable.from_json(table.to_json(), callables={"is_error": is_error}) == table
    with pytest.raises(FlowDefinitionError, match="pass callables=\\{'is_error': fn\\}"):
        RouteTable.from_json(table.to_json())


@pytest.mark.parametrize(
    ("condition", "names"),
    [
        (lambda s: True, "`<lambda>`"),
        (functools.partial(read, key="ok"), "partial"),
        (Checker(), "Checker"),
        (bool, "`bool`"),
        ("ok", "'ok'"),
        (None, "None"),
    ],
)
def test_a_condition_without_a_name_is_refused_with_how_to_name_it(
    condition: Any, names: str
) -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        Route(condition, "a")
    message = str(caught.value)
    assert "Route to `a`" in message
    assert names in message
    assert "when(" in message


def test_field_paths_must_be_identifiers() -> None:
    with pytest.raises(ValueError, match="dotted identifiers"):
        field("a..b")


# -- the JSON form round-trips -------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["x", "y", ""]))
paths = st.sampled_from(["ok", "count", "intent", "goal.current_step", "missing"])


conditions = st.recursive(
    st.one_of(
        paths.map(field),
        st.tuples(paths, scalars).map(lambda t: field(t[0]).eq(t[1])),
        st.tuples(paths, st.lists(scalars, max_size=3)).map(lambda t: field(t[0]).is_in(t[1])),
        st.just(always()),
    ),
    lambda inner: st.one_of(
        inner.map(not_),
        st.lists(inner, min_size=1, max_size=3).map(lambda cs: all_of(*cs)),
        st.lists(inner, min_size=1, max_size=3).map(lambda cs: any_of(*cs)),
    ),
    max_leaves=8,
)
tables = st.builds(
    RouteTable,
    st.just("generated"),
    st.lists(st.builds(Route, conditions, st.sampled_from(["a", "b", END])), max_size=5),
    default=st.sampled_from(["a", "b", END]),
)
states = st.builds(
    State,
    ok=st.booleans(),
    count=st.integers(-5, 5),
    intent=st.sampled_from(["x", "y", ""]),
    goal=st.builds(Goal, current_step=st.integers(-5, 5)),
)


@given(tables, states)
def test_tables_survive_json_and_resolve_the_same(table: RouteTable, state: State) -> None:
    again = RouteTable.from_json(table.to_json())
    assert again == table
    assert again.resolve(state) == table.resolve(state)
    assert json.loads(again.to_json()) == table.to_data()


@given(conditions)
def test_conditions_survive_their_data_form(condition: Any) -> None:
    assert condition_from_data(condition.to_data()) == condition


def test_explain_wraps_a_raising_condition_in_a_route_error_like_resolve() -> None:
    def broken(state: Any) -> bool:
        raise KeyError("missing")

    table = RouteTable("t", [Route(when("broken", broken), "a")], default="b")
    with pytest.raises(RouteError, match="condition `broken"):
        table.resolve(State())
    with pytest.raises(RouteError, match="condition `broken"):
        table.explain(State())


def test_route_data_that_is_not_json_is_a_definition_error() -> None:
    with pytest.raises(FlowDefinitionError, match="not valid JSON"):
        RouteTable.from_json("{not json")


def test_route_data_with_a_bad_field_path_is_a_definition_error() -> None:
    data = {"name": "t", "rules": [{"when": {"field": "a..b"}, "to": "x"}], "default": "y"}
    with pytest.raises(FlowDefinitionError, match=r"a\.\.b"):
        RouteTable.from_data(data)
