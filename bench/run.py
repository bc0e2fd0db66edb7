"""flowkit benchmark: the figures of BRIEF §4, each next to a floor measured in the same run.

What it measures (medians over interleaved rounds; see docs/performance.md for the method):

1. engine µs per node with no persistence (``Runner(store=None)``) and with ``MemoryStore``,
   over a chain of 10 no-op nodes; floors: ``transitions`` alone making the same 10
   transitions, and a plain loop calling 10 functions.
2. µs per node durable on local disk with ``JsonFileStore`` (fsync each step): steady state
   of a long loop, and the 10-node chain per start; floors: one fsync'd SQLite row (WAL,
   synchronous=FULL) and one ``os.write`` + ``os.fdatasync`` of the same record bytes.
3. bytes written per step at 10, 100, 1,000 and 2,000 messages in state: the journal record,
   and the amortised figure including the snapshots the store really wrote; floor: the new
   message's own JSON bytes. The brief wants it flat (<= 1.2x the 10-message figure).
4. ``from flowkit import Flow, Runner`` (the engine loaded) in a fresh interpreter (minus an
   empty interpreter's start-up), against importing its dependencies; ``-X importtime``
   shows which modules dominate. CLI start-up and bare ``import flowkit``: ``bench/startup.py``.
5. resume of a thread waiting at a review gate (gate -> node -> END), JsonFileStore and
   MemoryStore.
6. a new process that loads a 1,000-step thread from JsonFileStore, runs one step and saves.
7. the same for LangGraph and Burr when they are importable (``bench/README.md``).
8. the hot-path targets of issue #12, each beside its floor with PASS/MISS
   (``bench/_hotpath.py``): per node in a long loop and per node with a new thread per run
   against ``transitions``, per step with 10 vs 100,000 messages, per node in a flow of
   11 vs 10,000 nodes. A MISS is printed, never raised.

Why: these are the numbers flowkit promises its users (robot cell controllers start often,
fsync every step and keep long chat histories). Ratios are only quoted within one run,
because this kind of machine is noisy. Timings are never asserted anywhere.

usage: python bench/run.py [--quick] [--json] [--save FILE] [--no-peers] [--dir DIR] [--hot-path]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _common import Case, filesystem_of, interleaved, median, run_python, scratch_dir
from _floors import fsync_append_case, plain_loop_case, sqlite_case, transitions_case
from _flows import chain_flow, loop_flow, message, quiet_logging, review_flow
from _hotpath import BIG_FLOW, MESSAGES, SMALL_FLOW, append_case, loop_case, sized_case, verdicts
from _hotpath import render as render_hot

from flowkit import Runner
from flowkit.stores import JsonFileStore, MemoryStore

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Config:
    rounds: int
    engine_runs: int  # 10-node chain starts per batch (no store / memory)
    durable_runs: int  # 10-node chain starts per batch on disk
    loop_long: int  # steps of the long durable loop
    loop_short: int  # steps of the short one (the difference is the steady state)
    floor_writes: int  # fsync'd writes per floor batch
    resume_runs: int  # waiting threads resumed per batch
    import_reps: int
    thread_steps: int  # history of the thread a new process loads
    newproc_reps: int
    loop_laps: int  # laps of the 10-node ring in one long run (hot path)
    append_steps: int  # steps timed after a thread's history (hot path)
    size_runs: int  # 10-node runs per batch in a small and a 10,000-node flow (hot path)
    message_counts: list[int] = field(default_factory=lambda: [10, 100, 1000, 2000])


FULL = Config(
    rounds=9,
    engine_runs=200,
    durable_runs=20,
    loop_long=300,
    loop_short=10,
    floor_writes=300,
    resume_runs=40,
    import_reps=11,
    thread_steps=1000,
    newproc_reps=5,
    loop_laps=500,
    append_steps=300,
    size_runs=200,
)
QUICK = Config(
    rounds=3,
    engine_runs=20,
    durable_runs=3,
    loop_long=30,
    loop_short=5,
    floor_writes=20,
    resume_runs=5,
    import_reps=5,
    thread_steps=1000,
    newproc_reps=2,
    loop_laps=50,
    append_steps=30,
    size_runs=20,
)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- 1. engine cost per node ---------------------------------------------------------------------


def _chain_case(store: Callable[[], Any], runs: int) -> Case:
    flow = chain_flow()

    def make() -> Callable[[], None]:
        runner = Runner(flow, store=store())
        ids = [f"t{i}" for i in range(runs)]

        def run() -> None:
            for tid in ids:
                runner.start(tid)

        return run

    return Case(make, runs * 10)


def measure_engine(cfg: Config) -> dict[str, float]:
    got = interleaved(
        {
            "none": _chain_case(lambda: None, cfg.engine_runs),
            "memory": _chain_case(MemoryStore, cfg.engine_runs),
            "loop": loop_case(cfg.loop_laps),
            "transitions": transitions_case(cfg.engine_runs),
            "plain": plain_loop_case(cfg.engine_runs),
        },
        cfg.rounds,
    )
    return {
        "flowkit.node_us.none": got["none"] * 1e6,
        "flowkit.node_us.memory": got["memory"] * 1e6,
        "flowkit.hot.loop_us": got["loop"] * 1e6,
        "floor.transitions_us": got["transitions"] * 1e6,
        "floor.plain_us": got["plain"] * 1e6,
    }


# -- 8. hot path: cost flat in history and in the size of the flow ----------------------------


def measure_hotpath(cfg: Config) -> dict[str, float]:
    cases = {f"append.{m}": append_case(m, cfg.append_steps) for m in MESSAGES}
    cases.update({f"size.{n}": sized_case(n, cfg.size_runs) for n in (SMALL_FLOW, BIG_FLOW)})
    got = interleaved(cases, cfg.rounds)
    return {f"flowkit.hot.{name.replace('.', '_us.')}": sec * 1e6 for name, sec in got.items()}


# -- 2. durable cost per node --------------------------------------------------------------------


def measure_durable(cfg: Config, folder: Path) -> dict[str, float]:
    loop = loop_flow()
    counter = iter(range(10**9))

    def fresh_store() -> JsonFileStore:
        return JsonFileStore(folder / f"store-{next(counter)}")

    def loop_case(steps: int) -> Case:
        def make() -> Callable[[], None]:
            runner = Runner(loop, store=fresh_store())

            def run() -> None:
                runner.start("loop", {"stop_at": steps})

            return run

        return Case(make, 1)

    # A real step record, mid-history, is the payload of both durable floors.
    probe = fresh_store()
    Runner(loop, store=probe).start("probe", {"stop_at": 100})
    lines = (probe.root / "threads" / "probe" / "journal.jsonl").read_bytes().splitlines()
    payload = lines[50] + b"\n"
    probe.close()

    got = interleaved(
        {
            "chain": _chain_case(fresh_store, cfg.durable_runs),
            "loop_long": loop_case(cfg.loop_long),
            "loop_short": loop_case(cfg.loop_short),
            "sqlite": sqlite_case(folder, payload, cfg.floor_writes),
            "fsync": fsync_append_case(folder, payload, cfg.floor_writes),
        },
        cfg.rounds,
    )
    steady = (got["loop_long"] - got["loop_short"]) / (cfg.loop_long - cfg.loop_short)
    return {
        "flowkit.durable_us.steady": steady * 1e6,
        "flowkit.durable_us.chain": got["chain"] * 1e6,
        "floor.sqlite_us": got["sqlite"] * 1e6,
        "floor.fsync_us": got["fsync"] * 1e6,
        "floor.record_bytes": float(len(payload)),
    }


# -- 3. bytes written per step -------------------------------------------------------------------


class CountingStore(JsonFileStore):
    """A JsonFileStore that notes the real growth of the journal and every snapshot written."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, fsync=False)  # the bytes are the same with or without fsync
        self.appends: dict[int, tuple[int, int | None]] = {}  # version -> (bytes, count)
        self.snapshots: dict[int, int] = {}  # version -> bytes

    def append(self, thread_id: str, records: Sequence[Any], *, expected_version: int) -> None:
        journal = self.root / "threads" / thread_id / "journal.jsonl"
        before = journal.stat().st_size
        super().append(thread_id, records, expected_version=expected_version)
        count = getattr(records[-1], "update", {}).get("count")
        self.appends[records[-1].version] = (journal.stat().st_size - before, count)

    def write_snapshot(self, thread_id: str, snapshot: Any) -> None:
        super().write_snapshot(thread_id, snapshot)
        size = (self.root / "threads" / thread_id / "snapshot.json").stat().st_size
        self.snapshots[snapshot.version] = size


def measure_bytes(cfg: Config, folder: Path) -> tuple[dict[str, float], dict[str, Any]]:
    store = CountingStore(folder / "bytes")
    runner = Runner(loop_flow(), store=store)
    top = max(cfg.message_counts)
    result = runner.start("bytes", {"stop_at": top})
    # Go on until the snapshot cycle holding the last count closes, so that snapshot is counted.
    while not any(v > top for v in store.snapshots) and result.state.count < 8 * top:
        result = runner.resume("bytes", {"stop_at": result.state.count + 500})
    store.close()

    version_of = {count: v for v, (_, count) in store.appends.items() if count is not None}
    cuts = sorted(store.snapshots)
    figures: dict[str, float] = {}
    cycles: dict[str, Any] = {}
    for m in cfg.message_counts:
        v = version_of[m]
        figures[f"flowkit.bytes.record.{m}"] = float(store.appends[v][0])
        previous = max((c for c in cuts if c < v), default=0)
        following = min((c for c in cuts if c >= v), default=max(store.appends))
        journal = sum(b for u, (b, _) in store.appends.items() if previous < u <= following)
        snapshot = store.snapshots.get(following, 0)
        figures[f"flowkit.bytes.amortised.{m}"] = (journal + snapshot) / (following - previous)
        cycles[str(m)] = {
            "from_version": previous,
            "to_version": following,
            "journal_bytes": journal,
            "snapshot_bytes": snapshot,
        }
    low, high = min(cfg.message_counts), top
    figures["flowkit.bytes.growth.record"] = (
        figures[f"flowkit.bytes.record.{high}"] / figures[f"flowkit.bytes.record.{low}"]
    )
    figures["flowkit.bytes.growth.amortised"] = (
        figures[f"flowkit.bytes.amortised.{high}"] / figures[f"flowkit.bytes.amortised.{low}"]
    )
    figures["floor.message_bytes"] = float(len(json.dumps(message(top))))
    details = {"snapshots": {str(v): b for v, b in store.snapshots.items()}, "cycles": cycles}
    return figures, details


# -- 4. import time ------------------------------------------------------------------------------

IMPORTS = {
    # `import flowkit` alone loads nothing (names load on first use); an app uses the engine.
    "flowkit": "from flowkit import Flow, Runner",
    "deps": "import transitions, pydantic, structlog",
    # What any app on these deps pays: pydantic builds its machinery on the first model.
    "deps_model": (
        "import transitions, structlog\nfrom pydantic import BaseModel\n"
        "class S(BaseModel):\n    x: int = 0"
    ),
}


def measure_imports(cfg: Config, extra: dict[str, str]) -> dict[str, float]:
    """Wall ms of ``python -c STATEMENT`` minus ``python -c pass``, interleaved, medians."""
    statements = {"startup": "pass", **IMPORTS, **extra}
    walls: dict[str, list[float]] = {name: [] for name in statements}
    for _ in range(cfg.import_reps):
        for name, statement in statements.items():
            wall, _ = run_python(["-c", statement])
            walls[name].append(wall * 1e3)
    base = median(walls["startup"])
    out = {
        "flowkit.import_ms": median(walls["flowkit"]) - base,
        "floor.import_deps_ms": median(walls["deps"]) - base,
        "floor.import_deps_model_ms": median(walls["deps_model"]) - base,
        "floor.python_startup_ms": base,
    }
    for name in extra:
        out[f"{name}.import_ms"] = median(walls[name]) - base
    return out


_IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def import_breakdown(reps: int = 3) -> dict[str, Any]:
    """Where ``import flowkit`` spends its time, from ``-X importtime`` (medians of ``reps``)."""
    own: dict[str, list[int]] = {}
    for _ in range(reps):
        _, done = run_python(["-X", "importtime", "-c", "from flowkit import Flow, Runner"])
        for line in done.stderr.splitlines():
            hit = _IMPORTTIME.match(line)
            if hit:
                own.setdefault(hit.group(4), []).append(int(hit.group(1)))
    self_us = {module: median([float(v) for v in values]) for module, values in own.items()}
    total = sum(self_us.values())
    packages: dict[str, float] = {}
    for module, us in self_us.items():
        top = module.split(".")[0]
        packages[top] = packages.get(top, 0.0) + us
    by_package = sorted(packages.items(), key=lambda kv: -kv[1])[:10]
    flowkit_modules = sorted(
        ((m, us) for m, us in self_us.items() if m.startswith("flowkit")), key=lambda kv: -kv[1]
    )[:10]
    return {
        "total_ms": total / 1e3,
        "by_package_ms": {name: us / 1e3 for name, us in by_package},
        "flowkit_modules_ms": {name: us / 1e3 for name, us in flowkit_modules},
        "modules": len(self_us),
    }


# -- 5. pause + resume ---------------------------------------------------------------------------


def measure_resume(cfg: Config, folder: Path) -> dict[str, float]:
    flow = review_flow()
    counter = iter(range(10**9))

    def resume_case(store: Callable[[], Any]) -> Case:
        def make() -> Callable[[], None]:
            runner = Runner(flow, store=store())
            ids = [f"t{i}" for i in range(cfg.resume_runs)]
            for tid in ids:
                assert runner.start(tid).status == "waiting"

            def run() -> None:
                for tid in ids:
                    runner.resume(tid, {"approved": True})

            return run

        return Case(make, cfg.resume_runs)

    got = interleaved(
        {
            "jsonfile": resume_case(lambda: JsonFileStore(folder / f"review-{next(counter)}")),
            "memory": resume_case(MemoryStore),
        },
        cfg.rounds,
    )
    return {
        "flowkit.resume_ms.jsonfile": got["jsonfile"] * 1e3,
        "flowkit.resume_ms.memory": got["memory"] * 1e3,
    }


# -- 6. new process: load a long thread, run one step, save -------------------------------------


def measure_new_process(cfg: Config, folder: Path) -> dict[str, float]:
    root = folder / "long"
    with JsonFileStore(root) as store:
        result = Runner(loop_flow(), store=store).start("long", {"stop_at": cfg.thread_steps})
        assert result.status == "waiting" and result.state.count == cfg.thread_steps
    walls, parts = [], []
    for _ in range(cfg.newproc_reps):
        wall, done = run_python([str(HERE / "_child_step.py"), str(root), "long"])
        walls.append(wall * 1e3)
        parts.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {
        "flowkit.newproc_ms.wall": median(walls),
        "flowkit.newproc_ms.import": median([p["import_ms"] for p in parts]),
        "flowkit.newproc_ms.load": median([p["load_ms"] for p in parts]),
        "flowkit.newproc_ms.step": median([p["step_ms"] for p in parts]),
    }


# -- the table ---------------------------------------------------------------------------------


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "B":
        return f"{value:,.0f} B"
    if unit == "ms" and value < 10:
        return f"{value:.2f} ms"
    return f"{value:,.1f} {unit}"


def rows(fig: dict[str, float]) -> list[dict[str, str]]:
    def row(
        measure: str,
        key: str,
        unit: str,
        floor: tuple[str, str] | None = None,
        peers: tuple[str | None, str | None] = (None, None),
        target: str = "",
    ) -> dict[str, str]:
        value = fig.get(key)
        floor_value = fig.get(floor[1]) if floor else None
        ratio = value / floor_value if value and floor_value else None
        return {
            "measure": measure,
            "flowkit": _fmt(value, unit),
            "floor": f"{floor[0]} {_fmt(floor_value, unit)}" if floor else "—",
            "ratio": _fmt(ratio, "x") if ratio else "—",
            "langgraph": _fmt(fig.get(peers[0]) if peers[0] else None, unit),
            "burr": _fmt(fig.get(peers[1]) if peers[1] else None, unit),
            "target": target,
        }

    table = [
        row(
            "1 engine µs/node, no store",
            "flowkit.node_us.none",
            "µs",
            ("transitions", "floor.transitions_us"),
            ("langgraph.node_us.none", "burr.node_us.none"),
            "<= 30 µs",
        ),
        row(
            "1 engine µs/node, no store (vs plain loop)",
            "flowkit.node_us.none",
            "µs",
            ("plain loop", "floor.plain_us"),
        ),
        row(
            "1 engine µs/node, MemoryStore",
            "flowkit.node_us.memory",
            "µs",
            ("transitions", "floor.transitions_us"),
            ("langgraph.node_us.memory", None),
            "<= 30 µs",
        ),
        row(
            "2 durable µs/node, steady (long loop)",
            "flowkit.durable_us.steady",
            "µs",
            ("SQLite row", "floor.sqlite_us"),
            ("langgraph.durable_us.steady", "burr.durable_us.steady"),
            "<= 150 µs",
        ),
        row(
            "2 durable µs/node, steady (vs raw append)",
            "flowkit.durable_us.steady",
            "µs",
            ("write+fdatasync", "floor.fsync_us"),
        ),
        row(
            "2 durable µs/node, 10-node chain per start",
            "flowkit.durable_us.chain",
            "µs",
            ("SQLite row", "floor.sqlite_us"),
            ("langgraph.durable_us.chain", "burr.durable_us.chain"),
        ),
    ]
    counts = sorted(int(k.rsplit(".", 1)[1]) for k in fig if k.startswith("flowkit.bytes.record."))
    for m in counts:
        table.append(
            row(
                f"3 bytes/step @{m} msgs: journal record",
                f"flowkit.bytes.record.{m}",
                "B",
                ("new message", "floor.message_bytes"),
                (f"langgraph.bytes.record.{m}", f"burr.bytes.record.{m}"),
            )
        )
    for m in counts:
        table.append(
            row(
                f"3 bytes/step @{m} msgs: amortised w/ snapshots",
                f"flowkit.bytes.amortised.{m}",
                "B",
                ("new message", "floor.message_bytes"),
                (f"langgraph.bytes.record.{m}", f"burr.bytes.record.{m}"),
            )
        )
    if counts:
        span = f"@{counts[-1]} ÷ @{counts[0]}"
        table += [
            row(
                f"3 bytes/step growth {span}: record",
                "flowkit.bytes.growth.record",
                "x",
                peers=("langgraph.bytes.growth", "burr.bytes.growth"),
                target="<= 1.2x",
            ),
            row(
                f"3 bytes/step growth {span}: amortised",
                "flowkit.bytes.growth.amortised",
                "x",
                peers=("langgraph.bytes.growth", "burr.bytes.growth"),
                target="<= 1.2x",
            ),
        ]
    table += [
        row(
            "4 import ms, fresh interpreter",
            "flowkit.import_ms",
            "ms",
            ("transitions+pydantic+structlog", "floor.import_deps_ms"),
            ("langgraph.import_ms", "burr.import_ms"),
            "<= 250 ms",
        ),
        row(
            "4 import ms (vs deps + one pydantic model)",
            "flowkit.import_ms",
            "ms",
            ("deps + 1 model", "floor.import_deps_model_ms"),
        ),
        row(
            "5 resume at review gate ms, durable",
            "flowkit.resume_ms.jsonfile",
            "ms",
            None,
            ("langgraph.resume_ms.durable", "burr.resume_ms.durable"),
            "<= 1 ms",
        ),
        row(
            "5 resume at review gate ms, in memory",
            "flowkit.resume_ms.memory",
            "ms",
            None,
            ("langgraph.resume_ms.memory", "burr.resume_ms.memory"),
            "<= 1 ms",
        ),
        row(
            "6 new process: load 1,000 steps+step+save",
            "flowkit.newproc_ms.wall",
            "ms",
            ("python start-up", "floor.python_startup_ms"),
            target="<= 400 ms",
        ),
        row("6   of which in-process imports", "flowkit.newproc_ms.import", "ms"),
        row("6   of which load the thread", "flowkit.newproc_ms.load", "ms"),
        row("6   of which step + save", "flowkit.newproc_ms.step", "ms"),
    ]
    return table


def render(table: list[dict[str, str]], peers: dict[str, str]) -> str:
    heads = {
        "measure": "measure",
        "flowkit": "flowkit",
        "floor": "floor (same run)",
        "ratio": "ratio",
        "langgraph": f"LangGraph {peers.get('langgraph', '(n/a)')}",
        "burr": f"Burr {peers.get('burr', '(n/a)')}",
        "target": "BRIEF target",
    }
    widths = {k: max(len(heads[k]), *(len(r[k]) for r in table)) for k in heads}
    line = " | ".join(heads[k].ljust(widths[k]) for k in heads)
    out = [line, "-+-".join("-" * widths[k] for k in heads)]
    for r in table:
        out.append(
            " | ".join(
                r[k].ljust(widths[k]) if k == "measure" else r[k].rjust(widths[k]) for k in heads
            ).rstrip()
        )
    return "\n".join(out)


# -- main ----------------------------------------------------------------------------------------


def hot_path_only(cfg: Config, *, as_json: bool) -> int:
    """Measure 1 and the hot-path section alone (a minute instead of several)."""
    log("1/6 engine cost per node ...")
    figures = measure_engine(cfg)
    log("   hot path: history and flow size ...")
    figures.update(measure_hotpath(cfg))
    hot = verdicts(figures)
    if as_json:
        print(json.dumps({"figures": figures, "hot_path": hot}, indent=2))
    else:
        print("hot path (issue #12), each beside its floor from this run:")
        print(render_hot(hot))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (~20 s)")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--no-peers", action="store_true", help="skip LangGraph and Burr")
    parser.add_argument("--save", type=Path, help="also write the JSON results to this file")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path.cwd(),
        help="where scratch stores go (a real disk, not tmpfs; default: the current folder)",
    )
    parser.add_argument(
        "--hot-path",
        action="store_true",
        help="only measure 1 and the hot-path targets (issue #12), printed with PASS/MISS",
    )
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    quiet_logging()
    if args.hot_path:
        return hot_path_only(cfg, as_json=args.json)
    started = time.perf_counter()

    from _peers import IMPORTS as PEER_IMPORTS
    from _peers import available

    peers = {} if args.no_peers else available()
    fs = filesystem_of(args.dir)
    if fs == "tmpfs":
        log(f"warning: {args.dir} is on tmpfs; fsync figures will be meaningless (use --dir)")
    figures: dict[str, float] = {}
    details: dict[str, Any] = {}
    with scratch_dir(args.dir) as folder:
        log("1/6 engine cost per node ...")
        figures.update(measure_engine(cfg))
        log("   hot path: history and flow size ...")
        figures.update(measure_hotpath(cfg))
        log("2/6 durable cost per node ...")
        figures.update(measure_durable(cfg, folder))
        log("3/6 bytes per step ...")
        more, details["bytes"] = measure_bytes(cfg, folder)
        figures.update(more)
        log("4/6 import time ...")
        figures.update(measure_imports(cfg, {p: PEER_IMPORTS[p] for p in peers}))
        details["import_breakdown"] = import_breakdown()
        log("5/6 pause + resume ...")
        figures.update(measure_resume(cfg, folder))
        log("6/6 new process ...")
        figures.update(measure_new_process(cfg, folder))
        if peers:
            from _peers import burr_measures, langgraph_measures

            if "langgraph" in peers:
                log(f"peers: LangGraph {peers['langgraph']} ...")
                figures.update(langgraph_measures(folder, cfg))
            if "burr" in peers:
                log(f"peers: Burr {peers['burr']} ...")
                figures.update(burr_measures(folder, cfg))
    elapsed = time.perf_counter() - started
    table = rows(figures)
    details["hot_path"] = verdicts(figures)
    report = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "filesystem": fs,
        "quick": args.quick,
        "config": asdict(cfg),
        "peers": peers,
        "seconds": elapsed,
        "figures": figures,
        "details": details,
        "rows": table,
    }
    if args.save:
        args.save.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"flowkit bench — Python {report['python']}, {report['cpus']} cpus, "
        f"scratch on {fs}, {'quick' if args.quick else 'full'} run, {elapsed:.0f} s"
    )
    print(render(table, peers))
    print("\nhot path (issue #12), each beside its floor from this run:")
    print(render_hot(details["hot_path"]))
    breakdown = details["import_breakdown"]
    print(
        f"\nthe engine's import under -X importtime: {breakdown['total_ms']:.0f} ms self time over "
        f"{breakdown['modules']} modules; by package:"
    )
    print("  " + ", ".join(f"{k} {v:.1f}" for k, v in breakdown["by_package_ms"].items()))
    print(
        "  flowkit's own modules: "
        + ", ".join(f"{k} {v:.1f}" for k, v in breakdown["flowkit_modules_ms"].items())
    )
    cycles = details["bytes"]["cycles"]
    print(
        "\nsnapshot cycles (journal versions, bytes): "
        + "; ".join(
            f"@{m}: v{c['from_version']}..v{c['to_version']} journal {c['journal_bytes']:,} "
            f"+ snapshot {c['snapshot_bytes']:,}"
            for m, c in cycles.items()
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
