"""Processes that lock, create, append, compact and delete the same thread id at once never
hold its lock together, though every delete removes the lock file.

Each child (``lock_worker.py``) runs a fixed number of random rounds; every hold of the lock,
the ones inside ``delete`` and ``compact`` included, checks that no other holder's marker is
present and adds one to a shared count with a plain read and write. Mutual exclusion holds
exactly when no child saw a foreign marker and the count equals the sum of the holds the
children report. Without the acquirer's "does the path still name the file I locked" check,
two holders (one on a removed file, one on its replacement) show up here within a few hundred
rounds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from . import lock_worker

pytestmark = pytest.mark.slow

CHILDREN = 4
ROUNDS = 400


@pytest.mark.parametrize("seed", [1, 2])
def test_lock_holders_never_overlap_while_deletes_remove_the_lock_file(
    tmp_path: Path, seed: int
) -> None:
    (tmp_path / "holders").mkdir()
    (tmp_path / "count").write_text("0")
    children = []
    for n in range(CHILDREN):
        args = [str(tmp_path), "t", f"c{n}", str(seed * 100 + n), str(ROUNDS)]
        children.append(
            subprocess.Popen(
                [sys.executable, lock_worker.__file__, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    holds = []
    for child in children:
        out, err = child.communicate()
        assert child.returncode == 0, err
        holds.append(int(out.split()[-1]))
    held = sum(holds)
    violations = tmp_path / "violations"
    assert not violations.exists(), violations.read_text()
    assert int((tmp_path / "count").read_text()) == held
    assert held >= CHILDREN * ROUNDS // 2  # most rounds really held the lock
    locks = tmp_path / "store" / "locks"
    thread_exists = (tmp_path / "store" / "threads" / "t").exists()
    assert sorted(os.listdir(locks)) == (["t.lock"] if thread_exists else [])
