"""JsonFileMemory: long-term memory as one small JSON file per item, under a folder.

A namespace is a folder per label and an item a file in the innermost one, so a prefix search
reads only that part of the tree. Names are made safe from any text: letters are kept in
lower case, every other character is percent-encoded (so ``../x``, ``CON`` or ``A`` versus
``a`` cannot escape the folder or collide on case-insensitive disks), and a long name is cut
and ended with a hash; each file also holds its real namespace and key. Files are replaced
atomically, and writers in several processes take turns on one lock file.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import CorruptStoreError, StoreError
from ..foundation._atomic import write_atomically
from ..foundation._store_folder import create_store_folder
from ..foundation._untrusted import parse_json
from ._checks import (
    MAX_DEPTH,
    MAX_VALUE_BYTES,
    check_filter,
    check_key,
    check_max_value_bytes,
    check_namespace,
    check_page,
    check_prefix,
    encode_value,
    matches,
    value_problem,
)
from ._protocol import JSONValue, MemoryItem, Namespace

__all__ = ["JsonFileMemory"]

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
#: Longest encoded name kept whole; longer ones are cut and ended with a hash.
_MAX_NAME = 120
_FORMAT = 1


def safe_name(label: str) -> str:
    """A file-name form of ``label`` that is one-to-one, case-safe and never a path."""
    out = "".join(
        ch if ch in _SAFE else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in label
    )
    if len(out) > _MAX_NAME:
        digest = hashlib.sha256(label.encode("utf-8")).hexdigest()[:32]
        out = f"{out[:60]}~{digest}"
    return out


class JsonFileMemory:
    """Items as files under ``root`` (created if missing). ``fsync=False`` trades durability
    on power loss for speed; ``max_value_bytes`` caps one value's JSON form."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        fsync: bool = True,
        max_value_bytes: int = MAX_VALUE_BYTES,
    ) -> None:
        if not isinstance(root, str | os.PathLike):
            raise StoreError(
                f"JsonFileMemory takes the folder to keep items in (a str or Path), not a "
                f"{type(root).__name__}."
            )
        if not isinstance(fsync, bool):
            raise StoreError(f"JsonFileMemory fsync must be True or False, not {fsync!r}.")
        self.root = Path(root)
        self.fsync = fsync
        self.max_value_bytes = check_max_value_bytes(max_value_bytes, owner="JsonFileMemory")
        create_store_folder(self.root, what="memory")
        self._guard = threading.Lock()

    def __repr__(self) -> str:
        return f"JsonFileMemory({str(self.root)!r})"

    # -- paths and locking -------------------------------------------------------------------

    def _folder(self, namespace: Namespace) -> Path:
        return self.root.joinpath(*(f"n_{safe_name(label)}" for label in namespace))

    def _path(self, namespace: Namespace, key: str) -> Path:
        return self._folder(namespace) / f"k_{safe_name(key)}.json"

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Writers take turns, in this process and across processes (a blocking flock)."""
        path = self.root / ".lock"
        with self._guard:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise _os_error("open the lock file", path, exc) from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    # -- the protocol ------------------------------------------------------------------------

    def put(self, namespace: Sequence[str], key: str, value: JSONValue) -> None:
        ns = check_namespace(namespace)
        key = check_key(ns, key)
        text = encode_value(ns, key, value, max_bytes=self.max_value_bytes)
        path = self._path(ns, key)
        with self._writing():
            try:
                old = self._read(path)
            except CorruptStoreError:
                old = None  # a damaged item is replaced by the new one
            now = time.time()
            created = old.created_at if old is not None and old.key == key else now
            head = json.dumps(
                {"v": _FORMAT, "namespace": list(ns), "key": key, "created_at": created},
                ensure_ascii=False,
            )
            data = f'{head[:-1]},"updated_at":{now!r},"value":{text}}}\n'
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomically(path, data, fsync=self.fsync, private=True)
            except OSError as exc:
                raise _os_error("write", path, exc) from exc

    def get(self, namespace: Sequence[str], key: str) -> MemoryItem | None:
        ns = check_namespace(namespace)
        key = check_key(ns, key)
        path = self._path(ns, key)
        item = self._read(path)
        if item is not None and (item.namespace, item.key) != (ns, key):
            # Names are one-to-one (a 128-bit digest past _MAX_NAME), so a file naming another
            # item was copied or damaged: report it rather than answer "no such item".
            raise CorruptStoreError(
                "Memory item file names another item; a put or delete of this item replaces it",
                thread_id=None,
                path=str(path),
            )
        return item

    def delete(self, namespace: Sequence[str], key: str) -> bool:
        ns = check_namespace(namespace)
        key = check_key(ns, key)
        path = self._path(ns, key)
        with self._writing():
            try:
                path.unlink()
            except FileNotFoundError:
                return False
            except OSError as exc:
                raise _os_error("delete", path, exc) from exc
            self._prune_folders(path.parent)
        return True

    def _prune_folders(self, folder: Path) -> None:
        """Remove namespace folders left empty (under the write lock, so no put races it)."""
        while folder != self.root:
            try:
                folder.rmdir()
            except OSError:
                return  # not empty (or not ours to remove): stop here
            folder = folder.parent

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
        if limit == 0:
            return []
        found: list[MemoryItem] = []
        for path in self._files(self._folder(prefix)):
            item = self._read(path)
            if item is not None and item.namespace[: len(prefix)] == prefix:
                found.append(item)
        found.sort(key=lambda item: (item.namespace, item.key))
        kept = [item for item in found if matches(item.value, filter)]
        return kept[offset : offset + limit]

    def _files(self, folder: Path) -> Iterator[Path]:
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise _os_error("list", folder, exc) from exc
        for entry in entries:
            if entry.name.startswith("k_") and entry.name.endswith(".json"):
                yield Path(entry.path)
            elif entry.name.startswith("n_") and entry.is_dir(follow_symlinks=False):
                yield from self._files(Path(entry.path))

    def _read(self, path: Path) -> MemoryItem | None:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _os_error("read", path, exc) from exc
        try:
            # The depth limit keeps json's RecursionError away; a value nests MAX_DEPTH deep.
            data: Any = parse_json(raw, what="memory item", max_bytes=None, max_depth=MAX_DEPTH + 1)
            version = data["v"]
            item = _item_of(data) if version == _FORMAT else None
        except (ValueError, TypeError, KeyError, ArithmeticError, StoreError) as exc:
            raise CorruptStoreError(
                f"Memory item file cannot be read ({type(exc).__name__}); other items are "
                "unaffected, and a put or delete of this item replaces it",
                thread_id=None,
                path=str(path),
            ) from exc
        if item is None:
            raise CorruptStoreError(
                f"Memory item file has format {version!r:.20}, not v{_FORMAT}: another flowkit "
                "version wrote it; upgrade flowkit to read it",
                thread_id=None,
                path=str(path),
            )
        return item


def _item_of(data: Any) -> MemoryItem:
    """The item a file's data holds; ``TypeError``/``ValueError``/``KeyError`` (or a
    ``MemoryItemError``) when it is not a whole, valid item."""
    if type(data["namespace"]) is not list:
        raise TypeError("the namespace is not a list")
    item = MemoryItem(
        tuple(data["namespace"]),
        data["key"],
        data["value"],
        float(data["created_at"]),
        float(data["updated_at"]),
    )
    check_namespace(item.namespace)
    check_key(item.namespace, item.key)
    if value_problem(item.value) is not None:  # e.g. NaN: never handed out as a value
        raise ValueError("the value is not one JSON can carry exactly")
    return item


def _os_error(action: str, path: Path, exc: OSError) -> StoreError:
    return StoreError(
        f"Cannot {action} {path}: {exc.strerror or exc}. Fix the permissions or free disk "
        "space, then retry.",
        path=str(path),
    )
