"""``QualityChecker``: check an episode's manuscript, resume its session, answer its gates.

What the CLI and an application call. ``check`` begins a session on the episode, or resumes
its latest active one (§5.2: its unresolved issues come back as Partial) and drives the flow
until it finishes or waits for a person; ``resolve`` places an issue's range by hand (QC-013)
or defers it; ``upload`` supplies a manuscript no tool could fetch (QC-017); ``end`` gives up
on an active session so the next check begins a new one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from ..errors import ThreadNotFoundError
from ..runner._result import RunResult
from ..runner._runner import Runner
from .errors import QualityInputError
from .fetch import Clock
from .ids import check_episode
from .lifecycle import check_transition
from .models import Issue, IterationPolicy, Principal, Session
from .services import QualityServices, Workspace
from .state import AlignmentInput, QualityState
from .stores import WorkflowStateStore
from .workflow import build_flow, flow

__all__ = ["MAX_MANUSCRIPT_BYTES", "CheckOutcome", "QualityChecker", "read_manuscript"]

#: Largest manuscript accepted (a web-novel episode is far smaller).
MAX_MANUSCRIPT_BYTES: Final = 2_000_000


@dataclass(frozen=True)
class CheckOutcome:
    """Where a ``check`` left the session."""

    session_id: str
    resumed: bool
    result: RunResult[QualityState]
    #: Issues a resume turned from New/InProgress into Partial.
    partial_ids: tuple[str, ...] = ()
    #: The file given differs from the manuscript the resumed session works on.
    manuscript_changed: bool = False
    notes: tuple[str, ...] = field(default=())


def read_manuscript(path: str | os.PathLike[str]) -> str:
    """The UTF-8 text of a manuscript file, or a ``QualityInputError`` saying what is wrong."""
    if not isinstance(path, str | os.PathLike):
        raise QualityInputError(
            f"The manuscript is named by a file path (str or os.PathLike), not by a "
            f"{type(path).__name__}."
        )
    file = Path(path)
    if "\0" in str(file):
        raise QualityInputError("The manuscript's path contains a NUL character; remove it.")
    try:
        size = file.stat().st_size
        if not file.is_file():
            raise QualityInputError(f"{file} is not a file; name the manuscript file.")
        if size > MAX_MANUSCRIPT_BYTES:
            raise QualityInputError(
                f"{file} is {size:,} bytes (limit {MAX_MANUSCRIPT_BYTES:,}); check one episode "
                "at a time."
            )
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QualityInputError(f"{file}: no such file.") from None
    except UnicodeDecodeError:
        raise QualityInputError(f"{file} is not UTF-8 text; save it as UTF-8.") from None
    except OSError as exc:
        raise QualityInputError(f"Cannot read {file}: {exc.strerror}.") from exc
    if not text.strip():
        raise QualityInputError(f"{file} is empty; there is nothing to check.")
    return text


class QualityChecker:
    """Quality sessions in a ``Workspace`` folder, run by ``principal`` with ``llm``."""

    def __init__(
        self,
        workspace: Workspace | str | os.PathLike[str],
        *,
        principal: Principal,
        llm: Any = None,
        store: WorkflowStateStore | None = None,
        clock: Clock | None = None,
        services: QualityServices | None = None,
        concurrency: int = 4,
    ) -> None:
        if not isinstance(principal, Principal):
            raise QualityInputError("QualityChecker needs principal=Principal(user_id=...).")
        self.workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        self.principal = principal
        self.services = services or self.workspace.services(principal, store=store, clock=clock)
        self.store = self.services.store
        self.flow = flow if concurrency == 4 else build_flow(concurrency=concurrency)
        self.runner: Runner[QualityState, QualityServices] = Runner(
            self.flow, store=self.workspace.engine_store(), llm=llm, deps=self.services,
            clock=self.services.clock.now, track_attempts=True,
        )  # fmt: skip

    def close(self) -> None:
        """Let go of every session lock this checker holds (sessions stay as they are)."""
        self.store.close()

    def __enter__(self) -> QualityChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- check -------------------------------------------------------------------------------

    def check(
        self,
        manuscript: str | os.PathLike[str],
        *,
        episode: int,
        policy: IterationPolicy | None = None,
    ) -> CheckOutcome:
        """Check ``manuscript`` as episode ``episode``: resume its active session, else begin
        one; run until the session finishes or waits for a person."""
        check_episode(episode)
        text = read_manuscript(manuscript)
        self.services.audit.archive()  # §6.2: entries past the setting leave as sessions begin
        digest = self.services.artifacts.put(text)  # fetched back by hash like any other
        self.workspace.remember_source(digest, manuscript)
        self.services.snapshots.sources[digest] = str(Path(manuscript).absolute())
        latest = self.store.latest_session(episode, principal=self.principal)
        if latest is not None and latest.current_status == "active":
            return self._resume(latest, digest, policy)
        context = self.store.begin_session(
            episode, policy or IterationPolicy(), principal=self.principal, manuscript_hash=digest
        )
        self.store.commit()
        result = self.runner.start(
            context.session_id,
            {
                "session_id": context.session_id,
                "episode_number": episode,
                "manuscript_hash": digest,
                "started_by": self.principal.user_id,
            },
        )
        return CheckOutcome(context.session_id, False, result)

    def resume_session(
        self, session: Session, policy: IterationPolicy | None = None
    ) -> tuple[str, ...]:
        """Take the session over (§5.2): lock it, apply a new policy, and turn its unresolved
        issues (New, InProgress) into Partial, in one unit. Returns the ids turned Partial."""
        sid = session.session_id
        self.store.resume_session(sid, principal=self.principal)
        if policy is not None:
            self.store.update_session(sid, iteration_policy=policy)
        partial: list[str] = []
        for issue in self.store.issues(sid, principal=self.principal):
            if issue.state in ("New", "InProgress"):
                self.store.record_issue(issue.model_copy(update={"state": "Partial"}))
                partial.append(issue.issue_id)
        self.store.commit()
        self.services.audit.record(
            "session_resumed", session_id=sid, performed_by=self.principal.user_id,
            metadata={"partial": len(partial)},
        )  # fmt: skip
        return tuple(partial)

    def _resume(
        self, session: Session, digest: str, policy: IterationPolicy | None
    ) -> CheckOutcome:
        sid = session.session_id
        partial = self.resume_session(session, policy)
        changed = digest != session.manuscript_hash
        try:
            current = self.runner.get_state(sid)
        except ThreadNotFoundError:  # the process died between begin and start
            start = {"session_id": sid, "episode_number": session.episode_number,
                     "manuscript_hash": session.manuscript_hash or digest,
                     "started_by": session.initiator}  # fmt: skip
            return CheckOutcome(sid, True, self.runner.start(sid, start), partial, changed)
        if current.status in ("failed", "pending"):
            current = self.runner.resume(sid)
        return CheckOutcome(sid, True, current, partial, changed)

    # -- people ------------------------------------------------------------------------------

    def resolve(
        self,
        issue_id: str,
        *,
        start_char: int | None = None,
        end_char: int | None = None,
        confidence: float = 1.0,
        defer_reason: str | None = None,
    ) -> RunResult[QualityState] | Issue:
        """Place an issue's range by hand (at the manual-alignment gate), or defer the issue."""
        try:
            answer = AlignmentInput.model_validate(
                {"issue_id": issue_id, "start_char": start_char, "end_char": end_char,
                 "confidence": confidence, "defer_reason": defer_reason}
            )  # fmt: skip
        except ValidationError as exc:
            problems = "; ".join(e["msg"] for e in exc.errors())
            raise QualityInputError(
                f"Resolve {issue_id!s:.40}: {problems}. Give --range START:END or --defer REASON."
            ) from None
        issue = self.store.issue(issue_id, principal=self.principal)
        session = self.store.get_session(issue.session_id, principal=self.principal)
        state = self._thread(session.session_id)
        if state is not None and state.waiting and issue_id in state.state.alignment_pending:
            self.store.resume_session(session.session_id, principal=self.principal)
            self.store.commit()
            return self.runner.resume(session.session_id, answer, gate="manual_alignment")
        if defer_reason is None:
            raise QualityInputError(
                f"Issue {issue_id} does not wait for its range to be placed; only --defer "
                "applies to it now."
            )
        check_transition(issue_id, issue.state, "Deferred")
        if session.current_status == "active":
            self.store.resume_session(session.session_id, principal=self.principal)
        deferred = issue.model_copy(update={"state": "Deferred", "defer_reason": defer_reason})
        self.store.record_issue(deferred)
        self.store.commit()
        self.services.audit.record(
            "issue_deferred", session_id=session.session_id, issue_id=issue_id,
            performed_by=self.principal.user_id, metadata={"reason": defer_reason},
        )  # fmt: skip
        return deferred

    def upload(
        self, session_id: str, manuscript: str | os.PathLike[str]
    ) -> RunResult[QualityState] | None:
        """Supply the manuscript a session waits for (QC-017); QC-018 if it is another one."""
        session = self.store.get_session(session_id, principal=self.principal)
        if session.manuscript_hash is None:
            raise QualityInputError(f"Session {session_id} has no manuscript to upload.")
        self.services.uploads.upload(
            read_manuscript(manuscript), expected_hash=session.manuscript_hash
        )
        self.services.audit.record(
            "manuscript_uploaded", session_id=session_id, performed_by=self.principal.user_id
        )
        state = self._thread(session_id)
        if state is not None and state.waiting and state.node == "manual_upload":
            self.store.resume_session(session_id, principal=self.principal)
            self.store.commit()
            return self.runner.resume(session_id, {}, gate="manual_upload")
        return None

    def end(self, session_id: str) -> Session:
        """Give up on an active session (it becomes ``failed``, its lock is released), so the
        next check of the episode begins a new one. Its issues and logs stay readable."""
        session = self.store.get_session(session_id, principal=self.principal)
        if session.current_status != "active":
            raise QualityInputError(f"Session {session_id} is already {session.current_status}.")
        self.store.resume_session(session_id, principal=self.principal)
        self.store.commit()
        self.store.end_session(session_id, "failed")
        self.store.commit()
        self.services.audit.record(
            "session_ended", session_id=session_id, performed_by=self.principal.user_id
        )
        return self.store.get_session(session_id, principal=self.principal)

    # -- reading -----------------------------------------------------------------------------

    def status(
        self, episode: int
    ) -> tuple[Session, list[Issue], RunResult[QualityState] | None] | None:
        """The episode's latest session, its issues and its thread, if there is one."""
        check_episode(episode)
        session = self.store.latest_session(episode, principal=self.principal)
        if session is None:
            return None
        issues = self.store.issues(session.session_id, principal=self.principal)
        return session, issues, self._thread(session.session_id)

    def history(self, episode: int | None = None) -> list[Session]:
        return self.store.sessions(episode, principal=self.principal)

    def _thread(self, session_id: str) -> RunResult[QualityState] | None:
        try:
            return self.runner.get_state(session_id)
        except ThreadNotFoundError:
            return None
