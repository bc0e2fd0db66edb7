"""How TARGETs are found: registered names, entry points, modules, files and factories."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from flowkit import Flow
from flowkit.cli import main
from flowkit.examples.review import flow as review_flow
from flowkit.workflows import BUILTIN, WorkflowLoadError, load_flow, registered


def test_every_builtin_workflow_loads_and_is_valid() -> None:
    for name in BUILTIN:
        assert isinstance(load_flow(name), Flow)
    assert load_flow("review") is review_flow


@pytest.mark.parametrize("name", BUILTIN)
def test_no_registered_workflow_describes_itself_with_internal_seed_numbers(name: str) -> None:
    # Descriptions show in `flowkit workflows`, `flowkit graph -f json` and the server's pages.
    assert "seed" not in load_flow(name).description.lower()


def test_module_attribute_and_file_targets_load_the_same_objects(flows_dir: Path) -> None:
    assert load_flow("flowkit.examples.review:flow") is review_flow
    first = load_flow(f"{flows_dir}/good.py:flow")
    assert load_flow(f"{flows_dir}/good.py:make_flow") is first


def test_a_module_in_the_current_directory_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cwd_flows_for_cli_test.py").write_text(
        "from flowkit.examples.review import flow as review\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(__import__("sys").modules, "cwd_flows_for_cli_test", raising=False)
    assert main(["check", "cwd_flows_for_cli_test:review"]) == 0
    assert capsys.readouterr().out.startswith("OK review")


def test_third_party_workflows_come_from_entry_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dist = tmp_path / "acme_flows-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-flows\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[flowkit.workflows]\nacme_review = acme_flows_for_cli_test:build\n"
    )
    (tmp_path / "acme_flows_for_cli_test.py").write_text(
        textwrap.dedent(
            """
            def build():
                from flowkit.examples.review import flow
                return flow
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert registered()["acme_review"] == "acme_flows_for_cli_test:build"
    assert load_flow("acme_review") is review_flow
    assert main(["check", "acme_review"]) == 0
    assert capsys.readouterr().out.startswith("OK review")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no-such-workflow", "`no-such-workflow` is not a registered workflow (known: "),
        ("no_such_pkg_xyz.flows:flow", "Module `no_such_pkg_xyz.flows` cannot be found"),
        ("flowkit.examples.review:nope", "`flowkit.examples.review` has no attribute `nope`"),
        ("flowkit.examples.review", "`flowkit.examples.review` is not a registered workflow"),
        ("{flows}/good.py:not_a_flow", "is not a flowkit Flow (it is of type int)"),
        ("{flows}/good.py:needs_arguments", "is a function that needs arguments"),
        ("{flows}/good.py:make_crash", "failed: RuntimeError: database is down"),
        ("{flows}/crashes_on_import.py:flow", "failed: RuntimeError: this module is broken"),
        ("{flows}/missing.py:flow", "missing.py` does not exist"),
        (":flow", "`:flow` is not `module:attribute`"),
    ],
)
def test_a_target_that_cannot_be_loaded_exits_2_with_a_clear_message(
    target: str, message: str, flows_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = target.format(flows=flows_dir)
    with pytest.raises(WorkflowLoadError):
        load_flow(target)
    assert main(["graph", target]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert captured.err.startswith("flowkit: error: ")
    assert "Traceback" not in captured.err
    assert captured.out == ""


def _flow_beside_a_helper(folder: Path, helper: str) -> Path:
    """`folder/myflow.py` importing `helper` from the same folder, like a small project."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{helper}.py").write_text("from flowkit.examples.review import flow\n")
    flow_file = folder / "myflow.py"
    flow_file.write_text(
        textwrap.dedent(
            f"""
            from {helper} import flow

            def lazy():
                import {helper}
                return {helper}.flow
            """
        )
    )
    return flow_file


def test_a_file_target_imports_the_modules_beside_it_like_python_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    helper = "helpers_beside_a_file_target"
    _flow_beside_a_helper(tmp_path / "pkg", helper)
    monkeypatch.delitem(__import__("sys").modules, helper, raising=False)
    monkeypatch.chdir(tmp_path / "pkg")
    assert main(["check", "myflow.py:flow"]) == 0
    assert capsys.readouterr().out.startswith("OK review")
    # The folder stays importable, so imports inside node functions work at run time too.
    assert load_flow("myflow.py:lazy") is review_flow


def test_a_file_targets_folder_goes_first_on_sys_path_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    first = _flow_beside_a_helper(tmp_path / "a", "helpers_in_folder_a")
    second = _flow_beside_a_helper(tmp_path / "b", "helpers_in_folder_b")
    for helper in ("helpers_in_folder_a", "helpers_in_folder_b"):
        monkeypatch.delitem(sys.modules, helper, raising=False)
    load_flow(f"{first}:flow")
    load_flow(f"{second}:flow")
    load_flow(f"{first}:lazy")
    assert sys.path[:2] == [str(tmp_path / "b"), str(tmp_path / "a")]
    assert sys.path.count(str(tmp_path / "a")) == 1


def test_a_path_that_is_not_a_python_file_is_named_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "flow.pyx").write_text("flow = 1\n")
    (tmp_path / "dir.py").mkdir()
    monkeypatch.chdir(tmp_path)
    cases = {
        "x/flow.pyx:flow": "`x/flow.pyx` is neither a `.py` file nor a module name",
        "./x/flow.pyx:flow": "`./x/flow.pyx` is neither a `.py` file nor a module name",
        "dir.py:flow": "is a directory, not a `.py` file",
        "my-flows:flow": "`my-flows` is neither a `.py` file nor a module name",
    }
    for target, message in cases.items():
        assert main(["check", target]) == 2, target
        err = capsys.readouterr().err
        assert message in err, (target, err)
        assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("target", ["x" * 5_000_000, "m:" + "a" * 5_000_000, "é" * 10_000])
def test_a_huge_target_is_refused_without_echoing_it_whole(target: str) -> None:
    with pytest.raises(WorkflowLoadError) as caught:
        load_flow(target)
    assert len(str(caught.value)) < 1_000
    assert len(caught.value.target) < 1_000
    assert "at most" in str(caught.value)
