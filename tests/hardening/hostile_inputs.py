"""Hostile values through the public entry points, on both stores.

Each value goes into a stored state through ``Runner.start``, ``Runner.resume`` (a gate's
input) and ``Runner.update_state``. Accepted, it must come back exactly from a new store
object (same types all the way down); refused, it must be a flowkit error with nothing
written. Hostile thread ids, gates, versions and patch arguments are refused before any file
or row exists, and never name a path outside the store.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from flowkit import Runner
from flowkit.errors import FlowkitError, ThreadNotFoundError

from ._flows import BOX, same
from ._stores import KINDS, new_id, opener
from .registry import OK, add, expect

MB = 1024 * 1024


def _nested(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        node.append([])
        node = node[0]
    return root


NOT_JSON = (
    "found by the campaign: a value JSON gives back changed (list, str keys, str) in an `Any` "
    "field must be refused before the write, or it differs after a resume elsewhere"
)
#: name -> (value, the fix it guards, or None)
VALUES: dict[str, tuple[Any, str | None]] = {
    "empty string": ("", None),
    "4 MB string": ("x" * (4 * MB), None),
    "lone surrogate": ("caf\udce9", None),
    "surrogate pair halves reversed": ("\udc00\ud800", None),
    "NUL bytes": ("a\x00b\x00", None),
    "control, bidi and BOM characters": ("\x1b[2J\u202e\ufeff\r\n\t", None),
    "non-characters": ("\uffff\U0010ffff", None),
    "nested 60 deep": (_nested(60), None),
    "nested 10,000 deep": (_nested(10_000), None),
    "dict nested 10,000 deep": ({"a": {"b": _nested(9_998)}}, None),
    "20,000 keys": ({f"k{i}": i for i in range(20_000)}, None),
    "NaN": (float("nan"), None),
    "infinity": (float("inf"), None),
    "NaN inside a list": ([1.0, float("nan")], None),
    "negative zero": (-0.0, None),
    "smallest subnormal float": (5e-324, None),
    "2**63 and -2**64": ([2**63, -(2**64)], None),
    "int of 4,300 digits": (10**4299, None),
    "int of 5,000 digits": (10**4999, "issue 23 item 8"),
    "bool, None and numbers mixed": ([True, None, 0, 0.5, "1"], None),
    "bytes": (b"\x00\xff", None),
    "a set": ({1, 2}, NOT_JSON),
    "a tuple": ((1, 2), NOT_JSON),
    "int dict keys": ({1: "one"}, NOT_JSON),
    "a datetime": (datetime(2024, 1, 2, tzinfo=UTC), NOT_JSON),
    "a Decimal": (Decimal("1.10"), NOT_JSON),
    "an object": (object(), None),
    "a self-referencing list": (None, None),  # built below: it cannot be a literal
}
_loop: list[Any] = []
_loop.append(_loop)
VALUES["a self-referencing list"] = (_loop, None)


def _runner(open_store: Callable[[], Any]) -> Runner[Any]:
    return Runner(BOX, store=open_store())


def _read_back(open_store: Callable[[], Any], thread_id: str) -> Any:
    """The thread as a new store object sees it, and its whole history read."""
    with open_store() as store:
        runner: Runner[Any] = Runner(BOX, store=store)
        result = runner.get_state(thread_id)
        history = runner.history(thread_id)
        expect(history[-1].version == result.version, "history ends elsewhere than the state")
        return result


def _entry_case(kind: str, entry: str, field: str, value: Any) -> Callable[[Path], str]:
    def run(tmp: Path) -> str:
        open_store = opener(kind, tmp)
        thread_id = new_id()
        with open_store() as store:
            runner: Runner[Any] = Runner(BOX, store=store)
            before = None
            if entry != "start":
                before = runner.start(thread_id)
            try:
                if entry == "start":
                    result = runner.start(thread_id, {field: value})
                elif entry == "resume":
                    result = runner.resume(thread_id, {field: value})
                else:
                    result = runner.update_state(thread_id, {field: value}, reason="hardening")
            except FlowkitError:
                _nothing_written(open_store, thread_id, before)
                raise
        expect(same(getattr(result.state, field), value), "the run's own state differs")
        stored = _read_back(open_store, thread_id)
        expect(stored.version == result.version, f"version {stored.version}, not {result.version}")
        expect(same(getattr(stored.state, field), value), "read back different")
        return OK

    return run


def _nothing_written(open_store: Callable[[], Any], thread_id: str, before: Any) -> None:
    try:
        now = _read_back(open_store, thread_id)
    except ThreadNotFoundError:
        expect(before is None, "the thread vanished after a refused call")
        return
    expect(before is not None, "a refused start left a thread behind")
    expect(now.version == before.version, "a refused call wrote a record")


for _kind in KINDS:
    _needs = "postgres" if _kind == "postgres" else None
    for _name, (_value, _known) in VALUES.items():
        _fields = ["data", "text"] if isinstance(_value, str) else ["data"]
        for _entry in ("start", "resume", "update_state"):
            for _field in _fields:
                add(
                    f"hostile/{_kind}/{_entry}/{_field}={_name}",
                    _entry_case(_kind, _entry, _field, _value),
                    needs=_needs,
                    known=_known,
                    # One entry point on PostgreSQL in the default run; all of them when slow.
                    slow=_kind == "postgres" and _entry != "start",
                )


# -- hostile thread ids, gates, versions and patch arguments ---------------------------------

THREAD_IDS: dict[str, Any] = {
    "parent path": "../x",
    "deeper parent path": "../../../../tmp/x",
    "dot dot": "..",
    "dot": ".",
    "hidden": ".x",
    "slash": "a/b",
    "backslash": "a\\b",
    "absolute path": "/etc/passwd",
    "empty": "",
    "NUL": "a\x00b",
    "newline": "a\nb",
    "trailing newline": "ab\n",
    "space": "a b",
    "non-ASCII letter": "caf\u00e9",
    "fullwidth digits": "\uff11\uff12",
    "lone surrogate": "\udce9",
    "129 characters": "x" * 129,
    "100,000 characters": "x" * 100_000,
    "an int": 7,
    "None": None,
    "bytes": b"t1",
    "a str subclass": type("Sneaky", (str,), {})("t1"),
}


def _thread_id_case(kind: str, thread_id: Any) -> Callable[[Path], str]:
    def run(tmp: Path) -> str:
        open_store = opener(kind, tmp)
        with open_store() as store:
            runner: Runner[Any] = Runner(BOX, store=store)
            try:
                runner.start(thread_id)
            except FlowkitError:
                if kind == "jsonfile":
                    _inside_only(tmp)
                raise
        if kind == "jsonfile":
            _inside_only(tmp)
        stored = _read_back(open_store, thread_id)
        expect(stored.state.count == 1, "read back different")
        return OK

    return run


def _inside_only(tmp: Path) -> None:
    strays = [p.name for p in tmp.iterdir() if p.name != "store"]
    expect(not strays, f"files outside the store: {strays}")


for _kind in KINDS:
    for _name, _thread_id in THREAD_IDS.items():
        add(
            f"hostile/{_kind}/thread id={_name}",
            _thread_id_case(_kind, _thread_id),
            needs="postgres" if _kind == "postgres" else None,
        )


#: name -> what is called on a thread waiting at gate ``inbox`` (version 1).
CALLS: dict[str, Callable[[Runner[Any], str], Any]] = {
    "resume with a list": lambda r, t: r.resume(t, [1, 2]),
    "resume with a string": lambda r, t: r.resume(t, "text"),
    "resume with a 10,000-deep input": lambda r, t: r.resume(t, {"data": _nested(10_000)}),
    "resume at a gate named ../x": lambda r, t: r.resume(t, {}, gate="../x"),
    "resume at a gate that is an int": lambda r, t: r.resume(t, {}, gate=3),  # type: ignore[arg-type]
    "resume expecting version -1": lambda r, t: r.resume(t, {}, expected_version=-1),
    "resume expecting version 2**70": lambda r, t: r.resume(t, {}, expected_version=2**70),
    "resume expecting version '1'": lambda r, t: r.resume(t, {}, expected_version="1"),  # type: ignore[arg-type]
    "resume expecting version NaN": lambda r, t: r.resume(t, {}, expected_version=float("nan")),  # type: ignore[arg-type]
    "patch an unknown field": lambda r, t: r.update_state(t, {"nope": 1}),
    "patch a field with a wrong type": lambda r, t: r.update_state(t, {"count": "many"}),
    "patch going to ../x": lambda r, t: r.update_state(t, {}, goto="../x"),
    "patch with a 4 MB reason": lambda r, t: r.update_state(t, {}, reason="r" * (4 * MB)),
    "patch with a surrogate reason": lambda r, t: r.update_state(t, {}, reason="\udce9"),
    "patch with a NUL actor": lambda r, t: r.update_state(t, {}, actor="a\x00b"),
    "patch with an actor that is a dict": lambda r, t: r.update_state(t, {}, actor={"a": 1}),  # type: ignore[arg-type]
    "patch with a reason that is a list": lambda r, t: r.update_state(t, {}, reason=["r"]),  # type: ignore[arg-type]
    "fork to ../x": lambda r, t: r.fork(t, "../x"),
    "fork at 2**70": lambda r, t: r.fork(t, new_id(), at=2**70),
    "fork at -1": lambda r, t: r.fork(t, new_id(), at=-1),
    "history of ../x": lambda r, t: r.history("../x"),
    "delete ../x": lambda r, t: r.delete("../x"),
}


def _call_case(kind: str, call: Callable[[Runner[Any], str], Any]) -> Callable[[Path], str]:
    def run(tmp: Path) -> str:
        open_store = opener(kind, tmp)
        thread_id = new_id()
        with open_store() as store:
            runner: Runner[Any] = Runner(BOX, store=store)
            before = runner.start(thread_id)
            try:
                call(runner, thread_id)
            except FlowkitError:
                _nothing_written(open_store, thread_id, before)
                raise
            finally:
                if kind == "jsonfile":
                    _inside_only(tmp)
        # Accepted: whatever it wrote reads back whole, from a new store object.
        after = _read_back(open_store, thread_id)
        expect(after.version >= before.version, "the thread went back")
        return OK

    return run


for _kind in KINDS:
    for _name, _call in CALLS.items():
        add(
            f"hostile/{_kind}/{_name}",
            _call_case(_kind, _call),
            needs="postgres" if _kind == "postgres" else None,
        )
