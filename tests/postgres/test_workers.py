"""Workers in one process: queued inputs used exactly once, rejected with a reason when they
cannot apply, orphaned runs resumed, leases respected."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from structlog.testing import capture_logs

from flowkit import Runner
from flowkit.errors import ConflictError, RunError, StepLimitError
from flowkit.stores import MemoryStore
from flowkit.stores.postgres import PostgresStore
from flowkit.stores.postgres import _queue as queue_module
from flowkit.workers import Worker

from .flows import STEPS, expected


def _journal(store: PostgresStore, thread_id: str) -> list[tuple[int, str]]:
    return [(r.version, r.kind) for r in store.records(thread_id)]


def test_submit_needs_a_store_with_a_work_queue() -> None:
    with pytest.raises(RunError, match="PostgresStore"):
        Runner(STEPS, store=MemoryStore()).submit("t", {"seed": 1})


def test_submit_refuses_input_that_is_not_a_mapping_or_model(
    open_pg: Callable[..., PostgresStore],
) -> None:
    with pytest.raises(RunError, match="submit a mapping"):
        Runner(STEPS, store=open_pg()).submit("t", [1, 2])  # type: ignore[arg-type]


def test_workers_run_submitted_threads_to_the_gate_and_on_to_the_end(
    open_pg: Callable[..., PostgresStore],
) -> None:
    store = open_pg(pool_size=6)
    client = Runner(STEPS, store=store)
    ids = [f"t{i:02d}" for i in range(24)]
    for index, thread_id in enumerate(ids):
        client.submit(thread_id, {"seed": index})
    worker = Worker(STEPS, store=store, concurrency=3)
    assert worker.run(until_idle=True).claims >= len(ids)
    assert {s.status for s in store.statuses(flow="pg_steps")} == {"waiting"}
    items = [client.submit(t, {"by": f"ann-{t}", "bonus": 7}) for t in ids]
    worker.run(until_idle=True)
    for index, thread_id in enumerate(ids):
        state = client.get_state(thread_id)
        assert state.status == "done"
        assert state.state == expected(index, f"ann-{thread_id}", 7)
        journal = _journal(store, thread_id)
        assert [v for v, _ in journal] == list(range(22))
        assert [k for _, k in journal].count("input") == 1
    assert all(store.work_item(i).state == "done" for i in items)  # type: ignore[union-attr]
    assert list(store.queued()) == []


def test_inputs_that_cannot_apply_are_rejected_with_the_reason(
    open_pg: Callable[..., PostgresStore],
) -> None:
    store = open_pg()
    client = Runner(STEPS, store=store)
    worker = Worker(STEPS, store=store)
    client.submit("t", {"seed": 1})
    worker.run(until_idle=True)
    with capture_logs() as logs:
        bad = client.submit("t", {"bonus": 3})  # `by` is missing
        stale = client.submit("t", {"by": "bob"}, expected_version=3)
        good = client.submit("t", {"by": "ann"})
        late = client.submit("t", {"by": "eve"})
        worker.run(until_idle=True)
    rejected = {i: store.work_item(i) for i in (bad, stale, late)}
    assert all(item is not None and item.state == "rejected" for item in rejected.values())
    assert "by" in (rejected[bad].error or "")  # type: ignore[union-attr]
    assert "version 10, not 3" in (rejected[stale].error or "")  # type: ignore[union-attr]
    assert "done" in (rejected[late].error or "")  # type: ignore[union-attr]
    assert store.work_item(good).state == "done"  # type: ignore[union-attr]
    assert client.get_state("t").state == expected(1, "ann", 0)
    assert sum(1 for e in logs if e["event"] == "work_rejected") == 3
    assert not any("ann" in str(e) or "bob" in str(e) for e in logs), "no input in log lines"


def test_an_input_for_a_thread_started_directly_is_applied_by_a_worker(
    open_pg: Callable[..., PostgresStore],
) -> None:
    store = open_pg()
    client = Runner(STEPS, store=store)
    client.start("t", {"seed": 2})
    worker = Worker(STEPS, store=store)
    item = client.submit("t", {"by": "ann"})
    worker.run(until_idle=True)
    assert store.work_item(item).state == "done"  # type: ignore[union-attr]
    assert client.get_state("t").state == expected(2, "ann", 0)


def test_an_orphaned_pending_thread_is_resumed_from_its_last_step(
    open_pg: Callable[..., PostgresStore],
) -> None:
    store = open_pg()
    crashed = Runner(STEPS, store=store, step_limit=4)
    with pytest.raises(StepLimitError):
        crashed.start("t", {"seed": 5})
    assert store.status("t").status == "pending"  # type: ignore[union-attr]
    stats = Worker(STEPS, store=store).run(until_idle=True)
    assert stats.runs == 1
    assert store.status("t").status == "waiting"  # type: ignore[union-attr]
    assert [v for v, _ in _journal(store, "t")] == list(range(11))


def test_an_orphan_is_claimed_while_queued_work_never_runs_out(
    open_pg: Callable[..., PostgresStore],
) -> None:
    """Queued work always came first, so under a backlog that never emptied a dead
    worker's thread was never resumed (found by a defect hunt)."""
    store = open_pg()
    with pytest.raises(StepLimitError):  # left pending, as a killed worker leaves a thread
        Runner(STEPS, store=store, step_limit=4).start("orphan", {"seed": 5})
    client = Runner(STEPS, store=store)
    for index in range(3 * queue_module.ORPHANS_EVERY):
        client.submit(f"new-{index}", {"seed": index})
    claimed = []
    for _ in range(queue_module.ORPHANS_EVERY):
        client.submit(f"more-{len(claimed)}", {"seed": 0})  # the backlog never empties
        claim = store.claim_next(["pg_steps"])
        assert claim is not None
        claimed.append(claim.thread_id)
        store.release(claim.thread_id)
    assert "orphan" in claimed


def test_a_thread_someone_holds_is_not_claimed(open_pg: Callable[..., PostgresStore]) -> None:
    store, other = open_pg(), open_pg()
    Runner(STEPS, store=store).submit("t", {"seed": 1})
    with other.lock("t"):
        assert Worker(STEPS, store=store).run(until_idle=True).claims == 0
    assert Worker(STEPS, store=store).run(until_idle=True).claims == 1


def test_a_run_that_keeps_failing_is_parked_not_retried_in_a_loop(
    open_pg: Callable[..., PostgresStore],
) -> None:
    store = open_pg()
    with pytest.raises(StepLimitError):
        Runner(STEPS, store=store, step_limit=2).start("t", {"seed": 1})
    worker = Worker(STEPS, store=store)
    worker._runners = lambda: {"pg_steps": Runner(STEPS, store=store, step_limit=1)}  # type: ignore[method-assign]
    with capture_logs() as logs:
        stats = worker.run(until_idle=True)
    assert (stats.claims, stats.errors) == (1, 1)
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["worker_run_failed"]
    assert Worker(STEPS, store=store).run(until_idle=True).claims == 0  # parked


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2"])
def test_worker_options_are_checked(open_pg: Callable[..., PostgresStore], bad: Any) -> None:
    with pytest.raises(RunError, match="concurrency"):
        Worker(STEPS, store=open_pg(), concurrency=bad)
    with pytest.raises(RunError, match="Flow"):
        Worker([], store=open_pg())
    with pytest.raises(RunError, match="work queue"):
        Worker(STEPS, store=MemoryStore())


def test_an_input_submitted_for_another_flow_is_rejected_not_spun_on(
    open_pg: Callable[..., PostgresStore],
) -> None:
    from .flows import ROUNDS

    store = open_pg()
    Runner(STEPS, store=store).start("t", {"seed": 1})
    item = Runner(ROUNDS, store=store).submit("t", {"by": "ann"})
    stats = Worker([STEPS, ROUNDS], store=store).run(until_idle=True)
    assert stats.rejected == 1
    found = store.work_item(item)
    assert found is not None and found.state == "rejected"
    assert "belongs to flow `pg_steps`, not `pg_rounds`" in (found.error or "")
    assert Worker(ROUNDS, store=store).run(until_idle=True).claims == 0


def test_a_claim_takes_the_lease_and_reads_the_thread_and_its_next_input_at_once(
    open_pg: Callable[..., PostgresStore],
) -> None:
    store, other = open_pg(), open_pg()
    with pytest.raises(StepLimitError):
        Runner(STEPS, store=store, step_limit=2).start("orphan", {"seed": 1})
    item = Runner(STEPS, store=store).submit("new", {"seed": 2})
    first = store.claim_next(["pg_steps"])  # queued work before orphans
    assert first is not None and (first.thread_id, first.status) == ("new", None)
    assert first.item is not None and (first.item.id, first.item.input) == (item, {"seed": 2})
    assert store.next_work("new") == (None, store.next_item("new"))
    with pytest.raises(ConflictError), other.lock("new"):
        pass  # the claim holds the lease
    orphan = store.claim_next(["pg_steps"])
    assert orphan is not None and orphan.thread_id == "orphan" and orphan.item is None
    assert orphan.status == store.status("orphan") and orphan.status.status == "pending"
    assert store.claim_next(["pg_steps"]) is None
    store.release("new")
    store.release("orphan")


def test_a_worker_reads_a_thread_with_its_claim_and_once_after_each_run(
    open_pg: Callable[..., PostgresStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_pg()
    Runner(STEPS, store=store).submit("t", {"seed": 1})
    looks: list[str] = []
    read = store.next_work

    def look(thread_id: str) -> Any:
        looks.append(thread_id)
        return read(thread_id)

    def unused(*_: Any) -> Any:
        raise AssertionError("a worker reads status and next input together")

    monkeypatch.setattr(store, "next_work", look)
    monkeypatch.setattr(store, "status", unused)
    monkeypatch.setattr(store, "next_item", unused)
    assert Worker(STEPS, store=store).run(until_idle=True).runs == 1
    assert looks == ["t"]  # after the run that left it at its gate: nothing more to do
    Runner(STEPS, store=store).submit("t", {"by": "ann", "bonus": 1})
    looks.clear()
    assert Worker(STEPS, store=store).run(until_idle=True).runs == 1
    assert looks == ["t"]
