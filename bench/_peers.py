"""The same measures for LangGraph and Burr, when they are importable (never dependencies).

Each peer runs the same shapes as flowkit (``_flows.py``): a chain of 10 no-op nodes, a loop
appending one ~100-byte message per step, and draft -> review gate -> publish. Choices that
favour the peers are deliberate, so a flowkit lead is not an artefact of the set-up:

- LangGraph graphs are compiled once; its durable runs use ``SqliteSaver`` as it ships (WAL,
  synchronous=FULL) with ``durability="sync"`` (the step is on disk before the next one starts,
  which is what flowkit guarantees); in-memory runs use ``InMemorySaver`` with its defaults.
- Burr applications are built outside the clock (one application is one thread); its durable
  runs use ``SQLitePersister`` as it ships.
- Bytes per step are the payload each peer hands to SQLite for one step: LangGraph's
  serialised checkpoint + pending writes + metadata, Burr's JSON state row.

Install them in a separate venv (see ``bench/README.md``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import itertools
import json
import operator
import os
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

from _common import Case, interleaved
from _flows import message

os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")

PEERS = {"langgraph": "langgraph", "burr": "burr"}
IMPORTS = {
    "langgraph": "from langgraph.graph import StateGraph",
    "burr": "from burr.core import ApplicationBuilder",
}


def available() -> dict[str, str]:
    """Peer name -> installed version, for the peers this interpreter can import."""
    found = {}
    for name, module in PEERS.items():
        if importlib.util.find_spec(module) is None:
            continue
        for dist in (f"apache-{name}", name):
            try:
                found[name] = importlib.metadata.version(dist)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
        else:
            found[name] = "?"
    return found


def has_sqlite_saver() -> bool:
    return importlib.util.find_spec("langgraph.checkpoint.sqlite") is not None


# -- LangGraph ----------------------------------------------------------------------------------


class LGChat(TypedDict, total=False):
    count: int
    stop_at: int
    done: bool
    messages: Annotated[list[str], operator.add]


class LGDoc(TypedDict, total=False):
    draft: str
    approved: bool
    published: bool


def _lg_noop(state: LGChat) -> dict[str, Any]:
    return {}


def _lg_step(state: LGChat) -> dict[str, Any]:
    n = state["count"] + 1
    return {"messages": [message(n)], "count": n, "done": n >= state["stop_at"]}


def _lg_draft(state: LGDoc) -> dict[str, Any]:
    return {"draft": "A short draft to review."}


def _lg_review(state: LGDoc) -> dict[str, Any]:
    from langgraph.types import interrupt

    answer = interrupt({"question": "approve?"})
    return {"approved": bool(answer["approved"])}


def _lg_publish(state: LGDoc) -> dict[str, Any]:
    return {"published": state.get("approved", False)}


def _lg_graphs() -> dict[str, Any]:
    from langgraph.graph import END, START, StateGraph

    chain = StateGraph(LGChat)
    names = [f"n{i}" for i in range(10)]
    for name in names:
        chain.add_node(name, _lg_noop)
    chain.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        chain.add_edge(a, b)
    chain.add_edge(names[-1], END)

    loop = StateGraph(LGChat)
    loop.add_node("step", _lg_step)
    loop.add_edge(START, "step")
    loop.add_conditional_edges("step", lambda s: END if s["done"] else "step", ["step", END])

    review = StateGraph(LGDoc)
    review.add_node("draft", _lg_draft)
    review.add_node("review", _lg_review)
    review.add_node("publish", _lg_publish)
    review.add_edge(START, "draft")
    review.add_edge("draft", "review")
    review.add_edge("review", "publish")
    review.add_edge("publish", END)
    return {"chain": chain, "loop": loop, "review": review}


def _lg_sqlite(path: Path) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver

    saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
    saver.setup()
    return saver


def _config(thread_id: str, limit: int = 100) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": limit}


def langgraph_measures(folder: Path, cfg: Any) -> dict[str, float]:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    graphs = _lg_graphs()
    chain_plain = graphs["chain"].compile()
    chain_memory = graphs["chain"].compile(checkpointer=InMemorySaver())
    out: dict[str, float] = {}
    runs = cfg.engine_runs

    def chain_case(graph: Any, durability: str | None, n: int) -> Case:
        def make() -> Callable[[], None]:
            ids = [uuid.uuid4().hex for _ in range(n)]
            extra = {"durability": durability} if durability else {}

            def run() -> None:
                for tid in ids:
                    graph.invoke({"count": 0}, _config(tid), **extra)

            return run

        return Case(make, n * 10)

    cases = {
        "none": chain_case(chain_plain, None, runs),
        "memory": chain_case(chain_memory, None, runs),
    }
    if has_sqlite_saver():
        chain_sqlite = graphs["chain"].compile(checkpointer=_lg_sqlite(folder / "lg-chain.sqlite"))
        loop_sqlite = graphs["loop"].compile(checkpointer=_lg_sqlite(folder / "lg-loop.sqlite"))
        cases["durable_chain"] = chain_case(chain_sqlite, "sync", cfg.durable_runs)

        def loop_case(steps: int) -> Case:
            def make() -> Callable[[], None]:
                tid = uuid.uuid4().hex

                def run() -> None:
                    start = {"count": 0, "stop_at": steps, "done": False, "messages": []}
                    loop_sqlite.invoke(start, _config(tid, steps + 10), durability="sync")

                return run

            return Case(make, 1)

        cases["loop_long"] = loop_case(cfg.loop_long)
        cases["loop_short"] = loop_case(cfg.loop_short)
    got = interleaved(cases, cfg.rounds)
    out["langgraph.node_us.none"] = got["none"] * 1e6
    out["langgraph.node_us.memory"] = got["memory"] * 1e6
    if has_sqlite_saver():
        out["langgraph.durable_us.chain"] = got["durable_chain"] * 1e6
        steady = (got["loop_long"] - got["loop_short"]) / (cfg.loop_long - cfg.loop_short)
        out["langgraph.durable_us.steady"] = steady * 1e6

    # Pause + resume at a review gate.
    def resume_case(graph: Any, durability: str | None) -> Case:
        def make() -> Callable[[], None]:
            ids = [uuid.uuid4().hex for _ in range(cfg.resume_runs)]
            extra = {"durability": durability} if durability else {}
            for tid in ids:
                graph.invoke({"draft": ""}, _config(tid), **extra)

            def run() -> None:
                for tid in ids:
                    graph.invoke(Command(resume={"approved": True}), _config(tid), **extra)

            return run

        return Case(make, cfg.resume_runs)

    review_cases = {"memory": resume_case(graphs["review"].compile(InMemorySaver()), None)}
    if has_sqlite_saver():
        review_sqlite = graphs["review"].compile(_lg_sqlite(folder / "lg-review.sqlite"))
        review_cases["durable"] = resume_case(review_sqlite, "sync")
    got = interleaved(review_cases, cfg.rounds)
    out["langgraph.resume_ms.memory"] = got["memory"] * 1e3
    if "durable" in got:
        out["langgraph.resume_ms.durable"] = got["durable"] * 1e3

    out.update(_lg_bytes(graphs["loop"], cfg.message_counts))
    return out


def _lg_bytes(loop: Any, counts: list[int]) -> dict[str, float]:
    """Payload bytes LangGraph's SQLite saver stores per step, at each message count."""
    from langgraph.checkpoint.base import get_checkpoint_metadata
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    class CountingSerde:
        def __init__(self, inner: Any) -> None:
            self.inner = inner
            self.pending = 0

        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            kind, data = self.inner.dumps_typed(obj)
            self.pending += len(data) + len(kind)
            return kind, data

        def loads_typed(self, data: tuple[str, bytes]) -> Any:
            return self.inner.loads_typed(data)

    per_step: dict[int, int] = {}
    base: type[Any] = SqliteSaver if has_sqlite_saver() else InMemorySaver

    class CountingSaver(base):  # type: ignore[misc, valid-type]
        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            result = super().put(config, checkpoint, metadata, new_versions)
            meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False)
            messages = len(checkpoint["channel_values"].get("messages", ()))
            per_step[messages] = serde.pending + len(meta.encode())
            serde.pending = 0
            return result

    saver = (
        CountingSaver(sqlite3.connect(":memory:", check_same_thread=False))
        if base is SqliteSaver
        else CountingSaver()
    )
    serde = CountingSerde(saver.serde)
    saver.serde = serde
    if base is SqliteSaver:
        saver.setup()
    graph = loop.compile(checkpointer=saver)
    top = max(counts)
    start = {"count": 0, "stop_at": top, "done": False, "messages": []}
    graph.invoke(start, _config("bytes", top + 10), durability="sync")
    out = {f"langgraph.bytes.record.{m}": float(per_step[m]) for m in counts}
    out["langgraph.bytes.growth"] = per_step[top] / per_step[min(counts)]
    return out


# -- Burr -----------------------------------------------------------------------------------------


def _burr_actions() -> dict[str, Any]:
    from burr.core import State, action

    @action(reads=[], writes=[])
    def noop(state: State) -> State:
        return state

    @action(reads=["count", "stop_at"], writes=["count", "done", "messages"])
    def step(state: State) -> State:
        n = state["count"] + 1
        return state.update(count=n, done=n >= state["stop_at"]).append(messages=message(n))

    @action(reads=[], writes=["draft"])
    def draft(state: State) -> State:
        return state.update(draft="A short draft to review.")

    @action(reads=[], writes=["approved"])
    def review(state: State, approved: bool) -> State:
        return state.update(approved=approved)

    @action(reads=["approved"], writes=["published"])
    def publish(state: State) -> State:
        return state.update(published=state["approved"])

    return {"noop": noop, "step": step, "draft": draft, "review": review, "publish": publish}


def burr_measures(folder: Path, cfg: Any) -> dict[str, float]:
    from burr.core import ApplicationBuilder, default, when
    from burr.core.persistence import SQLitePersister

    acts = _burr_actions()
    names = [f"n{i}" for i in range(10)]
    persister = SQLitePersister(db_path=str(folder / "burr.sqlite"), table_name="burr_state")
    persister.initialize()

    def builder(persist: bool) -> Any:
        built = ApplicationBuilder().with_identifiers(app_id=uuid.uuid4().hex)
        return built.with_state_persister(persister) if persist else built

    def chain_app(persist: bool) -> Any:
        return (
            builder(persist)
            .with_actions(**dict.fromkeys(names, acts["noop"]))
            .with_transitions(*itertools.pairwise(names))
            .with_state(count=0)
            .with_entrypoint(names[0])
            .build()
        )

    def loop_app(steps: int, persist: bool) -> Any:
        return (
            builder(persist)
            .with_actions(step=acts["step"], stop=acts["noop"])
            .with_transitions(("step", "stop", when(done=True)), ("step", "step", default))
            .with_state(count=0, stop_at=steps, done=False, messages=[])
            .with_entrypoint("step")
            .build()
        )

    def review_app(persist: bool) -> Any:
        return (
            builder(persist)
            .with_actions(draft=acts["draft"], review=acts["review"], publish=acts["publish"])
            .with_transitions(("draft", "review"), ("review", "publish"))
            .with_state(draft="", approved=False, published=False)
            .with_entrypoint("draft")
            .build()
        )

    def chain_case(n: int, persist: bool) -> Case:
        def make() -> Callable[[], None]:
            apps = [chain_app(persist) for _ in range(n)]

            def run() -> None:
                for app in apps:
                    app.run(halt_after=[names[-1]])

            return run

        return Case(make, n * 10)

    def loop_case(steps: int) -> Case:
        def make() -> Callable[[], None]:
            app = loop_app(steps, persist=True)

            def run() -> None:
                app.run(halt_after=["stop"])

            return run

        return Case(make, 1)

    def resume_case(persist: bool) -> Case:
        def make() -> Callable[[], None]:
            apps = [review_app(persist) for _ in range(cfg.resume_runs)]
            for app in apps:
                app.run(halt_before=["review"])

            def run() -> None:
                for app in apps:
                    app.run(halt_after=["publish"], inputs={"approved": True})

            return run

        return Case(make, cfg.resume_runs)

    got = interleaved(
        {
            "none": chain_case(cfg.engine_runs, persist=False),
            "durable_chain": chain_case(cfg.durable_runs, persist=True),
            "loop_long": loop_case(cfg.loop_long),
            "loop_short": loop_case(cfg.loop_short),
            "resume_memory": resume_case(persist=False),
            "resume_durable": resume_case(persist=True),
        },
        cfg.rounds,
    )
    steady = (got["loop_long"] - got["loop_short"]) / (cfg.loop_long - cfg.loop_short)
    out = {
        "burr.node_us.none": got["none"] * 1e6,
        "burr.durable_us.chain": got["durable_chain"] * 1e6,
        "burr.durable_us.steady": steady * 1e6,
        "burr.resume_ms.memory": got["resume_memory"] * 1e3,
        "burr.resume_ms.durable": got["resume_durable"] * 1e3,
    }

    # Bytes per step: the row Burr's SQLite persister inserts for each step.
    per_step: dict[int, int] = {}

    class CountingPersister(SQLitePersister):  # type: ignore[misc]
        def save(
            self,
            partition_key: Any,
            app_id: str,
            sequence_id: int,
            position: str,
            state: Any,
            status: Any,
            **kwargs: Any,
        ) -> None:
            super().save(partition_key, app_id, sequence_id, position, state, status, **kwargs)
            (size,) = self.connection.execute(
                f"SELECT length(partition_key) + length(app_id) + length(sequence_id) "
                f"+ length(position) + length(state) + length(status) FROM {self.table_name} "
                "WHERE rowid = last_insert_rowid()"
            ).fetchone()
            per_step[len(state.get("messages", ()))] = int(size)

    counting = CountingPersister(db_path=":memory:", table_name="burr_state")
    counting.initialize()
    top = max(cfg.message_counts)
    app = (
        ApplicationBuilder()
        .with_identifiers(app_id="bytes")
        .with_state_persister(counting)
        .with_actions(step=acts["step"], stop=acts["noop"])
        .with_transitions(("step", "stop", when(done=True)), ("step", "step", default))
        .with_state(count=0, stop_at=top, done=False, messages=[])
        .with_entrypoint("step")
        .build()
    )
    app.run(halt_after=["stop"])
    for m in cfg.message_counts:
        out[f"burr.bytes.record.{m}"] = float(per_step[m])
    out["burr.bytes.growth"] = per_step[top] / per_step[min(cfg.message_counts)]
    return out
