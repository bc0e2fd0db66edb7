"""The roundtable's route tables (seed 004 §5), row by row, with no engine, LLM or store."""

from __future__ import annotations

from typing import Any

import pytest

from flowkit import NodeError
from flowkit.roundtable.state import RoundtableState
from flowkit.routing import roundtable as r
from flowkit.testing import assert_routes


def state(**values: Any) -> RoundtableState:
    return RoundtableState(**values)


def failed(node: str) -> NodeError:
    return NodeError(type="LLMTimeoutError", message="late", node=node)


def test_call_llm_success_goes_to_postprocess_and_an_error_or_timeout_to_the_fallback() -> None:
    assert_routes(
        r.route_after_call_llm,
        [
            (state(last_response_text="Hi [Next: NOX]"), r.POSTPROCESS_RESPONSE, "answered"),
            (state(error=failed(r.CALL_LLM)), r.CHOOSE_NEXT_FALLBACK, "timeout or exception"),
            (state(error=failed(r.SEND_MESSAGE)), r.POSTPROCESS_RESPONSE, "another node's"),
        ],
    )


def test_extract_next_decided_goes_on_undecided_or_self_goes_to_the_fallback() -> None:
    assert_routes(
        r.route_after_extract_next,
        [
            (state(next_internal_id="NOX", decision_reason="tag"), r.END_OR_CONTINUE, "tag"),
            (state(next_internal_id="NOX", decision_reason="fuzzy"), r.END_OR_CONTINUE, "fuzzy"),
            (state(refusal="missing"), r.CHOOSE_NEXT_FALLBACK, "no tag"),
            (state(refusal="self"), r.CHOOSE_NEXT_FALLBACK, "self-nominated"),
            (state(refusal="user"), r.CHOOSE_NEXT_FALLBACK, "USER"),
            (state(refusal="unknown"), r.CHOOSE_NEXT_FALLBACK, "unknown"),
            (
                state(next_internal_id="NOX", error=failed(r.EXTRACT_NEXT)),
                r.CHOOSE_NEXT_FALLBACK,
                "raised",
            ),
        ],
    )


def test_end_or_continue_continues_or_ends_the_round() -> None:
    assert_routes(
        r.route_after_end_or_continue,
        [
            (state(continue_round=True), r.UPDATE_STATUS_IDLE, "continue"),
            (state(continue_round=False), r.PERSIST_MEMORY, "round over"),
            (state(continue_round=True, error=failed(r.END_OR_CONTINUE)), r.PERSIST_MEMORY),
            (state(continue_round=True, error=failed(r.CALL_LLM)), r.UPDATE_STATUS_IDLE),
        ],
    )


@pytest.mark.parametrize(
    ("table", "node", "normal", "on_error"),
    [
        (r.route_after_start_round, r.START_ROUND, r.PREPARE_CONTEXT, r.PERSON),
        (
            r.route_after_prepare_context,
            r.PREPARE_CONTEXT,
            r.UPDATE_STATUS_THINKING,
            r.CHOOSE_NEXT_FALLBACK,
        ),
        (
            r.route_after_postprocess_response,
            r.POSTPROCESS_RESPONSE,
            r.SEND_MESSAGE,
            r.CHOOSE_NEXT_FALLBACK,
        ),
        (r.route_after_send_message, r.SEND_MESSAGE, r.EXTRACT_NEXT, r.EXTRACT_NEXT),
        (
            r.route_after_choose_next_fallback,
            r.CHOOSE_NEXT_FALLBACK,
            r.END_OR_CONTINUE,
            r.END_OR_CONTINUE,
        ),
        (
            r.route_after_persist_memory,
            r.PERSIST_MEMORY,
            r.UPDATE_STATUS_ACTIVE,
            r.UPDATE_STATUS_ACTIVE,
        ),
    ],
)
def test_each_node_routes_its_own_failure(
    table: Any, node: str, normal: str, on_error: str
) -> None:
    assert_routes(table, [(state(), normal, "ok"), (state(error=failed(node)), on_error, "raised")])


def test_every_table_is_clean_and_serialises() -> None:
    from flowkit import RouteTable

    tables = [v for v in vars(r).values() if isinstance(v, RouteTable)]
    assert len(tables) == 9
    for table in tables:
        assert [p for p in table.problems() if "no default" in p] == []
        assert RouteTable.from_json(table.to_json()) == table


def test_the_flow_is_a_loop_through_the_persons_gate() -> None:
    from flowkit.roundtable.workflow import example_flow

    flow = example_flow()
    assert flow.start == r.PERSON and list(flow.gates) == [r.PERSON]
    assert flow.routes[r.UPDATE_STATUS_ACTIVE] == r.PERSON
    assert set(flow.states) == {*r.STATES, "__end__"}
    assert not flow.finals  # it never ends by itself
