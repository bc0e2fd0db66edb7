"""The separate client of the chaos test: ``python gate_client.py URL SCHEMA COUNT``.

Polls for threads of ``STEPS`` waiting at the gate and submits one answer per thread (``by``
names the thread, ``bonus`` is its number mod 7), until it has answered COUNT threads.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from flows import STEPS

from flowkit import Runner
from flowkit.stores.postgres import PostgresStore


def answer(thread_id: str) -> dict[str, object]:
    return {"by": f"c-{thread_id}", "bonus": int(thread_id[1:]) % 7}


def main() -> None:
    url, schema, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    answered: set[str] = set()
    with PostgresStore(url, schema=schema, pool_size=2) as store:
        client = Runner(STEPS, store=store)
        while len(answered) < count:
            for status in store.statuses(flow=STEPS.name, status="waiting"):
                if status.thread_id not in answered:
                    client.submit(status.thread_id, answer(status.thread_id))
                    answered.add(status.thread_id)
            time.sleep(0.1)


if __name__ == "__main__":
    main()
