"""flowkit is published as `flowkit-workflows` (`flowkit` on the package index is an unrelated
flow-cytometry package): every install hint flowkit prints, and every page, names the published
distribution; the import package and the command stay `flowkit`."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from flowkit.errors import RunError
from flowkit.foundation._distribution import DISTRIBUTION, install_hint
from flowkit.quality.embed import SentenceTransformerEmbedder
from flowkit.quality.errors import QualityInputError, StatePersistenceError

ROOT = Path(__file__).resolve().parents[1]
#: `flowkit[extra]` or `pip install flowkit` naming the index's unrelated `flowkit`.
_UNRELATED = re.compile(r"(?<![\w./-])flowkit\[|pip install\s+['\"]?flowkit(?![\w-])")


def test_the_distribution_has_its_own_name_and_the_command_keeps_flowkit() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION == "flowkit-workflows"
    assert project["scripts"] == {"flowkit": "flowkit.cli:main"}


def test_an_install_hint_names_the_published_distribution_and_its_extra() -> None:
    assert install_hint("server") == "pip install 'flowkit-workflows[server]'"
    assert install_hint() == "pip install 'flowkit-workflows'"


def test_the_hints_flowkit_prints_name_the_published_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flowkit.quality.stores import postgres as quality_postgres
    from flowkit.stores.postgres import INSTALL
    from flowkit.workers import work_queue

    assert install_hint("postgres") == INSTALL
    with pytest.raises(RunError) as queue:
        work_queue(object())
    assert install_hint("postgres") in str(queue.value)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(QualityInputError) as embedder:
        SentenceTransformerEmbedder().embed(["x"])
    assert install_hint("quality-embeddings") in str(embedder.value)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StatePersistenceError) as store:
        quality_postgres._psycopg()
    assert install_hint("postgres") in str(store.value)


def test_no_page_or_message_tells_users_to_install_the_unrelated_flowkit() -> None:
    files = [
        *sorted((ROOT / "src" / "flowkit").rglob("*.py")),
        *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "README.md",
    ]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _UNRELATED.search(line)
    ]
    assert found == []


def test_the_readme_warns_of_the_import_name_clash() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"pip install {DISTRIBUTION}" in readme or f"`{DISTRIBUTION}`" in readme
    assert "flow-cytometry" in readme
