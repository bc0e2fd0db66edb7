"""HTTP overhead (issue 25, acceptance 5): start+resume pairs per second with 16 concurrent
clients against ``flowkit serve`` (the ``review`` flow, one gate, ``JsonFileStore`` with fsync),
beside a plain FastAPI floor doing the same file writes and syncs, both measured in one run.

The floor is what a team would write by hand for the same job: one FastAPI app under the same
uvicorn settings (one process, h11, sync ``def`` routes on AnyIO's worker threads, no access
log), pydantic request bodies and a bearer token, answering JSON shaped like flowkit's. Its
disk work is not guessed: before the run, flowkit's own start and resume are run once in this
process with ``os`` write/sync calls counted, and the floor replays exactly those calls (same
files, sizes, offsets, ``fdatasync``/``fsync``, renames) per request. So a change in what
flowkit writes moves the floor with it, and the ratio measures only the overhead around the
disk: HTTP, routing, validation, the engine, the hub. (Writes a library makes from C, such as
SQLite's for the thread index, are not seen: they count as flowkit's own work.)

Both servers run as subprocesses on loopback at once; the clients (``httpx.AsyncClient``, one
connection each, in this process) drive one of them at a time for ``seconds``, alternating
flowkit and floor rounds, and the figure is the median over rounds, beside each server's CPU
time per pair (from ``/proc``: on a busy machine it moves much less than pairs per second do).
The same comparison without fsync shows the overhead the disk otherwise hides; the command has
no such option, so that flowkit server is ``create_app`` under the command's own ``run``.
Timings are printed, never asserted. ``measure(quick)`` returns the figures; ``python
bench/_http_scale.py [--quick] [--json]`` prints them. ``--serve-floor`` and
``--serve-flowkit`` are the subprocesses' entry points.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import queue
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import filesystem_of, scratch_dir
from pydantic import BaseModel, ConfigDict, Field

CLIENTS = 16
TOKEN = "bench-http-token-" + "0" * 16
FLOW = "review"
ANSWER = {"approved": True, "feedback": "fine"}

#: One replayed disk call: ``[op, path, ...]``, the path relative to the store's root with
#: the thread's id as ``{t}`` (see ``_count_disk_calls``).
Op = list[Any]


# -- what flowkit writes per request ---------------------------------------------------------


def _count_disk_calls(root: Path, *, fsync: bool) -> dict[str, list[Op]]:
    """The ``os`` write, sync, mkdir and rename calls flowkit makes under ``root`` for one
    start and one resume of the review flow, with the runner the server builds."""
    from flowkit.examples.review import flow
    from flowkit.runner._runner import Runner
    from flowkit.stores import JsonFileStore
    from flowkit.stores._protocol import AttemptMarks

    store = JsonFileStore(root, fsync=fsync)
    runner = Runner(flow, store=store, track_attempts=isinstance(store, AttemptMarks))
    runner.start("warm-up", None)
    runner.resume("warm-up", ANSWER)
    ops: list[Op] = []
    main = threading.main_thread()
    prefix = str(root.resolve()) + "/"
    thread = "counted"

    def rel(path: str | os.PathLike[str] | int) -> str | None:
        name = os.readlink(f"/proc/self/fd/{path}") if isinstance(path, int) else str(path)
        name = os.path.abspath(name)
        if not name.startswith(prefix):
            return None
        return name[len(prefix) :].replace(thread, "{t}")

    originals: dict[str, Callable[..., Any]] = {}

    def patch(name: str, record: Callable[..., Op | None]) -> None:
        original = getattr(os, name)
        originals[name] = original

        def counted(*args: Any, **kwargs: Any) -> Any:
            op = record(*args)
            result = original(*args, **kwargs)
            # The request's own calls: not the store's background refill of spare folders.
            if op is not None and op[1] is not None and threading.current_thread() is main:
                ops.append(op)
            return result

        setattr(os, name, counted)

    patch("pwrite", lambda fd, data, offset: ["pwrite", rel(fd), len(data), offset])
    patch("write", lambda fd, data: ["write", rel(fd), len(data)])
    patch("fdatasync", lambda fd: ["fdatasync", rel(fd)])
    patch("fsync", lambda fd: ["fsync", rel(fd)])
    patch("mkdir", lambda path, *_: ["mkdir", rel(path)])
    patch("rename", lambda src, dst: ["rename", rel(src), rel(dst)])
    patch("replace", lambda src, dst: ["rename", rel(src), rel(dst)])
    try:
        runner.start(thread, None)
        start, ops = ops, []
        runner.resume(thread, ANSWER)
        resume = ops
    finally:
        for name, original in originals.items():
            setattr(os, name, original)
    return {"start": start, "resume": resume}


def _syncs(ops: list[Op]) -> int:
    return sum(op[0] in ("fsync", "fdatasync") for op in ops)


# -- the floor app (run with --serve-floor) --------------------------------------------------


class StartBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    thread_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.@:-]{1,128}$")
    input: dict[str, Any] | None = None
    wait: bool = True


class ReviewInput(BaseModel):
    approved: bool
    feedback: str = Field(default="", max_length=2000)


class ResumeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input: Any = None
    gate: str | None = None
    wait: bool = True


#: Where flowkit's store keeps the thread folders it makes ahead (``JsonFileStore(spares=)``).
SPARES = "spares/"


class _FloorSpares:
    """The floor's own thread folders made ahead on a thread of their own, as flowkit's store
    makes its spares, so that neither makes a new thread's folder and journal on the request
    path: a replayed call on a path under ``spares/`` goes to one of these."""

    def __init__(self, folder: Path, keep: int = 8) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._folder, self._keep = folder, keep
        self._numbers = itertools.count()
        self._ready: queue.Queue[Path] = queue.Queue()
        self._wake = threading.Event()
        self._wake.set()
        threading.Thread(target=self._run, daemon=True).start()

    def take(self) -> Path:
        try:
            path = self._ready.get_nowait()
        except queue.Empty:
            path = self._make()  # none ready: made on the spot, as flowkit's store does
        self._wake.set()
        return path

    def _make(self) -> Path:
        path = self._folder / str(next(self._numbers))
        path.mkdir()
        fd = os.open(path / "journal.jsonl", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.pwrite(fd, bytes(4096), 0)
            os.fdatasync(fd)
        finally:
            os.close(fd)
        folder_fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(folder_fd)
        finally:
            os.close(folder_fd)
        return path

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            while self._ready.qsize() < self._keep:
                self._ready.put(self._make())


def _floor_app(root: Path, plan: dict[str, list[Op]]) -> Any:
    """A plain FastAPI app replaying ``plan``'s disk calls per start and resume."""
    import hmac

    from fastapi import FastAPI, Header, HTTPException

    schema = ReviewInput.model_json_schema()
    expected = f"Bearer {TOKEN}".encode()

    def check(authorization: str | None) -> None:
        if authorization is None or not hmac.compare_digest(authorization.encode(), expected):
            raise HTTPException(401, "bad token")

    uses_spares = any(op[1].startswith(SPARES) for ops in plan.values() for op in ops)
    spares = _FloorSpares(root / "floor-spares") if uses_spares else None

    def replay(ops: list[Op], thread_id: str) -> None:
        fds: dict[str, int] = {}
        taken: dict[str, Path] = {}  # flowkit's spare folder -> the floor's

        def path(name: str) -> str:
            if spares is not None and name.startswith(SPARES):
                spare = "/".join(name.split("/")[:4])  # spares/<owner>/<batch>/<n>
                if spare not in taken:
                    taken[spare] = spares.take()
                return str(taken[spare]) + name[len(spare) :]
            return str(root / name.replace("{t}", thread_id))

        def fd_of(name: str, *, directory: bool = False) -> int:
            if name not in fds:
                if not directory:
                    os.makedirs(os.path.dirname(path(name)), exist_ok=True)
                flags = os.O_RDONLY if directory else os.O_RDWR | os.O_CREAT
                fds[name] = os.open(path(name), flags, 0o600)
            return fds[name]

        try:
            for op in ops:
                kind, name = op[0], op[1]
                if kind == "mkdir":
                    os.makedirs(path(name), exist_ok=True)
                elif kind == "pwrite":
                    os.pwrite(fd_of(name), b"x" * op[2], op[3])
                elif kind == "write":
                    os.write(fd_of(name), b"x" * op[2])
                elif kind in ("fsync", "fdatasync"):
                    is_dir = os.path.isdir(path(name))
                    getattr(os, kind)(fd_of(name, directory=is_dir))
                elif kind == "rename":
                    os.makedirs(os.path.dirname(path(op[2])), exist_ok=True)
                    os.replace(path(name), path(op[2]))
        finally:
            for fd in fds.values():
                os.close(fd)

    def answer(thread_id: str, status: str, node: str, version: int) -> dict[str, Any]:
        waiting = status == "waiting"
        gates = [{"name": "review", "description": "", "input_schema": schema}]
        return {
            "thread_id": thread_id,
            "flow": FLOW,
            "status": status,
            "node": node,
            "version": version,
            "gates": gates if waiting else [],
            "pauses": [{"id": "review", "payload": None}] if waiting else [],
            "due": None,
            "state": {"topic": "flowkit", "text": "flowkit: draft 1", "revision": 1},
            "error": None,
        }

    app = FastAPI(title="floor")

    @app.post("/flows/{flow}/threads", status_code=201)
    def start(
        flow: str, body: StartBody, authorization: str | None = Header(default=None)
    ) -> dict[str, Any]:
        check(authorization)
        thread_id = body.thread_id or secrets.token_hex(6)
        replay(plan["start"], thread_id)
        return answer(thread_id, "waiting", "review", 2)

    @app.post("/threads/{thread_id}/resume")
    def resume(
        thread_id: str, body: ResumeBody, authorization: str | None = Header(default=None)
    ) -> dict[str, Any]:
        check(authorization)
        ReviewInput.model_validate(body.input)
        replay(plan["resume"], thread_id)
        return answer(thread_id, "done", "__end__", 4)

    return app


def _serve_floor(root: Path, plan_file: Path) -> None:
    """The floor subprocess: listen on a free loopback port, say which, serve until killed."""
    import socket

    import uvicorn

    plan = json.loads(plan_file.read_text())
    app = _floor_app(root, plan)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    config = uvicorn.Config(
        app, http="h11", access_log=False, log_level="warning", server_header=False
    )
    print(f"serving floor on http://127.0.0.1:{sock.getsockname()[1]}/", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


def _serve_flowkit(root: Path) -> None:
    """What ``flowkit serve review --port 0 --no-timers`` runs, over a ``JsonFileStore``
    without fsync (the command has no such option): the overhead view, and what to profile."""
    import socket

    from flowkit.server import create_app
    from flowkit.server._uvicorn import run
    from flowkit.stores import JsonFileStore

    app = create_app([FLOW], store=JsonFileStore(root, fsync=False), token=TOKEN,
                     timer_poll_s=None)  # fmt: skip
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    port = sock.getsockname()[1]
    run(app, sock, ready=lambda: print(f"serving {FLOW} on http://127.0.0.1:{port}/", flush=True))


# -- the servers and the clients --------------------------------------------------------------


@dataclass(frozen=True)
class _Served:
    url: str
    pid: int

    def cpu_s(self) -> float:
        """CPU seconds (user + system, all threads) the server process used so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _server(argv: list[str], env: dict[str, str]) -> Iterator[_Served]:
    """A server subprocess, once it printed its ``serving ... on URL`` line; what it wrote
    on stderr is added to any error raised while it runs."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 - open while the server runs
    process = subprocess.Popen(
        [sys.executable, *argv],
        stdout=subprocess.PIPE,
        stderr=log,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **env},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if " on http" not in line:
            raise RuntimeError(f"{' '.join(argv)} did not start: {line!r}")
        yield _Served(line.rsplit(" on ", 1)[1].strip().rstrip("/"), process.pid)
    except BaseException as exc:
        log.seek(0)
        exc.add_note(f"{argv[0]} stderr:\n{log.read().decode(errors='replace')[-3000:]}")
        raise
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


async def _pairs(url: str, seconds: float, tag: str) -> int:
    """Start+resume pairs that ``CLIENTS`` clients complete in about ``seconds``."""
    import httpx

    headers = {"Authorization": f"Bearer {TOKEN}"}
    deadline = time.perf_counter() + seconds
    done = 0

    async def client(number: int) -> None:
        nonlocal done
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits) as http:
            count = 0
            while time.perf_counter() < deadline:
                thread_id = f"{tag}-{number}-{count}"
                made = await http.post(f"/flows/{FLOW}/threads", json={"thread_id": thread_id})
                if made.status_code != 201 or made.json()["status"] != "waiting":
                    raise RuntimeError(f"start: {made.status_code} {made.text[:300]}")
                resumed = await http.post(f"/threads/{thread_id}/resume", json={"input": ANSWER})
                if resumed.status_code != 200 or resumed.json()["status"] != "done":
                    raise RuntimeError(f"resume: {resumed.status_code} {resumed.text[:300]}")
                count += 1
                done += 1

    await asyncio.gather(*(client(n) for n in range(CLIENTS)))
    return done


def _round(server: _Served, seconds: float, tag: str) -> tuple[float, float]:
    """Pairs per second, and the server's CPU milliseconds per pair (which, unlike wall
    time, other processes on a busy machine barely change)."""
    cpu, began = server.cpu_s(), time.perf_counter()
    pairs = asyncio.run(_pairs(server.url, seconds, tag))
    elapsed, used = time.perf_counter() - began, server.cpu_s() - cpu
    return pairs / elapsed, 1000 * used / pairs


def _compare(scratch: Path, name: str, fsync: bool, seconds: float, rounds: int) -> dict[str, Any]:
    """flowkit against its floor with the same disk calls, in alternating rounds."""
    folder = scratch / name
    plan = _count_disk_calls(folder / "counted", fsync=fsync)
    plan_file = folder / "plan.json"
    plan_file.write_text(json.dumps(plan))
    (folder / "floor").mkdir()
    env = {"FLOWKIT_SERVER_TOKEN": TOKEN}
    if fsync:  # the command itself
        flowkit_argv = ["-m", "flowkit", "serve", FLOW, "--store", str(folder / "flowkit"),
                        "--port", "0", "--no-timers"]  # fmt: skip
    else:
        flowkit_argv = [__file__, "--serve-flowkit", str(folder / "flowkit")]
    floor_argv = [__file__, "--serve-floor", str(folder / "floor"), str(plan_file)]
    samples: dict[str, list[float]] = {"flowkit": [], "floor": []}
    cpu: dict[str, list[float]] = {"flowkit": [], "floor": []}
    with _server(flowkit_argv, env) as flowkit_server, _server(floor_argv, env) as floor_server:
        servers = {"flowkit": flowkit_server, "floor": floor_server}
        for who, server in servers.items():  # warm-up: imports, first files, thread pools
            _round(server, min(1.0, seconds), f"warm-{who}")
        for number in range(rounds):
            order = list(servers) if number % 2 == 0 else list(reversed(servers))
            for who in order:
                rate, cpu_ms = _round(servers[who], seconds, f"r{number}")
                samples[who].append(rate)
                cpu[who].append(cpu_ms)
    flowkit, floor = (statistics.median(samples[who]) for who in ("flowkit", "floor"))
    flowkit_cpu, floor_cpu = (statistics.median(cpu[who]) for who in ("flowkit", "floor"))
    return {
        "syncs_per_start": _syncs(plan["start"]),
        "syncs_per_resume": _syncs(plan["resume"]),
        "flowkit_pairs_s": round(flowkit, 1),
        "floor_pairs_s": round(floor, 1),
        "ratio": round(flowkit / floor, 3),
        "flowkit_cpu_ms_per_pair": round(flowkit_cpu, 2),
        "floor_cpu_ms_per_pair": round(floor_cpu, 2),
        "samples": {who: [round(x, 1) for x in values] for who, values in samples.items()},
    }


def measure(quick: bool, *, base: Path | None = None) -> dict[str, Any]:
    """Pairs/s of flowkit and of its floor, and their ratio: with fsync (acceptance 5) and,
    to show the overhead the disk hides, without."""
    # Quick is a smoke run (every figure reported, none meaningful): one short round each.
    seconds, rounds = (0.5, 1) if quick else (6.0, 5)
    base = base or Path.cwd()
    with scratch_dir(base) as scratch:
        fsync = _compare(scratch, "fsync", True, seconds, rounds)
        no_fsync = _compare(scratch, "no-fsync", False, seconds, rounds)
    return {
        "clients": CLIENTS,
        "seconds": seconds,
        "rounds": rounds,
        "filesystem": filesystem_of(base),
        "fsync": fsync,
        "no_fsync": no_fsync,
        "ratio": fsync["ratio"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--dir", type=Path, default=Path.cwd(), help="where the stores go")
    parser.add_argument("--serve-floor", nargs=2, type=Path, metavar=("ROOT", "PLAN"),
                        help=argparse.SUPPRESS)  # fmt: skip
    parser.add_argument("--serve-flowkit", type=Path, metavar="ROOT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_floor:
        _serve_floor(*args.serve_floor)
        return
    if args.serve_flowkit:
        _serve_flowkit(args.serve_flowkit)
        return
    if filesystem_of(args.dir) == "tmpfs":
        print(f"warning: {args.dir} is on tmpfs; fsync figures mean nothing", file=sys.stderr)
    figures = measure(args.quick, base=args.dir)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(
        f"HTTP start+resume pairs/s, {figures['clients']} clients, review flow on JsonFileStore "
        f"({figures['filesystem']}), median of {figures['rounds']} rounds of "
        f"{figures['seconds']:g} s"
    )
    for key, title in (("fsync", "with fsync"), ("no_fsync", "without fsync")):
        row = figures[key]
        verdict = ""
        if key == "fsync":
            verdict = "  PASS (>= 0.8x)" if row["ratio"] >= 0.8 else "  MISS (target >= 0.8x)"
        print(
            f"  {title:14} ({row['syncs_per_start']}+{row['syncs_per_resume']} syncs)  "
            f"flowkit {row['flowkit_pairs_s']:7.1f}  floor {row['floor_pairs_s']:7.1f}  "
            f"ratio {row['ratio']:.3f}x{verdict}"
        )
        print(
            f"  {'':14} server CPU per pair: flowkit {row['flowkit_cpu_ms_per_pair']:.2f} ms, "
            f"floor {row['floor_cpu_ms_per_pair']:.2f} ms"
        )


if __name__ == "__main__":
    main()
