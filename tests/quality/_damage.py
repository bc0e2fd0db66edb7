"""Damaged state for the state-store tests: a ``Backend`` opens handles of one store kind,
damages a session's stored state (its JSON document, or its PostgreSQL row) and repairs it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowkit.quality.stores import WorkflowStateStore

#: Stored text that must never reach a log line.
CONTENT = "吾輩は猫である-stored-content"


@dataclass
class Backend:
    """A store kind: how to open a handle, damage a session's stored state and repair it."""

    kind: str
    where: str
    saved: dict[str, Any] = field(default_factory=dict)
    handles: list[WorkflowStateStore] = field(default_factory=list)

    def open(self) -> WorkflowStateStore:
        if self.kind == "json":
            from flowkit.quality.stores.jsonfile import JsonWorkflowStateStore

            store: WorkflowStateStore = JsonWorkflowStateStore(self.where, fsync=False)
        else:
            from flowkit.quality.stores.postgres import PostgresWorkflowStateStore

            store = PostgresWorkflowStateStore(self.where)
        self.handles.append(store)
        return store

    def close(self) -> None:
        for handle in self.handles:
            handle.close()

    def damage(self, session_id: str) -> None:
        bad = {"x": CONTENT}
        if self.kind == "json":
            path = Path(self.where) / "sessions" / f"{session_id}.json"
            self.saved[session_id] = path.read_bytes()
            document = json.loads(self.saved[session_id])
            document["session"] = bad
            path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
            return
        import psycopg
        from psycopg.types.json import Jsonb

        with psycopg.connect(self.where, autocommit=True) as conn:
            row = conn.execute(
                "SELECT record FROM quality_sessions WHERE session_id = %s", (session_id,)
            ).fetchone()
            assert row is not None
            self.saved[session_id] = row[0]
            conn.execute(
                "UPDATE quality_sessions SET record = %s WHERE session_id = %s",
                (Jsonb(bad), session_id),
            )

    def repair(self, session_id: str) -> None:
        if self.kind == "json":
            path = Path(self.where) / "sessions" / f"{session_id}.json"
            path.write_bytes(self.saved.pop(session_id))
            return
        import psycopg
        from psycopg.types.json import Jsonb

        with psycopg.connect(self.where, autocommit=True) as conn:
            conn.execute(
                "UPDATE quality_sessions SET record = %s WHERE session_id = %s",
                (Jsonb(self.saved.pop(session_id)), session_id),
            )
