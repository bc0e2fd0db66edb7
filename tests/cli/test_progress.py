"""Long commands draw one updating progress line on stderr, only on a terminal: never on
stdout, never when stderr is piped, and never with ``--json``, ``--quiet``,
``FLOWKIT_NO_PROGRESS=1`` or ``TERM=dumb``. The line is erased when the command ends."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowkit import Runner
from flowkit.cli import main
from flowkit.examples.review import flow as review_flow
from flowkit.stores import JsonFileStore
from flowkit.terminal import progress as progress_module
from flowkit.terminal.progress import Progress

ERASE = "\r\x1b[K"


class _Terminal(io.StringIO):
    """A stream that says it is a terminal (and has no file descriptor)."""

    def isatty(self) -> bool:
        return True


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _progress_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    # The developer's own environment must not decide these tests.
    monkeypatch.delenv("FLOWKIT_NO_PROGRESS", raising=False)
    monkeypatch.setenv("TERM", "xterm")


@pytest.fixture
def every_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Redraw on every step: a small store is done before the first tenth of a second."""
    monkeypatch.setattr(progress_module, "REDRAW_S", 0.0)


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """Three finished threads and one waiting."""
    root = tmp_path / "store"
    with JsonFileStore(root, fsync=False) as store:
        review = Runner(review_flow, store=store)
        for thread in ("done-1", "done-2", "done-3", "waits-1"):
            review.start(thread)
        for thread in ("done-1", "done-2", "done-3"):
            review.resume(thread, {"approved": True})
    return root


# -- the line itself -----------------------------------------------------------------------------


def test_the_line_shows_count_share_and_note_and_is_erased_at_the_end() -> None:
    stream, clock = _Terminal(), _Clock()
    with Progress("prune", total=4, stream=stream, clock=clock) as progress:
        clock.now += 0.5
        progress.advance()
        progress.note("t-1")  # within a tenth of a second of the last draw: not drawn
        drawn = stream.getvalue()
        clock.now += 0.5
        progress.advance()
    text = stream.getvalue()
    assert drawn == ERASE + "prune  1/4 (25%)  0s"
    assert text == drawn + ERASE + "prune  2/4 (50%)  t-1  1s" + ERASE


def test_at_most_ten_redraws_a_second() -> None:
    stream, clock = _Terminal(), _Clock()
    with Progress("copy", total=10_000, stream=stream, clock=clock) as progress:
        for _ in range(10_000):
            clock.now += 0.001  # 10 s in all
            progress.advance()
    draws = stream.getvalue().count(ERASE) - 1  # the last one erases
    assert 90 <= draws <= 100


def test_a_command_done_within_a_tenth_of_a_second_draws_nothing() -> None:
    stream, clock = _Terminal(), _Clock()
    with Progress("prune", total=3, stream=stream, clock=clock) as progress:
        for _ in range(3):
            clock.now += 0.01
            progress.advance()
    assert stream.getvalue() == ""


def test_an_unknown_total_shows_the_count_and_a_callback_sets_all_three() -> None:
    stream, clock = _Terminal(), _Clock()
    with Progress("worker", stream=stream, clock=clock) as progress:
        clock.now += 1
        progress.advance(7)
        assert progress.line() == "worker  7  1s"
        progress(3, 9, "deleted")
        assert progress.line() == "worker  3/9 (33%)  deleted  1s"


def test_track_counts_the_items_taken() -> None:
    stream, clock = _Terminal(), _Clock()
    with Progress("threads", stream=stream, clock=clock) as progress:
        clock.now += 1
        assert list(progress.track("abc")) == ["a", "b", "c"]
        assert progress.done == 3


def test_a_note_is_made_printable_and_kept_on_one_line() -> None:
    stream, clock = _Terminal(), _Clock()
    with Progress("copy", stream=stream, clock=clock) as progress:
        clock.now += 1
        progress.note("evil\x1b]0;title\x07\nnext")
    drawn = stream.getvalue().removeprefix(ERASE).removesuffix(ERASE)
    assert "\x1b" not in drawn and "\n" not in drawn
    assert "evil\\x1b]0;title\\x07 next" in drawn


@pytest.mark.parametrize(
    ("stream", "env", "enabled"),
    [
        (io.StringIO(), {}, True),  # piped or redirected
        (_Terminal(), {"FLOWKIT_NO_PROGRESS": "1"}, True),
        (_Terminal(), {"TERM": "dumb"}, True),
        (_Terminal(), {}, False),  # --json, --quiet
    ],
    ids=["not-a-terminal", "FLOWKIT_NO_PROGRESS", "TERM=dumb", "disabled"],
)
def test_no_line_off_a_terminal_or_when_turned_off(
    stream: io.StringIO, env: dict[str, str], enabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    clock = _Clock()
    with Progress("prune", total=2, stream=stream, enabled=enabled, clock=clock) as progress:
        clock.now += 1
        progress.advance()
        progress.note("x")
    assert not progress.shown
    assert stream.getvalue() == ""


def test_the_line_is_cut_to_the_terminal_width(terminal: _Pty) -> None:
    fcntl.ioctl(terminal.stream.fileno(), termios.TIOCSWINSZ, struct.pack("HHHH", 24, 30, 0, 0))
    clock = _Clock()
    with Progress("copy", total=10, stream=terminal.stream, clock=clock) as progress:
        clock.now += 1
        progress.note("a-thread-id-much-longer-than-the-terminal-is-wide")
    drawn = terminal.read().split(ERASE)
    assert drawn[1] == "copy  0/10 (0%)  a-thread-id-"  # 29 columns: the 30th would wrap


# -- commands, in-process ------------------------------------------------------------------------


class _Pty:
    """A pseudo-terminal: ``stream`` is its slave end as a text stream; ``read()`` what was
    written to it so far."""

    def __init__(self) -> None:
        self.master, slave = pty.openpty()
        self.stream = os.fdopen(slave, "w", encoding="utf-8")

    def read(self) -> str:
        self.stream.flush()
        chunks = []
        while select.select([self.master], [], [], 0.05)[0]:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the slave end is closed and all was read
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8", "replace")

    def close(self) -> None:
        self.stream.close()
        os.close(self.master)


@pytest.fixture
def terminal() -> Iterator[_Pty]:
    tty = _Pty()
    yield tty
    tty.close()


def _run(argv: list[str], tty: _Pty, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """``main(argv)`` with stderr on the pseudo-terminal and stdout not a terminal; its exit
    code and what it printed. (Set here, not in a fixture: pytest's capture takes sys.stdout
    and sys.stderr back between a fixture's setup and the test.)"""
    out = io.StringIO()
    with monkeypatch.context() as patched:
        patched.setattr(sys, "stderr", tty.stream)
        patched.setattr(sys, "stdout", out)
        code = main(argv)
    return code, out.getvalue()


@pytest.mark.usefixtures("every_tick")
def test_prune_on_a_terminal_draws_its_progress_on_stderr_only(
    store_dir: Path, terminal: _Pty, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = _run(["prune", "--store", str(store_dir)], terminal, monkeypatch)
    assert code == 0
    drawn = terminal.read()
    assert "prune  4/4 (100%)  read" in drawn
    assert "prune  3/3 (100%)  deleted" in drawn
    assert drawn.endswith(ERASE)  # nothing of it is left on the screen
    assert out.startswith("Deleted 3 threads:\n") and "\x1b" not in out and "\r" not in out


@pytest.mark.usefixtures("every_tick")
@pytest.mark.parametrize("off", ["--json", "--quiet", "-q"])
def test_prune_with_json_or_quiet_draws_nothing(
    store_dir: Path, terminal: _Pty, off: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = _run(["prune", "--store", str(store_dir), off], terminal, monkeypatch)
    assert code == 0
    assert terminal.read() == ""
    assert "done-1" in out


@pytest.mark.usefixtures("every_tick")
def test_prune_with_stderr_piped_draws_nothing(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    err, out = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["prune", "--store", str(store_dir)]) == 0
    assert err.getvalue() == ""
    assert out.getvalue().startswith("Deleted 3 threads:")


@pytest.mark.usefixtures("every_tick")
def test_migrate_draws_one_step_per_thread(
    store_dir: Path, terminal: _Pty, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["migrate", "flowkit.examples.review:flow", "--all", "--store", str(store_dir)]
    code, out = _run(argv, terminal, monkeypatch)
    assert code == 0
    drawn = terminal.read()
    assert "migrate  4/4 (100%)" in drawn and drawn.endswith(ERASE)
    assert out.startswith("Flow `review` version")


@pytest.mark.usefixtures("every_tick")
def test_store_copy_draws_each_thread_copied(
    store_dir: Path, tmp_path: Path, terminal: _Pty, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["store", "copy", str(store_dir), str(tmp_path / "copy")]
    code, out = _run(argv, terminal, monkeypatch)
    assert code == 0
    drawn = terminal.read()
    assert "copy  4/4 (100%)  copied" in drawn and drawn.endswith(ERASE)
    assert out.endswith("4 copied, 0 failed\n")


@pytest.mark.usefixtures("every_tick")
def test_threads_as_a_table_counts_the_threads_read_and_json_draws_nothing(
    store_dir: Path, terminal: _Pty, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = _run(["threads", "--store", str(store_dir)], terminal, monkeypatch)
    assert code == 0 and out.startswith("THREAD")
    drawn = terminal.read()
    assert "threads  4  " in drawn and drawn.endswith(ERASE)
    code, out = _run(["threads", "--json", "--store", str(store_dir)], terminal, monkeypatch)
    assert code == 0 and out.startswith("[")
    assert terminal.read() == ""


@pytest.mark.usefixtures("every_tick")
def test_store_reindex_draws_each_thread_indexed(
    store_dir: Path, terminal: _Pty, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _ = _run(["store", "reindex", "--store", str(store_dir)], terminal, monkeypatch)
    assert code == 0
    drawn = terminal.read()
    assert "reindex  4/4 (100%)" in drawn and drawn.endswith(ERASE)


@pytest.mark.usefixtures("every_tick")
def test_dialogue_test_draws_each_conversation(
    terminal: _Pty, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = _run(["dialogue", "test", "robot_cell", "robot_cell"], terminal, monkeypatch)
    assert code == 0
    drawn = terminal.read()
    assert "dialogue test  0/" in drawn and drawn.endswith(ERASE)
    assert out and "\x1b" not in out


@pytest.mark.usefixtures("every_tick")
def test_dialogue_test_with_json_draws_nothing(
    terminal: _Pty, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["dialogue", "test", "robot_cell", "robot_cell", "--json"]
    code, out = _run(argv, terminal, monkeypatch)
    assert code == 0 and out.startswith("{")
    assert terminal.read() == ""


# -- a worker, in a process of its own -----------------------------------------------------------


@pytest.mark.slow
def test_a_worker_on_a_terminal_shows_live_counts_and_stdout_stays_clean(tmp_path: Path) -> None:
    from _pg import require_postgres, scratch_database

    from flowkit.stores.postgres import PostgresStore

    require_postgres()
    target = "flowkit.examples.review:flow"
    with scratch_database(migrated=True) as database, PostgresStore(database) as store:
        client = Runner(review_flow, store=store)
        client.submit("w-1")
        tty, out, drawn = _Pty(), tmp_path / "stdout", ""
        try:
            with out.open("wb") as stdout:
                worker = subprocess.Popen(
                    [sys.executable, "-m", "flowkit", "worker", target, "--store", database],
                    env={**os.environ, "TERM": "xterm", "FLOWKIT_NO_PROGRESS": "0"},
                    stdout=stdout,
                    stderr=tty.stream.fileno(),
                )
            deadline = time.monotonic() + 60
            while "claimed 1, done 1, failed 0" not in drawn and time.monotonic() < deadline:
                drawn += tty.read()
                if worker.poll() is not None:
                    break
            worker.send_signal(signal.SIGTERM)
            code = worker.wait(60)
            drawn += tty.read()
        finally:
            tty.close()
    assert code == 0, drawn
    assert "worker  claimed 1, done 1, failed 0" in drawn
    assert drawn.endswith(ERASE)  # erased when the worker stopped
    printed = out.read_text()
    assert printed.startswith("worker stopped: 1 claims") and "\x1b" not in printed
