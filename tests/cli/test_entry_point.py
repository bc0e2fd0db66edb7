"""Smoke tests through the installed `flowkit` script, as a user's shell runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import flowkit
from flowkit.errors import FlowDefinitionError
from flowkit.workflows import load_flow

SCRIPT = Path(sys.executable).with_name("flowkit")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if not SCRIPT.exists():
        pytest.fail(f"{SCRIPT} is missing; install the package: pip install -e '.[dev]'")
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd, timeout=60, check=False
    )


def test_version_prints_the_package_version(tmp_path: Path) -> None:
    done = run("--version", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.strip() == f"flowkit {flowkit.__version__}"


def test_check_exits_1_and_lists_every_problem_of_a_broken_flow(
    broken: str, tmp_path: Path
) -> None:
    with pytest.raises(FlowDefinitionError) as raised:
        load_flow(broken)
    done = run("check", broken, cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == f"FAIL broken: {len(raised.value.problems)} problems"
    assert lines[1:] == [f"- {p}" for p in raised.value.problems]
    assert "Traceback" not in done.stderr


def test_check_exits_0_on_a_good_flow(good: str, tmp_path: Path) -> None:
    done = run("check", good, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OK ticket: 2 nodes, 1 gate")


def test_unloadable_target_exits_2_without_traceback(tmp_path: Path) -> None:
    done = run("graph", "no_such_module_xyz:flow", cwd=tmp_path)
    assert done.returncode == 2
    assert "Module `no_such_module_xyz` cannot be found" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_demo_runs_end_to_end_and_logs_nothing_by_default(tmp_path: Path) -> None:
    done = run("demo", "--store", str(tmp_path / "store"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Robot program:" in done.stdout and "0 errors" in done.stdout
    assert done.stderr == ""


def test_no_help_text_speaks_in_internal_seed_numbers() -> None:
    import argparse

    from flowkit.cli import build_parser

    def every_parser(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
        found = [parser]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    found += every_parser(child)
        return found

    for parser in every_parser(build_parser()):
        assert "seed 0" not in parser.format_help(), parser.prog
