"""What the LangGraph routes share: the registry kept on the app, finding a thread that may
exist only in the registry (created empty) or only in the store (started elsewhere), and
reading the checkpoint a request names (its id is the thread's version, as text)."""

from __future__ import annotations

from typing import Any

from ...errors import ThreadNotFoundError
from ...runner._result import RunResult
from ...runner._runner import Runner
from ...stores._ids import check_thread_id
from ...stores._record_pages import record_page
from .._context import Server, open_thread
from .._problems import Problem
from .._security import Action
from ._registry import Registry, ThreadInfo

__all__ = [
    "Opened",
    "asked_checkpoint",
    "checkpoint_version",
    "find_thread",
    "own_checkpoint",
    "registry_of",
    "times_of",
]

#: A thread a flow ran on: its runner and where it stands.
Opened = tuple[Runner[Any], RunResult[Any]]


def registry_of(request: Any) -> Registry:
    found: Registry = request.app.state.flowkit_langgraph
    return found


def find_thread(
    server: Server, registry: Registry, principal: str | None, action: Action, thread_id: str
) -> tuple[ThreadInfo | None, Opened | None]:
    """The thread as the registry knows it, and its runner and state once a flow ran on it;
    a thread neither knows is a 404 (``ThreadNotFoundError``)."""
    check_thread_id(thread_id)
    info = registry.thread(thread_id)
    try:
        return info, open_thread(server, principal, action, thread_id)
    except ThreadNotFoundError:
        if info is None:
            raise
        return info, None


def times_of(server: Server, thread_id: str) -> tuple[float, float]:
    """When the thread's journal began and when it last changed."""
    store = server.served.store
    first = record_page(store, thread_id, limit=1, offset=0).records
    last = record_page(store, thread_id, limit=1).records
    return (first[0].ts if first else 0.0), (last[-1].ts if last else 0.0)


def checkpoint_version(checkpoint_id: str | None) -> int | None:
    """The version a checkpoint id names (``None``: none named); a 422 for an id this server
    never gave (ASCII digits only: ``str.isdigit`` takes ``²`` and ``١`` too)."""
    if checkpoint_id is None or checkpoint_id == "":
        return None
    if not (checkpoint_id.isascii() and checkpoint_id.isdigit()):
        raise Problem(
            422,
            "invalid_request",
            f"`{checkpoint_id:.40}` is not a checkpoint id of this server: they are versions "
            "(`checkpoint.checkpoint_id` of a state or history entry).",
        )
    digits = checkpoint_id.lstrip("0")
    if len(digits) > len(str(_PAST_EVERY_VERSION)):  # no int() of thousands of digits
        return _PAST_EVERY_VERSION
    return min(int(checkpoint_id), _PAST_EVERY_VERSION)


#: What an id past any version a thread can reach stands for (the largest 64-bit version).
_PAST_EVERY_VERSION = 2**63 - 1


def asked_checkpoint(
    thread_id: str, checkpoint_id: str | None, checkpoint: dict[str, Any] | None
) -> int | None:
    """The version a request on ``thread_id`` names by ``checkpoint_id`` or by a
    ``checkpoint`` (its ``checkpoint_id``), the first if both; a checkpoint of another thread
    is a 404 (see ``own_checkpoint``)."""
    if checkpoint_id:
        return checkpoint_version(checkpoint_id)
    own_checkpoint(thread_id, checkpoint)
    wanted = (checkpoint or {}).get("checkpoint_id")
    return checkpoint_version(None if wanted is None else str(wanted))


def own_checkpoint(thread_id: str, checkpoint: dict[str, Any] | None) -> None:
    """A 404 ``checkpoint_not_found`` for a checkpoint (or config) whose ``thread_id`` names
    another thread: ids are versions, so another thread's would name some other position of
    this one (a copy's versions start again at 0). Without a ``thread_id``, it is this one's;
    a config naming no checkpoint names none, whatever its ``thread_id``."""
    given = checkpoint or {}
    named, wanted = given.get("thread_id"), given.get("checkpoint_id")
    if wanted not in (None, "") and named not in (None, "", thread_id):
        raise Problem(
            404,
            "checkpoint_not_found",
            f"The checkpoint named is another thread's, not one of thread `{thread_id}`; take "
            "it from this thread's state or history.",
        )
