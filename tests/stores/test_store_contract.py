"""Both shipped stores pass the store contract, which third-party stores run the same way."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _pg import fresh_schema, require_postgres

from flowkit.stores import JsonFileStore, MemoryStore, Store
from flowkit.testing import StoreContract


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> Store:
        return MemoryStore()


class TestJsonFileStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        with JsonFileStore(tmp_path / "store") as store:
            yield store

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Iterator[Callable[[], Store]]:
        opened: list[JsonFileStore] = []

        def again() -> Store:
            opened.append(JsonFileStore(tmp_path / "store"))
            return opened[-1]

        yield again
        for store in opened:
            store.close()


class TestPostgresStore(StoreContract):
    """Against a real PostgreSQL: a fresh schema per test (skipped where none is reachable)."""

    @pytest.fixture
    def reopen(self) -> Iterator[Callable[[], Store]]:
        require_postgres()
        from flowkit.stores.postgres import PostgresStore

        opened: list[PostgresStore] = []
        with fresh_schema() as (url, schema):

            def again() -> Store:
                opened.append(PostgresStore(url, schema=schema, pool_size=4))
                return opened[-1]

            yield again
            for store in opened:
                store.close()

    @pytest.fixture
    def store(self, reopen: Callable[[], Store]) -> Store:
        return reopen()


def run_pytest(directory: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run pytest on ``source`` as a third party would: its own folder, no flowkit conftest."""
    (directory / "test_third_party_store.py").write_text(textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(directory)],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.slow
def test_a_third_party_store_runs_the_contract_from_its_own_project(tmp_path: Path) -> None:
    result = run_pytest(
        tmp_path,
        """
        import pytest
        from flowkit.stores import MemoryStore
        from flowkit.testing import StoreContract

        class TestMyStore(StoreContract):
            @pytest.fixture
            def store(self):
                return MemoryStore()
        """,
        "-k",
        "lock or create or invalid",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout and "failed" not in result.stdout


@pytest.mark.slow
def test_a_contract_subclass_without_a_store_fixture_is_told_what_to_add(tmp_path: Path) -> None:
    result = run_pytest(
        tmp_path,
        """
        from flowkit.testing import StoreContract

        class TestForgotTheFixture(StoreContract):
            pass
        """,
        "-k",
        "test_lock_is_released_when_the_block_raises",
    )
    assert result.returncode == 1
    assert "define a `store` fixture" in result.stdout


def test_importing_flowkit_testing_does_not_import_pytest() -> None:
    code = "import sys, flowkit.testing; sys.exit('pytest' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
