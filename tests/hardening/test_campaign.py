"""Every hardening case as one test: none may be silently wrong, a raw exception or a hang.

The campaign's cases live in the modules named by ``registry.MODULES``; ``python -m
tests.hardening`` runs the same cases and prints the counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _pg import require_postgres

from .registry import BAD, Case, all_cases, classify

CASES = all_cases()


def _param(case: Case) -> object:
    return pytest.param(case, id=case.id, marks=[pytest.mark.slow] if case.slow else [])


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_no_case_is_silently_wrong_a_raw_exception_or_a_hang(case: Case, tmp_path: Path) -> None:
    if case.needs == "postgres":
        require_postgres()
    result = classify(case, tmp_path)
    known = f" (a known defect: {case.known})" if case.known else ""
    assert result.outcome not in BAD, f"{result.outcome}{known}: {result.detail}"


def test_the_campaign_covers_both_stores_the_server_and_both_llm_clients() -> None:
    prefixes = {"/".join(case.id.split("/")[:2]) for case in CASES}
    assert {
        "hostile/jsonfile", "hostile/postgres", "corruption/jsonfile", "corruption/postgres",
        "crash/jsonfile", "crash/postgres", "server/app", "server/flowkit serve", "llm/openai",
        "llm/ollama",
    } <= prefixes  # fmt: skip
