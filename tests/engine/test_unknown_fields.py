"""A key a model would drop silently (pydantic's ``extra="ignore"``) is refused by name in a
start state and in a gate's answer: a typo must not run with the field's default."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from flowkit import END, Flow, Gate, Runner
from flowkit.errors import InvalidResumeInputError, InvalidStateError, UnknownGateError
from flowkit.stores import MemoryStore


class Reviewed(BaseModel):
    approved: bool = False
    note: str = ""


class Draft(Reviewed):
    topic: str = "flowkit"
    words: int = 0


class Loose(Reviewed):
    model_config = ConfigDict(extra="allow")
    topic: str = "flowkit"


class Aliased(Reviewed):
    topic: str = Field("flowkit", alias="subject")


class Review(BaseModel):
    approved: bool = False
    note: str = ""


def write(state: Any) -> dict[str, Any]:
    return {}


def _flow(state: type[BaseModel] = Draft) -> Flow:
    return Flow(
        name="draft",
        state=state,
        start="write",
        nodes={"write": write},
        gates={"review": Gate(Review)},
        routes={"write": "review", "review": END},
    )


@pytest.mark.parametrize(
    ("start", "named", "hint"),
    [
        ({"topc": "x"}, "`topc`", "(did you mean `topic`?)"),
        ({"topic": "x", "wrds": 3}, "`wrds`", "(did you mean `words`?)"),
        ({"zzz": 1}, "`zzz`", "Draft has: approved, note, topic, words"),
    ],
)
def test_an_unknown_key_in_a_start_state_is_refused_by_name_and_nothing_is_stored(
    start: dict[str, Any], named: str, hint: str
) -> None:
    store = MemoryStore()
    with pytest.raises(InvalidStateError) as caught:
        Runner(_flow(), store=store).start("t", start)
    assert named in str(caught.value) and hint in str(caught.value)
    assert store.threads() == []


def test_many_unknown_keys_are_counted_not_all_listed() -> None:
    with pytest.raises(InvalidStateError, match="and 3 more"):
        Runner(_flow()).start("t", {f"k{i}": i for i in range(8)})


def test_a_long_unknown_key_is_shortened_in_the_message() -> None:
    with pytest.raises(InvalidStateError) as caught:
        Runner(_flow()).start("t", {"x" * 10_000: 1})
    assert len(str(caught.value)) < 400


@pytest.mark.parametrize(
    ("state", "start", "topic"),
    [(Loose, {"topic": "a", "extra": 1}, "a"), (Aliased, {"subject": "b"}, "b")],
)
def test_models_that_keep_extra_keys_or_take_aliases_are_left_alone(
    state: type[BaseModel], start: dict[str, Any], topic: str
) -> None:
    result = Runner(_flow(state)).start("t", start)
    assert result.status == "waiting" and result.state.topic == topic  # type: ignore[attr-defined]


def test_an_unknown_key_in_a_gate_answer_is_refused_and_the_thread_still_waits() -> None:
    runner = Runner(_flow(), store=MemoryStore())
    runner.start("t")
    with pytest.raises(InvalidResumeInputError) as caught:
        runner.resume("t", {"aproved": True})
    assert "unknown field `aproved` (did you mean `approved`?)" in str(caught.value)
    assert caught.value.errors == [{"loc": ("aproved",), "msg": "unknown field"}]
    assert runner.get_state("t").status == "waiting"
    assert runner.resume("t", {"approved": True}).state.words == 0


def test_an_unknown_gate_lists_each_gate_once() -> None:
    runner = Runner(_flow(), store=MemoryStore())
    runner.start("t")
    with pytest.raises(UnknownGateError) as caught:
        runner.resume("t", {"approved": True}, gate="nosuch")
    assert str(caught.value).count("`review`") == 1
