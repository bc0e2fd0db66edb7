"""Where flowkit's time goes: profiles behind the figures of ``bench/run.py``.

Prints, for the per-node path with no store, the durable path and ``import flowkit``:

- a cProfile of the path (top functions by own time) — cProfile inflates cheap calls, so
- micro-timings of the individual pieces one step goes through (real time, best of 5), and
- experiments that size possible fixes: unconfigured structlog (what flowkit costs a user
  who never configured logging), appending + fdatasync versus overwriting a preallocated
  file + fdatasync (what preallocating the journal would save on this disk), and what the
  garbage collector costs a short-lived process during import and at exit.

Why: so that performance work on the engine starts from measured costs, not guesses. The
micro-timings reach into private modules on purpose; a piece that moved prints "n/a".

usage: python bench/profile_engine.py [--quick] [--dir DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import time
import timeit
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import run_python, scratch_dir
from _flows import Chat, chain_flow, loop_flow, message, quiet_logging

from flowkit import Runner, field
from flowkit.stores import JsonFileStore

try:
    from flowkit.definition._node import Context
    from flowkit.records._records import FORMAT_VERSION, StepRecord, prebuilt
except ImportError:  # private modules moved: those micro-timings print "n/a"
    Context = StepRecord = prebuilt = None  # type: ignore[assignment, misc]
    FORMAT_VERSION = 2


def top_functions(run: Callable[[], object], limit: int) -> str:
    profile = cProfile.Profile()
    profile.enable()
    run()
    profile.disable()
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(limit)
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("ncalls"))
    return "\n".join(lines[start : start + limit + 1])


def micro(label: str, statement: Callable[[], object], number: int) -> None:
    try:
        best = min(timeit.repeat(statement, number=number, repeat=5)) / number
        print(f"  {label:58s} {best * 1e6:8.2f} µs")
    except Exception as exc:  # a private piece moved: say so, keep going
        print(f"  {label:58s}      n/a ({type(exc).__name__})")


def engine_section(quick: bool) -> None:
    print("== per node, no store: 10-node chain, Runner(store=None) ==")
    runs = 200 if quick else 2000
    runner = Runner(chain_flow(), store=None)
    for i in range(50):
        runner.start(f"warm{i}")
    started = time.perf_counter()
    for i in range(runs):
        runner.start(f"t{i}")
    per_node = (time.perf_counter() - started) / runs / 10
    print(f"  measured: {per_node * 1e6:.1f} µs per node ({runs} runs)\n")
    print(top_functions(lambda: [runner.start(f"p{i}") for i in range(runs)], 18))
    print("\n  pieces of one step (real time):")
    flow = chain_flow()
    state = Chat()
    n = 2000 if quick else 20000

    def record() -> Any:
        return StepRecord(  # type: ignore[misc]
            version=1,
            ts=1.0,
            run_id="r",
            next="n1",
            status="pending",
            node="n0",
            update={},
            attempts=1,
            latency_s=0.1,
            error=None,
            llm_calls=[],
        )

    def context() -> Any:
        return Context(  # type: ignore[misc]
            thread_id="t", run_id="r", node="n0", attempt=1, llm=None, clock=time.time
        )

    edges = frozenset({("n0", "n1"), ("n1", "n2")})
    micro(
        "flow.machine.advance (a transitions trigger)", lambda: flow.machine.advance("n0", "n1"), n
    )
    values = {
        "v": FORMAT_VERSION, "version": 1, "ts": 1.0, "run_id": "r", "next": "n1",
        "status": "pending", "kind": "step", "node": "n0", "update": {}, "attempts": 1,
        "latency_s": 0.1, "error": None, "llm_calls": [], "cached": False,
    }  # fmt: skip
    micro("StepRecord(...) validated (what the engine no longer pays)", record, n)
    micro(
        "prebuilt(StepRecord, ...) (the engine's, only with a store)",
        lambda: prebuilt(StepRecord, dict(values)),  # type: ignore[misc]
        n,
    )
    micro("schema.apply of an empty update", lambda: flow.schema.apply(state, {}, node="n0"), n)
    micro("flow.next_state (static route)", lambda: flow.next_state("n0", state), n)
    micro("Context(...)", context, n)
    micro("per run: os.urandom(8).hex() (run id)", lambda: os.urandom(8).hex(), n)
    rule = field("done")
    micro("route rule: field('done') on a model", lambda: rule(state), n)
    micro("frozenset edge lookup (what an edge check could cost)", lambda: ("n0", "n1") in edges, n)
    print()


def durable_section(quick: bool, folder: Path) -> None:
    print("== durable: loop appending a 100-byte message per step, JsonFileStore ==")
    steps = 300 if quick else 2000
    timings = {}
    for fsync in (False, True):
        runner = Runner(loop_flow(), store=JsonFileStore(folder / f"d{fsync}", fsync=fsync))
        started = time.perf_counter()
        runner.start("t", {"stop_at": steps})
        timings[fsync] = (time.perf_counter() - started) / steps
    print(f"  fsync=False: {timings[False] * 1e6:.1f} µs/step (CPU + write syscalls)")
    print(f"  fsync=True:  {timings[True] * 1e6:.1f} µs/step (the difference is fdatasync)\n")
    runner = Runner(loop_flow(), store=JsonFileStore(folder / "prof", fsync=False))
    print(top_functions(lambda: runner.start("t", {"stop_at": steps}), 18))

    flow = loop_flow()
    state = Chat(count=5, stop_at=100, messages=[message(i) for i in range(5)])
    update = {"messages": [message(6)], "count": 6, "done": False}
    _, normalised = flow.schema.apply(state, update, node="step")
    n = 2000 if quick else 20000
    print("\n  pieces of one durable step (real time):")
    micro(
        "schema.apply (validate + reduce + model_copy)",
        lambda: flow.schema.apply(state, update, node="step"),
        n,
    )
    micro("schema.dump_update", lambda: flow.schema.dump_update(normalised), n)
    try:
        rec = StepRecord.model_construct(  # type: ignore[union-attr]
            version=7,
            ts=time.time(),
            run_id=uuid.uuid4().hex[:16],
            next="step",
            status="pending",
            node="step",
            update=flow.schema.dump_update(normalised),
            attempts=1,
            latency_s=3.1e-06,
            error=None,
            llm_calls=[],
        )
        micro("record.model_dump_json", rec.model_dump_json, n)
        line = rec.model_dump_json()
        trimmed = rec.model_dump_json(exclude={"error", "llm_calls", "attempts"})
        print(
            f"  a step record is {len(line) + 1} B; without error/llm_calls/attempts "
            f"defaults {len(trimmed) + 1} B"
        )
    except Exception as exc:
        print(f"  record pieces n/a ({type(exc).__name__})")
    print()


def fsync_experiment(quick: bool, folder: Path) -> None:
    print("== fdatasync: append (file grows) vs overwrite inside a preallocated file ==")
    payload = b"x" * 360 + b"\n"
    writes = 100 if quick else 300
    rounds = 3 if quick else 7

    def append() -> float:
        path = folder / "append.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        started = time.perf_counter()
        for _ in range(writes):
            os.write(fd, payload)
            os.fdatasync(fd)
        elapsed = time.perf_counter() - started
        os.close(fd)
        path.unlink()
        return elapsed / writes

    def overwrite() -> float:
        path = folder / "prealloc.jsonl"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        os.posix_fallocate(fd, 0, 4 << 20)
        os.fsync(fd)
        offset = 0
        started = time.perf_counter()
        for _ in range(writes):
            os.pwrite(fd, payload, offset)
            offset += len(payload)
            os.fdatasync(fd)
        elapsed = time.perf_counter() - started
        os.close(fd)
        path.unlink()
        return elapsed / writes

    results: dict[str, list[float]] = {"append": [], "overwrite": []}
    for _ in range(rounds):
        results["append"].append(append())
        results["overwrite"].append(overwrite())
    for name, values in results.items():
        print(f"  {name:10s} {statistics.median(values) * 1e6:8.1f} µs per write+fdatasync")
    print()


def logging_experiment(quick: bool) -> None:
    print("== structlog unconfigured (prints flowkit's debug events) vs configured ==")
    code = (
        "import sys, time; sys.path.insert(0, {bench!r}); {setup}\n"
        "from _flows import chain_flow\nfrom flowkit import Runner\n"
        "r = Runner(chain_flow(), store=None)\n"
        "[r.start(f'w{{i}}') for i in range(50)]\n"
        "t = time.perf_counter()\n[r.start(f't{{i}}') for i in range({runs})]\n"
        "print((time.perf_counter() - t) / {runs} / 10 * 1e6, file=sys.stderr)\n"
    )
    runs = 200 if quick else 2000
    bench = str(Path(__file__).resolve().parent)
    setups = {
        "unconfigured": "",
        "configured (INFO, cached)": "from _flows import quiet_logging; quiet_logging()",
    }
    for name, setup in setups.items():
        _, done = run_python(["-c", code.format(bench=bench, setup=setup, runs=runs)])
        per_node = float(done.stderr.strip().splitlines()[-1])
        print(f"  {name:28s} {per_node:6.1f} µs per node  ({len(done.stdout):,} bytes on stdout)")
    print()


def import_section() -> None:
    print("== the engine's import: -X importtime, cumulative ms of flowkit's direct imports ==")
    _, done = run_python(["-X", "importtime", "-c", "from flowkit import Flow, Runner"])
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, own, cumulative, name = (part.strip() for part in line.replace(":", "|", 1).split("|"))
        depth = len(line.split("|")[2]) - len(line.split("|")[2].lstrip())
        rows.append((int(own), int(cumulative), depth, name))
    for own, cumulative, _depth, name in sorted(rows, key=lambda r: -r[1])[:25]:
        print(f"  {cumulative / 1e3:7.1f} ms cumulative {own / 1e3:6.1f} ms own  {name}")
    print()


def exit_experiment(quick: bool) -> None:
    print("== a fresh process: what garbage collection costs around import flowkit ==")
    codes = {
        "python -c pass": "pass",
        "import the engine (normal exit)": "from flowkit import Flow, Runner",
        "import the engine; gc.freeze() (exit skips the objects)": (
            "import gc\nfrom flowkit import Flow, Runner\ngc.freeze()"
        ),
        "import the engine; os._exit(0) (no finalisation at all)": (
            "import os\nfrom flowkit import Flow, Runner\nos._exit(0)"
        ),
        "gc.disable(); import the engine; os._exit(0)": (
            "import gc, os\ngc.disable()\nfrom flowkit import Flow, Runner\nos._exit(0)"
        ),
    }
    walls: dict[str, list[float]] = {name: [] for name in codes}
    for _ in range(5 if quick else 9):
        for name, code in codes.items():
            wall, _ = run_python(["-c", code])
            walls[name].append(wall * 1e3)
    for name, values in walls.items():
        print(f"  {name:58s} {statistics.median(values):7.1f} ms wall")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    quiet_logging()
    with scratch_dir(args.dir) as folder:
        engine_section(args.quick)
        durable_section(args.quick, folder)
        fsync_experiment(args.quick, folder)
    logging_experiment(args.quick)
    exit_experiment(args.quick)
    import_section()


if __name__ == "__main__":
    main()
