"""``_external.require``: a missing requirement skips with its reason, or fails when
``FLOWKIT_REQUIRE_EXTERNAL`` is set (as ``.ci/run`` does), in a real pytest run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _external import ENV_VAR

pytestmark = pytest.mark.slow  # each test runs pytest in a subprocess

TESTS = Path(__file__).resolve().parent

TINY = """
import pytest
from _external import require, require_path

def test_present(tmp_path):
    require(True, "nothing at all")
    assert require_path(tmp_path, "a folder") == tmp_path

def test_missing():
    require(False, "the moon at /nowhere/moon")
    raise AssertionError("require(False, ...) must not return")

@pytest.mark.parametrize("item", ["(corpus missing)"])
def test_placeholder(item):
    require_path(__import__("pathlib").Path("/nowhere/corpus"), "the corpus")
"""


def _run(tmp_path: Path, env_value: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not the project's configuration
    (tmp_path / "test_tiny.py").write_text(TINY)
    env = {k: v for k, v in os.environ.items() if k not in (ENV_VAR, "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")]))
    if env_value is not None:
        env[ENV_VAR] = env_value
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:randomly", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("env_value", [None, "0", ""])
def test_a_missing_requirement_is_skipped_with_its_reason(
    tmp_path: Path, env_value: str | None
) -> None:
    result = _run(tmp_path, env_value)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 2 skipped" in result.stdout
    assert "SKIPPED [1] test_tiny.py:10: needs the moon at /nowhere/moon" in result.stdout
    assert "needs the corpus at /nowhere/corpus" in result.stdout


def test_with_the_variable_set_a_missing_requirement_fails_with_the_same_reason(
    tmp_path: Path,
) -> None:
    result = _run(tmp_path, "1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 passed" in result.stdout and "2 failed" in result.stdout
    assert "skipped" not in result.stdout
    assert f"needs the moon at /nowhere/moon ({ENV_VAR} is set" in result.stdout
    assert "FAILED test_tiny.py::test_placeholder[(corpus missing)]" in result.stdout
    assert "needs the corpus at /nowhere/corpus" in result.stdout
    assert "must not return" not in result.stdout
