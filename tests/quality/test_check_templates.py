"""Check templates (UC-120-001: ``templates/quality/checks``): shipped as files in the package,
overridable by a folder, and QC-006 for a template that is not what the check expects."""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from flowkit.cli import main
from flowkit.quality.app import QualityChecker
from flowkit.quality.check_templates import (
    CheckTemplate,
    load_check_templates,
    shipped_templates_folder,
)
from flowkit.quality.demo import demo_file
from flowkit.quality.errors import QualityInputError, TemplateMismatchError, error_envelope
from flowkit.quality.models import IterationPolicy
from flowkit.quality.prompts import check_prompt
from flowkit.quality.services import Workspace
from flowkit.testing import ScriptedLLM

from .conftest import AKI

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "flowkit"

TYPO = """\
step_id: 1
category: typo
name: 誤字脱字 / typos
instruction: misspelled words
"""


def test_the_shipped_templates_are_files_in_the_package() -> None:
    folder = shipped_templates_folder()
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".yaml") == [
        "check_step01_typo.yaml", "check_step02_notation.yaml", "check_step03_style.yaml",
        "check_step04_structure.yaml"]  # fmt: skip
    templates = load_check_templates()
    assert [(t.step_id, t.category) for t in templates] == [
        (1, "typo"), (2, "notation"), (3, "style"), (4, "structure")]  # fmt: skip
    assert all(isinstance(t, CheckTemplate) and t.name and t.instruction for t in templates)
    prompt = check_prompt("本文。", "0" * 64)[0]["content"]
    assert "- typo (誤字脱字 / typos): misspelled or wrongly converted words" in prompt


def test_the_package_data_of_pyproject_ships_every_template() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["flowkit"]
    for path in shipped_templates_folder().iterdir():
        relative = Path(path).resolve().relative_to(PACKAGE.resolve()).as_posix()
        if path.name.startswith("check_step"):
            assert any(fnmatch.fnmatch(relative, g) for g in globs), relative


@pytest.mark.slow
def test_the_templates_load_from_a_package_laid_out_as_a_wheel_installs_it(
    tmp_path: Path,
) -> None:
    # What a wheel holds: the modules and the files package-data names, nothing else.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["flowkit"]
    site = tmp_path / "site-packages"
    for path in PACKAGE.rglob("*"):
        relative = path.relative_to(PACKAGE).as_posix()
        if (
            path.is_file()
            and "__pycache__" not in relative
            and (path.suffix == ".py" or any(fnmatch.fnmatch(relative, g) for g in globs))
        ):
            (site / "flowkit" / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, site / "flowkit" / relative)
    code = (
        "import flowkit.quality.check_templates as m\n"
        f"assert m.__file__.startswith({str(site)!r}), m.__file__\n"
        "print(','.join(t.category for t in m.load_check_templates()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": str(site)}, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "typo,notation,style,structure\n"


def _folder(tmp_path: Path, **files: str) -> Path:
    folder = tmp_path / "checks"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    return folder


def test_an_override_folder_wins(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path,
        check_step01_typo=TYPO,
        check_step05_dialogue="step_id: 5\ncategory: dialogue\nname: 会話\ninstruction: x\n",
    )
    (folder / "README.md").write_text("not a template")  # other files are left alone
    templates = load_check_templates(folder)
    assert [(t.step_id, t.category, t.instruction) for t in templates] == [
        (1, "typo", "misspelled words"), (5, "dialogue", "x")]  # fmt: skip


def test_the_workspace_and_the_checker_use_the_override_folder(
    tmp_path: Path, two_issues: Path
) -> None:
    folder = _folder(tmp_path, check_step01_typo=TYPO)
    workspace = Workspace(tmp_path / "ws", fsync=False, templates=folder)
    llm = ScriptedLLM([("", '{"issues": [], "metrics": {"typo": 1.0}}')])
    with QualityChecker(workspace, principal=AKI, llm=llm) as checker:
        assert [t.category for t in checker.services.templates] == ["typo"]
        sid = checker.check(two_issues, episode=1, policy=IterationPolicy(count=1)).session_id
    sent = json.loads((workspace.root / "checks" / sid / "001_check_input.json").read_text())
    system = sent["messages"][0]["content"]
    assert "- typo (誤字脱字 / typos): misspelled words" in system and "notation" not in system


@pytest.mark.parametrize(
    ("text", "field", "name"),
    [
        ("category: typo\nname: n\ninstruction: i\n", "step_id", "check_step01_typo.yaml"),
        (TYPO.replace("step_id: 1", "step_id: one"), "step_id", "check_step01_typo.yaml"),
        (TYPO.replace("step_id: 1", "step_id: 2"), "step_id", "check_step01_typo.yaml"),
        (TYPO.replace("category: typo", "category: [typo]"), "category", "check_step01_typo.yaml"),
        (
            TYPO.replace("category: typo", "category: Typo Check"),
            "category",
            "check_step01_typo.yaml",
        ),
        (
            TYPO.replace("instruction: misspelled words", "instruction: ''"),
            "instruction",
            "check_step01_typo.yaml",
        ),
        (TYPO + "prompt: extra\n", "prompt", "check_step01_typo.yaml"),
        ("- step_id: 1\n", None, "check_step01_typo.yaml"),
        ("step_id: [1\n", None, "check_step01_typo.yaml"),
    ],
)
def test_a_template_that_does_not_fit_the_check_is_qc_006(
    tmp_path: Path, text: str, field: str | None, name: str
) -> None:
    folder = _folder(tmp_path, check_step01_typo=text)
    with pytest.raises(TemplateMismatchError) as caught:
        load_check_templates(folder)
    error = caught.value
    assert error.qc_code == "QC-006" and error_envelope(error)["code"] == "validation_error"
    assert error.template == folder / name and name in str(error)
    assert error.field == field
    if field is not None:
        assert f"`{field}`" in str(error)


def test_two_templates_of_one_step_or_category_are_qc_006(tmp_path: Path) -> None:
    other = TYPO.replace("step_id: 1", "step_id: 2")
    folder = _folder(tmp_path, check_step01_typo=TYPO, check_step02_typo=other)
    with pytest.raises(TemplateMismatchError) as caught:
        load_check_templates(folder)
    assert caught.value.field == "category" and "check_step02_typo.yaml" in str(caught.value)
    assert caught.value.template == folder / "check_step02_typo.yaml"
    (folder / "check_step02_typo.yaml").unlink()
    (folder / "check_step1_again.yaml").write_text(TYPO.replace("typo", "again"))
    with pytest.raises(TemplateMismatchError) as caught:
        load_check_templates(folder)
    assert caught.value.field == "step_id"


def test_a_folder_without_templates_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(QualityInputError, match="no check templates"):
        load_check_templates(_folder(tmp_path))
    with pytest.raises(QualityInputError, match="not a folder"):
        load_check_templates(tmp_path / "missing")


def test_the_cli_takes_a_templates_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWKIT_USER", "aki")
    folder = _folder(tmp_path, check_step01_typo=TYPO.replace("category: typo", "category: 1"))
    code = main(["quality", "check", str(demo_file("episode_en.txt")), "--episode", "2",
                 "--llm", "replay:demo", "--store", str(tmp_path / "st"),
                 "--templates", str(folder)])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("flowkit: error: QC-006: ") and "check_step01_typo.yaml" in err
    assert "`category`" in err and "Traceback" not in err
