"""The attempt-marker half of the store contract, for stores with the ``AttemptMarks`` capability.

Stores without ``mark_attempt`` / ``last_attempt`` skip these checks: the capability is
optional. ``StoreContract`` inherits them; they use its ``store`` and ``reopen`` fixtures.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ..errors import InvalidThreadIdError, ThreadNotFoundError
from ..records._marker import AttemptMarker
from ..stores import AttemptMarks, Store
from ._contract_flows import BAD_THREAD_IDS, start_record

__all__ = ["AttemptMarkChecks"]

Reopen = Callable[[], Store]


def _marker(version: int, node: str = "work", attempt: int = 1) -> AttemptMarker:
    return AttemptMarker(
        version=version, node=node, attempt=attempt, run_id="run-1", ts=1_700_000_000.5
    )


def _marks(store: Store) -> AttemptMarks:
    if not isinstance(store, AttemptMarks):
        pytest.skip("this store does not keep attempt markers (an optional capability)")
    return store


class AttemptMarkChecks:
    """A store with attempt markers keeps the latest one per thread, across reopening."""

    def test_a_new_thread_has_no_attempt_marker(self, store: Store) -> None:
        marks = _marks(store)
        store.create("t1", start_record())
        assert marks.last_attempt("t1") is None

    def test_the_latest_attempt_marker_survives_reopening(
        self, store: Store, reopen: Reopen
    ) -> None:
        marks = _marks(store)
        store.create("t1", start_record())
        marks.mark_attempt("t1", _marker(0, "work", 1))
        marks.mark_attempt("t1", _marker(3, "a_much_longer_node_name" * 30, 2))
        reopened = _marks(reopen())
        assert reopened.last_attempt("t1") == _marker(3, "a_much_longer_node_name" * 30, 2)
        marks.mark_attempt("t1", _marker(4))
        assert _marks(reopen()).last_attempt("t1") == _marker(4)

    def test_markers_are_kept_per_thread_and_leave_the_journal_alone(
        self, store: Store, reopen: Reopen
    ) -> None:
        marks = _marks(store)
        store.create("t1", start_record())
        store.create("t2", start_record())
        marks.mark_attempt("t1", _marker(0, "one"))
        assert _marks(reopen()).last_attempt("t2") is None
        assert reopen().records("t1") == [start_record()]
        assert reopen().threads() == ["t1", "t2"]

    def test_attempt_markers_check_thread_ids(self, store: Store) -> None:
        marks = _marks(store)
        for bad in BAD_THREAD_IDS:
            with pytest.raises(InvalidThreadIdError):
                marks.mark_attempt(bad, _marker(0))
            with pytest.raises(InvalidThreadIdError):
                marks.last_attempt(bad)
        with pytest.raises(ThreadNotFoundError):
            marks.mark_attempt("missing", _marker(0))
        with pytest.raises(ThreadNotFoundError):
            marks.last_attempt("missing")
