"""Thread id rules shared by every store: ids become file names and keys, so they stay tame."""

from __future__ import annotations

import re

from ..errors import InvalidThreadIdError

__all__ = ["MAX_THREAD_ID", "check_thread_id", "is_thread_id"]

MAX_THREAD_ID = 128
_ALLOWED = re.compile(r"[A-Za-z0-9_@:-][A-Za-z0-9_.@:-]*")


#: Ids that passed lately. A step checks its thread's id several times (store, lock, cache);
#: the rules are pure, so an id seen to pass needs one set lookup after that. Bounded:
#: cleared whole when full, which costs one re-check per id.
_PASSED: set[str] = set()
_PASSED_MAX = 4096


def check_thread_id(thread_id: object) -> str:
    """Return ``thread_id`` if it is safe as a file name and key; else ``InvalidThreadIdError``."""
    if type(thread_id) is str and thread_id in _PASSED:
        return thread_id
    if not isinstance(thread_id, str):
        raise InvalidThreadIdError(repr(thread_id), "it must be a string")
    if not thread_id:
        raise InvalidThreadIdError(thread_id, "it is empty")
    if len(thread_id) > MAX_THREAD_ID:
        raise InvalidThreadIdError(thread_id, f"it is longer than {MAX_THREAD_ID} characters")
    if ".." in thread_id or "/" in thread_id or "\\" in thread_id:
        raise InvalidThreadIdError(thread_id, "it could name a path outside the store")
    if thread_id.startswith("."):  # hidden files, and the store's own tombstones
        raise InvalidThreadIdError(thread_id, "it starts with '.'")
    if not _ALLOWED.fullmatch(thread_id):
        raise InvalidThreadIdError(thread_id, "it has characters outside the allowed set")
    if type(thread_id) is str:  # never a str subclass: its __eq__/__hash__ could lie
        if len(_PASSED) >= _PASSED_MAX:
            _PASSED.clear()
        _PASSED.add(thread_id)
    return thread_id


def is_thread_id(name: str) -> bool:
    """Whether a file name found in the store is a valid thread id (strays are skipped)."""
    try:
        check_thread_id(name)
    except InvalidThreadIdError:
        return False
    return True
