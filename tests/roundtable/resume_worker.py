"""Run one round of a roundtable session in this process: ``python resume_worker.py CONFIG
STORE SESSION TEXT``; prints the characters' messages as ``speaker|text`` lines."""

from __future__ import annotations

import sys

from flowkit.roundtable.app import Roundtable
from flowkit.stores import JsonFileStore


def main() -> None:
    config, store, session, text = sys.argv[1:5]
    with Roundtable(config, store=JsonFileStore(store)) as bot:
        for speaker, said in bot.send(session, text).texts:
            print(f"{speaker}|{said}")


if __name__ == "__main__":
    main()
