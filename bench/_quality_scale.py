"""The quality state store as sessions grow (issue 25, acceptance 4), on the JSON-file store
and on PostgreSQL when one answers ($FLOWKIT_PG_URL, else 127.0.0.1:5432 user postgres).

1. ``record_issue`` + ``commit`` (one durable unit of one issue) in a fresh session (its first
   50 issues) and in a session already holding 1,450 issues (issues 1,451 to 1,500); target:
   the second within 2x of the first. The rounds of the two cases are interleaved.
2. Resume of 200 issues: ``bench/quality.py``'s "session resume" (a fresh ``QualityChecker``
   runs the same check on an interrupted session: lock, unresolved issues to Partial, the
   thread resumed up to the step that stopped, where the LLM is still away) on a session whose
   check found 200 issues; target <= 1 s.

``measure(quick)`` returns the figures (``bench/scale.py`` calls it); run this file for a
table, or ``--json``. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import count
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import scratch_dir

from flowkit.errors import LLMUnavailableError
from flowkit.quality.app import QualityChecker
from flowkit.quality.models import IterationPolicy, Principal
from flowkit.quality.store_contract import make_issue
from flowkit.quality.stores import WorkflowStateStore
from flowkit.testing import ScriptedLLM

AKI = Principal(user_id="aki")
PG_URL = os.environ.get("FLOWKIT_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
#: Issues in the grown session, and how many single-issue commits are timed in each case.
GROWN, TIMED = 1_500, 50
RESUMED_ISSUES = 200

StoreFactory = Callable[[], WorkflowStateStore]


# -- record + commit -------------------------------------------------------------------------


def _filled(store: WorkflowStateStore, episode: int, issues: int, ids: Iterator[int]) -> str:
    """A new session on ``episode`` holding ``issues`` issues, written 50 to a unit."""
    sid = store.begin_session(episode, IterationPolicy(), principal=AKI).session_id
    store.commit()
    for start in range(0, issues, 50):
        for _ in range(min(50, issues - start)):
            store.record_issue(make_issue(sid, next(ids)))
        store.commit()
    return sid


def _commits(store: WorkflowStateStore, sid: str, ids: Iterator[int]) -> list[float]:
    samples = []
    for _ in range(TIMED):
        issue = make_issue(sid, next(ids))
        began = time.perf_counter()
        store.record_issue(issue)
        store.commit()
        samples.append(time.perf_counter() - began)
    return samples


def record_commit(open_store: StoreFactory, rounds: int) -> dict[str, float]:
    """Median ms of record_issue+commit in a session's first 50 issues and at 1,450-1,500,
    over ``rounds`` interleaved rounds (a fresh session of each kind per round)."""
    first: list[float] = []
    grown: list[float] = []
    episodes, ids = count(1), count(0)
    with _closing(open_store()) as store:
        for _ in range(rounds):
            sid = _filled(store, next(episodes), 0, ids)
            first += _commits(store, sid, ids)
            sid = _filled(store, next(episodes), GROWN - TIMED, ids)
            grown += _commits(store, sid, ids)
    at_first, at_grown = statistics.median(first) * 1000, statistics.median(grown) * 1000
    return {
        "first_50_ms": at_first,
        f"at_{GROWN}_ms": at_grown,
        "ratio": at_grown / at_first,
        f"at_{GROWN}_p95_ms": sorted(grown)[int(len(grown) * 0.95) - 1] * 1000,
    }


# -- resume of 200 issues --------------------------------------------------------------------


def manuscript(issues: int) -> str:
    """A manuscript with one misspelt word per line, each line told apart by its number."""
    return "".join(
        f"Line {n:04d}: the quick fox jumpd over marker {n:04d}.\n" for n in range(issues)
    )


def _findings(issues: int) -> Callable[[str], str]:
    def check(prompt: str) -> str:
        text = prompt.split("Manuscript:\n", 1)[1]
        found = [
            {"category": "typo", "severity": "low", "description": "misspelt",
             "quote": f"jumpd over marker {n:04d}", "suggested_fix": "jumped"}
            for n in range(issues)
            if f"marker {n:04d}" in text
        ]  # fmt: skip
        return json.dumps({"issues": found, "metrics": {"typo": 0.5}})

    return check


def _away(issues: int) -> ScriptedLLM:
    """Checks find ``issues`` typos; planning a fix finds the LLM away (the interruption)."""
    return ScriptedLLM(
        [("Manuscript:\n", _findings(issues)), ("Excerpt:\n", LLMUnavailableError("away"))]
    )


def session_resume(
    root: Path, runs: int, open_store: StoreFactory | None, issues: int = RESUMED_ISSUES
) -> dict[str, float]:
    """``bench/quality.py``'s session resume on sessions of ``issues`` issues: median ms of
    ``runs`` resumes, each of its own interrupted session (one per episode)."""
    text = root / "manuscript.txt"
    root.mkdir(parents=True, exist_ok=True)
    text.write_text(manuscript(issues), encoding="utf-8")
    for episode in range(1, runs + 1):
        store = open_store() if open_store else None
        with QualityChecker(root, principal=AKI, llm=_away(issues), store=store) as checker:
            checker.check(text, episode=episode, policy=IterationPolicy(count=2))
    samples, cpu = [], []
    for episode in range(1, runs + 1):
        began, began_cpu = time.perf_counter(), time.process_time()
        store = open_store() if open_store else None
        with QualityChecker(root, principal=AKI, llm=_away(issues), store=store) as checker:
            outcome = checker.check(text, episode=episode)
        samples.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
        assert outcome.resumed and len(outcome.partial_ids) == issues, outcome
    return {
        "median_ms": statistics.median(samples) * 1000,
        "max_ms": max(samples) * 1000,
        # this process's CPU: on a machine shared with other work, wall time also counts waits
        "cpu_median_ms": statistics.median(cpu) * 1000,
    }


# -- stores ----------------------------------------------------------------------------------


@contextmanager
def _closing(store: WorkflowStateStore) -> Iterator[WorkflowStateStore]:
    try:
        yield store
    finally:
        store.close()


@contextmanager
def _pg_database() -> Iterator[str | None]:
    """A scratch database's URL, dropped afterwards; ``None`` when no server answers."""
    try:
        import psycopg
    except ImportError:
        yield None
        return
    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.Error:
        yield None
        return
    name = f"flowkit_quality_scale_{os.getpid()}"
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{PG_URL.rpartition('/')[0]}/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def measure(quick: bool, *, base: Path | None = None) -> dict[str, Any]:
    """Both measures on both stores; scratch folders go under ``base`` (a real disk; default:
    the current folder). ``quick``: fewer rounds and resumes. The interrupted sessions log
    their failed steps (thousands of warnings, all expected): silenced while it runs."""
    import structlog

    before = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    try:
        return _measure(quick, base)
    finally:
        structlog.configure(**before)


def _measure(quick: bool, base: Path | None) -> dict[str, Any]:
    from flowkit.quality.stores.jsonfile import JsonWorkflowStateStore

    rounds, runs = (1, 1) if quick else (3, 3)
    figures: dict[str, Any] = {}
    with scratch_dir(base or Path.cwd()) as root:
        figures["json.record_commit"] = record_commit(
            lambda: JsonWorkflowStateStore(root / "record"), rounds
        )
        figures["json.resume_200"] = session_resume(root / "resume", runs, None)
        with _pg_database() as dsn:
            if dsn is not None:
                from flowkit.quality.stores.postgres import PostgresWorkflowStateStore

                def pg() -> WorkflowStateStore:
                    return PostgresWorkflowStateStore(dsn)

                figures["postgres.record_commit"] = record_commit(pg, rounds)
                figures["postgres.resume_200"] = session_resume(root / "resume-pg", runs, pg)
    return figures


def report(figures: dict[str, Any]) -> str:
    """The figures as a table beside acceptance 4's targets."""
    rows = []
    for kind in ("json", "postgres"):
        rc, rs = figures.get(f"{kind}.record_commit"), figures.get(f"{kind}.resume_200")
        if rc is None or rs is None:
            rows.append((f"{kind}: (no server)", "", "", ""))
            continue
        rows.append((
            f"{kind}: record_issue+commit, first 50 / at {GROWN}",
            f"{rc['first_50_ms']:.2f} / {rc[f'at_{GROWN}_ms']:.2f} ms",
            f"{rc['ratio']:.2f}x", "<= 2x",
        ))  # fmt: skip
        rows.append((
            f"{kind}: resume of {RESUMED_ISSUES} issues",
            f"median {rs['median_ms']:.0f} ms (CPU {rs['cpu_median_ms']:.0f} ms)", "", "<= 1 s",
        ))  # fmt: skip
    head = ("measure", "figure", "ratio", "target")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(head, widths, strict=True))]
    lines.append("-" * len(lines[0]))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, one resume")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--dir", default=".", help="where scratch folders go (default: .)")
    args = parser.parse_args()
    figures = measure(args.quick, base=Path(args.dir))
    print(json.dumps(figures, indent=2) if args.json else report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
