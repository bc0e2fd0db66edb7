"""``flowkit demo roundtable``: the shipped three-character table, offline.

Each character gets its own scripted LLM (a different "model" each, answering from the
replies below), so the demo needs no network and no key and shows what a real table does:
greetings and extra sentences trimmed, a nomination by display name with an honorific, one by
a misspelt id (fuzzy), one missing and one self-nomination (the fallback), the round ending
once everyone has spoken, the round summaries, and a second message answered by a new
``Roundtable`` on the same store, as a later process would.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

__all__ = ["REPLIES", "SESSION", "demo_llms", "run_roundtable_demo"]

SESSION = "demo-roundtable"

#: language -> the person's two messages, each character's two replies, the two summaries.
REPLIES: dict[str, dict[str, Any]] = {
    "ja": {
        "messages": ["週末に京都へ行くなら、どこがおすすめ？", "雨だったらどうする？"],
        "LUMINA": [
            "こんにちは！京都なら、まずは伏見稲荷大社がおすすめです。朝早く行くと空いていますよ。"
            "ほかにも色々ありますが。[Next: クラリス]",
            "雨なら京都国立博物館や錦市場が楽しめます。[Next: NOXX]",
        ],
        "CLARIS": [
            "伏見稲荷は千本鳥居で知られ、山全体を巡ると二時間ほどかかります。[Next: ノクスさん]",
            "錦市場はアーケードなので、雨の日でも歩きやすいです。[Next: LUMINA]",
        ],
        "NOX": [
            "<think>短く。</think>要点：朝の伏見稲荷、所要二時間。",
            "要点：屋内、博物館と市場。[Next: NOX]",
        ],
        "summaries": [
            {
                "summary": "週末の京都旅行の相談。晴れなら朝の伏見稲荷、所要二時間。",
                "keywords": ["京都", "週末", "伏見稲荷", "千本鳥居", "朝"],
            },
            {
                "summary": "雨の日の京都。国立博物館とアーケードの錦市場が候補。",
                "keywords": ["京都", "雨", "博物館", "錦市場", "屋内"],
            },
        ],
    },
    "en": {
        "messages": ["Where should I go in Kyoto this weekend?", "And if it rains?"],
        "LUMINA": [
            "Hello everyone! Start with Fushimi Inari early in the morning, before the crowds. "
            "It is lovely at sunrise. There is more, of course. [Next: Claris-san]",
            "If it rains, the National Museum and Nishiki Market are good picks. [Next: NOXX]",
        ],
        "CLARIS": [
            "Fushimi Inari is known for its thousand torii gates; the full hike takes about "
            "two hours. [Next: Nox]",
            "Nishiki Market is covered, so it is easy to walk on a wet day. [Next: LUMINA]",
        ],
        "NOX": [
            "<think>keep it short</think>Summary: Fushimi Inari, early, two hours",
            "Summary: indoors, museum and market. [Next: NOX]",
        ],
        "summaries": [
            {
                "summary": "Planning a Kyoto weekend: Fushimi Inari early, about two hours.",
                "keywords": ["Kyoto", "weekend", "Fushimi Inari", "torii", "morning"],
            },
            {
                "summary": "Kyoto in the rain: the National Museum and covered Nishiki Market.",
                "keywords": ["Kyoto", "rain", "museum", "Nishiki", "indoors"],
            },
        ],
    },
}


def demo_llms(language: str) -> dict[str, Any]:
    """A scripted LLM per character, each its own model, answering the demo's messages."""
    from ..llm.scripted import ScriptedLLM

    script = REPLIES[language]
    first, second = script["messages"]
    llms: dict[str, Any] = {}
    for character in ("LUMINA", "CLARIS", "NOX"):
        replies = script[character]
        rules: list[tuple[Any, Any]] = [
            # The round summary requests show the round's log lines; turns only the message.
            (f"] USER: {second}", script["summaries"][1]),
            ("] USER: ", script["summaries"][0]),
            (first, replies[0]),
            (second, replies[1]),
        ]
        llms[character] = ScriptedLLM(rules, model=f"scripted-{character.lower()}")
    return llms


def _narrate(out: TextIO) -> Callable[[Any], None]:
    def show(item: Any) -> None:
        mode, value = item
        if mode == "custom" and value.get("type") == "message":
            out.write(f"{value['speaker']}> {value['text']}\n")
        elif mode == "custom" and value.get("status") == "THINKING":
            out.write(f"  ({value['character']} is thinking)\n")
        elif mode == "updates":
            ((node, update),) = value.items()
            if node == "__pause__":  # the run waits for the next message
                return
            reason = update.get("decision_reason")
            refusal = update.get("refusal")
            if node == "extract_next" and refusal not in (None, "missing"):
                out.write(f"  nomination `{update.get('nomination')}` refused ({refusal})\n")
            if node in ("extract_next", "choose_next_fallback") and reason:
                who = update.get("next_display_name") or "nobody: the round ends"
                out.write(f"  next: {who} ({reason})\n")
            if node == "call_llm" and update.get("error"):
                out.write(f"  the LLM failed: {update['error']['type']}\n")

    return show


def run_roundtable_demo(store_dir: str | None, out: TextIO, *, language: str = "en") -> int:
    """Run the demo; the session stays in the store for ``flowkit show`` and ``history``."""
    from ..stores.jsonfile import JsonFileStore
    from ..terminal.output import command_hint
    from .app import Roundtable, memory_folder

    root = Path(store_dir) if store_dir else Path(tempfile.mkdtemp(prefix="flowkit-roundtable-"))
    config = f"trio-{language}"
    script = REPLIES[language]
    store = JsonFileStore(root)
    taken = set(store.threads())
    session, number = SESSION, 1
    while session in taken:
        number += 1
        session = f"{SESSION}-{number}"
    out.write(
        "flowkit demo roundtable: three characters, each on its own (scripted) LLM, offline\n"
        f"config: {config}   store: {root}   session: {session}\n"
    )
    show = _narrate(out)
    for index, message in enumerate(script["messages"]):
        if index:
            out.write(
                "\n(a new Roundtable on the same store continues, as a later process would)\n"
            )
        bot = Roundtable(config, store=JsonFileStore(root), llms=demo_llms(language))
        bot.open(session)
        out.write(f"\nyou> {message}\n")
        stream = bot.runner.stream(session, {"text": message}, mode=["custom", "updates"])
        for item in stream:
            show(item)
    state = bot.state(session)
    out.write(f"\nrounds: {state.round_index}, characters' turns: {state.turn_index}\n")
    for record in bot.summaries(session):
        out.write(f"memory, round {record['thread_id']}: {record['summary']}\n")
    where = str(root)
    out.write(
        f"memory: {memory_folder(root)}\n"
        f"\nlook around:\n  {command_hint('history', session, store=where)}\n"
        f"  {command_hint('show', session, store=where)}\n"
    )
    return 0 if state.round_index == 2 else 1
