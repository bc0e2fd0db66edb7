"""InProcessMemory: long-term memory in a dict, for tests and single-process apps."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ._checks import (
    MAX_VALUE_BYTES,
    check_filter,
    check_key,
    check_max_value_bytes,
    check_namespace,
    check_page,
    check_prefix,
    decode_value,
    encode_value,
    matches,
)
from ._protocol import JSONValue, MemoryItem, Namespace

__all__ = ["InProcessMemory"]


class InProcessMemory:
    """Keeps items in this process (gone when it exits). Safe to share between threads.

    Values are kept as their JSON text, so they behave exactly as a file-backed memory's do:
    what ``get`` returns is a fresh copy, never the object that was put.
    """

    def __init__(self, *, max_value_bytes: int = MAX_VALUE_BYTES) -> None:
        self.max_value_bytes = check_max_value_bytes(max_value_bytes, owner="InProcessMemory")
        # namespace -> key -> (json text, created_at, updated_at)
        self._items: dict[Namespace, dict[str, tuple[str, float, float]]] = {}
        self._guard = threading.Lock()

    def put(self, namespace: Sequence[str], key: str, value: JSONValue) -> None:
        ns = check_namespace(namespace)
        key = check_key(ns, key)
        text = encode_value(ns, key, value, max_bytes=self.max_value_bytes)
        now = time.time()
        with self._guard:
            keys = self._items.setdefault(ns, {})
            old = keys.get(key)
            keys[key] = (text, old[1] if old else now, now)

    def get(self, namespace: Sequence[str], key: str) -> MemoryItem | None:
        ns = check_namespace(namespace)
        key = check_key(ns, key)
        with self._guard:
            found = self._items.get(ns, {}).get(key)
        return None if found is None else _item(ns, key, found)

    def delete(self, namespace: Sequence[str], key: str) -> bool:
        ns = check_namespace(namespace)
        key = check_key(ns, key)
        with self._guard:
            keys = self._items.get(ns)
            if keys is None or key not in keys:
                return False
            del keys[key]
            if not keys:
                del self._items[ns]
            return True

    def search(
        self,
        namespace_prefix: Sequence[str] = (),
        *,
        filter: Mapping[str, JSONValue] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[MemoryItem]:
        prefix = check_prefix(namespace_prefix)
        check_filter(filter)
        limit, offset = check_page(limit, offset)
        size = len(prefix)
        with self._guard:
            found = [
                (ns, key, entry)
                for ns, keys in self._items.items()
                if ns[:size] == prefix
                for key, entry in keys.items()
            ]
        found.sort(key=lambda each: (each[0], each[1]))
        out: list[MemoryItem] = []
        skipped = 0
        for ns, key, entry in found:
            if len(out) >= limit:
                break
            item = _item(ns, key, entry)
            if not matches(item.value, filter):
                continue
            if skipped < offset:
                skipped += 1
                continue
            out.append(item)
        return out

    def __repr__(self) -> str:
        return f"InProcessMemory({sum(len(k) for k in self._items.values())} items)"


def _item(ns: Namespace, key: str, entry: tuple[str, float, float]) -> MemoryItem:
    text, created, updated = entry
    value: Any = decode_value(text)
    return MemoryItem(ns, key, value, created, updated)
