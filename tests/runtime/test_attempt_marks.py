"""Attempt markers: the runner notes each node before it runs, only when asked to."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from flowkit import END, Flow, RetryPolicy, Runner, node
from flowkit.errors import ConflictError, StoreError
from flowkit.stores import AttemptMarker, AttemptMarks, JsonFileStore, MemoryStore, Store


class Count(BaseModel):
    n: int = 0


class Crash(BaseException):
    """Stands in for the process dying inside a node: nothing catches it."""


def _flow(**nodes: Any) -> Flow:
    names = list(nodes)
    routes = {a: b for a, b in zip(names, [*names[1:], END], strict=True)}
    return Flow(name="marks", state=Count, start=names[0], nodes=nodes, routes=routes)


def _inc(state: Count) -> dict[str, Any]:
    return {"n": state.n + 1}


def _crash(state: Count) -> dict[str, Any]:
    raise Crash


@pytest.fixture(params=["memory", "jsonfile"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        with JsonFileStore(tmp_path / "store", fsync=False) as file_store:
            yield file_store


def _marks(store: Store) -> AttemptMarks:
    assert isinstance(store, AttemptMarks)
    return store


def test_without_tracking_no_marker_is_written(store: Store) -> None:
    runner: Runner[Count] = Runner(_flow(a=_inc, b=_crash), store=store)
    with pytest.raises(Crash):
        runner.start("t")
    assert _marks(store).last_attempt("t") is None


def test_a_node_that_never_finished_is_named_by_the_marker(store: Store) -> None:
    runner: Runner[Count] = Runner(_flow(a=_inc, b=_crash), store=store, track_attempts=True)
    with pytest.raises(Crash):
        runner.start("t")
    marker = _marks(store).last_attempt("t")
    assert marker is not None
    assert (marker.node, marker.version, marker.attempt) == ("b", 1, 1)
    assert runner.get_state("t").version == marker.version  # the journal never got past it


def test_a_committed_step_leaves_the_marker_behind_the_journal(store: Store) -> None:
    runner: Runner[Count] = Runner(_flow(a=_inc, b=_inc), store=store, track_attempts=True)
    result = runner.start("t")
    marker = _marks(store).last_attempt("t")
    assert marker is not None and (marker.node, marker.version) == ("b", 1)
    assert result.version == 2 > marker.version  # stale: recovery ignores it


def test_every_retry_attempt_is_marked(store: Store) -> None:
    seen: list[int] = []

    @node(retry=RetryPolicy(max_attempts=3, initial_delay=0, jitter=False, retry_on=(OSError,)))
    def flaky(state: Count) -> dict[str, Any]:
        marker = _marks(store).last_attempt("t")
        assert marker is not None
        seen.append(marker.attempt)
        if len(seen) < 3:
            raise OSError("try again")
        return {"n": 1}

    Runner(_flow(flaky=flaky), store=store, track_attempts=True).start("t")
    assert seen == [1, 2, 3]


def test_tracking_needs_a_store_with_markers() -> None:
    class Plain(MemoryStore):
        mark_attempt = None  # type: ignore[assignment]

    with pytest.raises(TypeError, match="mark_attempt"):
        Runner(_flow(a=_inc), store=Plain(), track_attempts=True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="attempt markers"):
        Runner(_flow(a=_inc), store=None, track_attempts=True)


def test_a_failing_marker_is_logged_and_the_run_goes_on() -> None:
    class Broken(MemoryStore):
        def mark_attempt(self, thread_id: str, marker: AttemptMarker) -> None:
            raise StoreError("disk full", thread_id=thread_id)

    runner: Runner[Count] = Runner(_flow(a=_inc), store=Broken(), track_attempts=True)
    with capture_logs() as logs:
        assert runner.start("t").done
    assert [e for e in logs if e["event"] == "attempt_marker_failed"] == [
        {
            "event": "attempt_marker_failed",
            "log_level": "warning",
            "thread_id": "t",
            "node": "a",
            "error_type": "StoreError",
        }
    ]


def test_an_unreadable_marker_file_reads_as_none_and_is_reported(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        Runner(_flow(a=_inc), store=store, track_attempts=True).start("t")
        (tmp_path / "threads" / "t" / "attempt.json").write_bytes(b"\x00" * 512)
        with capture_logs() as logs:
            assert store.last_attempt("t") is None
    assert [e["event"] for e in logs] == ["attempt_marker_ignored"]


def test_old_stores_without_marker_files_still_load(tmp_path: Path) -> None:
    with JsonFileStore(tmp_path, fsync=False) as store:
        Runner(_flow(a=_inc), store=store).start("t")  # written without tracking
    with JsonFileStore(tmp_path, fsync=False) as store:
        runner: Runner[Count] = Runner(_flow(a=_inc), store=store, track_attempts=True)
        assert store.last_attempt("t") is None
        assert runner.get_state("t").state.n == 1


def test_update_state_with_a_stale_expected_version_raises_conflict(store: Store) -> None:
    runner: Runner[Count] = Runner(_flow(a=_inc), store=store)
    runner.start("t")
    with pytest.raises(ConflictError) as info:
        runner.update_state("t", {"n": 5}, expected_version=0)
    assert (info.value.expected, info.value.actual) == (0, 1)
    assert runner.update_state("t", {"n": 5}, expected_version=1).version == 2
