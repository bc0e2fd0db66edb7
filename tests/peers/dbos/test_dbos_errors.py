"""DBOS peer scenarios: a step's error is recorded whatever the exception, and a value that
cannot be stored fails the step cleanly.

Ported as flowkit behaviour from dbos-transact-py ``tests/test_failures.py``
(``test_workflow_error_serialization``, ``test_error_serialization``,
``test_nonserializable_return``) and ``tests/test_dbos.py`` (``test_nonserializable_values``):
an exception that does not rebuild from its arguments, or whose text cannot even be read,
still becomes the thread's recorded error, in a fresh process too; a node that returns
something JSON cannot hold raises a typed error and leaves the thread where it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from flowkit import END, Flow, Runner
from flowkit.errors import UnstorableValueError
from flowkit.stores import JsonFileStore


class Box(BaseModel):
    value: Any = None


class NotRebuiltError(Exception):
    """Needs two arguments: it cannot be rebuilt from its ``args`` (pickle fails on it)."""

    def __init__(self, one: int, two: int) -> None:
        super().__init__(f"bad {one} {two}")
        self.one, self.two = one, two


class UnreadableError(Exception):
    """An exception whose text cannot be read: ``str()`` of it raises."""

    def __str__(self) -> str:
        raise RuntimeError("cannot render this error")


def _one_node(fn: Any) -> Flow:
    return Flow(
        name="dbos_errors",
        state=Box,
        start="step",
        nodes={"step": fn},
        routes={"step": END},
        error_field=None,
    )


def _raise_bad(state: Box) -> dict[str, Any]:
    raise NotRebuiltError(1, 2)


def _raise_unreadable(state: Box) -> dict[str, Any]:
    raise UnreadableError


@pytest.mark.parametrize(
    ("step", "type_name"),
    [(_raise_bad, "NotRebuiltError"), (_raise_unreadable, "UnreadableError")],
)
def test_an_error_that_does_not_serialize_is_still_recorded(
    tmp_path: Path, step: Any, type_name: str
) -> None:
    with JsonFileStore(tmp_path / "store") as store:
        failed = Runner(_one_node(step), store=store).start("wf-err")
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.type == type_name and failed.error.message
    with JsonFileStore(tmp_path / "store") as store:  # read back by another process
        runner = Runner(_one_node(step), store=store)
        seen = runner.get_state("wf-err")
        assert seen.error == failed.error
        assert [c.kind for c in runner.history("wf-err")][-1] == "step"


def test_an_unstorable_return_value_is_a_typed_error_and_saves_nothing(tmp_path: Path) -> None:
    def gen() -> Iterator[str]:
        yield "val"

    def step(state: Box) -> dict[str, Any]:
        return {"value": gen()}

    with JsonFileStore(tmp_path / "store") as store:
        runner = Runner(_one_node(step), store=store)
        with pytest.raises(UnstorableValueError) as caught:
            runner.start("wf-gen")
        assert caught.value.thread_id == "wf-gen"
        left = runner.get_state("wf-gen")
        assert (left.status, left.node, left.version) == ("pending", "step", 0)
        fixed = Runner(_one_node(lambda state: {"value": "val"}), store=store)
        assert fixed.resume("wf-gen").state.value == "val"
