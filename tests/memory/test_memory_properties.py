"""Property: whatever ``put`` accepts, ``get`` and ``search`` give back exactly, in both
memories; whatever it refuses leaves nothing behind."""

from __future__ import annotations

import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowkit.errors import MemoryItemError
from flowkit.memory import InProcessMemory, JsonFileMemory, Memory

texts = st.text(min_size=1, max_size=40).filter(
    lambda s: all(ord(c) >= 32 and ord(c) != 127 for c in s)
)
namespaces = st.lists(texts, min_size=1, max_size=4).map(tuple)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=["Cs"])),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(alphabet=st.characters(blacklist_categories=["Cs"])), inner, max_size=4
        )
    ),
    max_leaves=20,
)


def _both() -> list[Memory]:
    return [InProcessMemory(), JsonFileMemory(tempfile.mkdtemp(prefix="mem-"), fsync=False)]


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 is not True, 1.0 is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=st.lists(st.tuples(namespaces, texts, json_values), min_size=1, max_size=6))
def test_put_then_get_and_search_round_trip_exactly(
    entries: list[tuple[tuple[str, ...], str, Any]],
) -> None:
    for memory in _both():
        latest: dict[tuple[tuple[str, ...], str], Any] = {}
        for namespace, key, value in entries:
            memory.put(namespace, key, value)
            latest[(namespace, key)] = value
        for (namespace, key), value in latest.items():
            item = memory.get(namespace, key)
            assert item is not None and _same(item.value, value)
        found = memory.search((), limit=1000)
        assert [(i.namespace, i.key) for i in found] == sorted(latest)
        for item in found:
            assert _same(item.value, latest[(item.namespace, item.key)])
        for namespace, _key in latest:
            under = memory.search(namespace[:1], limit=1000)
            assert {(i.namespace, i.key) for i in under} == {
                k for k in latest if k[0][:1] == namespace[:1]
            }


@settings(max_examples=40, deadline=None)
@given(
    value=st.recursive(
        st.tuples(st.integers())
        | st.sets(st.integers(), min_size=1)
        | st.binary()
        | st.sampled_from([float("nan"), float("inf"), float("-inf")]),
        lambda inner: (
            st.lists(inner, min_size=1, max_size=3)
            | st.dictionaries(st.text(max_size=3), inner, min_size=1, max_size=3)
        ),
        max_leaves=5,
    )
)
def test_a_refused_value_leaves_nothing_behind(value: Any) -> None:
    for memory in _both():
        try:
            memory.put(("n",), "k", value)
        except MemoryItemError:
            pass
        else:
            raise AssertionError(f"stored {value!r}")
        assert memory.get(("n",), "k") is None
        assert memory.search((), limit=10) == []
