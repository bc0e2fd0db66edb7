"""The guarded door for untrusted text, and every loader behind it: deep nesting, size and
YAML aliases are typed errors, never RecursionError, a crash or a hang."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowkit import RouteTable
from flowkit.dialogue import load_domain
from flowkit.errors import (
    CatalogError,
    DomainError,
    FlowDefinitionError,
    FlowkitError,
    InputTooDeepError,
    InputTooLargeError,
    LLMConfigError,
    ParameterTableError,
    RobotProgramError,
    StepTextError,
    UntrustedInputError,
    YAMLAliasError,
)
from flowkit.foundation._untrusted import (
    check_data_depth,
    json_depth,
    parse_json,
    parse_yaml,
    read_regular_file,
)
from flowkit.llm import from_spec
from flowkit.llm.replay import load_cassette
from flowkit.robot.catalog import load_catalog
from flowkit.robot.cli import load_steps
from flowkit.robot.params import TeachingTable
from flowkit.robot.text import parse

pytestmark = pytest.mark.timeout(60)

DEEP_JSON = "[" * 100_000 + "]" * 100_000
DEEP_YAML_BLOCK = "key:\n" + "".join(" " * i + "- \n" for i in range(1, 1500)) + "- " * 3000 + "x\n"
BOMB = "a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol']\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


def nested_list(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        node.append([])
        node = node[0]
    return root


# -- the door itself ---------------------------------------------------------------------


def test_json_nested_past_the_limit_is_refused_before_parsing() -> None:
    with pytest.raises(InputTooDeepError) as caught:
        parse_json(DEEP_JSON, what="test document")
    assert caught.value.limit == 100 and caught.value.what == "test document"
    assert isinstance(caught.value, FlowkitError) and isinstance(caught.value, ValueError)


def test_brackets_inside_json_strings_do_not_count() -> None:
    text = json.dumps({"a": "[" * 500, "b": '\\"[[[' + "{" * 300})
    assert parse_json(text, what="x") == json.loads(text)
    assert json_depth(text) == 1
    assert json_depth(text, strings=False) > 100


def test_a_depth_limit_check_stops_at_the_first_bracket_past_the_limit() -> None:
    assert json_depth("[" * 1000 + "]" * 1000) == 1000
    assert json_depth("[" * 1000, stop_above=100) == 101
    assert json_depth("[[]]" + "{" * 5, stop_above=5) == 5  # not past it: the true depth


def test_json_larger_than_the_limit_is_refused() -> None:
    with pytest.raises(InputTooLargeError, match="over the limit of 10"):
        parse_json("[1, 2, 3, 4, 5]", what="x", max_bytes=10)


def test_bad_json_is_still_a_json_decode_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        parse_json("{nope", what="x")


@pytest.mark.parametrize("text", ["[" * 200_000, "- " * 200_000 + "x\n", DEEP_YAML_BLOCK])
def test_yaml_nested_past_the_limit_is_refused_before_composing(text: str) -> None:
    with pytest.raises(InputTooDeepError):
        parse_yaml(text, what="x")


@pytest.mark.parametrize("loader", ["CSafeLoader", "SafeLoader"])
def test_deep_yaml_is_refused_in_our_words_whatever_the_parser(loader: str) -> None:
    # libyaml refuses a line of deep flow brackets itself, before the first event; the
    # refusal is still ours, typed, with the limit.
    import yaml

    chosen = getattr(yaml, loader, yaml.SafeLoader)
    with pytest.raises(InputTooDeepError, match="nested too deeply") as caught:
        parse_yaml("[" * 200_000, what="x", loader=chosen)
    assert caught.value.limit == 100


def test_brackets_in_yaml_strings_and_comments_are_not_nesting() -> None:
    text = "a: '" + "[" * 500 + "'\n# " + "{" * 300 + "\nb: [1, [2]]\n"
    assert parse_yaml(text, what="x") == {"a": "[" * 500, "b": [1, [2]]}


def test_yaml_alias_bombs_are_refused_by_their_expanded_size() -> None:
    with pytest.raises(YAMLAliasError, match="aliases counted as what they repeat"):
        parse_yaml(BOMB, what="x")
    assert parse_yaml("a: &x [1, 2]\nb: *x\n", what="x") == {"a": [1, 2], "b": [1, 2]}


def test_yaml_aliases_can_be_refused_outright() -> None:
    with pytest.raises(YAMLAliasError, match="line 2"):
        parse_yaml("a: 1\nb: &x 2\n", what="x", allow_aliases=False)


def test_python_data_nested_past_the_limit_is_refused_without_recursion() -> None:
    with pytest.raises(InputTooDeepError):
        check_data_depth({"a": nested_list(50_000)}, what="x")
    check_data_depth({"a": nested_list(90)}, what="x")


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    with pytest.raises(OSError, match="not a regular file"):
        read_regular_file(fifo, what="program")
    with pytest.raises(OSError, match="not a regular file"):
        read_regular_file("/dev/zero", what="program")
    with pytest.raises(IsADirectoryError):
        read_regular_file(tmp_path, what="program")
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(InputTooLargeError):
        read_regular_file(big, what="program", max_bytes=100)


# -- every loader ------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _cause_chain(exc: BaseException) -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    current: BaseException | None = exc
    while current is not None:
        found.append(type(current))
        current = current.__cause__
    return found


LOADERS: dict[str, tuple[Callable[[Path], object], str, type[FlowkitError]]] = {
    "route table JSON": (
        lambda p: RouteTable.from_json(p.read_text()),
        ".json",
        FlowDefinitionError,
    ),
    "domain YAML": (load_domain, ".yaml", DomainError),
    "domain JSON": (load_domain, ".json", DomainError),
    "catalog": (load_catalog, ".json", CatalogError),
    "steps JSON": (load_steps, ".json", RobotProgramError),
    "cassette": (load_cassette, ".json", LLMConfigError),
    "replay spec": (lambda p: from_spec(f"replay:{p}"), ".json", LLMConfigError),
    "scripted spec": (lambda p: from_spec(f"scripted:{p}"), ".json", LLMConfigError),
    "teaching table": (TeachingTable.load, ".yaml", ParameterTableError),
}


@pytest.mark.parametrize("loader", sorted(LOADERS))
@pytest.mark.parametrize("content", ["flow", "block"])
def test_every_loader_refuses_deep_nesting_with_its_own_typed_error(
    loader: str, content: str, tmp_path: Path
) -> None:
    load, suffix, error = LOADERS[loader]
    text = DEEP_JSON if content == "flow" or suffix == ".json" else DEEP_YAML_BLOCK
    path = _write(tmp_path, f"deep{suffix}", text)
    with pytest.raises(error) as caught:
        load(path)
    assert "nested too deeply" in str(caught.value) or "deeper than" in str(caught.value)
    assert len(str(caught.value)) < 1000  # the input is never echoed back
    chain = _cause_chain(caught.value)
    assert RecursionError not in chain
    assert any(issubclass(kind, UntrustedInputError) for kind in chain)


def test_route_table_data_nested_too_deeply_is_refused() -> None:
    with pytest.raises(FlowDefinitionError, match="nested too deeply"):
        RouteTable.from_data({"name": "t", "rules": nested_list(50_000)})


def test_a_domain_given_as_deep_data_is_a_domain_error() -> None:
    with pytest.raises(DomainError, match="nested too deeply"):
        load_domain({"name": "d", "intents": nested_list(50_000)})


def test_a_yaml_alias_bomb_domain_is_a_domain_error(tmp_path: Path) -> None:
    with pytest.raises(DomainError, match="aliases counted"):
        load_domain(_write(tmp_path, "bomb.yaml", BOMB))


@pytest.mark.parametrize(
    "text",
    [
        "\n".join(" " * i + "- loop:" for i in range(3000)) + "\n" + " " * 3000 + "- set_motor on",
        "- wait_block until " + "(" * 3000 + "TRUE" + ")" * 3000,
        "- wait_block until " + "not " * 3000 + "TRUE",
        "- wait_block until " + "logic_block(" * 3000 + ")" * 3000,
    ],
    ids=["indentation", "brackets", "nots", "inline blocks"],
)
def test_the_robot_text_parser_refuses_deep_nesting_with_a_line(text: str, tmp_path: Path) -> None:
    with pytest.raises(StepTextError) as caught:
        parse(text)
    assert caught.value.line >= 1
    with pytest.raises(StepTextError):
        load_steps(_write(tmp_path, "deep.txt", text))


def test_deep_json_in_the_cli_inputs_and_sas_edits_is_a_plain_refusal() -> None:
    from flowkit.sas.steps_text import parse_module_steps
    from flowkit.sas.tasks import TaskList
    from flowkit.terminal.errors import CommandError
    from flowkit.terminal.inputs import read_json

    with pytest.raises(CommandError, match="nested too deeply"):
        read_json("[" * 600 + "]" * 600, "--input")
    with pytest.raises(ValueError, match="not valid JSON steps") as caught:
        plan = TaskList.model_validate({"tasks": [{"name": "Main_Task", "type": "MainTask"}]})
        parse_module_steps("{" + '"a":{' * 600 + "}" * 601, plan)
    assert isinstance(caught.value.__cause__, InputTooDeepError)
