"""How many issues one check records is a setting (``max_issues``, default 200): a check
whose answer lists more findings records the most severe ones and says how many it left out,
instead of failing; a larger setting records them all; a bad value is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowkit.cli import main
from flowkit.errors import LLMUnavailableError
from flowkit.quality._limits import MAX_ISSUES
from flowkit.quality.app import QualityChecker
from flowkit.quality.errors import QualityInputError
from flowkit.quality.models import IterationPolicy
from flowkit.quality.services import Workspace
from flowkit.testing import ScriptedLLM

from .conftest import AKI

FOUND = 250


def _manuscript(tmp_path: Path) -> Path:
    path = tmp_path / "long.txt"
    path.write_text(
        "".join(f"Line {n:04d}: the fox jumpd over marker {n:04d}.\n" for n in range(FOUND)),
        encoding="utf-8",
    )
    return path


def _severity(n: int) -> str:
    return "high" if n % 5 == 0 else "low"  # 50 high, 200 low


def _report() -> dict[str, object]:
    return {
        "issues": [
            {"category": "typo", "severity": _severity(n), "quote": f"jumpd over marker {n:04d}"}
            for n in range(FOUND)
        ]
    }


def _llm() -> ScriptedLLM:
    """The check lists FOUND typos; planning finds the LLM away, so the run stops there."""
    return ScriptedLLM(
        [("Manuscript:\n", json.dumps(_report())), ("Excerpt:\n", LLMUnavailableError("away"))]
    )


def _check(workspace: Workspace, manuscript: Path) -> tuple[list[str], list[str]]:
    with QualityChecker(workspace, principal=AKI, llm=_llm()) as checker:
        outcome = checker.check(manuscript, episode=1, policy=IterationPolicy(count=1))
        issues = checker.store.issues(outcome.session_id, principal=AKI)
    return [i.severity for i in issues], list(outcome.result.state.messages)


def test_a_check_records_at_most_max_issues_the_most_severe_first(tmp_path: Path) -> None:
    severities, messages = _check(Workspace(tmp_path / "ws", fsync=False), _manuscript(tmp_path))
    assert len(severities) == MAX_ISSUES == 200
    assert severities.count("high") == 50  # every high one, then the first low ones
    assert any(f"{FOUND - 200} more findings than the 200 issues" in m for m in messages)


def test_a_larger_setting_records_them_all(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws", fsync=False, max_issues=FOUND)
    severities, messages = _check(workspace, _manuscript(tmp_path))
    assert len(severities) == FOUND
    assert not any("more findings than" in m for m in messages)


@pytest.mark.parametrize("bad", [0, -1, True, "5", 2.5])
def test_a_bad_setting_is_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(QualityInputError, match="max_issues"):
        Workspace(tmp_path / "ws", max_issues=bad)  # type: ignore[arg-type]


def test_the_cli_takes_max_issues_and_refuses_a_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWKIT_USER", "aki")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [
        {"match": "Manuscript:\n", "response": _report()},
        {"match": "Excerpt:\n", "error": "LLMUnavailableError", "message": "away"},
    ]}))  # fmt: skip
    check = ["quality", "check", str(_manuscript(tmp_path)), "--episode", "1",
             "--llm", f"scripted:{rules}", "--store", str(tmp_path / "store")]  # fmt: skip
    assert main([*check, "--max-issues", "0"]) == 2
    assert "--max-issues 0" in capsys.readouterr().err
    main([*check, "--max-issues", str(FOUND)])  # stops where the LLM is away
    capsys.readouterr()
    status = ["quality", "status", "--episode", "1", "--json", "--store", str(tmp_path / "store")]
    assert main(status) == 0
    assert len(json.loads(capsys.readouterr().out)["issues"]) == FOUND


def test_a_finding_reported_again_is_one_issue_with_its_worst_severity(tmp_path: Path) -> None:
    # The same quote, said once in the manuscript, reported four times at rising severity:
    # one issue, critical; never "quotes text not in the manuscript" (it is there).
    manuscript = tmp_path / "short.txt"
    manuscript.write_text("The fox jumpd over the dog.\n", encoding="utf-8")
    report = {
        "issues": [
            {"category": "typo", "severity": severity, "quote": "jumpd"}
            for severity in ("low", "medium", "critical", "high")
        ]
    }
    llm = ScriptedLLM(
        [("Manuscript:\n", json.dumps(report)), ("Excerpt:\n", LLMUnavailableError("away"))]
    )
    with QualityChecker(Workspace(tmp_path / "ws", fsync=False), principal=AKI, llm=llm) as checker:
        outcome = checker.check(manuscript, episode=1, policy=IterationPolicy(count=1))
        issues = checker.store.issues(outcome.session_id, principal=AKI)
    assert [i.severity for i in issues] == ["critical"]
    assert not any("not in the manuscript" in m for m in outcome.result.state.messages)
