"""Node caching: a node whose declared reads hold the same values as before is not run again;
the update it returned then is applied instead (``@node(reads=..., cache=CachePolicy(...))``).
A ``Map`` whose function has a cache caches each call: its key also holds the call's item
(an item with no JSON form is never cached: its call runs).

Entries live in a ``flowkit.memory.Memory`` (``Runner(cache=...)``; by default an
``InProcessMemory`` of the runner), one item per flow, node and key, holding the update's JSON
form and when it was made. The key is a hash of the flow's name, the node's name, the policy's
``version`` and the JSON form of each field the node reads, so it is the same in every process.
A cache that fails (full, unreadable, or holding an entry the flow can no longer use)
only costs a run of the node, never the run.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from ..definition._jsonform import dump_update
from ..definition._node import check_update
from ..errors import FlowkitError, StoreError
from ._cursor import Outcome
from ._port import RunPort
from ._steps import attempts, check_writes

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..definition._node import Node
    from ._cursor import AttemptSteps, Cursor

__all__ = ["NAMESPACE", "NO_ITEM", "cached_update", "remember_update", "run_cached", "usable"]

#: The namespace of cache entries in the memory: ``(NAMESPACE, flow name, node name)``.
NAMESPACE = "flowkit.cache"
#: ``cached_update``'s ``item`` for a node that is not a ``Map`` call.
NO_ITEM: Any = object()


def _key(runner: RunPort, name: str, node: Node, state: BaseModel, item: Any) -> str | None:
    """The hash of what the call depends on; ``None`` for an item with no JSON form."""
    assert node.reads is not None and node.cache is not None
    fields = runner.flow.schema.fields
    reads = {
        field: fields[field].adapter.dump_python(getattr(state, field), mode="json")
        for field in sorted(node.reads)
    }
    parts = [runner.flow.name, name, node.cache.version, reads]
    if item is not NO_ITEM:
        try:
            parts.append(to_jsonable_python(item))
        except PydanticSerializationError:
            return None
    try:
        text = json.dumps(
            parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError):
        return None  # an item JSON cannot hold as it is (a NaN, a key that is no string)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def cached_update(
    runner: RunPort,
    thread_id: str,
    name: str,
    node: Node,
    state: BaseModel,
    item: Any = NO_ITEM,
) -> tuple[str | None, Mapping[str, Any] | None]:
    """The cache key for this call (with ``item``: a ``Map`` call's), and the update cached
    under it if still good; no key (and no update) for an item with no JSON form."""
    assert node.cache is not None
    key = _key(runner, name, node, state, item)
    if key is None:
        return None, None
    try:
        item = runner._cache_memory().get((NAMESPACE, runner.flow.name, name), key)
    except StoreError as exc:
        _warn(runner, "node_cache_unreadable", thread_id, name, exc)
        return key, None
    if item is None:
        return key, None
    entry = _entry(item.value)
    if entry is None:
        _warn_unusable(runner, thread_id, name, "not a cache entry")
        return key, None
    at, update = entry
    ttl = node.cache.seconds
    if ttl is not None and runner.clock().timestamp() - at > ttl:
        return key, None
    return key, update


def _entry(value: Any) -> tuple[float, dict[str, Any]] | None:
    """When an entry was made and its update, or ``None`` if ``value`` is not an entry (a
    cache shared with other programs, or damaged)."""
    if type(value) is not dict or type(value.get("update")) is not dict:
        return None
    at = value.get("at")
    if type(at) is int and abs(at) <= 2**53:  # JSON may write a whole float as an int
        at = float(at)
    if type(at) is not float or not math.isfinite(at):
        return None
    return at, value["update"]


def remember_update(
    runner: RunPort, thread_id: str, name: str, key: str, update: Mapping[str, Any]
) -> None:
    """Keep a node's update (the normalised form it was applied in) under ``key``."""
    try:
        stored = dump_update(runner.flow.schema, update, thread_id=thread_id, who=name)
        entry = {"at": runner.clock().timestamp(), "update": stored}
        runner._cache_memory().put((NAMESPACE, runner.flow.name, name), key, entry)
    except StoreError as exc:  # too big, unstorable, a full disk: the next run just runs
        _warn(runner, "node_cache_not_written", thread_id, name, exc)


def run_cached(
    runner: RunPort, thread_id: str, run_id: str, name: str, node: Node, cursor: Cursor
) -> AttemptSteps:
    """The cached update of node ``name`` for this state (``Outcome.cached``, attempts 0),
    or the node run as usual, its update then cached when it succeeded."""
    key, hit = cached_update(runner, thread_id, name, node, cursor.state)
    if hit is not None and usable(runner, thread_id, name, node, cursor.state, hit):
        return Outcome(hit, None, True), 0, []
    outcome, attempt, calls = yield from attempts(runner, thread_id, run_id, name, cursor)
    if outcome.error is None and key is not None:
        try:
            raw = check_update(outcome.value, name)
            check_writes(name, node.writes, raw)
            _, update = runner.flow.schema.apply(cursor.state, raw, node=name)
        except FlowkitError:
            pass  # the run reports it in a moment; nothing to cache
        else:
            remember_update(runner, thread_id, name, key, update)
    return outcome, attempt, calls


def usable(
    runner: RunPort,
    thread_id: str,
    name: str,
    node: Node,
    state: BaseModel,
    hit: Mapping[str, Any],
) -> bool:
    """Whether a cached update still fits the flow (an entry from before the flow changed may
    not: then it is reported, and the node runs and replaces it)."""
    try:
        check_writes(name, node.writes, hit)
        runner.flow.schema.apply(state, hit, node=name)
    except FlowkitError as exc:
        _warn_unusable(runner, thread_id, name, type(exc).__name__)
        return False
    return True


def _warn(runner: RunPort, event: str, thread_id: str, node: str, exc: Exception) -> None:
    runner._log.warning(event, thread_id=thread_id, node=node, error_type=type(exc).__name__)


def _warn_unusable(runner: RunPort, thread_id: str, node: str, reason: str) -> None:
    """An entry under this node's key that it cannot use: the node runs and replaces it."""
    runner._log.warning("node_cache_unusable", thread_id=thread_id, node=node, reason=reason)
