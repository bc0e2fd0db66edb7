"""``flowkit stats`` and ``flowkit recover``: the runtime services over a JSON-file store.

``stats`` needs no flow (it folds the journal); a registered flow only makes checkpoint sizes
exact. ``recover`` needs each thread's flow to replay and patch it: the registered workflow
its start record names, or ``--flow TARGET``; its policy is the one registered for the flow.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

from ._cli_store import _open_store, _table
from .errors import FlowDefinitionError, FlowkitError

if TYPE_CHECKING:
    from ._flow import Flow
    from .runtime.monitor import Evaluation, Thresholds
    from .runtime.recovery import RecoveryReport
    from .runtime.strategies import Strategy
    from .stores.jsonfile import JsonFileStore

__all__ = ["print_stats", "recover_threads"]


class _Flows:
    """Flows by name, loaded once: ``--flow TARGET`` for its own name, else the registry."""

    def __init__(self, explicit: str | None) -> None:
        from .cli import load_target

        self.explicit = load_target(explicit) if explicit is not None else None
        self._loaded: dict[str, Flow | None] = {}
        self.problems: dict[str, str] = {}

    def get(self, name: str) -> Flow | None:
        if self.explicit is not None and self.explicit.name == name:
            return self.explicit
        if name not in self._loaded:
            self._loaded[name] = self._load(name)
        return self._loaded[name]

    def _load(self, name: str) -> Flow | None:
        from .workflows import WorkflowLoadError, load_flow, registered

        if name not in registered():
            self.problems[name] = f"flow `{name}` is not registered; pass --flow TARGET naming it"
            return None
        try:
            return load_flow(name)
        except (WorkflowLoadError, FlowDefinitionError) as exc:
            self.problems[name] = f"flow `{name}` does not load: {str(exc).splitlines()[0]}"
            return None


def _thread_ids(store: JsonFileStore | None, thread: str | None) -> list[str]:
    if thread is not None:
        from .errors import ThreadNotFoundError

        if store is None:
            raise ThreadNotFoundError(thread)
        store.records(thread)  # ThreadNotFoundError now, with its advice
        return [thread]
    return store.threads() if store is not None else []


def _report_broken(broken: dict[str, str]) -> None:
    import sys

    for thread_id, message in broken.items():
        print(f"flowkit: error: thread `{thread_id}`: {message}", file=sys.stderr)


# -- stats ---------------------------------------------------------------------------------------


def print_stats(
    directory: str,
    thread: str | None,
    out: TextIO,
    *,
    thresholds: Thresholds,
    flow: str | None = None,
    as_json: bool = False,
) -> int:
    """Print each thread's metrics and health; 1 only if a thread cannot be read."""
    from .runtime.monitor import PerformanceMonitor, format_bytes

    store = _open_store(directory)
    flows = _Flows(flow)
    evaluations: list[Evaluation] = []
    broken: dict[str, str] = {}
    for thread_id in _thread_ids(store, thread):
        assert store is not None
        monitor = PerformanceMonitor(store, thresholds=thresholds, flow_for=flows.get)
        try:
            evaluations.append(monitor.evaluate(thread_id))
        except (FlowkitError, OSError) as exc:  # one bad thread must not hide the others
            broken[thread_id] = str(exc)
    if as_json:
        data = [e.to_dict() for e in evaluations]
        data += [{"thread_id": t, "health": "unreadable", "error": e} for t, e in broken.items()]
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    elif not evaluations and not broken:
        out.write(f"No threads in {directory}\n")
    else:
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
        _table(rows, out)
        for e in evaluations:
            if e.status == "healthy":
                continue
            out.write(f"\n{e.metrics.thread_id}: {e.status}\n")
            for issue in e.critical_issues:
                out.write(f"  critical  {issue}\n")
            for issue in e.warnings:
                out.write(f"  warning   {issue}\n")
            for advice in e.recommendations:
                out.write(f"  -> {advice}\n")
        if any(not e.metrics.checkpoint_exact for e in evaluations):
            out.write("\n~ size folded from the journal without the flow (pass --flow)\n")
    _report_broken(broken)
    return 1 if broken else 0


# -- recover -------------------------------------------------------------------------------------


def _strategy(name: str | None) -> Strategy | None:
    from .runtime.strategies import BackToStable, Reset, Resume

    choices: dict[str, Strategy] = {
        "resume": Resume(),
        "back_to_stable": BackToStable(),
        "reset": Reset(),
    }
    return choices[name] if name is not None else None


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _print_report(report: RecoveryReport, flow: str, dry_run: bool, out: TextIO) -> None:
    where = f"{report.status} at {report.node} (version {report.version})"
    if report.outcome == "running":
        out.write(f"{report.thread_id}  running now: not checked\n")
        for note in report.notes:
            out.write(f"  note      {note}\n")
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
    if report.outcome == "recovered":
        out.write(
            f"  result    recovered: version {report.applied_version} written; resume the "
            "thread to continue\n"
        )
    elif report.outcome == "planned" and dry_run:
        out.write("  result    dry run: nothing written\n")
    elif report.outcome == "unrecoverable":
        out.write("  result    no strategy applies: nothing written; fix it by hand\n")


def recover_threads(
    directory: str,
    thread: str | None,
    out: TextIO,
    *,
    dry_run: bool = False,
    flow: str | None = None,
    strategy: str | None = None,
    as_json: bool = False,
) -> int:
    """Detect stuck threads and (unless ``dry_run``) recover them; 1 if any is left unfixed."""
    from ._runner import Runner
    from .runtime.recovery import Recovery, flow_of

    store = _open_store(directory)
    flows = _Flows(flow)
    chosen = _strategy(strategy)
    reports: list[tuple[RecoveryReport, str]] = []
    broken: dict[str, str] = {}
    recoveries: dict[str, Recovery] = {}
    for thread_id in _thread_ids(store, thread):
        assert store is not None
        try:
            name = flow_of(store, thread_id) or "?"
            found = flows.get(name)
            if found is None:
                broken[thread_id] = flows.problems.get(name, f"flow `{name}` is unknown")
                continue
            if name not in recoveries:
                recoveries[name] = Recovery(Runner(found, store=store))
            report = recoveries[name].recover(thread_id, dry_run=dry_run, strategy=chosen)
        except (FlowkitError, OSError) as exc:
            broken[thread_id] = str(exc)
            continue
        reports.append((report, name))
    if as_json:
        data = [r.to_dict() | {"flow": name} for r, name in reports]
        data += [{"thread_id": t, "outcome": "unreadable", "error": e} for t, e in broken.items()]
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    elif not reports and not broken:
        out.write(f"No threads in {directory}\n")
    for report, name in [] if as_json else reports:
        _print_report(report, name, dry_run, out)
    _report_broken(broken)
    unfixed = [r for r, _ in reports if r.outcome == "unrecoverable"]
    return 1 if broken or unfixed else 0
