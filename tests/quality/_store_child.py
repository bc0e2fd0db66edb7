"""A child process for the cross-process store tests: ``python _store_child.py KIND WHERE CMD
DIR``. KIND is ``json`` (WHERE a folder) or ``pg`` (WHERE a URL). Progress goes to files in
DIR, which the parent polls: each appears whole (written aside, then renamed), so a parent
that sees one and kills this process at once still reads all of it."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from flowkit.quality.errors import SessionBusyError, StatePersistenceError, qc_code_for
from flowkit.quality.models import IterationPolicy, Principal
from flowkit.quality.store_contract import make_issue


def open_store(kind: str, where: str):  # type: ignore[no-untyped-def]
    if kind == "json":
        from flowkit.quality.stores.jsonfile import JsonWorkflowStateStore

        return JsonWorkflowStateStore(where, fsync=False)
    from flowkit.quality.stores.postgres import PostgresWorkflowStateStore

    return PostgresWorkflowStateStore(where)


def publish(path: Path, text: str) -> None:
    aside = path.with_name(f".{path.name}.tmp")
    aside.write_text(text)
    os.replace(aside, path)


def wait_for(path: Path) -> None:
    while not path.exists():
        time.sleep(0.01)


def main() -> None:
    kind, where, command, folder = sys.argv[1:5]
    out = Path(folder)
    me = Principal(user_id="aki")
    store = open_store(kind, where)
    if command == "race":  # begin a session on episode 1 when told to; hold it until told
        name = sys.argv[5]
        publish(out / f"{name}.ready", "")
        wait_for(out / "go")
        try:
            store.begin_session(1, IterationPolicy(), principal=me)
            store.commit()
            result = "ok"
        except SessionBusyError:
            result = "busy"
        publish(out / f"{name}.result", result)
        wait_for(out / "stop")
    elif command == "begin":  # begin a session on episode 1 once; say how it went, and exit
        try:
            store.begin_session(1, IterationPolicy(), principal=me)
            store.commit()
            result = "ok"
        except SessionBusyError:
            result = "busy"
        except StatePersistenceError as exc:
            result = str(qc_code_for(exc))
        store.close()
        publish(out / "begin.result", result)
    elif command == "stage":  # begin, commit, stage a unit, then wait to be killed
        session_id = store.begin_session(1, IterationPolicy(), principal=me).session_id
        store.commit()
        for n in range(5):
            store.record_issue(make_issue(session_id, n))
        publish(out / "session", session_id)
        time.sleep(60)
    elif command == "torn":  # commit 3 units, then stop halfway through writing the 4th
        from flowkit.quality.stores import _session_files

        session_id = store.begin_session(1, IterationPolicy(), principal=me).session_id
        store.commit()
        for n in range(3):
            store.record_issue(make_issue(session_id, n))
            store.commit()
        real = _session_files.write_all

        def half(fd: int, data: bytes, offset: int) -> None:
            real(fd, data[: len(data) // 2], offset)
            publish(out / "session", session_id)
            time.sleep(60)  # killed here, half a line written

        _session_files.write_all = half
        for n in range(3, 8):
            store.record_issue(make_issue(session_id, n))
        store.commit()
    elif command == "loop":  # commit units of 5 issues until killed
        session_id = store.begin_session(1, IterationPolicy(), principal=me).session_id
        store.commit()
        publish(out / "session", session_id)
        n = 0
        while True:
            for _ in range(5):
                store.record_issue(make_issue(session_id, n))
                n += 1
            store.commit()


if __name__ == "__main__":
    main()
