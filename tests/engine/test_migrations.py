"""A changed flow deployed over a store of in-flight threads: without migrations every load is
an IncompatibleThreadError naming the thread and the record; with them every thread resumes
and finishes, the upgrade is a patch in history, and ``flowkit migrate --dry-run`` lists
exactly the threads affected."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _migration_flows as flows
import pytest
from _migration_flows import MIGRATION, TicketV2, ticket_v1, ticket_v2

from flowkit import Flow, Migration, Runner
from flowkit.errors import FlowDefinitionError, IncompatibleThreadError
from flowkit.stores import JsonFileStore, MemoryStore, Store

#: The in-flight threads and where v1 leaves them.
IN_FLIGHT = {
    "at-review": ("waiting", "review"),
    "urgent-at-review": ("waiting", "review"),
    "failed-at-polish": ("failed", "polish"),
    "done-already": ("done", "__end__"),
}


@pytest.fixture(params=["memory", "jsonfile"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return JsonFileStore(tmp_path / "store", fsync=False)


@pytest.fixture
def deployed(store: Store) -> Iterator[Store]:
    """A store with threads of flow v1 in flight, and one of another flow."""
    v1 = Runner(ticket_v1, store=store)
    v1.start("at-review")
    v1.start("urgent-at-review", {"urgent": True, "text": "fire in the printer"})
    flows.BROKEN["polish"] = True
    try:
        v1.start("failed-at-polish")
    finally:
        flows.BROKEN["polish"] = False
    v1.start("done-already")
    v1.resume("done-already", {"approved": True})
    Runner(flows.other_flow, store=store).start("a-note")
    for thread, (status, node) in IN_FLIGHT.items():
        result = v1.get_state(thread)
        assert (result.status, result.node) == (status, node)
    yield store


def _journal(store: Store) -> dict[str, list[Any]]:
    return {t: [r.model_dump() for r in store.records(t)] for t in store.threads()}


@pytest.mark.parametrize("bare", [flows.ticket_v2_bare, flows.ticket_v2_unmigrated])
def test_without_migrations_every_load_is_a_typed_error_naming_thread_and_record(
    deployed: Store, bare: Flow
) -> None:
    runner = Runner(bare, store=deployed)
    for thread in IN_FLIGHT:
        for load in (
            runner.get_state,
            lambda t: runner.resume(t, {"approved": True}),
            runner.history,
            lambda t: runner.update_state(t, {"text": "x"}),
        ):
            with pytest.raises(IncompatibleThreadError) as caught:
                load(thread)
            error = caught.value
            assert error.thread_id == thread
            assert f"Thread `{thread}`" in str(error)
            assert error.version is not None and f"record {error.version}" in str(error)
            assert "Migration(to=" in str(error) and "docs/migrations.md" in str(error)


def test_the_errors_say_which_part_no_longer_fits(deployed: Store) -> None:
    # Same state model, renamed gate: the gate is named.
    renamed_only = Flow(
        name="ticket",
        state=flows.TicketV1,
        start="intake",
        nodes={"intake": flows.intake, "polish": flows.polish, "publish": flows.publish},
        gates={"approval": flows.Approve},
        routes={
            "intake": "polish",
            "polish": "approval",
            "approval": "publish",
            "publish": "__end__",
        },
    )
    with pytest.raises(IncompatibleThreadError, match="waits at gate `review` \\(record 2\\)"):
        Runner(renamed_only, store=deployed).resume("at-review", {"approved": True})
    # The new required field: the field and the fix.
    with pytest.raises(IncompatibleThreadError) as caught:
        Runner(flows.ticket_v2_unmigrated, store=deployed).get_state("at-review")
    [problem] = caught.value.problems
    assert problem.startswith("priority: ") and problem in str(caught.value)
    assert 'fields={"priority": lambda old: ...}' in str(caught.value)
    assert caught.value.version == 2


def test_with_migrations_every_thread_resumes_and_finishes(deployed: Store) -> None:
    runner = Runner(ticket_v2, store=deployed)
    seen = runner.get_state("urgent-at-review")  # a read: upgraded, nothing written
    assert (seen.node, seen.state.priority) == ("approval", "high")
    assert seen.state.dialog_state == "approval"  # the mirror follows the position
    assert len(list(deployed.records("urgent-at-review"))) == 3

    for thread in ("at-review", "urgent-at-review"):
        result = runner.resume(thread, {"approved": True}, gate="approval")
        assert result.status == "done", thread
        assert result.state.log[-1].startswith("published")
    assert runner.get_state("at-review").state.priority == "normal"
    assert runner.get_state("urgent-at-review").state.priority == "high"

    moved = runner.get_state("failed-at-polish")
    # Failed at the removed node: failed at its stand-in, and resuming retries from there.
    assert (moved.status, moved.node) == ("failed", "intake")
    assert moved.error is not None and moved.error.node == "polish"
    result = runner.resume("failed-at-polish")
    assert result.status == "waiting" and result.node == "approval"
    assert runner.resume("failed-at-polish", {"approved": True}).status == "done"

    finished = runner.get_state("done-already")
    assert finished.status == "done" and finished.state.priority == "normal"

    # A later process reads the migrated threads from the journal alone.
    again = Runner(ticket_v2, store=deployed)
    for thread in IN_FLIGHT:
        assert again.get_state(thread).status == "done"
        assert isinstance(again.get_state(thread).state, TicketV2)


def test_the_upgrade_is_a_patch_in_history(deployed: Store) -> None:
    runner = Runner(ticket_v2, store=deployed)
    runner.resume("urgent-at-review", {"approved": True})
    history = runner.history("urgent-at-review")
    patch = next(c for c in history if c.kind == "patch")
    assert patch.actor == "migration"
    assert patch.reason.startswith("migrated from version 1 to 2: v2: approval gate, no polish")
    assert "move review -> approval" in patch.reason and "(dropped: urgent)" in patch.reason
    assert patch.update == {"priority": "high", "dialog_state": "approval"}
    assert (patch.version, patch.next, patch.status) == (3, "approval", "waiting")
    # Older checkpoints are shown upgraded, where they stood.
    assert [c.next for c in history] == [
        "intake",
        "polish",
        "review",
        "approval",
        "publish",
        "__end__",
    ]
    assert all(isinstance(c.state, TicketV2) for c in history)
    assert history[0].state.priority == "high"
    # A fork from before the deploy starts at the flow's version, moved as a thread would be.
    fork = runner.fork("urgent-at-review", "fork", at=1)
    assert fork.node == "intake"
    assert runner.get_state("fork").state.priority == "high"


def test_runner_migrate_reports_and_applies(deployed: Store) -> None:
    runner = Runner(ticket_v2, store=deployed)
    before = _journal(deployed)
    dry = runner.migrate("urgent-at-review", dry_run=True)
    assert _journal(deployed) == before
    assert (dry.from_version, dry.to_version, dry.node_before, dry.node_after) == (
        1,
        2,
        "review",
        "approval",
    )
    assert dry.changed == ("priority", "dialog_state") and dry.dropped == ("urgent",)
    assert dry.record is None and dry.affected
    done = runner.migrate("urgent-at-review")
    assert done.record == 3
    again = runner.migrate("urgent-at-review")
    assert not again.affected and again.record is None


def test_a_thread_of_a_newer_version_is_refused(deployed: Store) -> None:
    Runner(ticket_v2, store=deployed).migrate("at-review")
    Runner(ticket_v2, store=deployed).start("born-on-v2", {"priority": "low"})
    old = Runner(ticket_v1, store=deployed)  # a rollback deploy
    for thread, record in (("at-review", 3), ("born-on-v2", 0)):
        with pytest.raises(IncompatibleThreadError, match=r"ran under version 2 .* newer than"):
            old.get_state(thread)
        with pytest.raises(IncompatibleThreadError) as caught:
            old.resume(thread, {"approved": True})
        assert (caught.value.version, caught.value.flow_version) == (record, 2)


def test_a_failing_migration_is_a_typed_error(deployed: Store) -> None:
    def broken(old: dict[str, Any]) -> str:
        raise KeyError("severity")

    flow = Flow(
        name="ticket",
        state=TicketV2,
        start="intake",
        nodes={"intake": flows.intake, "publish": flows.publish},
        gates={"approval": flows.Approve},
        routes={"intake": "approval", "approval": "publish", "publish": "__end__"},
        version=2,
        migrations=[Migration(to=2, positions={"review": "approval"}, fields={"priority": broken})],
    )
    with pytest.raises(IncompatibleThreadError, match=r"migration to version 2 failed .*severity"):
        Runner(flow, store=deployed).resume("at-review", {"approved": True})


def test_migrations_chain_across_versions(deployed: Store) -> None:
    from pydantic import BaseModel

    class TicketV3(TicketV2):
        owner: str

    v3 = Flow(
        name="ticket",
        state=TicketV3,
        start="intake",
        nodes={"intake": flows.intake, "publish": flows.publish},
        gates={"sign_off": flows.Approve},
        routes={"intake": "sign_off", "sign_off": "publish", "publish": "__end__"},
        version=3,
        migrations=[
            MIGRATION,
            Migration(
                to=3,
                positions={"approval": "sign_off"},
                fields={"owner": lambda old: f"{old['priority']}-desk"},
            ),
        ],
    )
    # One thread already at version 2, one still at 1: both reach version 3.
    Runner(ticket_v2, store=deployed).migrate("at-review")
    runner = Runner(v3, store=deployed)
    for thread, owner in (("at-review", "normal-desk"), ("urgent-at-review", "high-desk")):
        report = runner.migrate(thread)
        assert report.to_version == 3 and report.node_after == "sign_off"
        result = runner.resume(thread, {"approved": True})
        assert result.status == "done" and result.state.owner == owner
    del BaseModel


@pytest.mark.parametrize(
    ("migrations", "version", "problem"),
    [
        ([Migration(to=3)], 2, "outside 2..2"),
        ([Migration(to=2), Migration(to=2)], 2, "Two migrations upgrade to version 2"),
        ([Migration(to=2, positions={"review": "aproval"})], 2, "moves `review` to `aproval`"),
        ([Migration(to=2, fields={"prority": "x"})], 2, "sets `prority`"),
        (["not a migration"], 2, "is not a Migration"),
        ([], 0, "version must be a whole number >= 1"),
    ],
)
def test_bad_migrations_are_refused_when_the_flow_is_built(
    migrations: list[Any], version: int, problem: str
) -> None:
    with pytest.raises(FlowDefinitionError, match=problem):
        Flow(
            name="ticket",
            state=TicketV2,
            start="intake",
            nodes={"intake": flows.intake, "publish": flows.publish},
            gates={"approval": flows.Approve},
            routes={"intake": "approval", "approval": "publish", "publish": "__end__"},
            version=version,
            migrations=migrations,
        )


def test_unversioned_flows_write_journals_as_before(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path, fsync=False)
    Runner(ticket_v1, store=store).start("t1")
    first = (tmp_path / "threads").rglob("*.jsonl")
    text = "".join(path.read_text() for path in first)
    assert "flow_version" not in text and "migration" not in text
    Runner(ticket_v2, store=store).start("t2", {"priority": "low"})
    start = next(iter(store.records("t2")))
    assert start.flow_version == 2


def test_a_store_snapshot_of_an_old_version_is_upgraded_too(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path, fsync=False, snapshot_ratio=0.0, min_snapshot_bytes=0)
    v1 = Runner(ticket_v1, store=store)
    v1.start("t1", {"urgent": True})
    assert store.load("t1").snapshot is not None
    result = Runner(ticket_v2, store=store).resume("t1", {"approved": True})
    assert result.status == "done" and result.state.priority == "high"


def test_cli_migrate_dry_run_lists_exactly_the_threads_affected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flowkit.cli import main

    root = tmp_path / "store"
    store = JsonFileStore(root, fsync=False)
    v1 = Runner(ticket_v1, store=store)
    v1.start("at-review")
    v1.start("urgent-at-review", {"urgent": True})
    Runner(ticket_v2, store=store).start("started-on-v2", {"priority": "low"})
    Runner(flows.other_flow, store=store).start("a-note")
    target = f"{Path(flows.__file__)}:ticket_v2"
    before = _journal(store)

    assert main(["migrate", target, "--store", str(root), "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [t["thread_id"] for t in report["threads"]] == ["at-review", "urgent-at-review"]
    assert report["threads"][1]["node_before"] == "review"
    assert report["threads"][1]["node_after"] == "approval"
    assert report["dry_run"] is True and report["failed"] == []
    assert _journal(store) == before

    assert main(["migrate", target, "--store", str(root)]) == 0
    text = capsys.readouterr().out
    assert "migrated 2 thread(s)" in text and "review -> approval" in text
    assert main(["migrate", target, "--store", str(root), "--dry-run"]) == 0
    assert "would migrate 0 thread(s)" in capsys.readouterr().out
    runner = Runner(ticket_v2, store=store)
    assert runner.resume("urgent-at-review", {"approved": True}).status == "done"


def test_cli_migrate_reports_a_thread_it_cannot_migrate_and_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flowkit.cli import main

    root = tmp_path / "store"
    store = JsonFileStore(root, fsync=False)
    Runner(ticket_v1, store=store).start("at-review")
    target = f"{Path(flows.__file__)}:ticket_v2_unmigrated"
    assert main(["migrate", target, "--store", str(root), "--dry-run"]) == 1
    captured = capsys.readouterr()
    assert "would migrate 0 thread(s)" in captured.out
    assert "flowkit: error: thread `at-review`: Thread `at-review`" in captured.err
    assert "Traceback" not in captured.err
