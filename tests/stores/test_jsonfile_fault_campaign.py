"""The fault campaign as tests: random byte flips in journals and snapshots, random truncations
with and without a zero-filled tail. Not one silently wrong state: every load gives exactly the
state of some prefix of the thread's history, or a ``CorruptStoreError`` naming file and line;
a flipped byte is never mistaken for a torn tail, so it never passes for a shorter history.

Trials are seeded (reproducible); the full 300-trial runs are marked slow, a short run of
each kind stays in the fast subset.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from flowkit import Runner
from flowkit.errors import CorruptStoreError, ThreadNotFoundError
from flowkit.stores import JsonFileStore

from .conftest import COUNTER

Mutation = Callable[[random.Random, bytes], bytes]


@dataclass(frozen=True)
class Pristine:
    """A thread's files and the state after each version of its history."""

    folder: Path
    states: list[Any]
    first_line: int  # bytes of the start record's line


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Pristine:
    root = tmp_path_factory.mktemp("pristine")
    # Preallocated like a durable store's journal, so damage can land in its free space too.
    store = JsonFileStore(
        root, fsync=False, preallocate=2048, min_snapshot_bytes=1, snapshot_ratio=2.0
    )
    runner = Runner(COUNTER, store=store)
    runner.start("t", {"limit": 24})
    states = [checkpoint.state for checkpoint in runner.history("t")]
    store.close()
    folder = root / "threads" / "t"
    assert (folder / "snapshot.json").exists()
    journal = (folder / "journal.jsonl").read_bytes()
    return Pristine(folder, states, journal.index(b"\n") + 1)


def flip_a_byte(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data))
    return data[:at] + bytes([data[at] ^ rng.randrange(1, 256)]) + data[at + 1 :]


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def truncate_and_zero_fill(rng: random.Random, data: bytes) -> bytes:
    kept = data[: rng.randrange(len(data))]
    # A power loss leaves the file's size but not its last blocks: zeros up to some length.
    return kept + b"\0" * rng.randrange(1, len(data) - len(kept) + 4097)


def check_trial(pristine: Pristine, tmp: Path, target: str, mutate: Mutation, seed: int) -> str:
    """Damage ``target`` in a copy of the thread, load it and its history; the outcome."""
    root = tmp / f"trial-{target}-{seed}"
    shutil.copytree(pristine.folder, root / "threads" / "t")
    path = root / "threads" / "t" / target
    path.write_bytes(mutate(random.Random(seed), path.read_bytes()))
    # verify_on_open: damage before the snapshot is reported by the load too (by default only
    # the history, which is read below anyway, reads those records).
    store = JsonFileStore(root, fsync=False, verify_on_open=True)
    try:
        with capture_logs():
            state = _outcome(pristine, lambda: [Runner(COUNTER, store=store).get_state("t")])
            # The whole history too: a snapshot spares loading most of the journal.
            history = _outcome(pristine, lambda: Runner(COUNTER, store=store).history("t"))
    finally:
        store.close()
    if state == "no thread":
        journal = (root / "threads" / "t" / "journal.jsonl").read_bytes()
        assert target == "journal.jsonl" and b"\n" not in journal[: pristine.first_line]
    shutil.rmtree(root)
    return f"state {state}, history {history}"


def _outcome(pristine: Pristine, load: Callable[[], list[Any]]) -> str:
    try:
        checkpoints = load()
    except CorruptStoreError as exc:
        assert exc.path is not None and exc.path.endswith(("journal.jsonl", "snapshot.json"))
        assert exc.line is not None and exc.line >= 1, exc
        return "corrupt"
    except ThreadNotFoundError:
        return "no thread"  # not even the start record survived: the create never completed
    for checkpoint in checkpoints:
        version = checkpoint.version
        assert 0 <= version < len(pristine.states), f"version {version} was never written"
        assert checkpoint.state == pristine.states[version], f"wrong state at {version}"
    if len(checkpoints) > 1:
        assert [c.version for c in checkpoints] == list(range(len(checkpoints)))
    return "exact" if checkpoints[-1].version == len(pristine.states) - 1 else "prefix"


CAMPAIGNS = {
    "journal byte flips": ("journal.jsonl", flip_a_byte),
    "snapshot byte flips": ("snapshot.json", flip_a_byte),
    "journal truncations": ("journal.jsonl", truncate),
    "journal truncations, zero-filled": ("journal.jsonl", truncate_and_zero_fill),
}


def run_campaign(pristine: Pristine, tmp: Path, name: str, trials: int) -> dict[str, int]:
    target, mutate = CAMPAIGNS[name]
    outcomes: dict[str, int] = {}
    for seed in range(trials):
        kind = check_trial(pristine, tmp, target, mutate, seed)
        outcomes[kind] = outcomes.get(kind, 0) + 1
    return outcomes


@pytest.mark.parametrize("name", list(CAMPAIGNS))
def test_a_short_fault_campaign_finds_no_silently_wrong_state(
    name: str, pristine: Pristine, tmp_path: Path
) -> None:
    outcomes = run_campaign(pristine, tmp_path, name, 25)
    assert sum(outcomes.values()) == 25
    if name == "journal byte flips":
        assert not [kind for kind in outcomes if "prefix" in kind], outcomes


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CAMPAIGNS))
def test_300_faults_of_each_kind_give_no_silently_wrong_state(
    name: str, pristine: Pristine, tmp_path: Path
) -> None:
    outcomes = run_campaign(pristine, tmp_path, name, 300)
    assert sum(outcomes.values()) == 300
    if name == "snapshot byte flips":
        # The journal is intact, so a damaged snapshot never costs a single step.
        assert outcomes == {"state exact, history exact": 300}
    if name == "journal byte flips":
        # Damage before the snapshot is reported when the thread is loaded, not only by its
        # history; and a flipped byte never passes for a shorter history (a torn tail).
        assert outcomes.get("state exact, history corrupt", 0) == 0
        assert not [kind for kind in outcomes if "prefix" in kind], outcomes
