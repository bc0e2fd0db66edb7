"""Small bad arguments that once escaped as raw TypeError / AttributeError / UnicodeDecodeError:
each is now a typed ``FlowkitError`` (or a clean argparse refusal) whose message says what to do."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, RouteTable, Runner
from flowkit.errors import (
    CatalogError,
    DomainError,
    FlowDefinitionError,
    InvalidStateError,
    InvalidThreadIdError,
    RunError,
)
from flowkit.robot.catalog import load_catalog

pytestmark = pytest.mark.timeout(60)


class Count(BaseModel):
    n: int = 0


def bump(state: Count) -> dict[str, Any]:
    return {"n": state.n + 1}


@pytest.fixture
def runner() -> Runner[Count]:
    flow = Flow(name="count", state=Count, nodes={"bump": bump}, routes={"bump": END}, start="bump")
    runner: Runner[Count] = Runner(flow)
    runner.start("t", {"n": 1})
    return runner


@pytest.mark.parametrize("default", [5, ["a"], {"to": "a"}, True])
def test_a_route_table_default_that_is_not_a_name_is_refused_at_load(default: object) -> None:
    data = {"name": "t", "rules": [], "default": default}
    with pytest.raises(FlowDefinitionError, match="default must be a node name"):
        RouteTable.from_data(data)
    with pytest.raises(FlowDefinitionError, match="default must be a node name"):
        RouteTable.from_json(json.dumps(data))


@pytest.mark.parametrize("values", [[1, 2], "n=3", 7])
def test_update_state_with_values_that_are_not_a_mapping(
    runner: Runner[Count], values: Any
) -> None:
    with pytest.raises(InvalidStateError, match="maps state fields to new values"):
        runner.update_state("t", values)
    assert runner.get_state("t").state.n == 2  # nothing was written


@pytest.mark.parametrize("at", ["0", True, 1.5, [0]])
def test_fork_at_something_other_than_a_version(runner: Runner[Count], at: Any) -> None:
    with pytest.raises(RunError, match="`at` is a checkpoint version"):
        runner.fork("t", "copy", at=at)
    assert "copy" not in runner.threads()
    assert runner.fork("t", "copy", at=0).state.n == 1


@pytest.mark.parametrize("source", [123, 1.5, None, b"name: x", ["a"]])
def test_load_domain_of_something_that_is_not_a_domain(source: Any) -> None:
    from flowkit.dialogue import load_domain

    with pytest.raises(DomainError, match="expected a file path"):
        load_domain(source)


def test_a_5000_character_thread_id_is_refused(runner: Runner[Count]) -> None:
    with pytest.raises(InvalidThreadIdError, match="longer than"):
        runner.start("t" * 5000, {})


def test_a_catalog_that_is_not_utf8_is_a_catalog_error(tmp_path: Path) -> None:
    path = tmp_path / "catalog.json"
    path.write_bytes(b'{"blocks": {"caf\xe9": {}}}')
    with pytest.raises(CatalogError, match="not UTF-8"):
        load_catalog(path)


@pytest.mark.parametrize("text", ["nan", "inf", "-1"])
def test_max_checkpoint_mb_must_be_a_finite_non_negative_number(text: str) -> None:
    from flowkit.terminal.inputs import non_negative

    with pytest.raises(argparse.ArgumentTypeError):
        non_negative(text)


@pytest.mark.parametrize("how", ["update_state", "node"])
def test_a_huge_unknown_key_is_not_echoed_whole_and_the_advice_stays(how: str) -> None:
    from flowkit.errors import InvalidUpdateError

    class Small(BaseModel):
        n: int = 0

    key = "k" * 5_000_000
    flow = Flow(name="small", state=Small, start="n",
                nodes={"n": lambda s: {key: 1} if how == "node" else {}},
                routes={"n": END})  # fmt: skip
    runner = Runner(flow)
    with pytest.raises(InvalidUpdateError) as caught:
        runner.start("t")
        runner.update_state("t", {key: 1})
    message = str(caught.value)
    assert len(message) < 500 and message.endswith(
        "add the field to the state model or stop writing it."
    )
