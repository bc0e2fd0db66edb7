"""The architecture is executable: no import cycle anywhere in ``src/``, and the import-linter
contracts in ``pyproject.toml`` (layers, independent workflows) hold and do bite."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from _imports import cycles, imports

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_no_module_in_src_imports_itself_back_through_others() -> None:
    found = cycles(imports(SRC))
    assert found == [], "import cycles (each a set of modules importing one another):\n" + (
        "\n".join(" <-> ".join(cycle) for cycle in found)
    )


def _write_package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.mark.parametrize(
    "where",
    [
        "import pkg.b\n",
        "def f():\n    import pkg.b\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\n",
    ],
    ids=["module-level", "function-level", "type-checking"],
)
def test_the_cycle_check_sees_every_kind_of_import(tmp_path: Path, where: str) -> None:
    _write_package(
        tmp_path, {"pkg/__init__.py": "", "pkg/a.py": where, "pkg/b.py": "from .a import *\n"}
    )
    assert cycles(imports(tmp_path)) == [["pkg.a", "pkg.b"]]


def _lint_imports(root: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    """Run import-linter on the tree at ``root`` (``src/flowkit`` + ``pyproject.toml``)."""
    selected = [arg for contract in contracts for arg in ("--contract", contract)]
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", *selected],
        cwd=root,
        env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_the_contracts_hold_for_the_tree_as_it_is() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    ids = {c["id"] for c in contracts["contracts"]}
    assert {"layers", "robot-library", "sas-alone", "dialogue-alone"} <= ids
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def copy_of_the_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(SRC / "flowkit", root / "src" / "flowkit")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "line", "contract", "broken"),
    [
        # the execution core calling up into the Runner
        (
            "execution/_core.py",
            "from ..runner._runner import Runner\n",
            "layers",
            "flowkit.execution is not allowed to import flowkit.runner",
        ),
        # the same, hidden in a function: it still counts
        (
            "execution/_steps.py",
            "def _up():\n    from flowkit.runner import _runner\n",
            "layers",
            "flowkit.execution is not allowed to import flowkit.runner",
        ),
        # a store reaching into the execution core
        (
            "stores/memory.py",
            "from flowkit.execution._core import run_steps\n",
            "layers",
            "flowkit.stores is not allowed to import flowkit.execution",
        ),
        # the engine knowing a workflow
        (
            "definition/_flow.py",
            "from flowkit.sas import state\n",
            "layers",
            "flowkit.definition is not allowed to import flowkit.sas",
        ),
        # one workflow importing another
        (
            "dialogue/state.py",
            "import flowkit.quality.state\n",
            "dialogue-alone",
            "flowkit.dialogue is not allowed to import flowkit.quality",
        ),
    ],
    ids=[
        "core-imports-runner",
        "in-a-function",
        "store-imports-core",
        "engine-imports-sas",
        "workflow-imports-workflow",
    ],
)
def test_a_forbidden_import_breaks_the_contracts(
    copy_of_the_tree: Path, module: str, line: str, contract: str, broken: str
) -> None:
    path = copy_of_the_tree / "src" / "flowkit" / module
    original = path.read_text()
    path.write_text(original + "\n" + line)
    try:
        done = _lint_imports(copy_of_the_tree, contract)
    finally:
        path.write_text(original)
    assert done.returncode != 0
    assert broken in " ".join(done.stdout.split())
