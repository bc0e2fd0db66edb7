"""`flowkit prune` over a store of 10,000 threads finishes, deletes exactly the matching ones
and leaves every kept thread readable and resumable."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from flowkit import Runner
from flowkit.cli import main
from flowkit.examples.review import flow as review_flow
from flowkit.stores import JsonFileStore

pytestmark = pytest.mark.slow

THREADS = 10_000
DAY = 86_400.0


def build(root: Path) -> dict[str, set[str]]:
    """10,000 threads written straight through the store API (no flow runs): copies of a
    finished and a waiting review thread, half of them 40 days old."""
    with JsonFileStore(root, fsync=False) as store:
        runner = Runner(review_flow, store=store)
        runner.start("model-done")
        runner.resume("model-done", {"approved": True})
        runner.start("model-waiting")
        models = {"done": store.records("model-done"), "waiting": store.records("model-waiting")}
        store.delete("model-done")
        store.delete("model-waiting")
        now = time.time()
        groups: dict[str, set[str]] = {}
        for n in range(THREADS):
            status = "done" if n % 2 else "waiting"
            age = 40 * DAY if n % 4 < 2 else 0.0
            thread = f"t-{n:05d}"
            groups.setdefault(f"{status}-{'old' if age else 'new'}", set()).add(thread)
            first, *rest = [r.model_copy(update={"ts": now - age}) for r in models[status]]
            store.create(thread, first)  # type: ignore[arg-type]
            store.append(thread, rest, expected_version=0)
    return groups


def test_prune_of_ten_thousand_threads_keeps_the_rest_readable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "store"
    groups = build(root)
    assert sum(map(len, groups.values())) == THREADS
    store = str(root)
    assert main(["prune", "--older-than", "30d", "--dry-run", "--json", "--store", store]) == 0
    assert set(json.loads(capsys.readouterr().out)["deleted"]) == groups["done-old"]
    assert main(["prune", "--older-than", "30d", "--json", "--store", store]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["deleted"]) == groups["done-old"]
    assert report["busy"] == [] and report["unreadable"] == {}
    kept = groups["done-new"] | groups["waiting-old"] | groups["waiting-new"]
    with JsonFileStore(root) as reopened:
        assert set(reopened.threads()) == kept
        runner = Runner(review_flow, store=reopened)
        for thread in sorted(kept):
            state = runner.get_state(thread)
            assert state.status == ("done" if thread in groups["done-new"] else "waiting")
        assert runner.resume(sorted(groups["waiting-old"])[0], {"approved": True}).done
    assert not list((root / "threads").glob(".deleted-*"))
