"""The run's output directory follows seed 000 §1.2.A and never lands in the package."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

import flowkit
from flowkit.nodes.sas.output_dir import choose_output_directory

NOW = datetime(2026, 1, 2, 3, 4, 5, 678901)


def test_an_existing_directory_is_used(tmp_path: Path) -> None:
    choice = choose_output_directory(str(tmp_path), None, NOW)
    assert choice.path == tmp_path.resolve() and choice.warnings == []


def test_a_missing_directory_is_created(tmp_path: Path) -> None:
    wanted = tmp_path / "a" / "b"
    choice = choose_output_directory(str(wanted), None, NOW)
    assert choice.path == wanted.resolve() and wanted.is_dir()


def test_a_file_in_the_way_warns_and_falls_back(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    choice = choose_output_directory(str(blocker), str(tmp_path / "base"), NOW)
    assert choice.path == (tmp_path / "base" / "run_20260102_030405_678901").resolve()
    assert "is not a directory" in choice.warnings[0]


def test_fallback_directories_never_collide(tmp_path: Path) -> None:
    first = choose_output_directory(None, str(tmp_path), NOW).path
    second = choose_output_directory(None, str(tmp_path), NOW).path
    assert first != second and first is not None and second is not None


def test_the_default_base_honours_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWKIT_OUTPUT_DIR", str(tmp_path / "runs"))
    choice = choose_output_directory(None, None, NOW)
    assert choice.path is not None and choice.path.parent == (tmp_path / "runs").resolve()


def test_the_package_folder_is_refused(tmp_path: Path) -> None:
    package = Path(flowkit.__file__).parent
    choice = choose_output_directory(str(package / "out"), str(tmp_path), NOW)
    assert choice.path is not None and package not in choice.path.parents
    assert "inside the flowkit package" in choice.warnings[0]
    assert not (package / "out").exists()


def test_an_uncreatable_path_falls_back_then_reports(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    choice = choose_output_directory(str(blocker / "sub"), str(blocker / "base"), NOW)
    assert choice.path is None and len(choice.warnings) == 2
