"""Burr's graph scenarios, as flowkit behaviour.

Ported from Burr's ``tests/core/test_graph.py`` (apache/burr): transitions chosen by
condition with a default (``test_graph_builder_get_next_node``, ``test__validate_transitions_
correct``), and the validation errors for a transition to a missing action
(``test__validate_transitions_missing_action``), a redundant transition
(``test__validate_transitions_redundant_transition``), duplicated actions
(``test__validate_actions_duplicated``), an empty graph (``test__validate_actions_empty``)
and, from ``test_application.py``, an entrypoint that is not an action
(``test__validate_start_not_found``). flowkit lists every problem of a flow at once.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Route, RouteTable, field, when
from flowkit.errors import FlowDefinitionError


class Count(BaseModel):
    count: int = 0
    flag: bool = False


def counter(state: Count) -> dict[str, Any]:
    return {"count": state.count + 1}


def result(state: Count) -> dict[str, Any]:
    return {}


def _below_ten(state: Count) -> bool:
    return state.count < 10


UNTIL_TEN = RouteTable(
    "until_ten", [Route(when("below_ten", _below_ten), "counter")], default="result"
)


def _problems(**changes: Any) -> list[str]:
    settings: dict[str, Any] = {
        "name": "burr_graph",
        "state": Count,
        "start": "counter",
        "nodes": {"counter": counter, "result": result},
        "routes": {"counter": UNTIL_TEN, "result": END},
    }
    settings.update(changes)
    with pytest.raises(FlowDefinitionError) as caught:
        Flow(**settings)
    return [str(problem) for problem in caught.value.problems]


def test_the_next_action_follows_the_first_true_condition_or_the_default() -> None:
    # test_graph_builder_get_next_node, without any engine
    Flow(
        name="burr_graph",
        state=Count,
        start="counter",
        nodes={"counter": counter, "result": result},
        routes={"counter": UNTIL_TEN, "result": END},
    )
    assert UNTIL_TEN.resolve(Count(count=0)) == "counter"
    assert UNTIL_TEN.resolve(Count(count=10)) == "result"


def test_a_transition_to_a_missing_action_is_refused() -> None:
    # test__validate_transitions_missing_action
    problems = _problems(nodes={"counter": counter}, routes={"counter": UNTIL_TEN})
    assert any("`result` is not in this flow" in p for p in problems)


def test_a_redundant_transition_is_refused() -> None:
    # test__validate_transitions_redundant_transition: a rule that can never match
    table = RouteTable(
        "redundant", [Route(field("flag"), "counter"), Route(field("flag"), "result")], default=END
    )
    problems = _problems(routes={"counter": table, "result": END})
    assert len(problems) == 1 and "can never match" in problems[0]


def test_an_action_name_used_twice_is_refused() -> None:
    # test__validate_actions_duplicated: names are dict keys, so the clash is node vs gate
    problems = _problems(gates={"result": Count}, routes={"counter": UNTIL_TEN, "result": END})
    assert any("`result` is both a node and a gate" in p for p in problems)


def test_an_entrypoint_that_is_not_an_action_is_refused_with_every_other_problem() -> None:
    # test__validate_start_not_found (and test__validate_actions_empty: no actions at all)
    problems = _problems(start="nope")
    assert "Start `nope` is not a node or gate" in problems[0]
    assert len(problems) == 3  # counter and result are unreachable from it, too
    empty = _problems(nodes={}, routes={})
    assert len(empty) == 1 and "Start `counter` is not a node or gate" in empty[0]
