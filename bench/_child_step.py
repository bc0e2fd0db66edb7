"""Child process of measure 6: open a long thread in a fresh interpreter, run one step, save.

What a robot cell controller does when it is (re)started: import flowkit, open the
``JsonFileStore``, load a thread that waits at gate ``more`` after 1,000 steps, give it the
input that lets it run exactly one more step, and commit. Prints its in-process timings as
JSON; the parent measures the wall time of the whole process around it.

usage: python bench/_child_step.py STORE_DIR THREAD_ID
"""

from __future__ import annotations

import json
import sys
import time

started = time.perf_counter()

from _flows import loop_flow, quiet_logging  # noqa: E402

from flowkit import Runner  # noqa: E402
from flowkit.stores import JsonFileStore  # noqa: E402


def main() -> None:
    store_dir, thread_id = sys.argv[1], sys.argv[2]
    quiet_logging()
    flow = loop_flow()
    imported = time.perf_counter()
    runner = Runner(flow, store=JsonFileStore(store_dir))
    waiting = runner.get_state(thread_id)
    loaded = time.perf_counter()
    result = runner.resume(thread_id, {"stop_at": waiting.state.count + 1})
    stepped = time.perf_counter()
    assert result.status == "waiting", result
    print(
        json.dumps(
            {
                "import_ms": (imported - started) * 1e3,
                "load_ms": (loaded - imported) * 1e3,
                "step_ms": (stepped - loaded) * 1e3,
                "messages": len(result.state.messages),
            }
        )
    )


if __name__ == "__main__":
    main()
