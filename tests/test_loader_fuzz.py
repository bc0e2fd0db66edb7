"""Fuzz every loader of untrusted text: whatever the bytes, the answer is a result or a typed
``FlowkitError`` — never RecursionError, UnicodeDecodeError, KeyError, a crash or a hang."""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowkit import RouteTable
from flowkit.dialogue import load_domain
from flowkit.errors import FlowkitError
from flowkit.llm._extract import extract_json
from flowkit.llm._structured import parse_answer
from flowkit.llm.replay import load_cassette
from flowkit.robot.catalog import load_catalog
from flowkit.robot.cli import load_steps
from flowkit.robot.text import parse
from flowkit.roundtable import load_config

pytestmark = pytest.mark.timeout(300)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def hostile_text(draw: st.DrawFn) -> str:
    """Plain junk, JSON with junk spliced in, or brackets/indentation nested past any limit."""
    kind = draw(st.sampled_from(["text", "json", "deep", "indent", "yaml"]))
    if kind == "text":
        return draw(st.text(max_size=200))
    if kind == "json":
        text = json.dumps(draw(json_values))
        cut = draw(st.integers(0, len(text)))
        return text[:cut] + draw(st.text(max_size=20)) + text[cut:]
    depth = draw(st.integers(90, 5000))
    if kind == "deep":
        opener = draw(st.sampled_from(["[", "{", '{"a":', '[{"b":']))
        return opener * depth + draw(st.text(max_size=10))
    if kind == "indent":
        return "".join(
            " " * i + draw(st.sampled_from(["- ", "a:", "- loop:"])) + "\n" for i in range(depth)
        )
    return "a: &x [1, 2]\n" + "".join(f"k{i}: [*x, *x]\n" for i in range(draw(st.integers(0, 50))))


def _load_file(load: Callable[[Path], object], suffix: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"input{suffix}"
        path.write_bytes(data)
        with contextlib.suppress(FlowkitError):
            load(path)


FILE_LOADERS: dict[str, tuple[Callable[[Path], object], str]] = {
    "domain yaml": (load_domain, ".yaml"),
    "domain json": (load_domain, ".json"),
    "catalog": (load_catalog, ".json"),
    "cassette": (load_cassette, ".json"),
    "steps json": (load_steps, ".json"),
    "steps text": (load_steps, ".txt"),
    "roundtable yaml": (load_config, ".yaml"),
    "roundtable json": (load_config, ".json"),
}


@pytest.mark.slow  # a long property run: eight loaders, real files
@pytest.mark.parametrize("loader", sorted(FILE_LOADERS))
@FUZZ
@given(text=hostile_text(), junk=st.binary(max_size=64), encode=st.booleans())
def test_file_loaders_give_a_result_or_a_typed_error(
    loader: str, text: str, junk: bytes, encode: bool
) -> None:
    load, suffix = FILE_LOADERS[loader]
    _load_file(load, suffix, text.encode("utf-8") if encode else junk + text.encode("utf-8"))


@FUZZ
@given(hostile_text())
def test_route_tables_from_json_give_a_table_or_a_typed_error(text: str) -> None:
    with contextlib.suppress(FlowkitError):
        RouteTable.from_json(text)


@FUZZ
@given(json_values)
def test_route_tables_from_data_give_a_table_or_a_typed_error(data: Any) -> None:
    with contextlib.suppress(FlowkitError):
        RouteTable.from_data(data)


@FUZZ
@given(hostile_text())
def test_the_robot_text_parser_gives_steps_or_a_typed_error(text: str) -> None:
    with contextlib.suppress(FlowkitError):
        parse(text)


@FUZZ
@given(hostile_text(), st.text(max_size=30))
def test_llm_answer_parsers_give_a_value_or_an_llm_error(text: str, prose: str) -> None:
    from pydantic import BaseModel

    class Answer(BaseModel):
        intent: str

    for answer in (text, f"{prose} {text} {prose}", f"```json\n{text}\n```"):
        with contextlib.suppress(FlowkitError):
            extract_json(answer)
        with contextlib.suppress(FlowkitError):
            parse_answer(answer, Answer)
