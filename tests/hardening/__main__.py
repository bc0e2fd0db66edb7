"""Run the whole hardening campaign and print its counts: ``python -m tests.hardening``.

Options: ``--fast`` leaves out the slow cases, ``-k TEXT`` runs only cases whose id holds
TEXT, ``-v`` prints every case's outcome. Exits 1 when any case is silently wrong, a raw
exception or a hang. PostgreSQL cases are skipped (and counted) where there is no server.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

# The shared test helpers (_pg, _external) live in tests/, which pytest puts on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from .registry import BAD, Result, all_cases, classify, table


def _postgres_here() -> bool:
    from _pg import require_postgres

    try:
        require_postgres()
    except BaseException:  # pytest's skip or fail: either way, no PostgreSQL
        return False
    return True


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.hardening", description=__doc__)
    parser.add_argument("--fast", action="store_true", help="leave out the slow cases")
    parser.add_argument("-k", dest="match", default="", help="only cases whose id holds this")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every outcome")
    args = parser.parse_args(argv)

    cases = [c for c in all_cases() if args.match in c.id and not (args.fast and c.slow)]
    postgres = _postgres_here() if any(c.needs == "postgres" for c in cases) else False
    results: list[Result] = []
    skipped = 0
    for case in cases:
        if case.needs == "postgres" and not postgres:
            skipped += 1
            continue
        with tempfile.TemporaryDirectory(prefix="hardening-") as tmp:
            result = classify(case, Path(tmp))
        results.append(result)
        if args.verbose or result.bad:
            known = f" [known: {case.known}]" if case.known and result.bad else ""
            print(f"{result.outcome:>15} {result.seconds:6.2f}s  {case.id}{known}  "
                  f"{result.detail[:200]}", flush=True)  # fmt: skip
    print(table(results))
    if skipped:
        print(f"skipped {skipped} PostgreSQL cases: no PostgreSQL server here")
    return 1 if any(result.outcome in BAD for result in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
