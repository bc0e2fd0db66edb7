"""The memory contract: the pytest suite every ``flowkit.memory.Memory`` must pass.

Subclass ``MemoryContract`` in a test module (its name must start with ``Test``) and provide a
``memory`` fixture giving a fresh, empty memory per test. A memory that keeps its items
outside the object should also override ``reopen``: a function returning a *new* object over
the same items, so the suite can check what survives a restart::

    class TestMyMemory(MemoryContract):
        @pytest.fixture
        def memory(self, tmp_path):
            return MyMemory(tmp_path)

        @pytest.fixture
        def reopen(self, tmp_path):
            return lambda: MyMemory(tmp_path)

The default ``reopen`` hands back the same object (right for in-process memories). The value
size limit is checked against the default, ``flowkit.memory.MAX_VALUE_BYTES``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from ..errors import MemoryItemError
from ..memory import MAX_KEY, MAX_LABEL, MAX_LABELS, MAX_VALUE_BYTES, Memory

__all__ = ["BAD_KEYS", "BAD_NAMESPACES", "BAD_VALUES", "HOSTILE_KEYS", "MemoryContract"]

Reopen = Callable[[], Memory]

#: Namespaces every memory refuses (for ``put``/``get``/``delete``; ``search`` allows ``()``).
BAD_NAMESPACES: list[Any] = [
    "user",
    (),
    ("",),
    ("user", ""),
    ("user", 42),
    ("a\x00b",),
    ("line\nbreak",),
    ("x" * (MAX_LABEL + 1),),
    tuple(str(i) for i in range(MAX_LABELS + 1)),
    ("\ud800",),
    None,
    {"user": "42"},
]

#: Keys every memory refuses.
BAD_KEYS: list[Any] = [
    "",
    None,
    42,
    b"bytes",
    "tab\there",
    "nul\x00",
    "k" * (MAX_KEY + 1),
    "\udfff",
]


class _Obj:
    pass


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


#: Values every memory refuses, by why.
BAD_VALUES: dict[str, Any] = {
    "tuple": (1, 2),
    "set": {1, 2},
    "bytes": b"raw",
    "nan": float("nan"),
    "inf": float("inf"),
    "object": _Obj(),
    "int dict key": {1: "one"},
    "nested tuple": {"a": [1, (2, 3)]},
    "nested nan": {"a": [{"b": float("-inf")}]},
    "lone surrogate": "\ud83d",
    "surrogate key": {"\ud83d": 1},
    "too deep": _nested(200),
    "too big": "x" * (MAX_VALUE_BYTES + 1),
}

#: Keys and labels that look like paths, devices or case twins: each must be its own item.
HOSTILE_KEYS: list[str] = [
    "../../etc/passwd",
    "..",
    ".",
    "/",
    "/abs",
    "a/b",
    "a\\b",
    "C:\\x",
    "CON",
    "con",
    "A",
    "a",
    "%41",
    "~",
    ".hidden",
    "k_x.json",
    "n_x",
    "émoji 🎉",
    "x" * MAX_KEY,
    "x" * (MAX_KEY - 1) + "y",
    "é" * MAX_KEY,
    "é" * (MAX_KEY - 1) + "e",
]


class MemoryContract:
    """Behaviour every memory must have; subclass it and provide a ``memory`` fixture."""

    @pytest.fixture
    def memory(self) -> Memory:
        pytest.fail(
            "Subclass MemoryContract and define a `memory` fixture giving a fresh, empty memory."
        )

    @pytest.fixture
    def reopen(self, memory: Memory) -> Reopen:
        return lambda: memory

    # -- put, get, delete --------------------------------------------------------------------

    def test_is_a_memory(self, memory: Memory) -> None:
        assert isinstance(memory, Memory)

    def test_a_put_item_comes_back_with_its_namespace_key_and_times(self, memory: Memory) -> None:
        memory.put(("user", "42"), "prefs", {"tone": "brief", "n": [1, 2.5, None, True]})
        item = memory.get(("user", "42"), "prefs")
        assert item is not None
        assert (item.namespace, item.key) == (("user", "42"), "prefs")
        assert item.value == {"tone": "brief", "n": [1, 2.5, None, True]}
        assert item.created_at == item.updated_at > 0

    def test_a_list_namespace_means_the_same_as_a_tuple(self, memory: Memory) -> None:
        memory.put(["user", "42"], "k", 1)
        item = memory.get(("user", "42"), "k")
        assert item is not None and item.namespace == ("user", "42")

    def test_get_of_a_missing_item_is_none(self, memory: Memory) -> None:
        assert memory.get(("user", "42"), "nothing") is None
        memory.put(("user", "42"), "k", 1)
        assert memory.get(("user", "42"), "other") is None
        assert memory.get(("user",), "k") is None
        assert memory.get(("user", "42", "k"), "k") is None

    def test_put_replaces_the_value_and_keeps_created_at(self, memory: Memory) -> None:
        memory.put(("n",), "k", "first")
        first = memory.get(("n",), "k")
        memory.put(("n",), "k", {"second": True})
        second = memory.get(("n",), "k")
        assert first is not None and second is not None
        assert second.value == {"second": True}
        assert second.created_at == first.created_at
        assert second.updated_at >= first.updated_at

    def test_scalar_values_come_back_with_their_exact_types(self, memory: Memory) -> None:
        values: list[Any] = [0, -7, 10**30, 1.5, -0.25, True, False, None, "", "text", [], {}]
        for index, value in enumerate(values):
            memory.put(("types",), str(index), value)
        for index, value in enumerate(values):
            item = memory.get(("types",), str(index))
            assert item is not None
            assert item.value == value and type(item.value) is type(value)

    def test_delete_removes_one_item_and_says_whether_there_was_one(self, memory: Memory) -> None:
        memory.put(("n",), "a", 1)
        memory.put(("n",), "b", 2)
        assert memory.delete(("n",), "a") is True
        assert memory.delete(("n",), "a") is False
        assert memory.delete(("other",), "a") is False
        assert memory.get(("n",), "a") is None
        item = memory.get(("n",), "b")
        assert item is not None and item.value == 2

    def test_an_item_can_be_put_again_after_delete(self, memory: Memory) -> None:
        memory.put(("n", "deep"), "a", 1)
        memory.delete(("n", "deep"), "a")
        memory.put(("n", "deep"), "a", 2)
        item = memory.get(("n", "deep"), "a")
        assert item is not None and item.value == 2

    def test_namespaces_keep_equal_keys_apart(self, memory: Memory) -> None:
        spaces = [("a",), ("a", "b"), ("a", "b", "c"), ("b",), ("ab",), ("a b",)]
        for index, space in enumerate(spaces):
            memory.put(space, "k", index)
        for index, space in enumerate(spaces):
            item = memory.get(space, "k")
            assert item is not None and item.value == index

    def test_changing_a_value_after_put_or_get_changes_nothing_stored(self, memory: Memory) -> None:
        value: dict[str, Any] = {"list": [1]}
        memory.put(("n",), "k", value)
        value["list"].append(2)
        got = memory.get(("n",), "k")
        assert got is not None and got.value == {"list": [1]}
        got.value["list"].append(3)
        again = memory.get(("n",), "k")
        assert again is not None and again.value == {"list": [1]}

    def test_hostile_keys_and_labels_are_each_their_own_item(self, memory: Memory) -> None:
        for index, key in enumerate(HOSTILE_KEYS):
            memory.put(("hostile",), key, index)
            memory.put(("hostile", key[:MAX_LABEL]), "k", index)
        for index, key in enumerate(HOSTILE_KEYS):
            item = memory.get(("hostile",), key)
            assert item is not None and (item.key, item.value) == (key, index), key
        found = memory.search(("hostile",), limit=1000)
        assert len(found) == 2 * len(HOSTILE_KEYS) - _label_twins()

    # -- search ------------------------------------------------------------------------------

    def _fill(self, memory: Memory) -> None:
        memory.put(("user", "42"), "prefs", {"tone": "brief"})
        memory.put(("user", "42", "sessions"), "s-2", {"kind": "summary", "n": 2})
        memory.put(("user", "42", "sessions"), "s-1", {"kind": "summary", "n": 1})
        memory.put(("user", "42", "sessions"), "note", {"kind": "note"})
        memory.put(("user", "7"), "prefs", {"tone": "chatty"})
        memory.put(("users",), "count", 2)
        memory.put(("team",), "name", "robots")

    def test_search_finds_items_under_a_prefix_by_namespace_then_key(self, memory: Memory) -> None:
        self._fill(memory)
        found = memory.search(("user", "42"))
        assert [(i.namespace, i.key) for i in found] == [
            (("user", "42"), "prefs"),
            (("user", "42", "sessions"), "note"),
            (("user", "42", "sessions"), "s-1"),
            (("user", "42", "sessions"), "s-2"),
        ]

    def test_a_prefix_matches_whole_labels_only(self, memory: Memory) -> None:
        self._fill(memory)
        assert {i.namespace for i in memory.search(("user",), limit=100)} == {
            ("user", "42"),
            ("user", "42", "sessions"),
            ("user", "7"),
        }
        assert memory.search(("use",)) == []
        assert memory.search(("user", "4")) == []

    def test_the_empty_prefix_searches_everything(self, memory: Memory) -> None:
        self._fill(memory)
        assert len(memory.search((), limit=100)) == 7
        assert len(memory.search(limit=100)) == 7

    def test_limit_and_offset_page_through_results(self, memory: Memory) -> None:
        self._fill(memory)
        every = memory.search((), limit=100)
        pages = [memory.search((), limit=3, offset=start) for start in range(0, 9, 3)]
        assert [item for page in pages for item in page] == every
        assert memory.search((), limit=0) == []
        assert memory.search((), offset=100) == []
        assert len(memory.search(())) == 7  # the default limit is 10

    def test_filter_keeps_dict_values_holding_equal_values(self, memory: Memory) -> None:
        self._fill(memory)
        summaries = memory.search(("user", "42"), filter={"kind": "summary"})
        assert [i.key for i in summaries] == ["s-1", "s-2"]
        assert [i.key for i in memory.search((), filter={"kind": "summary", "n": 2})] == ["s-2"]
        assert memory.search((), filter={"missing": None}) == []
        paged = memory.search(("user",), filter={"kind": "summary"}, limit=1, offset=1)
        assert [i.key for i in paged] == ["s-2"]

    def test_search_refuses_bad_arguments(self, memory: Memory) -> None:
        calls: list[Callable[[], Any]] = [
            lambda: memory.search(("user",), limit=-1),
            lambda: memory.search(("user",), limit="3"),  # type: ignore[arg-type]
            lambda: memory.search(("user",), offset=-1),
            lambda: memory.search(("user",), filter=["kind"]),  # type: ignore[arg-type]
            lambda: memory.search("user"),
            lambda: memory.search(("user", "")),
        ]
        for bad in calls:
            with pytest.raises(MemoryItemError):
                bad()

    # -- bad input ---------------------------------------------------------------------------

    @pytest.mark.parametrize("namespace", BAD_NAMESPACES, ids=repr)
    def test_bad_namespaces_are_refused_by_every_method(
        self, memory: Memory, namespace: Any
    ) -> None:
        for call in (
            lambda: memory.put(namespace, "k", 1),
            lambda: memory.get(namespace, "k"),
            lambda: memory.delete(namespace, "k"),
        ):
            with pytest.raises(MemoryItemError):
                call()
        assert memory.search((), limit=100) == []

    @pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
    def test_bad_keys_are_refused_by_every_method(self, memory: Memory, key: Any) -> None:
        for call in (
            lambda: memory.put(("n",), key, 1),
            lambda: memory.get(("n",), key),
            lambda: memory.delete(("n",), key),
        ):
            with pytest.raises(MemoryItemError) as caught:
                call()
            assert caught.value.namespace == ("n",)
        assert memory.search((), limit=100) == []

    @pytest.mark.parametrize("why", sorted(BAD_VALUES))
    def test_values_json_cannot_carry_are_refused_and_nothing_changes(
        self, memory: Memory, why: str
    ) -> None:
        memory.put(("n",), "k", "before")
        with pytest.raises(MemoryItemError) as caught:
            memory.put(("n",), "k", BAD_VALUES[why])
        assert (caught.value.namespace, caught.value.key) == (("n",), "k")
        with pytest.raises(MemoryItemError):
            memory.put(("n",), "new", BAD_VALUES[why])
        item = memory.get(("n",), "k")
        assert item is not None and item.value == "before"
        assert memory.get(("n",), "new") is None

    def test_a_value_just_under_the_size_limit_is_kept(self, memory: Memory) -> None:
        value = "x" * (MAX_VALUE_BYTES - 2)  # two bytes of quotes
        memory.put(("n",), "big", value)
        item = memory.get(("n",), "big")
        assert item is not None and item.value == value

    def test_the_error_names_namespace_and_key_never_the_value(self, memory: Memory) -> None:
        with pytest.raises(MemoryItemError) as caught:
            memory.put(("user", "42"), "card", {"number": "4242-secret", "when": (1, 2)})
        assert "4242-secret" not in str(caught.value)
        assert "user" in str(caught.value) and "card" in str(caught.value)

    # -- durability and concurrency -----------------------------------------------------------

    def test_items_survive_a_reopen(self, memory: Memory, reopen: Reopen) -> None:
        self._fill(memory)
        memory.delete(("team",), "name")
        before = memory.search((), limit=100)
        again = reopen()
        assert again.search((), limit=100) == before
        again.put(("team",), "name", "again")
        item = again.get(("team",), "name")
        assert item is not None and item.value == "again"

    def test_threads_putting_at_once_lose_nothing(self, memory: Memory) -> None:
        errors: list[BaseException] = []

        def work(worker: int) -> None:
            try:
                for n in range(20):
                    memory.put(("w", str(worker)), f"k{n}", {"worker": worker, "n": n})
                    memory.put(("shared",), "last", worker)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        workers = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
        assert errors == []
        assert len(memory.search(("w",), limit=1000)) == 80
        last = memory.get(("shared",), "last")
        assert last is not None and last.value in range(4)


def _label_twins() -> int:
    """Hostile keys whose first ``MAX_LABEL`` characters equal another's (the same label)."""
    labels = [key[:MAX_LABEL] for key in HOSTILE_KEYS]
    return len(labels) - len(set(labels))
