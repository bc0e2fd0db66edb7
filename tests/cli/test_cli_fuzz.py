"""Every command and sub-command, fed bad inputs: a message on stderr, never a traceback.

The command tree is walked from the real parser, so a new command is fuzzed without anyone
listing it here. For each scenario (missing store, unknown thread, ``../../etc``, empty,
5 MB, 5 MB on one line, non-UTF-8 and NUL-byte files, ``/dev/zero``, a NUL byte or 5 MB in an
argument, a corrupt journal) every
command that takes the damaged kind of argument runs in-process; read-only commands must
leave the file tree exactly as it was.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from flowkit.cli import build_parser, main

pytestmark = pytest.mark.slow

TRACEBACK = "Traceback (most recent call last)"

#: What a command creates by design, so a missing store or unknown thread is no error there.
CREATES = {
    "start": {"store", "thread"},
    "sas start": {"store"},
    "chat": {"store"},
    "roundtable": {"store"},
    "demo": {"store"},
}
#: Runs that succeed by design: deleting a corrupt thread is how one gets rid of it; an empty
#: steps file is an empty program (`sas validate` then warns `no_main_program`).
SUCCEEDS = {
    ("delete", "corrupt journal"),
    ("sas compile", "empty.txt"),
    # `../../etc` from the cwd is a new folder inside the test's tmp_path: a fine place.
    ("sas demo-files", "../../etc"),
}
#: Commands that must never create, change or remove a file.
READ_ONLY = {
    "threads", "show", "history", "stats", "graph", "check", "workflows",
    "sas status", "sas validate", "dialogue check", "dialogue test", "dialogue schema",
}  # fmt: skip
#: Checkers: their report of what is wrong with the input is their output, so it goes to stdout
#: (where `--json` and pipes read it) with exit 1, like `ruff check`; stderr may stay empty.
REPORTS = {"check", "sas validate", "dialogue check", "dialogue test"}
#: Extra words a command gets in every run (recover is read-only only as a dry run).
EXTRA = {"recover": ["--dry-run"]}

_KIND = {
    "THREAD": "thread",
    "TARGET": "target",
    "FILE": "file",
    "STEPS": "file",
    "FLOW.xml": "file",
    "DOMAIN": "file",
    "CONVERSATIONS": "file",
    "CONFIG": "file",
    "TEXT": "text",
    "NAME": "name",
    "JSON": "json",
    "DIR": "file",
    "MANUSCRIPT": "file",
    "ISSUE": "text",
    "SESSION": "thread",
    "N": "text",
    # `store init/copy` and `worker` take a store as a PostgreSQL URL or a folder.
    "URL": "store",
    "SRC": "store",
    "DST": "store",
}


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]
    positionals: tuple[str, ...]  # kinds
    required: tuple[tuple[str, str], ...]  # (option, kind)
    has_store: bool

    @property
    def name(self) -> str:
        return " ".join(self.words)


def _walk(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> Iterator[Command]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*words, name))
            return
    positionals = tuple(_KIND[str(a.metavar)] for a in parser._actions if not a.option_strings)
    required = tuple(
        (a.option_strings[-1], "output" if a.dest == "output" else _KIND[str(a.metavar)])
        for a in parser._actions
        if a.option_strings and a.required
    )
    stores = any("--store" in a.option_strings for a in parser._actions)
    yield Command(words, positionals, required, stores)


COMMANDS = list(_walk(build_parser()))


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Stores and files every scenario draws on; the cwd is two folders deep in tmp_path."""
    from flowkit import Runner
    from flowkit.examples.review import flow
    from flowkit.stores import JsonFileStore

    good = tmp_path / "good-store"
    Runner(flow, store=JsonFileStore(good, fsync=False)).start("t0", {"topic": "x"})
    corrupt = tmp_path / "corrupt-store"
    (corrupt / "threads" / "bad").mkdir(parents=True)
    (corrupt / "threads" / "bad" / "journal.jsonl").write_bytes(b'{"kind": "start", "v": 1}\n{')
    JsonFileStore(corrupt, fsync=False).reindex()  # its thread index, as flowkit's own stores have
    files = tmp_path / "files"
    files.mkdir()
    (files / "empty.txt").write_bytes(b"")
    (files / "big.txt").write_bytes((b"move the part to the left station\n" * 160_000)[: 5 << 20])
    # One line: whatever a parser quotes of the line it stops at is the whole file.
    (files / "line.txt").write_bytes(b"1. moveP " + b"x" * (5 << 20))
    (files / "latin1.txt").write_bytes("Größe: ü".encode("latin-1"))
    (files / "nul.txt").write_bytes(b"steps\x00\x00\x00more")
    cwd = tmp_path / "cwd" / "deep"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("FLOWKIT_STORE", raising=False)
    monkeypatch.delenv("FLOWKIT_LLM", raising=False)
    # Without a token `flowkit serve` refuses to start; with one it would serve forever.
    monkeypatch.delenv("FLOWKIT_SERVER_TOKEN", raising=False)
    return {"good": str(good), "corrupt": str(corrupt), "files": str(files)}


def _scenario(name: str, world: dict[str, str]) -> tuple[dict[str, str], set[str]]:
    """The value of each kind of argument, and which kinds are the bad ones."""
    neutral = {
        "thread": "t0",
        "target": "review",
        "text": "move the part",
        "name": "review",
        "store": world["good"],
        "file": os.path.join(world["files"], "empty.txt"),
        "json": "{}",
    }
    if name == "missing store":
        return neutral | {"store": os.path.abspath("typo/a/b")}, {"store"}
    if name == "unknown thread":
        return neutral | {"thread": "no-such-thread"}, {"thread"}
    if name == "../../etc":
        bad = {"thread": "../../etc", "file": "../../etc", "target": "../../etc:flow"}
        return neutral | bad | {"store": "../../etc", "json": "@../../etc"}, {*bad, "store", "json"}
    if name == "nul in argument":
        bad = {"thread": "t\x00", "file": "f\x00.txt", "target": "x\x00:flow", "store": "s\x00"}
        return neutral | bad | {"json": '{"a": "\x00"}'}, set(bad)
    if name == "5 MB argument":
        huge = "x" * (5 << 20)
        bad = {"thread": huge, "text": huge, "name": huge, "target": huge, "json": huge}
        return neutral | bad, set(bad)
    if name == "/dev/zero":
        bad = {"file": "/dev/zero", "target": "/dev/zero:flow", "json": "@/dev/zero"}
        return neutral | bad, set(bad)
    if name == "corrupt journal":
        return neutral | {"store": world["corrupt"], "thread": "bad"}, {"store", "thread"}
    path = os.path.join(world["files"], name)
    bad = {"file": path, "target": f"{path}:flow", "json": f"@{path}"}
    return neutral | bad, set(bad)


SCENARIOS = [
    "missing store",
    "unknown thread",
    "../../etc",
    "nul in argument",
    "corrupt journal",
    "empty.txt",
    "big.txt",
    "line.txt",
    "latin1.txt",
    "nul.txt",
    "5 MB argument",
    *(["/dev/zero"] if os.path.exists("/dev/zero") else []),
]


def _argv(command: Command, values: dict[str, str], out_dir: Path) -> tuple[list[str], set[str]]:
    argv = [*command.words]
    used = set()
    for kind in command.positionals:
        argv.append(values[kind])
        used.add(kind)
    for option, kind in command.required:
        if kind == "output":
            argv += [option, str(out_dir / "out.txt")]
        else:
            argv += [option, values[kind]]
            used.add(kind)
    if command.has_store:
        argv += ["--store", values["store"]]
        used.add("store")
    return [*argv, *EXTRA.get(command.name, [])], used


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for folder, dirs, files in os.walk(root):
        # A store folder's thread index is a cache of its journals, which a listing may build.
        dirs[:] = [name for name in dirs if name != "index"]
        for name in dirs + files:
            path = os.path.join(folder, name)
            stat = os.lstat(path)
            found[path] = (stat.st_size, stat.st_mtime_ns)
    return found


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def _params() -> list[object]:
    return [pytest.param(c, id=c.name) for c in COMMANDS]


@pytest.mark.parametrize("command", _params())
def test_a_command_fails_cleanly_on_every_bad_input(
    command: Command,
    world: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    problems: list[str] = []
    for scenario in SCENARIOS:
        values, bad = _scenario(scenario, world)
        out_dir = tmp_path / "outputs" / str(SCENARIOS.index(scenario))
        out_dir.mkdir(parents=True)
        argv, used = _argv(command, values, out_dir)
        if not (used & bad) - CREATES.get(command.name, set()):
            continue
        if (command.name, scenario) in SUCCEEDS:
            continue
        before = _tree(tmp_path)
        code, out, err = _run(argv, capsys)
        problems += [
            f"`flowkit {command.name}` ({scenario}): {why}\n  out: {out[:300]!r}\n"
            f"  err: {err[:600]!r}"
            for why in _problems(command.name, code, out, err, tmp_path, before)
        ]
    assert not problems, "\n".join(problems)


def _problems(
    name: str, code: int, out: str, err: str, root: Path, before: dict[str, tuple[int, int]]
) -> Iterator[str]:
    if code == 0:
        yield "exit code 0"
    if not err.strip() and not (name in REPORTS and code == 1 and out.strip()):
        yield "nothing on stderr"
    if TRACEBACK in out + err:
        yield "a traceback"
    if "error:" in out:
        yield "an error on stdout"
    if len(err) > 20_000:
        yield "a huge input echoed back"
    if (name in READ_ONLY or name == "recover") and _tree(root) != before:
        yield "a read-only command changed files"


def test_every_command_is_fuzzed_by_some_scenario(world: dict[str, str]) -> None:
    covered = set()
    for scenario in SCENARIOS:
        values, bad = _scenario(scenario, world)
        for command in COMMANDS:
            if _argv(command, values, Path("/unused"))[1] & bad:
                covered.add(command.name)
    every = {c.name for c in COMMANDS}
    # Taking no input at all, these cannot be given a bad one (`auth hash` reads stdin only:
    # tests/server/test_identities.py gives it bad tokens).
    assert every - covered == {"workflows", "dialogue schema", "auth hash"}


def test_a_read_only_command_on_a_typo_store_creates_nothing(tmp_path: Path) -> None:
    typo = tmp_path / "x" / "typo" / "a" / "b"
    for argv in (["threads"], ["show", "t"], ["history", "t"], ["stats"], ["recover"]):
        assert main([*argv, "--store", str(typo)]) == 2
    assert main(["recover", "--dry-run", "--store", str(typo)]) == 2
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["sas", "edit", "t0", "{latin1}"],
        ["start", "review", "t1", "--input", "@{latin1}"],
        ["show", "../../etc"],
    ],
)
def test_a_real_process_prints_one_line_and_no_traceback(
    argv: list[str], world: dict[str, str], tmp_path: Path
) -> None:
    latin1 = os.path.join(world["files"], "latin1.txt")
    words = [word.format(latin1=latin1) for word in argv]
    done = subprocess.run(
        [sys.executable, "-m", "flowkit", *words, "--store", world["good"]],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "FLOWKIT_LLM": "scripted:/nonexistent.json"},
        check=False,
    )
    assert done.returncode != 0
    assert TRACEBACK not in done.stderr
    assert done.stderr.startswith("flowkit: error: ")
    assert "not UTF-8" in done.stderr or "../../etc" in done.stderr
