"""A child process for the fetch-preference tests: ``python _fetch_child.py KIND WHERE WORKSPACE
COMMAND ARG``. KIND is ``json`` (WHERE a folder) or ``pg`` (WHERE a URL).

``record MANUSCRIPT``: begin a session on episode 1 and fetch the manuscript through the
workspace's chain (its artifact cache is empty, so ``read_snapshot`` succeeds); the attempts
are committed to the store; prints the session id. ``fetch SESSION`` (or ``fetch new``: a new
session on episode 2) fetches that session's manuscript with fresh services and prints the
tools tried, in order."""

from __future__ import annotations

import sys
from pathlib import Path

from flowkit.quality.models import IterationPolicy, Principal, sha256_text
from flowkit.quality.services import Workspace

from ._store_child import open_store

AKI = Principal(user_id="aki")


def main() -> None:
    kind, where, root, command, arg = sys.argv[1:6]
    store = open_store(kind, where)
    workspace = Workspace(root, fsync=False)
    try:
        if command == "record":
            digest = sha256_text(Path(arg).read_text(encoding="utf-8"))
            workspace.remember_source(digest, arg)
            sid = store.begin_session(
                1, IterationPolicy(), principal=AKI, manuscript_hash=digest
            ).session_id
            store.commit()
            services = workspace.services(AKI, store=store)
            services.text(digest, session_id=sid)
            for log in services.drain_fetch_logs():
                store.append_fetch_log(log)
            store.commit()
            print(sid)
            return
        if arg == "new":
            digest = store.get_session(
                store.sessions(principal=AKI)[-1].session_id, principal=AKI
            ).manuscript_hash
            assert digest is not None
            arg = store.begin_session(
                2, IterationPolicy(), principal=AKI, manuscript_hash=digest
            ).session_id
            store.commit()
        session = store.get_session(arg, principal=AKI)
        assert session.manuscript_hash is not None
        services = workspace.services(AKI, store=store)
        services.text(session.manuscript_hash, session_id=arg)
        print(",".join(f"{log.tool_id}:{log.result}" for log in services.drain_fetch_logs()))
    finally:
        store.close()


if __name__ == "__main__":
    main()
