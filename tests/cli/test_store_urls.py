"""``--store`` names a folder or a PostgreSQL URL: every command shows the same threads either
way, a database that cannot be used is one line on stderr and exit 2, and a URL's password
never appears in any output.

The PostgreSQL cases use the real server (``tests/_pg.py``): each test gets a database of its
own, named by a URL that carries a password (the test server trusts loopback, so it is never
checked, only carried around, which is what the tests watch).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pg import require_postgres, scratch_database

from flowkit.cli import main
from flowkit.stores.postgres import INSTALL, PostgresStore

PASSWORD = "s3cret-pw"
UNREACHABLE = f"postgresql://me:{PASSWORD}@127.0.0.1:1/db"


@pytest.fixture
def database() -> Iterator[str]:
    """A new empty database (no flowkit schema), as a URL with a password; dropped afterwards."""
    require_postgres()
    with scratch_database(password=PASSWORD) as url:
        yield url


@pytest.fixture(params=["folder", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store location of each kind: a folder to be created, or an initialised database."""
    if request.param == "folder":
        return str(tmp_path / "runs")
    url: str = request.getfixturevalue("database")
    assert main(["store", "init", url]) == 0
    return url


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert PASSWORD not in captured.out + captured.err, "a URL's password was printed"
    return code, captured.out, captured.err


_VOLATILE = {"ts", "updated", "run_id", "latency_s"}


def _steady(value: Any, store: str) -> Any:
    """``value`` without what differs between two runs (times, run ids, the store's name)."""
    if isinstance(value, dict):
        return {k: _steady(v, store) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_steady(v, store) for v in value]
    if isinstance(value, str):
        from flowkit.terminal.store import shown

        return value.replace(f"'{shown(store)}'", "STORE").replace(shown(store), "STORE")
    return value


#: One thread's life through the commands, each printing JSON: (command, exit code).
SCRIPT: list[tuple[list[str], int]] = [
    (["start", "review", "doc-1", "--input", '{"topic": "Release notes"}', "--json"], 0),
    (["threads", "--json"], 0),
    (["show", "doc-1", "--json"], 0),
    (["update-state", "doc-1", "--patch", '{"feedback": "shorter"}', "--reason", "r", "--json"], 0),
    (["fork", "doc-1", "--at", "1", "--as", "doc-2", "--json"], 0),
    (["resume", "doc-1", "--input", '{"approved": true}', "--json"], 0),
    (["history", "doc-1", "--json"], 0),
    (["migrate", "review", "--dry-run", "--all", "--json"], 0),
    (["recover", "--dry-run", "--json"], 0),
    (["prune", "--dry-run", "--json"], 0),
    (["delete", "doc-2", "--json"], 0),
    (["prune", "--json"], 0),
    (["threads", "--json"], 0),
]


def _play(store: str, capsys: pytest.CaptureFixture[str]) -> list[Any]:
    seen = []
    for argv, expected in SCRIPT:
        code, out, err = _run(capsys, *argv, "--store", store)
        assert code == expected, f"{argv}: {err}"
        seen.append(_steady(json.loads(out), store))
    return seen


def test_every_command_shows_the_same_on_a_folder_and_on_postgresql(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = _play(store, capsys)
    reference = _play(str(tmp_path / "reference"), capsys)
    assert seen == reference
    started, listed, shown, patched, forked, done, history = seen[:7]
    assert (started["status"], started["node"], started["version"]) == ("waiting", "review", 1)
    assert [t["thread_id"] for t in listed] == ["doc-1"]
    assert shown["state"]["topic"] == "Release notes"
    assert patched["state"]["feedback"] == "shorter"
    assert (forked["thread_id"], forked["status"]) == ("doc-2", "waiting")
    assert (done["status"], done["next"]) == ("done", "flowkit history doc-1 --store STORE")
    assert [r["kind"] for r in history] == ["start", "step", "patch", "input", "step"]
    assert seen[9]["deleted"] == ["doc-1"] and seen[9]["dry_run"] is True
    assert seen[10]["deleted"][0]["thread_id"] == "doc-2"
    assert seen[12] == []


def test_hints_repeat_the_store_with_its_password_hidden(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "init", database]) == 0
    code, out, err = _run(capsys, "-vv", "start", "review", "doc-1", "--store", database)
    assert code == 0 and "cli_command" in err, "debug logs were written (without the password)"
    hidden = database.replace(PASSWORD, "***")
    assert f"Next: flowkit resume doc-1 --input '{{\"approved\": false}}' --store '{hidden}'" in out
    code, out, _ = _run(capsys, "threads", "--store", database)
    assert code == 0 and "doc-1" in out


def test_flowkit_store_may_name_the_database(
    database: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FLOWKIT_STORE", database)
    assert main(["store", "init", database]) == 0
    code, out, _ = _run(capsys, "start", "review", "doc-1")
    assert code == 0 and out.rstrip().endswith("Next: flowkit resume doc-1 --input "
                                               "'{\"approved\": false}'")  # fmt: skip
    code, out, _ = _run(capsys, "show", "doc-1", "--json")
    assert code == 0 and json.loads(out)["status"] == "waiting"


#: Every command that takes --store, with what it needs besides (a thread, a flow).
COMMANDS = [
    ["threads"],
    ["show", "doc-1"],
    ["history", "doc-1"],
    ["start", "review", "doc-1"],
    ["resume", "doc-1"],
    ["fork", "doc-1"],
    ["update-state", "doc-1", "--patch", "{}"],
    ["delete", "doc-1"],
    ["prune", "--dry-run"],
    ["migrate", "review"],
    ["stats"],
    ["recover", "--dry-run"],
    ["sas", "status", "sas-1"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0] if c[0] != "sas" else "sas")
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (UNREACHABLE, "could not be reached"),
        (f"postgresql://me:{PASSWORD}@127.0.0.1:notaport/db", 'invalid integer value "notaport"'),
    ],
    ids=["unreachable", "wrong-url"],
)
def test_a_database_that_cannot_be_reached_is_one_line_and_exit_2(
    command: list[str], url: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    require_postgres()  # the driver must be there to fail on the server
    code, out, err = _run(capsys, *command, "--store", url)
    assert (code, out) == (2, "")
    assert err.startswith("flowkit: error: PostgreSQL at postgresql://me:***@127.0.0.1:")
    assert reason in err and err.count("\n") == 1


def test_store_init_of_a_database_it_cannot_reach_is_exit_2_as_every_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It exited 1 where docs/cli.md says 2, as the other commands do (found by a defect
    hunt)."""
    require_postgres()
    code, out, err = _run(capsys, "store", "init", UNREACHABLE)
    assert (code, out) == (2, "") and "could not be reached" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "command", [["sas", "start", "x"], ["serve", "review", "--read-only"], ["chat", "robot_cell"]]
)
def test_an_llm_spec_that_is_not_one_is_bad_usage_exit_2(
    command: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = _run(capsys, *command, "--llm", "nope", "--store", str(tmp_path))
    assert (code, out) == (2, "") and "nope" in err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0] if c[0] != "sas" else "sas")
def test_a_database_without_the_schema_says_to_run_store_init_and_creates_nothing(
    command: list[str], database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, *command, "--store", database)
    assert (code, out) == (2, "")
    hidden = database.replace(PASSWORD, "***")
    assert err == (
        f"flowkit: error: The database at {hidden} has no flowkit schema `flowkit` yet; create "
        f"it once with `flowkit store init {hidden}` (or flowkit.stores.postgres.migrate).\n"
    )
    import psycopg

    with psycopg.connect(database, autocommit=True) as conn:
        assert conn.execute("SELECT to_regnamespace('flowkit')").fetchone() == (None,)


def test_the_store_init_hint_names_the_schema_the_command_was_given(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hint dropped `--schema`: run as printed, it made `flowkit` and the command failed
    the same way again (found by a defect hunt)."""
    worker = ["worker", "review", "--store", database, "--schema", "team_a", "--lease", "inf"]
    assert _run(capsys, *worker)[0] == 2  # an endless lease: refused before any connection
    code, _, err = _run(capsys, *worker[:-2])
    assert code == 2
    hidden = database.replace(PASSWORD, "***")
    assert f"`flowkit store init {hidden} --schema team_a`" in err
    assert main(["store", "init", database, "--schema", "team_a"]) == 0
    capsys.readouterr()
    with PostgresStore(database, schema="team_a") as store:  # the schema is there now
        assert store.threads() == []


@pytest.mark.parametrize(
    "command", [["threads"], ["start", "review", "doc-1"], ["serve", "review", "--read-only"]]
)
def test_a_missing_postgres_extra_says_what_to_install(command: list[str]) -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from flowkit.cli import main\n"
        f"sys.exit(main({[*command, '--store', UNREACHABLE]!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("flowkit: error: PostgresStore needs psycopg 3")
    assert done.stderr.rstrip().endswith(INSTALL) and done.stderr.count("\n") == 1
    assert PASSWORD not in done.stderr


@pytest.mark.parametrize(
    "command",
    [["quality", "status", "--episode", "1"], ["chat", "robot_cell"], ["roundtable", "trio-en"]],
    ids=lambda c: c[0],
)
def test_commands_that_keep_files_beside_their_threads_refuse_a_url(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, *command, "--store", UNREACHABLE)
    assert (code, out) == (2, "")
    assert err == (
        "flowkit: error: This command keeps its data in a store folder, not in PostgreSQL "
        "(postgresql://me:***@127.0.0.1:1/db); pass --store DIR.\n"
    )


@pytest.mark.parametrize("demo", ["sas", "review", "quality", "roundtable"])
def test_every_demo_refuses_a_url_and_creates_nothing(
    demo: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # It used to make a folder named after the URL and print the password in its hints.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        _run(capsys, "demo", demo, "--store", UNREACHABLE)
    captured = capsys.readouterr()
    assert exited.value.code == 2 and captured.out == ""
    assert "postgresql://me:***@127.0.0.1:1/db" in captured.err
    assert PASSWORD not in captured.err
    assert list(tmp_path.iterdir()) == []


def test_the_worker_wants_a_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "worker", "review", "--store", str(tmp_path))
    assert (code, out) == (2, "")
    assert "`flowkit worker` runs threads from PostgreSQL" in err


def test_the_help_of_every_store_option_names_both_kinds() -> None:
    from flowkit.cli import build_parser

    done = subprocess.run(
        [sys.executable, "-m", "flowkit", "history", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert "--store DIR|URL" in done.stdout and "PostgreSQL URL" in done.stdout

    def stores(parser: Any) -> Iterator[str]:
        import argparse

        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from stores(sub)
            elif "--store" in action.option_strings:
                yield str(action.metavar)

    # `worker` takes only a database, `demo` makes a folder of its own.
    assert set(stores(build_parser())) == {"DIR|URL", "URL", "DIR"}
