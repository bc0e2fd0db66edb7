"""Damaged stores: files and rows changed behind flowkit's back, then the thread loaded.

Every damage is done to a copy of a 14-record thread (``box``: start, then six gate inputs,
each followed by a step; snapshots along the way). The thread must then load as exactly
the state of some version no older than the last record the damage left whole (a torn tail
is what a crash leaves; anything else must not cost a committed record), with its whole
history, and take a new step that reads back; or the load is a ``CorruptStoreError`` (or
``ThreadNotFoundError`` where the thread's start is gone).
"""

from __future__ import annotations

import atexit
import random
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from flowkit import Runner

from ._flows import BOX, same
from ._stores import new_id, opener, pg_rows
from .registry import OK, add, expect

INPUTS = 6
#: Small thresholds, so the thread has a snapshot part-way through its history.
SNAPSHOTS = {"min_snapshot_bytes": 600, "snapshot_ratio": 1.0}


@dataclass(frozen=True)
class Pristine:
    """The state, status and node after each version of the undamaged thread."""

    states: list[tuple[dict[str, Any], str, str]]

    @property
    def last(self) -> int:
        return len(self.states) - 1


def _build(runner: Runner[Any], thread_id: str) -> Pristine:
    runner.start(thread_id)
    for index in range(INPUTS):
        runner.resume(thread_id, {"text": f"p{index}", "data": {"n": index}})
    history = runner.history(thread_id)
    return Pristine([(c.state.model_dump(), c.status, c.next) for c in history])


def judge(open_store: Callable[[], Any], thread_id: str, pristine: Pristine, floor: int) -> str:
    """Load the damaged thread, check it against ``pristine``, step it on and read it back.

    ``floor``: the newest version the damage left whole; loading an older one without an
    error drops a committed record silently."""
    with open_store() as store:
        runner: Runner[Any] = Runner(BOX, store=store)
        result = runner.get_state(thread_id)
        version = result.version
        expect(0 <= version <= pristine.last, f"loaded version {version}, never written")
        got = (result.state.model_dump(), result.status, result.node)
        expect(same(got, pristine.states[version]), f"the state at version {version} differs")
        expect(version >= floor, f"loaded version {version}, but version {floor} is whole")
        history = runner.history(thread_id)
        expect(history[-1].version == version, "history ends elsewhere than the state")
        for checkpoint in history:
            at = checkpoint.version
            seen = (checkpoint.state.model_dump(), checkpoint.status, checkpoint.next)
            expect(same(seen, pristine.states[at]), f"history differs at version {at}")
        stepped = runner.resume(
            thread_id, {"text": "after"} if result.status == "waiting" else None
        )
    with open_store() as store:
        again: Runner[Any] = Runner(BOX, store=store)
        now = again.get_state(thread_id)
        expect(now.version == stepped.version, f"the new step read back at {now.version}")
        expect(same(now.state.model_dump(), stepped.state.model_dump()), "new step differs")
        kept = [c for c in again.history(thread_id) if c.version <= version]
        expect(bool(kept) and kept[-1].version == version, "the new step lost what it built on")
    return OK


# -- the JSON-file store -----------------------------------------------------------------------


@cache
def _template() -> tuple[Path, Pristine]:
    """A store holding the undamaged thread ``t``, made once per process, removed at exit."""
    root = Path(tempfile.mkdtemp(prefix="hardening-template-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    with opener("jsonfile", root, preallocate=4096, **SNAPSHOTS)() as store:
        pristine = _build(Runner(BOX, store=store), "t")
    assert (root / "store" / "threads" / "t" / "snapshot.json").exists()
    return root / "store", pristine


@dataclass
class Thread:
    """The files of the damaged copy, and its records' lines (zeros of the tail left out)."""

    folder: Path

    @property
    def journal(self) -> Path:
        return self.folder / "journal.jsonl"

    @property
    def snapshot(self) -> Path:
        return self.folder / "snapshot.json"

    def lines(self) -> list[bytes]:
        return self.journal.read_bytes().rstrip(b"\0").splitlines(keepends=True)

    def write_lines(self, lines: list[bytes]) -> None:
        self.journal.write_bytes(b"".join(lines))


#: A damage changes the thread's files and returns the newest version it left whole.
Damage = Callable[[Thread, Pristine], int]


def _file_case(damage: Damage) -> Callable[[Path], str]:
    def run(tmp: Path) -> str:
        template, pristine = _template()
        shutil.copytree(template, tmp / "store")
        floor = damage(Thread(tmp / "store" / "threads" / "t"), pristine)
        return judge(opener("jsonfile", tmp), "t", pristine, floor)

    return run


def truncate_at(fraction: float, *, inside: str = "journal") -> Damage:
    def damage(thread: Thread, pristine: Pristine) -> int:
        data = b"".join(thread.lines())
        cut = int(len(data) * fraction)
        thread.journal.write_bytes(data[:cut])
        return data[:cut].count(b"\n") - 1  # records whose line, newline and all, survived

    return damage


def truncate_before_last_newline(thread: Thread, pristine: Pristine) -> int:
    data = b"".join(thread.lines())
    thread.journal.write_bytes(data[:-1])  # a crash can tear a write just there
    return pristine.last - 1


def overwrite_last_newline(byte: bytes) -> Damage:
    def damage(thread: Thread, pristine: Pristine) -> int:
        data = thread.journal.read_bytes()
        end = len(data.rstrip(b"\0"))
        thread.journal.write_bytes(data[: end - 1] + byte + data[end:])
        return pristine.last

    return damage


def flip_byte(seed: int, target: str) -> Damage:
    def damage(thread: Thread, pristine: Pristine) -> int:
        path = thread.journal if target == "journal" else thread.snapshot
        data = b"".join(thread.lines()) if target == "journal" else path.read_bytes()
        rng = random.Random(seed)
        at = rng.randrange(len(data))
        path.write_bytes(data[:at] + bytes([data[at] ^ rng.randrange(1, 256)]) + data[at + 1 :])
        return pristine.last

    return damage


def random_truncation(seed: int) -> Damage:
    return truncate_at(random.Random(seed).random())


def edit_lines(edit: Callable[[list[bytes]], list[bytes]]) -> Damage:
    def damage(thread: Thread, pristine: Pristine) -> int:
        thread.write_lines(edit(thread.lines()))
        return pristine.last

    return damage


def _swap(lines: list[bytes], a: int, b: int) -> list[bytes]:
    lines[a], lines[b] = lines[b], lines[a]
    return lines


def _replace_inside(lines: list[bytes], index: int, old: bytes, new: bytes) -> list[bytes]:
    assert old in lines[index]
    lines[index] = lines[index].replace(old, new, 1)
    return lines


def remove(name: str) -> Damage:
    def damage(thread: Thread, pristine: Pristine) -> int:
        (thread.folder / name).unlink()
        return pristine.last

    return damage


def remove_folder(thread: Thread, pristine: Pristine) -> int:
    shutil.rmtree(thread.folder)
    return pristine.last


def write_file(name: str, content: bytes) -> Damage:
    def damage(thread: Thread, pristine: Pristine) -> int:
        (thread.folder / name).write_bytes(content)
        return pristine.last

    return damage


def zero_middle(thread: Thread, pristine: Pristine) -> int:
    data = b"".join(thread.lines())
    middle = len(data) // 2
    thread.journal.write_bytes(data[:middle] + b"\0" * 300 + data[middle + 300 :])
    return pristine.last


def journal_made_a_directory(thread: Thread, pristine: Pristine) -> int:
    thread.journal.unlink()
    thread.journal.mkdir()
    return pristine.last


def snapshot_of_an_older_version(thread: Thread, pristine: Pristine) -> int:
    text = thread.snapshot.read_bytes()
    thread.snapshot.write_bytes(text.replace(b'"version":12', b'"version":10', 1))
    return pristine.last


MB = 1024 * 1024
FILE_DAMAGES: dict[str, tuple[Damage, str | None]] = {
    "journal truncated to nothing": (truncate_at(0.0), None),
    "journal truncated inside the start record": (truncate_at(0.01), None),
    "journal truncated in the middle": (truncate_at(0.5), None),
    "journal truncated inside the last record": (truncate_at(0.98), None),
    "journal cut just before the last newline": (truncate_before_last_newline, None),
    "last newline overwritten with a space": (overwrite_last_newline(b" "), "issue 23 item 9"),
    "last newline overwritten with a letter": (overwrite_last_newline(b"x"), "issue 23 item 9"),
    "last newline overwritten with a zero": (overwrite_last_newline(b"\0"), "issue 23 item 9"),
    "garbage after the last record": (
        edit_lines(lambda ls: [*ls, b"garbage\n"]),
        "issue 23 item 9",
    ),
    "first line duplicated": (edit_lines(lambda ls: [ls[0], *ls]), None),
    "a middle line duplicated": (edit_lines(lambda ls: [*ls[:7], ls[6], *ls[7:]]), None),
    "last line duplicated": (edit_lines(lambda ls: [*ls, ls[-1]]), None),
    "two middle lines swapped": (edit_lines(lambda ls: _swap(ls, 4, 5)), None),
    "the last two lines swapped": (edit_lines(lambda ls: _swap(ls, -1, -2)), None),
    "a middle line removed": (edit_lines(lambda ls: [*ls[:5], *ls[6:]]), None),
    "the start line removed": (edit_lines(lambda ls: ls[1:]), None),
    "a middle line's text made invalid UTF-8": (
        edit_lines(lambda ls: _replace_inside(ls, 4, b'"p1"', b'"p\xff"')),
        None,
    ),
    "a middle line's text changed, still valid": (
        edit_lines(lambda ls: _replace_inside(ls, 4, b'"p1"', b'"p9"')),
        None,
    ),
    "a non-UTF-8 line appended": (edit_lines(lambda ls: [*ls, b"\xff\xfe\xfd\n"]), None),
    "a 4 MB line in the middle": (
        edit_lines(lambda ls: [*ls[:5], b"x" * (4 * MB) + b"\n", *ls[5:]]),
        None,
    ),
    "300 zero bytes in the middle": (zero_middle, None),
    "journal deleted": (remove("journal.jsonl"), None),
    "snapshot deleted": (remove("snapshot.json"), None),
    "thread folder deleted": (remove_folder, None),
    "snapshot emptied": (write_file("snapshot.json", b""), None),
    "snapshot is null": (write_file("snapshot.json", b"null"), None),
    "snapshot is {}": (write_file("snapshot.json", b"{}"), None),
    "snapshot is not UTF-8": (write_file("snapshot.json", b"\xff\xfe{}"), None),
    "snapshot claims an older version": (snapshot_of_an_older_version, None),
    "journal replaced by a directory": (journal_made_a_directory, None),
}

for _name, (_damage, _known) in FILE_DAMAGES.items():
    add(f"corruption/jsonfile/{_name}", _file_case(_damage), known=_known)
# Its size is the point: a depth check must stop at the first bracket past the limit.
add(
    "corruption/jsonfile/a 30 MB line of braces appended, no newline",
    _file_case(edit_lines(lambda ls: [*ls, b"{" * (30 * MB)])),
    slow=True,
    bound_s=180,
)
add(
    "corruption/jsonfile/a 30 MB line in the middle",
    _file_case(edit_lines(lambda ls: [*ls[:5], b"x" * (30 * MB) + b"\n", *ls[5:]])),
    slow=True,
)
for _seed in range(4):
    add(f"corruption/jsonfile/journal byte flip #{_seed}", _file_case(flip_byte(_seed, "journal")))
    add(f"corruption/jsonfile/snapshot byte flip #{_seed}", _file_case(flip_byte(_seed, "snap")))
    add(f"corruption/jsonfile/random truncation #{_seed}", _file_case(random_truncation(_seed)))
for _seed in range(4, 200):
    add(f"corruption/jsonfile/journal byte flip #{_seed}", _file_case(flip_byte(_seed, "journal")),
        slow=True)  # fmt: skip
    add(f"corruption/jsonfile/snapshot byte flip #{_seed}", _file_case(flip_byte(_seed, "snap")),
        slow=True)  # fmt: skip
    add(f"corruption/jsonfile/random truncation #{_seed}", _file_case(random_truncation(_seed)),
        slow=True)  # fmt: skip


# -- PostgreSQL --------------------------------------------------------------------------------

#: SQL run on a fresh 14-record thread (``%(t)s`` is its id, ``{s}`` the schema), and the
#: newest version it leaves whole.
ROW_DAMAGES: dict[str, tuple[list[str], int, str | None]] = {
    "a middle record row deleted": (
        ["DELETE FROM {s}.records WHERE thread_id = %(t)s AND version = 5"],
        13,
        "issue 23 item 10",
    ),
    "the last record row deleted": (
        ["DELETE FROM {s}.records WHERE thread_id = %(t)s AND version = 13"],
        13,
        "issue 23 item 10",
    ),
    "the start record row deleted": (
        ["DELETE FROM {s}.records WHERE thread_id = %(t)s AND version = 0"],
        13,
        "issue 23 item 10",
    ),
    "every record row deleted": (
        ["DELETE FROM {s}.records WHERE thread_id = %(t)s"],
        13,
        "issue 23 item 10",
    ),
    "the thread row deleted": (["DELETE FROM {s}.threads WHERE thread_id = %(t)s"], 13, None),
    "a record body is not JSON": (
        ["UPDATE {s}.records SET body = '{{nope' WHERE thread_id = %(t)s AND version = 6"],
        13,
        None,
    ),
    "a record body is not UTF-8": (
        [
            "UPDATE {s}.records SET body = '\\xfffe7b7d'::bytea "
            "WHERE thread_id = %(t)s AND version = 6"
        ],
        13,
        None,
    ),
    "a record body is empty": (
        ["UPDATE {s}.records SET body = '' WHERE thread_id = %(t)s AND version = 6"],
        13,
        None,
    ),
    "a record body is 30 MB of brackets": (
        [
            "UPDATE {s}.records SET body = convert_to(repeat('[', 30000000), 'UTF8') "
            "WHERE thread_id = %(t)s AND version = 6"
        ],
        13,
        None,
    ),
    "two record bodies swapped": (
        [
            "UPDATE {s}.records r SET body = o.body FROM {s}.records o WHERE r.thread_id = %(t)s "
            "AND o.thread_id = %(t)s AND ((r.version = 6 AND o.version = 8) "
            "OR (r.version = 8 AND o.version = 6))"
        ],
        13,
        None,
    ),
    "a record's kind changed": (
        ["UPDATE {s}.records SET kind = 'bogus' WHERE thread_id = %(t)s AND version = 6"],
        13,
        None,
    ),
    "a record moved to a later version": (
        ["UPDATE {s}.records SET version = 40 WHERE thread_id = %(t)s AND version = 13"],
        13,
        "issue 23 item 10",
    ),
    "thread version one ahead": (
        ["UPDATE {s}.threads SET version = version + 1 WHERE thread_id = %(t)s"],
        13,
        "issue 23 item 10",
    ),
    "thread version one behind": (
        ["UPDATE {s}.threads SET version = version - 1 WHERE thread_id = %(t)s"],
        13,
        "issue 23 item 10",
    ),
    "thread status says done": (
        ["UPDATE {s}.threads SET status = 'done' WHERE thread_id = %(t)s"],
        13,
        None,
    ),
    "thread status is nonsense": (
        ["UPDATE {s}.threads SET status = 'bogus' WHERE thread_id = %(t)s"],
        13,
        None,
    ),
    "thread's next node is nowhere": (
        ["UPDATE {s}.threads SET next = '../nowhere' WHERE thread_id = %(t)s"],
        13,
        None,
    ),
    "thread's flow renamed": (
        ["UPDATE {s}.threads SET flow = 'other' WHERE thread_id = %(t)s"],
        13,
        None,
    ),
    "snapshot body is not JSON": (
        ["UPDATE {s}.snapshots SET body = '{{nope' WHERE thread_id = %(t)s"],
        13,
        None,
    ),
    "snapshot body is JSON null": (
        ["UPDATE {s}.snapshots SET body = 'null' WHERE thread_id = %(t)s"],
        13,
        None,
    ),
    "snapshot claims version 999": (
        ["UPDATE {s}.snapshots SET version = 999 WHERE thread_id = %(t)s"],
        13,
        "issue 23 item 10",
    ),
    "snapshot row deleted": (["DELETE FROM {s}.snapshots WHERE thread_id = %(t)s"], 13, None),
    "snapshot of another thread": (
        [
            "UPDATE {s}.snapshots SET body = (SELECT body FROM {s}.snapshots "
            "WHERE thread_id = %(other)s) WHERE thread_id = %(t)s"
        ],
        13,
        None,
    ),
}


def _row_case(statements: list[str], floor: int) -> Callable[[Path], str]:
    def run(tmp: Path) -> str:
        open_store = opener("postgres", tmp, **SNAPSHOTS)
        thread_id, other = new_id(), new_id()
        with open_store() as store:
            pristine = _build(Runner(BOX, store=store), thread_id)
            Runner(BOX, store=store).start(other, {"text": "another thread", "count": 40})
            Runner(BOX, store=store).update_state(other, {"data": "forced snapshot " * 300})
            Runner(BOX, store=store).resume(other, {"text": "z"})
        assert pg_rows("SELECT 1 FROM {s}.snapshots WHERE thread_id = %s", thread_id)
        for sql in statements:
            _run_named(sql, t=thread_id, other=other)
        return judge(open_store, thread_id, pristine, floor)

    return run


def _run_named(sql: str, **params: str) -> None:
    import psycopg

    from ._stores import shared_schema

    url, schema = shared_schema()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.format(s=schema), params)


_SLOW_ROWS = {"a record body is 30 MB of brackets"}
for _name, (_sql, _floor, _known) in ROW_DAMAGES.items():
    add(f"corruption/postgres/{_name}", _row_case(_sql, _floor), needs="postgres", known=_known,
        slow=_name in _SLOW_ROWS)  # fmt: skip
