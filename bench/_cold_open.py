"""Cold open (issue 25, acceptance 2): what opening a thread costs as its history grows.

Threads of 20, 2,000 and 100,000 steps (``--quick``: 5,000, one round) are built on a
``JsonFileStore`` (``fsync=False``: the bytes are the same, only building is faster) and,
when a server is reachable, on PostgreSQL (``$FLOWKIT_PG_URL``, a scratch database). Two
flows: ``counter``, whose state does not grow (one node counting to ``stop_at``, then gate
``more``, passed every 1,000 steps while building), and ``messages``
(``bench/_flows.loop_flow``: ~100 bytes of chat appended per step, so the state grows with
history). Then:

- ``get_state_ms``: a fresh store object and a fresh ``Runner`` read the thread, in this
  process (medians of interleaved rounds); the acceptance ratio is 2,000 over 20 steps
  (target <= 3x). On PostgreSQL the store object is shared (a new one opens a pool).
- ``cold_ms``: a new process opens the store, resumes the thread for exactly one step and
  saves (target <= 200 ms at 100,000 steps); its ``import``-free part, timed inside it, with
  how many ``load`` calls and records it read.
- ``rss_mb``: that process's peak RSS above ``python -c "import flowkit"`` (target <= 100 MB),
  and above a process that imported and built the same things but opened no thread.
- ``history50_ms``: ``Runner.history(thread, limit=50)`` (when the runner pages history).

usage: python bench/_cold_open.py [--quick] [--json] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _common import Case, interleaved, median, run_python, scratch_dir  # noqa: E402
from _flows import More, loop_flow, quiet_logging  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from flowkit import END, Flow, Gate, Route, RouteTable, Runner, field  # noqa: E402

#: Steps between the gates passed while a thread is built (a person answering now and then).
GATE_EVERY = 1000
PG_SERVER = os.environ.get("FLOWKIT_PG_URL") or "postgresql://postgres@127.0.0.1:5432/postgres"


class Counter(BaseModel):
    count: int = 0
    stop_at: int = 0
    done: bool = False


def tick(state: Counter) -> dict[str, Any]:
    n = state.count + 1
    return {"count": n, "done": n >= state.stop_at}


def _more(state: Counter, more: More) -> dict[str, Any]:
    return {"stop_at": more.stop_at, "done": more.finish}


def counter_flow() -> Flow:
    return Flow(
        name="bench_counter",
        state=Counter,
        start="tick",
        nodes={"tick": tick},
        gates={"more": Gate(More, apply=_more, writes=["stop_at", "done"])},
        routes={
            "tick": RouteTable("after_tick", [Route(field("done"), "more")], default="tick"),
            "more": RouteTable("after_more", [Route(field("done"), END)], default="tick"),
        },
    )


FLOWS: dict[str, Callable[[], Flow]] = {"counter": counter_flow, "messages": loop_flow}


# -- stores ---------------------------------------------------------------------------------


def open_store(target: str) -> Any:
    """``json:PATH`` -> a JsonFileStore (``fsync=False`` while building: ``json-fast:PATH``),
    ``pg:URL`` -> a PostgresStore."""
    kind, _, where = target.partition(":")
    if kind in ("json", "json-fast"):
        from flowkit.stores import JsonFileStore

        return JsonFileStore(where, fsync=kind == "json")
    from flowkit.stores.postgres import PostgresStore

    return PostgresStore(where)


def close(store: Any) -> None:
    with suppress(Exception):
        store.close()


@contextmanager
def pg_database() -> Iterator[str | None]:
    """A scratch database (commits not waiting for the disk: only reads are measured), or
    ``None`` when no server is reachable."""
    try:
        import psycopg

        from flowkit.stores.postgres import migrate

        with psycopg.connect(PG_SERVER, autocommit=True, connect_timeout=5) as conn:
            name = f"flowkit_cold_{os.urandom(4).hex()}"
            conn.execute(f'CREATE DATABASE "{name}"')
            conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    except Exception:
        yield None
        return
    from urllib.parse import urlsplit

    url = urlsplit(PG_SERVER)._replace(path=f"/{name}").geturl()
    try:
        migrate(url)
        yield url
    finally:
        with psycopg.connect(PG_SERVER, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def build(store: Any, flow_name: str, thread_id: str, steps: int) -> None:
    """A thread of ``steps`` node steps waiting at gate ``more`` (passed every 1,000 steps)."""
    runner = Runner(FLOWS[flow_name](), store=store)
    result = runner.start(thread_id, {"stop_at": min(steps, GATE_EVERY)})
    while result.state.count < steps:
        result = runner.resume(thread_id, {"stop_at": min(steps, result.state.count + GATE_EVERY)})
    assert result.status == "waiting" and result.state.count == steps, result


# -- the child process ------------------------------------------------------------------------


def child(target: str, flow_name: str, thread_id: str, stop_at: int) -> None:
    """Open the store, resume ``thread_id`` with ``stop_at`` (one more step), save; print
    timings, ``load`` calls, records read and peak RSS as JSON."""
    quiet_logging()
    flow = FLOWS[flow_name]()
    # An app imports its store up front: only opening it is timed.
    if target.startswith("json"):
        from flowkit.stores import JsonFileStore  # noqa: F401
    else:
        from flowkit.stores.postgres import PostgresStore  # noqa: F401
        from flowkit.stores.postgres._driver import load_driver

        load_driver()
    calls = {"loads": 0, "records": 0}
    started = time.perf_counter()
    store = open_store(target)
    load = store.load

    def counted(thread: str, *, after: int | None = None) -> Any:
        log = load(thread, after=after)
        calls["loads"] += 1
        calls["records"] += len(log.records)
        return log

    store.load = counted
    runner = Runner(flow, store=store)
    result = runner.resume(thread_id, {"stop_at": stop_at})
    done = time.perf_counter()
    assert result.status == "waiting" and result.state.count == stop_at, result
    close(store)
    print(json.dumps({"cold_ms": (done - started) * 1e3, "rss_kb": peak_rss_kb(), **calls}))


def peak_rss_kb() -> int:
    """This process's peak RSS in KiB: ``VmHWM``, which starts afresh at ``exec``
    (``getrusage``'s ``ru_maxrss`` keeps the forking parent's peak, so a child started by a
    big benchmark process would report the parent's), else ``ru_maxrss``."""
    with suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


#: The empty process the acceptance compares with.
IMPORT_ONLY = (
    "import flowkit, json, pathlib\n"
    "hwm = [l for l in pathlib.Path('/proc/self/status').read_text().splitlines() if "
    "l.startswith('VmHWM:')]\n"
    "print(json.dumps({'rss_kb': int(hwm[0].split()[1])}))"
)


def ready(target: str, flow_name: str) -> None:
    """Peak RSS of a child that imported and built what ``child`` does but opened no thread."""
    quiet_logging()
    store = open_store(target)
    Runner(FLOWS[flow_name](), store=store)
    close(store)
    print(json.dumps({"rss_kb": peak_rss_kb()}))


# -- measures --------------------------------------------------------------------------------


def _get_state_case(target: str, flow_name: str, thread_id: str, shared: Any | None) -> Case:
    flow = FLOWS[flow_name]()
    batch = 10 if shared is None else 20

    def make() -> Callable[[], None]:
        stores = [shared or open_store(target) for _ in range(batch)]
        runners = [Runner(flow, store=s) for s in stores]

        def run() -> None:
            for runner in runners:
                runner.get_state(thread_id)

        return run

    return Case(make, batch)


def _history_ms(store: Any, flow_name: str, thread_id: str, rounds: int) -> float | None:
    runner = Runner(FLOWS[flow_name](), store=store)
    try:
        runner.history(thread_id, limit=50)  # type: ignore[call-arg]
    except TypeError:
        return None  # a runner from before paged history
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        runner.history(thread_id, limit=50)  # type: ignore[call-arg]
        times.append(time.perf_counter() - started)
    return median(times) * 1e3


def measure_store(
    label: str, build_target: str, target: str, flows: dict[str, list[int]], rounds: int, reps: int
) -> dict[str, float]:
    """Every figure of one store (``label``: ``json`` or ``pg``)."""
    figures: dict[str, float] = {}
    for flow_name, flow_sizes in flows.items():
        counts: dict[int, int] = {}
        store = open_store(build_target)
        try:
            for steps in flow_sizes:
                build(store, flow_name, f"{flow_name}-{steps}", steps)
                counts[steps] = steps
        finally:
            close(store)
        shared = open_store(target) if label == "pg" else None
        try:
            got = interleaved(
                {
                    str(s): _get_state_case(target, flow_name, f"{flow_name}-{s}", shared)
                    for s in flow_sizes
                    if s <= 2000
                },
                rounds,
            )
            for steps, seconds in got.items():
                figures[f"{label}.{flow_name}.get_state_ms.{steps}"] = seconds * 1e3
            reader = shared or open_store(target)
            for steps in flow_sizes:
                laps = rounds if steps <= 2000 else 3  # a growing state's far pages are slow
                ms = _history_ms(reader, flow_name, f"{flow_name}-{steps}", laps)
                if ms is not None:
                    figures[f"{label}.{flow_name}.history50_ms.{steps}"] = ms
            if reader is not shared:
                close(reader)
        finally:
            if shared is not None:
                close(shared)
        if {20, 2000} <= set(flow_sizes):
            figures[f"{label}.{flow_name}.get_state_ratio"] = (
                figures[f"{label}.{flow_name}.get_state_ms.2000"]
                / figures[f"{label}.{flow_name}.get_state_ms.20"]
            )
        rss = {
            "import": _median_child(["-c", IMPORT_ONLY], "rss_kb", reps),
            "ready": _median_child([__file__, "--ready", target, flow_name], "rss_kb", reps),
        }
        for steps in flow_sizes:
            cold, peak, loads, records = [], [], [], []
            for _ in range(reps):
                counts[steps] += 1
                _, done = run_python(
                    [__file__, "--child", target, flow_name, f"{flow_name}-{steps}",
                     str(counts[steps])]
                )  # fmt: skip
                out = json.loads(done.stdout.strip().splitlines()[-1])
                cold.append(out["cold_ms"])
                peak.append(out["rss_kb"])
                loads.append(out["loads"])
                records.append(out["records"])
            key = f"{label}.{flow_name}"
            figures[f"{key}.cold_ms.{steps}"] = median(cold)
            figures[f"{key}.rss_mb.{steps}"] = (median(peak) - rss["import"]) / 1024
            figures[f"{key}.rss_over_ready_mb.{steps}"] = (median(peak) - rss["ready"]) / 1024
            figures[f"{key}.loads.{steps}"] = median(loads)
            figures[f"{key}.records_read.{steps}"] = median(records)
    return figures


def _median_child(argv: list[str], key: str, reps: int) -> float:
    values = []
    for _ in range(reps):
        _, done = run_python(argv)
        values.append(float(json.loads(done.stdout.strip().splitlines()[-1])[key]))
    return median(values)


def measure(quick: bool, *, folder: Path | None = None) -> dict[str, float]:
    """Every figure, as ``{"json.counter.cold_ms.100000": ..., ...}`` (see the module doc)."""
    quiet_logging()
    # Quick is a smoke run (every figure reported, none meaningful): a big size still above
    # 2,000 and one round, one process each, since its processes take most of its time.
    big = 5_000 if quick else 100_000
    sizes = {"counter": [20, 2000, big], "messages": [20, 2000] + ([] if quick else [big])}
    rounds, reps = (1, 1) if quick else (9, 5)
    figures: dict[str, float] = {}
    with scratch_dir(folder or Path.cwd()) as scratch:
        root = scratch / "json"
        figures.update(
            measure_store("json", f"json-fast:{root}", f"json:{root}", sizes, rounds, reps)
        )
    with pg_database() as url:
        if url is not None:
            pg_sizes = {"counter": [20, 2000] + ([] if quick else [big]), "messages": [20, 2000]}
            figures.update(measure_store("pg", f"pg:{url}", f"pg:{url}", pg_sizes, rounds, reps))
    return figures


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--child"]:
        child(args[1], args[2], args[3], int(args[4]))
        return 0
    if args[:1] == ["--ready"]:
        ready(args[1], args[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 steps at most, one round")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--dir", type=Path, default=Path.cwd(), help="where scratch stores go")
    parsed = parser.parse_args(args)
    figures = measure(parsed.quick, folder=parsed.dir)
    if parsed.json:
        print(json.dumps(figures, indent=2))
    else:
        for name, value in figures.items():
            print(f"{name:45} {value:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
