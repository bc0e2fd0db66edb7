"""``flowkit stats`` and ``flowkit recover``: the runtime services over a store.

``stats`` needs no flow (it folds the journal); a registered flow only makes checkpoint sizes
exact. ``recover`` needs each thread's flow to replay and patch it: the registered workflow
its start record names, or ``--flow TARGET``; its policy is the one registered for the flow.
Neither creates a file or folder when there is nothing to write.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

from ..terminal.inputs import non_negative, rate, whole_number
from ..terminal.output import command_hint, table, write_json
from ..terminal.store import add_store_option, open_for_reading, shown, store_location

if TYPE_CHECKING:
    from ..runtime.monitor import Evaluation
    from ..runtime.recovery import RecoveryReport
    from ..runtime.strategies import Strategy
    from ..stores import Store

__all__ = ["register"]


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    stats = commands.add_parser(
        "stats", parents=[common], help="health of stored threads: sizes, node times, errors"
    )
    stats.add_argument("thread", metavar="THREAD", nargs="?", help="one thread (default: all)")
    add_store_option(stats)
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    stats.add_argument(
        "--flow", metavar="TARGET", help="for exact sizes of threads of an unregistered flow"
    )
    limits = stats.add_argument_group("thresholds (a thread past one is flagged)")
    limits.add_argument(
        "--max-checkpoint-mb", type=non_negative, metavar="MB", default=10.0,
        help="largest checkpoint (default: 10)",
    )  # fmt: skip
    limits.add_argument(
        "--max-avg-seconds", type=non_negative, metavar="S", default=300.0,
        help="slowest average node time (default: 300)",
    )  # fmt: skip
    limits.add_argument(
        "--max-error-rate", type=rate, metavar="RATE", default=0.1,
        help="a fraction from 0 to 1 (default: 0.1)",
    )  # fmt: skip
    limits.add_argument(
        "--max-recoveries-per-hour", type=whole_number, metavar="N", default=3,
        help="most recoveries in the last hour (default: 3)",
    )  # fmt: skip
    stats.set_defaults(run=_cmd_stats)

    recover = commands.add_parser(
        "recover", parents=[common], help="find stuck threads and patch them back (audited)"
    )
    recover.add_argument("thread", metavar="THREAD", nargs="?", help="one thread (default: all)")
    add_store_option(recover)
    recover.add_argument("--dry-run", action="store_true", help="show the plan; write nothing")
    recover.add_argument(
        "--flow", metavar="TARGET",
        help="the threads' flow (default: the registered workflow each thread names)",
    )  # fmt: skip
    recover.add_argument(
        "--strategy", choices=["resume", "back_to_stable", "reset"],
        help="override the policy's strategy for every stuck thread",
    )  # fmt: skip
    recover.add_argument("--json", action="store_true", help="print JSON")
    recover.set_defaults(run=_cmd_recover)


def _thread_ids(store: Store | None, thread: str | None) -> list[str]:
    if thread is not None:
        from ..errors import ThreadNotFoundError
        from ..stores._ids import check_thread_id

        if store is None:
            raise ThreadNotFoundError(check_thread_id(thread))
        store.records(thread)  # ThreadNotFoundError now, with its advice
        return [thread]
    return store.threads() if store is not None else []


def _report_broken(broken: dict[str, str]) -> None:
    for thread_id, message in broken.items():
        print(f"flowkit: error: thread `{thread_id}`: {message}", file=sys.stderr)


def _runnable(advice: str, store: str) -> str:
    """Advice whose `flowkit ...` commands carry the ``--store`` this command used."""
    import re
    import shlex

    def fix(match: re.Match[str]) -> str:
        words = shlex.split(match.group(1))[1:]
        return f"`{command_hint(*words, store=store)}`"

    return re.sub(r"`(flowkit [^`]+)`", fix, advice)


# -- stats ---------------------------------------------------------------------------------------


def _cmd_stats(args: argparse.Namespace, out: TextIO) -> int:
    """Print each thread's metrics and health; 1 only if a thread cannot be read."""
    from ..errors import FlowkitError
    from ..runtime.monitor import PerformanceMonitor, Thresholds
    from ._resolve import FlowsByName

    thresholds = Thresholds(
        max_checkpoint_bytes=int(args.max_checkpoint_mb * 1024 * 1024),
        max_avg_processing_s=args.max_avg_seconds,
        max_error_rate=args.max_error_rate,
        max_recoveries_per_hour=args.max_recoveries_per_hour,
    )
    location = store_location(args)
    store = open_for_reading(location)
    flows = FlowsByName(args.flow)
    evaluations: list[Evaluation] = []
    broken: dict[str, str] = {}
    for thread_id in _thread_ids(store, args.thread):
        assert store is not None
        monitor = PerformanceMonitor(store, thresholds=thresholds, flow_for=flows.get)
        try:
            evaluations.append(monitor.evaluate(thread_id))
        except (FlowkitError, OSError) as exc:  # one bad thread must not hide the others
            broken[thread_id] = str(exc)
    if args.json:
        data = [e.to_dict() for e in evaluations]
        for item in data:
            item["recommendations"] = [_runnable(a, location) for a in item["recommendations"]]
        data += [{"thread_id": t, "health": "unreadable", "error": e} for t, e in broken.items()]
        write_json(data, out)
    elif not evaluations and not broken:
        out.write(f"No threads in {shown(location)}\n")
    else:
        _stats_table(evaluations, broken, location, out)
    _report_broken(broken)
    return 1 if broken else 0


def _stats_table(
    evaluations: list[Evaluation], broken: dict[str, str], location: str, out: TextIO
) -> None:
    from ..runtime.monitor import format_bytes

    rows = [["THREAD", "FLOW", "STATUS", "HEALTH", "CHECKPOINT", "STEPS", "AVG NODE"]]
    rows[0] += ["ERRORS", "RECOVERIES/H"]
    for e in evaluations:
        m = e.metrics
        size = format_bytes(m.checkpoint_bytes)
        rows.append(
            [
                m.thread_id,
                m.flow,
                m.status,
                e.status,
                size if m.checkpoint_exact else f"~{size}",
                str(m.steps),
                f"{m.avg_processing_s:.3f} s",
                f"{m.error_rate:.1%}",
                str(m.recoveries_last_hour),
            ]
        )
    rows += [[t, "?", "?", "unreadable", "", "", "", "", ""] for t in broken]
    table(rows, out)
    for e in evaluations:
        if e.status == "healthy":
            continue
        out.write(f"\n{e.metrics.thread_id}: {e.status}\n")
        for issue in e.critical_issues:
            out.write(f"  critical  {issue}\n")
        for issue in e.warnings:
            out.write(f"  warning   {issue}\n")
        for advice in e.recommendations:
            out.write(f"  -> {_runnable(advice, location)}\n")
    if any(not e.metrics.checkpoint_exact for e in evaluations):
        out.write("\n~ size folded from the journal without the flow (pass --flow)\n")


# -- recover -------------------------------------------------------------------------------------


def _strategy(name: str | None) -> Strategy | None:
    from ..runtime.strategies import BackToStable, Reset, Resume

    choices: dict[str, Strategy] = {
        "resume": Resume(),
        "back_to_stable": BackToStable(),
        "reset": Reset(),
    }
    return choices[name] if name is not None else None


def _short(value: Any, limit: int = 120) -> str:
    import json

    from ..foundation._plain import shorten

    return shorten(json.dumps(value, ensure_ascii=False, default=str), limit)


def _print_report(report: RecoveryReport, flow: str, args: argparse.Namespace, out: TextIO) -> None:
    where = f"{report.status} at {report.node} (version {report.version})"
    if report.outcome == "running":
        out.write(f"{report.thread_id}  running now: not checked\n")
        for note in report.notes:
            out.write(f"  note      {note}\n")
        return
    if report.outcome == "healthy" and report.status == "failed":
        # Not stuck (resume retries the failed step), but calling it healthy would be a lie.
        retry = command_hint("resume", report.thread_id, flow=args.flow, store=store_location(args))
        out.write(
            f"{report.thread_id}  not stuck: {where}; its step failed, `{retry}` retries it\n"
        )
        return
    if report.outcome == "healthy":
        out.write(f"{report.thread_id}  healthy: {where}\n")
        return
    out.write(f"{report.thread_id}  flow {flow}: {where}\n")
    for problem in report.problems:
        out.write(f"  problem   {problem.rule}: {problem.reason}\n")
    patch = report.patch
    if patch is not None:
        out.write(f"  strategy  {patch.strategy} -> {patch.goto}\n")
        values = ", ".join(f"{k}={_short(v)}" for k, v in patch.values.items())
        out.write(f"  patch     goto {patch.goto}; {values or 'no values'}\n")
    for note in report.notes:
        out.write(f"  note      {note}\n")
    store = store_location(args)
    if report.outcome == "recovered":
        resume = command_hint("resume", report.thread_id, flow=args.flow, store=store)
        out.write(f"  next      {resume}\n")
        out.write(
            f"  result    recovered: version {report.applied_version} written; resume the "
            "thread to continue\n"
        )
    elif report.outcome == "planned" and args.dry_run:
        again = command_hint(
            "recover", report.thread_id, flow=args.flow, strategy=args.strategy, store=store
        )
        out.write(f"  apply     {again}\n")
        out.write("  result    dry run: nothing written\n")
    elif report.outcome == "unrecoverable":
        out.write("  result    no strategy applies: nothing written; fix it by hand\n")


def _cmd_recover(args: argparse.Namespace, out: TextIO) -> int:
    """Detect stuck threads and (unless ``--dry-run``) recover them; 1 if any is left unfixed."""
    from ..errors import FlowkitError
    from ..runner._runner import Runner
    from ..runtime.recovery import Recovery, flow_of
    from ._resolve import FlowsByName

    store = open_for_reading(store_location(args))
    flows = FlowsByName(args.flow)
    chosen = _strategy(args.strategy)
    reports: list[tuple[RecoveryReport, str]] = []
    broken: dict[str, str] = {}
    recoveries: dict[str, Recovery] = {}
    for thread_id in _thread_ids(store, args.thread):
        assert store is not None
        try:
            name = flow_of(store, thread_id) or "?"
            found = flows.get(name)
            if found is None:
                broken[thread_id] = flows.problems.get(name, f"flow `{name}` is unknown")
                continue
            if name not in recoveries:
                recoveries[name] = Recovery(Runner(found, store=store))
            report = recoveries[name].recover(thread_id, dry_run=args.dry_run, strategy=chosen)
        except (FlowkitError, OSError) as exc:
            broken[thread_id] = str(exc)
            continue
        reports.append((report, name))
    if args.json:
        data = [r.to_dict() | {"flow": name} for r, name in reports]
        data += [{"thread_id": t, "outcome": "unreadable", "error": e} for t, e in broken.items()]
        write_json(data, out)
    elif not reports and not broken:
        out.write(f"No threads in {shown(store_location(args))}\n")
    for report, name in [] if args.json else reports:
        _print_report(report, name, args, out)
    _report_broken(broken)
    unfixed = [r for r, _ in reports if r.outcome == "unrecoverable"]
    return 1 if broken or unfixed else 0
