"""Fixtures of the quality tests: a workspace in tmp_path, a clock tests move, the scripted
editor of the demo, and checkers over them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flowkit.quality.app import QualityChecker
from flowkit.quality.demo import demo_file, editor_llm
from flowkit.quality.fetch import ManualClock
from flowkit.quality.models import Principal
from flowkit.quality.services import Workspace

from ._embedders import embedder  # noqa: F401 - the re-mapping tests' embedders

AKI = Principal(user_id="aki")

#: A short episode with two problems the scripted editor knows (§5.2's "two issues").
TWO_ISSUES = (
    "吾輩は猫である。名前はまだ無い。\n"
    "どこで生れたかとんと検討がつかぬ。何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは"
    "記憶している。\n"
)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws", fsync=False)


@pytest.fixture
def episode_ja() -> Path:
    return demo_file("episode_ja.txt")


@pytest.fixture
def two_issues(tmp_path: Path) -> Path:
    path = tmp_path / "ep1.txt"
    path.write_text(TWO_ISSUES, encoding="utf-8")
    return path


@pytest.fixture
def make_checker(
    workspace: Workspace, clock: ManualClock
) -> Iterator[Callable[..., QualityChecker]]:
    made: list[QualityChecker] = []

    def make(llm: Any = None, principal: Principal = AKI, **options: Any) -> QualityChecker:
        checker = QualityChecker(
            workspace, principal=principal, llm=llm or editor_llm(), clock=clock, **options
        )
        made.append(checker)
        return checker

    yield make
    for checker in made:
        checker.close()
