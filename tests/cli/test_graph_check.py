"""`flowkit graph`, `flowkit check` and `flowkit workflows`, called in-process."""

from __future__ import annotations

import json

import pytest

from flowkit.cli import main
from flowkit.diagram import to_dot, to_mermaid
from flowkit.errors import FlowDefinitionError
from flowkit.examples.review import flow as review_flow
from flowkit.workflows import load_flow


@pytest.mark.parametrize(
    ("fmt", "render"),
    [("mermaid", to_mermaid), ("dot", to_dot), (None, to_mermaid)],
)
def test_graph_prints_the_diagram_of_a_registered_workflow(
    fmt: str | None, render: object, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["graph", "review"] + (["--format", fmt] if fmt else [])
    assert main(args) == 0
    assert capsys.readouterr().out == render(review_flow)  # type: ignore[operator]


def test_graph_json_is_the_flows_data(good: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", good, "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == load_flow(good).to_data()


def test_graph_of_a_broken_flow_exits_1_with_its_problems(
    broken: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", broken]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "FAIL broken: 8 problems" in captured.err


def test_check_reports_each_kind_of_problem_of_the_broken_sample(
    broken: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", broken]) == 1
    out = capsys.readouterr().out
    for expected in [
        "Route `intake -> publsh`: `publsh` is not in this flow",  # unknown target
        "`orphan` is unreachable from start `intake`",
        "`spin` is a dead end",  # a loop with no exit
        "`spin2` is a dead end",
        "rule 1 (`ok -> publsh`) can never match because rule 0 is unconditional",
        "Node `stuck` has no route",
        "Gate `approve` has no route, so it can never be resumed",
    ]:
        assert expected in out


def test_check_output_has_one_line_per_problem(
    broken: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(FlowDefinitionError) as raised:
        load_flow(broken)
    main(["check", broken])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + len(raised.value.problems) == 9


def test_check_many_targets_reports_all_and_exits_with_the_worst_code(
    good: str, broken: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", good, broken, "review"]) == 1
    out = capsys.readouterr().out
    assert "OK ticket" in out and "FAIL broken" in out and "OK review" in out
    assert main(["check", "review", "no-such-workflow", good]) == 2
    captured = capsys.readouterr()
    assert captured.out.count("OK ") == 2
    assert "`no-such-workflow` is not a registered workflow" in captured.err


def test_check_counts_what_the_flow_has(good: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", good]) == 0
    assert capsys.readouterr().out == (
        "OK ticket: 2 nodes, 1 gate, 1 final state, 2 route tables (3 rules)\n"
    )


def test_a_factory_whose_flow_is_broken_is_a_check_failure(
    flows_dir: object, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", f"{flows_dir}/good.py:make_broken"]) == 1
    assert "Start `nowhere` is not a node or gate" in capsys.readouterr().out


def test_workflows_lists_the_builtin_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workflows"]) == 0
    listed = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()}
    assert listed["review"] == "flowkit.examples.review:flow"
    assert listed["sas"] == "flowkit.sas.workflow:flow"


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("flowkit ")


def test_missing_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 2
    assert "required" in capsys.readouterr().err
