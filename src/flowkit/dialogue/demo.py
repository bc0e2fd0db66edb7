"""``flowkit demo dialogue``: the shipped ``robot_cell`` assistant, offline.

Three conversations on a JSON-file store: a maintenance booking whose time breaks the slot's
rule and is corrected, with a question answered in between; a fault report confirmed before
it is sent; and a step-by-step changeover that a new ``Dialogue`` on the same store continues,
as a later process would. The clock is fixed (Monday 2025-03-10, so "tomorrow" is the 11th),
a week later for each earlier run of the demo on the same store, whose booking ledger still
holds that run's booking. No LLM, no network.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TextIO

__all__ = ["CONVERSATIONS", "run_dialogue_demo"]

#: The demo's clock: every conversation happens on this Monday morning.
MONDAY = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)

#: language -> (thread id, the user's messages) per conversation; the last one is continued
#: by a new ``Dialogue`` after its first two messages.
CONVERSATIONS: dict[str, list[tuple[str, list[str]]]] = {
    "en": [
        (
            "booking",
            [
                "Book maintenance for robot 2 tomorrow at 7 am",
                "no, make it 3 pm",
                "what is the maximum payload?",
                "Sato",
            ],
        ),
        ("fault", ["report a fault on robot 1, urgent", "yes"]),
        (
            "changeover",
            ["start the changeover", "next", "back", "next", "next", "next", "next", "next"],
        ),
    ],
    "ja": [
        (
            "booking",
            [
                "明日7時にロボット2のメンテナンスを予約したい",
                "やっぱり15時で",
                "可搬重量は？",
                "佐藤です",
            ],
        ),
        ("fault", ["ロボット1の故障を報告したい、至急", "はい"]),
        ("changeover", ["段取り替えを始めたい", "次", "戻る", "次", "次", "次", "次", "次"]),
    ],
}

#: The response ids each conversation must end on for the demo to succeed.
_ENDS = {"booking": "booking_done", "fault": "fault_reported", "changeover": "changeover_done"}


def run_dialogue_demo(store_dir: str | None, out: TextIO, *, language: str = "en") -> int:
    """Run the demo's conversations on a store in ``store_dir`` (default: a new temporary
    folder), printing them; 0 when each ends as it should."""
    from ..stores.jsonfile import JsonFileStore
    from . import Dialogue

    root = Path(store_dir) if store_dir else Path(tempfile.mkdtemp(prefix="flowkit-demo-"))
    store = JsonFileStore(root)
    run = 1 + sum(1 for t in store.threads() if t.startswith("demo-dialogue-") and "-booking" in t)
    now = MONDAY + timedelta(weeks=run - 1)
    prefix = f"demo-dialogue-{run}"

    def clock() -> datetime:
        return now

    bot = Dialogue("robot_cell", store=store, clock=clock)
    out.write(
        f"flowkit demo `dialogue`: the robot_cell assistant ({language}), offline, on a "
        f"fixed clock ({now:%A %Y-%m-%d})\nstore: {root} (JsonFileStore)\n"
    )
    ok = True
    for name, messages in CONVERSATIONS[language]:
        thread = f"{prefix}-{name}"
        out.write(f"\n-- {name} (thread {thread})\n")
        for number, text in enumerate(messages):
            if name == "changeover" and number == 2:
                # A new Dialogue on the same folder: the conversation comes from the files.
                bot = Dialogue("robot_cell", store=JsonFileStore(root), clock=clock)
                out.write("   (a new Dialogue on the same store continues)\n")
            reply = bot.send(thread, text)
            out.write(f"you> {text}\nbot> {reply.text}\n")
        ok = ok and reply.response_id == _ENDS[name]
    out.write(
        f"\nlook around:\n  flowkit threads --store {root}\n"
        f"  flowkit history {prefix}-booking --store {root}\n"
    )
    return 0 if ok else 1
