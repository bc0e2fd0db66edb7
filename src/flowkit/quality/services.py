"""The collaborators a quality flow runs with, and the folder that holds them.

``QualityServices`` bundles the state store, the reader (principal), the clock, the manuscript
fetch chain and caches, the fix tools, the embedder and the logs; the flow's nodes get it as
the run's deps (``Runner(flow, deps=services)``). ``Workspace`` lays them out in one folder::

    <root>/state/       JSON-file WorkflowStateStore (or pass a PostgreSQL one)
    <root>/threads/     the engine's journal (thread id = session id)
    <root>/artifacts/   manuscripts and diffs by SHA-256
    <root>/uploads/     manually uploaded manuscripts
    <root>/sources.json which file each manuscript hash was read from (read_snapshot)
    <root>/audit/       audit/<YYYYMM>/audit.log, audit/archive/<YYYYMM>.log.gz
    <root>/checks/      checks/<session_id>/ LLM I/O and manifest.json

Its settings: ``audit_keep_days`` (how long audit entries stay before ``archive``, 90),
``templates`` (a folder of check templates replacing the shipped ones) and ``max_issues`` (how
many issues one check or re-check records at most, 200: the most severe findings first).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..foundation._atomic import write_atomically
from ._limits import MAX_ISSUES, check_max_issues
from .audit import KEEP_DAYS, AuditLog, ChecksLog, check_keep_days
from .check_templates import CheckTemplate, load_check_templates
from .embed import Embedder, NGramEmbedder, default_embedder
from .errors import AccessDeniedError, SessionNotFoundError
from .fetch import (
    ArtifactCache,
    Clock,
    ManualUploads,
    ManuscriptFetcher,
    SnapshotReader,
    SystemClock,
    last_successful_tool,
)
from .models import ManuscriptFetchLog, Principal
from .remap import Remapper
from .stores import WorkflowStateStore
from .tools import Toolbox

__all__ = ["QualityServices", "Workspace"]

#: How many of the reader's latest sessions a new process looks at for the tool to prefer.
_RECALL_SESSIONS = 5


@dataclass
class QualityServices:
    """What the nodes of a quality flow use besides the state."""

    store: WorkflowStateStore
    principal: Principal
    clock: Clock
    artifacts: ArtifactCache
    snapshots: SnapshotReader
    uploads: ManualUploads
    audit: AuditLog
    checks: ChecksLog
    toolbox: Toolbox = field(default_factory=Toolbox)
    embedder: Embedder = field(default_factory=NGramEmbedder)
    templates: tuple[CheckTemplate, ...] = field(default_factory=load_check_templates)
    fetcher: ManuscriptFetcher | None = None
    #: How many issues one check or re-check records at most (``_limits``).
    max_issues: int = MAX_ISSUES
    _texts: dict[str, str] = field(default_factory=dict, repr=False)
    _recalled: bool = field(default=False, repr=False)
    _fetch_logs: list[ManuscriptFetchLog] = field(default_factory=list, repr=False)
    _remappers: dict[tuple[str, str], Remapper] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if self.fetcher is None:
            self.fetcher = ManuscriptFetcher(
                [self.artifacts, self.snapshots, self.uploads], clock=self.clock
            )
        self.fetcher.on_log = self._fetch_logs.append

    def text(self, manuscript_hash: str, *, session_id: str) -> str:
        """The manuscript with this hash, from memory or through the fetch chain."""
        cached = self._texts.get(manuscript_hash)
        if cached is not None:
            return cached
        assert self.fetcher is not None
        self._recall_preference(session_id)
        got = self.fetcher.fetch(manuscript_hash, session_id=session_id)
        self._texts[manuscript_hash] = got.text
        return got.text

    def _recall_preference(self, session_id: str) -> None:
        """On the first fetch of these services (a new process, a resume): put first the tool
        that last succeeded by the stored fetch logs (UC-120-003), those of this session, else
        of the reader's latest sessions. Later successes reorder the chain as they happen."""
        with self._lock:
            if self._recalled:
                return
            self._recalled = True
        assert self.fetcher is not None
        try:
            tool = last_successful_tool(self.store.fetch_log(session_id, principal=self.principal))
            if tool is None:
                latest = self.store.sessions(principal=self.principal)[:_RECALL_SESSIONS]
                for other in (s.session_id for s in latest if s.session_id != session_id):
                    tool = last_successful_tool(
                        self.store.fetch_log(other, principal=self.principal)
                    )
                    if tool is not None:
                        break
        except (SessionNotFoundError, AccessDeniedError):  # a session run outside the store
            return
        if tool is not None:
            self.fetcher.prefer(tool)

    def keep(self, text: str) -> str:
        """Store a manuscript version this process made; returns its hash."""
        digest = self.artifacts.put(text)
        self._texts[digest] = text
        return digest

    def drain_fetch_logs(self) -> list[ManuscriptFetchLog]:
        with self._lock:
            logs, self._fetch_logs[:] = list(self._fetch_logs), []
        return logs

    def remapper(self, old_hash: str, new_hash: str, *, session_id: str) -> Remapper:
        """One ``Remapper`` per pair of versions, so the diff is computed once per round."""
        key = (old_hash, new_hash)
        with self._lock:
            found = self._remappers.get(key)
        if found is None:
            old = self.text(old_hash, session_id=session_id)
            new = self.text(new_hash, session_id=session_id)
            found = Remapper(old, new, embedder=self.embedder)
            with self._lock:
                found = self._remappers.setdefault(key, found)
        return found


class Workspace:
    """The folder a quality CLI or app keeps everything in (see the module docstring)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        fsync: bool = True,
        audit_keep_days: int = KEEP_DAYS,
        templates: str | os.PathLike[str] | None = None,
        max_issues: int = MAX_ISSUES,
    ) -> None:
        self.audit_keep_days = check_keep_days(audit_keep_days)
        self.max_issues = check_max_issues(max_issues)
        #: The check templates, read now so a bad one is reported before anything runs.
        self.templates = load_check_templates(templates)
        self.root = Path(root)
        self.fsync = fsync
        self.root.mkdir(parents=True, exist_ok=True)

    def state_store(self, *, clock: Clock | None = None) -> WorkflowStateStore:
        from .stores.jsonfile import JsonWorkflowStateStore

        now = (clock or SystemClock()).now
        return JsonWorkflowStateStore(self.root / "state", fsync=self.fsync, clock=now)

    def engine_store(self) -> Any:
        from ..stores.jsonfile import JsonFileStore

        return JsonFileStore(self.root / "threads", fsync=self.fsync)

    def sources(self) -> dict[str, str]:
        path = self.root / "sources.json"
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}

    def remember_source(self, manuscript_hash: str, path: str | os.PathLike[str]) -> None:
        sources = self.sources()
        sources[manuscript_hash] = str(Path(path).absolute())
        write_atomically(
            self.root / "sources.json", json.dumps(sources, indent=1), fsync=self.fsync
        )

    def services(
        self,
        principal: Principal,
        *,
        store: WorkflowStateStore | None = None,
        clock: Clock | None = None,
        toolbox: Toolbox | None = None,
        embedder: Embedder | None = None,
    ) -> QualityServices:
        clock = clock or SystemClock()
        return QualityServices(
            store=store or self.state_store(clock=clock),
            principal=principal,
            clock=clock,
            artifacts=ArtifactCache(self.root / "artifacts"),
            snapshots=SnapshotReader(self.sources()),
            uploads=ManualUploads(self.root / "uploads"),
            audit=AuditLog(self.root / "audit", clock=clock.now, keep_days=self.audit_keep_days),
            checks=ChecksLog(self.root / "checks", fsync=self.fsync),
            toolbox=toolbox or Toolbox(),
            embedder=embedder or default_embedder(),
            templates=self.templates,
            max_issues=self.max_issues,
        )
