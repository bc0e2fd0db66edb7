"""The campaign's case registry and the classifier that names each case's outcome.

A case is a function of a fresh directory. It returns ``OK`` (accepted and read back exactly)
or ``TYPED`` (refused cleanly: an HTTP 4xx problem, a CLI exit with a message), raises a
flowkit error (typed), or raises ``WrongError`` (accepted but read back different, or a wrong
state loaded without error). Anything else it raises is a raw exception, and a case still running
after its bound has hung. Case modules register their cases with ``add`` at import.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import flowkit.errors

__all__ = [
    "BAD",
    "HANG",
    "MODULES",
    "OK",
    "OUTCOMES",
    "RAW",
    "TYPED",
    "WRONG",
    "Case",
    "Result",
    "WrongError",
    "add",
    "all_cases",
    "classify",
    "expect",
    "table",
]

OK = "ok"
TYPED = "typed error"
WRONG = "silently wrong"
RAW = "raw exception"
HANG = "hang"
OUTCOMES = (OK, TYPED, WRONG, RAW, HANG)
#: The outcomes the campaign must never see.
BAD = (WRONG, RAW, HANG)

#: The case modules, in the order the campaign runs them.
MODULES = ("hostile_inputs", "stores_corruption", "stores_crash", "server_http", "llm_faults")

_TYPED_ERRORS: tuple[type[BaseException], ...] = tuple(
    error
    for name in flowkit.errors.__all__
    if isinstance(error := getattr(flowkit.errors, name), type) and issubclass(error, Exception)
)


class WrongError(Exception):
    """The case saw flowkit accept something and give back something else."""


def expect(condition: bool, what: str) -> None:
    """Go on if ``condition`` holds; else the case is silently wrong, for ``what`` reason."""
    if not condition:
        raise WrongError(what)


@dataclass(frozen=True)
class Case:
    """One attack. ``run(tmp)`` returns ``OK`` or ``TYPED``, or raises (see the module doc).

    ``needs``: ``"postgres"`` where the case uses the test PostgreSQL. ``known``: the issue
    item (or campaign finding) whose fix this case guards, named when it fails.
    """

    id: str
    run: Callable[[Path], str]
    slow: bool = False
    needs: str | None = None
    bound_s: float = 60.0
    known: str | None = None

    @property
    def area(self) -> str:
        return self.id.split("/", 1)[0]


@dataclass(frozen=True)
class Result:
    case: Case
    outcome: str
    detail: str = ""
    seconds: float = 0.0

    @property
    def bad(self) -> bool:
        return self.outcome in BAD


_CASES: dict[str, Case] = {}


def add(
    id: str,
    run: Callable[[Path], str],
    *,
    slow: bool = False,
    needs: str | None = None,
    bound_s: float = 60.0,
    known: str | None = None,
) -> None:
    """Register a case (ids are unique: a second one with the same id is a mistake)."""
    if id in _CASES:
        raise ValueError(f"two hardening cases are called {id!r}")
    _CASES[id] = Case(id, run, slow, needs, bound_s, known)


def all_cases() -> list[Case]:
    """Every case of every module in ``MODULES``, in registration order."""
    for name in MODULES:
        importlib.import_module(f"{__package__}.{name}")
    return list(_CASES.values())


def classify(case: Case, tmp: Path) -> Result:
    """Run ``case`` in ``tmp`` (in a thread, so a hang is seen) and name its outcome."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = case.run(tmp)
        except BaseException as exc:  # everything is an outcome here, even SystemExit
            box["error"] = exc

    began = time.monotonic()
    worker = threading.Thread(target=target, daemon=True, name=f"hardening {case.id}")
    worker.start()
    worker.join(case.bound_s)
    took = time.monotonic() - began
    if worker.is_alive():
        return Result(case, HANG, f"still running after {case.bound_s:g} s", took)
    error = box.get("error")
    if isinstance(error, WrongError):
        return Result(case, WRONG, str(error), took)
    if isinstance(error, _TYPED_ERRORS):
        return Result(case, TYPED, f"{type(error).__name__}: {str(error)[:300]}", took)
    if isinstance(error, BaseException):
        return Result(case, RAW, f"{type(error).__module__}.{type(error).__qualname__}: "
                      f"{str(error)[:300]}", took)  # fmt: skip
    value = box.get("value")
    if value not in (OK, TYPED):
        return Result(case, RAW, f"the case returned {value!r}, not an outcome", took)
    return Result(case, str(value), "", took)


def table(results: Iterable[Result]) -> str:
    """Counts by area and in total: tried, ok, and each other outcome."""
    by_area: dict[str, Counter[str]] = {}
    total: Counter[str] = Counter()
    for result in results:
        by_area.setdefault(result.case.area, Counter())[result.outcome] += 1
        total[result.outcome] += 1
    rows = [["area", "tried", *OUTCOMES]]
    rows += [[area, *map(str, _counts(found))] for area, found in by_area.items()]
    rows.append(["total", *map(str, _counts(total))])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


def _counts(found: Counter[str]) -> list[int]:
    return [sum(found.values()), *(found[outcome] for outcome in OUTCOMES)]
