"""``flowkit quality ...``: check a manuscript, and look after its sessions from a shell.

``check MANUSCRIPT --episode N [--policy count=2,until_pass]`` begins a session or resumes the
episode's active one (§5.2) and runs it until it finishes or waits for a person; ``status``
shows the episode's latest session; ``history`` lists sessions; ``resolve ISSUE --range A:B``
places a range by hand (QC-013) or ``--defer REASON`` defers an issue; ``upload SESSION FILE``
supplies a manuscript no tool could fetch (QC-017); ``end SESSION`` gives up on an active
session so the next check begins a new one; ``audit archive [--keep-days N]`` moves audit
entries older than N days (90) into ``audit/archive/``, as every check does. The commands that
run the flow take ``--templates DIR`` (default ``$FLOWKIT_QUALITY_TEMPLATES``): check templates
replacing the shipped ones, and ``--max-issues N``: how many issues one check or re-check
records at most (200, the most severe first). Everything is kept under
``<store>/quality`` (``--store``: ``$FLOWKIT_STORE``, else ``./.flowkit``). The reader is
``--user`` (default ``$FLOWKIT_USER``, else the login name); users named in
``$FLOWKIT_QUALITY_ADMINS`` (comma-separated) read every session.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, TextIO

from ..terminal.errors import CommandError
from ..terminal.output import command_hint
from ..terminal.store import add_store_option, store_path
from ._limits import MAX_ISSUES
from ._retention import KEEP_DAYS

__all__ = ["add_commands"]

_ADMINS_ENV = "FLOWKIT_QUALITY_ADMINS"
_TEMPLATES_ENV = "FLOWKIT_QUALITY_TEMPLATES"
_RANGE = re.compile(r"^(\d+):(\d+)$")


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """Register ``quality`` and its sub-commands on the main parser's sub-parsers."""
    quality = commands.add_parser(
        "quality",
        parents=[common],
        help="manuscript check -> fix -> re-check, issues tracked per session",
    )
    sub = quality.add_subparsers(title="quality commands", metavar="COMMAND", required=True)

    def command(name: str, help_text: str, *, runs: bool = False) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, parents=[common], help=help_text)
        add_store_option(parser)
        parser.add_argument("--user", metavar="NAME", help="who reads/writes (default: you)")
        if runs:  # the flow goes on: its check and re-check read the check templates
            parser.add_argument(
                "--templates",
                metavar="DIR",
                help="a folder of check_step<NN>_<category>.yaml check templates replacing the "
                f"shipped ones (default: ${_TEMPLATES_ENV})",
            )
            parser.add_argument(
                "--max-issues",
                type=int,
                default=MAX_ISSUES,
                metavar="N",
                help="record at most N issues per check or re-check, the most severe first "
                f"(default {MAX_ISSUES})",
            )
        return parser

    check = command("check", "check a manuscript (resumes the episode's active session)", runs=True)
    check.add_argument("manuscript", metavar="MANUSCRIPT", help="the episode's text (UTF-8)")
    check.add_argument("--episode", type=int, required=True, metavar="N", help="1-9999")
    check.add_argument(
        "--policy",
        metavar="POLICY",
        help="e.g. count=2,until_pass,time_budget_sec=600,min_improvement=0.2",
    )
    check.add_argument(
        "--llm",
        metavar="SPEC",
        help="openai:MODEL, ollama:MODEL, replay:PATH, scripted:PATH, or replay:demo for the "
        "demo's recorded answers (default: $FLOWKIT_LLM)",
    )
    check.add_argument(
        "--audit-keep-days",
        type=int,
        default=KEEP_DAYS,
        metavar="N",
        help=f"archive audit entries older than N days as the session begins (default {KEEP_DAYS})",
    )
    check.set_defaults(run=_cmd_check)

    status = command("status", "the episode's latest session and its issues")
    status.add_argument("--episode", type=int, required=True, metavar="N")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(run=_cmd_status)

    history = command("history", "sessions you may read, newest first")
    history.add_argument("--episode", type=int, metavar="N", help="only this episode")
    history.add_argument("--json", action="store_true", help="print JSON")
    history.set_defaults(run=_cmd_history)

    resolve = command("resolve", "place an issue's range by hand (QC-013), or defer it", runs=True)
    resolve.add_argument("issue", metavar="ISSUE", help="ISSUE-<ms>-<hex>")
    how = resolve.add_mutually_exclusive_group(required=True)
    how.add_argument("--range", metavar="START:END", help="character offsets in the manuscript")
    how.add_argument("--defer", metavar="REASON", help="leave it for later, with a reason")
    resolve.add_argument(
        "--confidence", type=float, default=1.0, metavar="C", help="how sure (0-1, default 1)"
    )
    resolve.add_argument("--llm", metavar="SPEC", help="as for check (the flow goes on)")
    resolve.set_defaults(run=_cmd_resolve)

    upload = command("upload", "supply the manuscript a session waits for (QC-017)", runs=True)
    upload.add_argument("session", metavar="SESSION", help="QC_EP<n>_<date>_<time>")
    upload.add_argument("file", metavar="FILE", help="the manuscript as it was checked")
    upload.add_argument("--llm", metavar="SPEC", help="as for check (the flow goes on)")
    upload.set_defaults(run=_cmd_upload)

    end = command("end", "give up on an active session (the next check begins a new one)")
    end.add_argument("session", metavar="SESSION", help="QC_EP<n>_<date>_<time>")
    end.set_defaults(run=_cmd_end)

    audit = sub.add_parser("audit", parents=[common], help="the audit log (§6.2)")
    audit_sub = audit.add_subparsers(title="audit commands", metavar="COMMAND", required=True)
    archive = audit_sub.add_parser(
        "archive", parents=[common], help="move audit entries older than N days to audit/archive/"
    )
    add_store_option(archive)
    archive.add_argument(
        "--keep-days",
        type=int,
        default=KEEP_DAYS,
        metavar="N",
        help=f"keep entries of the last N days (default {KEEP_DAYS})",
    )
    archive.set_defaults(run=_cmd_audit_archive)


# -- helpers ---------------------------------------------------------------------------------


def _error(message: str, code: int = 1) -> Exception:
    return CommandError(message, code=code)


def _principal(args: argparse.Namespace) -> Any:
    from .models import Principal

    user = args.user or os.environ.get("FLOWKIT_USER") or _login()
    admins = {a.strip() for a in os.environ.get(_ADMINS_ENV, "").split(",") if a.strip()}
    try:
        return Principal(user_id=user, admin=user in admins)
    except ValueError:
        raise _error(f"--user {user[:40]!r} is not a user name.", code=2) from None


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (containers)
        return f"uid-{os.getuid()}"


def _checker(args: argparse.Namespace, *, llm: bool = False, reads: bool = False) -> Any:
    from .app import QualityChecker
    from .services import Workspace

    root = Path(store_path(args)) / "quality"
    if reads and not (root / "state").is_dir():  # reading never creates a workspace
        raise _error(f"No quality sessions in store `{store_path(args)}`; pass --store DIR.", 2)

    model = None
    if llm:
        from ..terminal.demo_llm import llm_for

        spec = getattr(args, "llm", None) or os.environ.get("FLOWKIT_LLM") or None
        model = llm_for(spec, ["quality"]) if spec else None
    templates = getattr(args, "templates", None) or os.environ.get(_TEMPLATES_ENV) or None
    max_issues: int = getattr(args, "max_issues", MAX_ISSUES)
    if max_issues < 1:
        raise _error(f"--max-issues {max_issues} is not a number of issues; give 1 or more.", 2)
    workspace = Workspace(
        root,
        audit_keep_days=_keep_days(args, "audit_keep_days", "--audit-keep-days"),
        templates=templates,
        max_issues=max_issues,
    )
    return QualityChecker(workspace, principal=_principal(args), llm=model)


def _keep_days(args: argparse.Namespace, name: str, option: str) -> int:
    days: int = getattr(args, name, KEEP_DAYS)
    if days < 0:
        raise _error(f"{option} {days} is not a number of days; give 0 or more.", code=2)
    return days


def _quality_errors(fn: Any) -> Any:
    """Turn the workflow's errors into command errors that name their QC code."""
    import functools

    @functools.wraps(fn)
    def run(args: argparse.Namespace, out: TextIO) -> int:
        from .errors import QualityError, QualityInputError, TemplateMismatchError

        try:
            code: int = fn(args, out)
        except QualityError as exc:
            prefix = f"{exc.qc_code}: " if exc.qc_code else ""
            usage = isinstance(exc, QualityInputError | TemplateMismatchError)  # what was given
            raise _error(f"{prefix}{exc}", code=2 if usage else 1) from exc
        return code

    return run


def _print_result(checker: Any, result: Any, out: TextIO, args: argparse.Namespace) -> int:
    state = result.state
    store = store_path(args)
    where = "completed" if result.status == "done" else f"{result.status} at `{result.node}`"
    out.write(f"session {state.session_id}: {where}")
    out.write(
        f" (round {state.round}, decision {state.decision or '-'})\n"
        if state.round or state.decision
        else "\n"
    )
    found = checker.status(state.episode_number) if state.episode_number else None
    if found is not None:
        _print_issues(found[1], out)
    if result.status == "waiting" and result.node == "manual_upload":
        out.write("\nThe manuscript could not be fetched (QC-017); upload it:\n")
        out.write(f"  {command_hint('quality', 'upload', state.session_id, 'FILE', store=store)}\n")
    elif result.status == "waiting":
        out.write(
            "\nThese ranges could not be placed in the new text (QC-013); place or defer each:\n"
        )
        for issue_id in state.alignment_pending:
            issue = checker.store.issue(issue_id, principal=checker.principal)
            out.write(f"  {issue_id} ({issue.category}: {issue.description[:60]})\n")
            hint = command_hint("quality", "resolve", issue_id, range="START:END", store=store)
            out.write(f"    {hint}\n")
    elif result.status == "failed" and result.error is not None:
        sys.stderr.write(
            f"flowkit: error: the step `{result.node}` failed: {result.error.message}\n"
            "Run the same check again to resume the session where it stopped.\n"
        )
        return 1
    return 0


def _print_issues(issues: Any, out: TextIO) -> None:
    for issue in sorted(issues, key=lambda i: (i.text_range.start_char, i.issue_id)):
        rng = issue.text_range
        related = f" <- {issue.related_issue_ids[-1]}" if issue.related_issue_ids else ""
        out.write(
            f"  {issue.issue_id}  {issue.state:<10} {issue.category:<9} {issue.severity:<8} "
            f"{rng.start_char}:{rng.end_char} L{rng.start_line}  "
            f"{issue.description[:50]}{related}\n"
        )


# -- commands --------------------------------------------------------------------------------


@_quality_errors
def _cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    from .models import IterationPolicy

    policy = IterationPolicy.parse(args.policy) if args.policy else None
    if not (args.llm or os.environ.get("FLOWKIT_LLM")):
        raise _error(
            "No LLM is configured: pass --llm (openai:MODEL, ollama:MODEL, replay:PATH) or set "
            "FLOWKIT_LLM; --llm replay:demo replays the demo's recorded answers.",
            code=2,
        )
    with _checker(args, llm=True) as checker:
        outcome = checker.check(args.manuscript, episode=args.episode, policy=policy)
        if outcome.resumed:
            out.write(
                f"resumed session {outcome.session_id}; {len(outcome.partial_ids)} unresolved "
                "issues are Partial\n"
            )
        if outcome.manuscript_changed:
            out.write(
                "note: the file differs from the manuscript this session works on; the session "
                "goes on with its own version\n"
            )
        return _print_result(checker, outcome.result, out, args)


@_quality_errors
def _cmd_status(args: argparse.Namespace, out: TextIO) -> int:
    with _checker(args, reads=True) as checker:
        found = checker.status(args.episode)
        if found is None:
            raise _error(f"No session of episode {args.episode} that you may read.")
        session, issues, thread = found
        if args.json:
            data = {
                "session": session.model_dump(mode="json"),
                "issues": [i.model_dump(mode="json") for i in issues],
                "thread": None
                if thread is None
                else {"status": thread.status, "node": thread.node},
            }
            out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
            return 0
        where = f"{thread.status} at `{thread.node}`" if thread else "no thread"
        out.write(
            f"{session.session_id}  episode {session.episode_number}  {session.current_status}  "
            f"lock {session.lock_status}  version {session.state_version}  ({where})\n"
        )
        counts: dict[str, int] = {}
        for issue in issues:
            counts[issue.state] = counts.get(issue.state, 0) + 1
        out.write(
            "issues: " + (", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none") + "\n"
        )
        _print_issues(issues, out)
        return 0


@_quality_errors
def _cmd_history(args: argparse.Namespace, out: TextIO) -> int:
    with _checker(args, reads=True) as checker:
        sessions = checker.history(args.episode)
        if args.json:
            out.write(json.dumps([s.model_dump(mode="json") for s in sessions], indent=2) + "\n")
            return 0
        if not sessions:
            out.write("no sessions you may read\n")
        for s in sessions:
            issues = checker.store.issues(s.session_id, principal=checker.principal)
            open_ = sum(1 for i in issues if i.open)
            out.write(
                f"{s.session_id}  episode {s.episode_number}  {s.current_status:<9} "
                f"{len(issues)} issues, {open_} open  by {s.initiator}  "
                f"{s.created_at:%Y-%m-%d %H:%M}\n"
            )
        return 0


@_quality_errors
def _cmd_resolve(args: argparse.Namespace, out: TextIO) -> int:
    start = end = None
    if args.range is not None:
        found = _RANGE.match(args.range.strip())
        if not found:
            raise _error(f"--range {args.range[:40]!r} is not START:END (character offsets).", 2)
        start, end = int(found[1]), int(found[2])
    with _checker(args, llm=True) as checker:
        result = checker.resolve(
            args.issue, start_char=start, end_char=end, confidence=args.confidence,
            defer_reason=args.defer,
        )  # fmt: skip
        from .models import Issue

        if isinstance(result, Issue):
            out.write(f"{result.issue_id}: {result.state} ({result.defer_reason})\n")
            return 0
        return _print_result(checker, result, out, args)


@_quality_errors
def _cmd_upload(args: argparse.Namespace, out: TextIO) -> int:
    with _checker(args, llm=True) as checker:
        result = checker.upload(args.session, args.file)
        if result is None:
            out.write(f"kept the manuscript for {args.session}; it was not waiting for one\n")
            return 0
        return _print_result(checker, result, out, args)


@_quality_errors
def _cmd_end(args: argparse.Namespace, out: TextIO) -> int:
    with _checker(args) as checker:
        session = checker.end(args.session)
        out.write(f"{session.session_id}: {session.current_status}, lock {session.lock_status}\n")
        return 0


@_quality_errors
def _cmd_audit_archive(args: argparse.Namespace, out: TextIO) -> int:
    from .audit import AuditLog

    days = _keep_days(args, "keep_days", "--keep-days")
    workspace = Path(store_path(args)) / "quality"
    if not workspace.is_dir():  # never creates a workspace
        raise _error(f"No quality sessions in store `{store_path(args)}`; pass --store DIR.", 2)
    root = workspace / "audit"
    if not root.is_dir():
        out.write(f"nothing to archive (keeping {days} days)\n")
        return 0
    written = AuditLog(root, keep_days=days).archive()
    if not written:
        out.write(f"nothing to archive (keeping {days} days)\n")
    else:
        files = ", ".join(str(p) for p in written)
        out.write(f"archived the entries older than {days} days into {files}\n")
    return 0
