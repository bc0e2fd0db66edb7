"""A subscriber process for the reconnect test: ``python subscriber.py URL SCHEMA OUT [AFTER]``.

Appends one line per event to OUT, ``cursor<TAB>kind<TAB>thread<TAB>version<TAB>node``, each
in one write, and runs until killed.
"""

from __future__ import annotations

import os
import sys

from flowkit.stores.postgres import EventFeed, FeedEvent


def describe(item: FeedEvent) -> str:
    """One event as the line this subscriber writes (without the newline)."""
    event = item.event
    version = getattr(event, "version", "")
    node = getattr(event, "node", getattr(event, "gate", ""))
    return f"{item.cursor}\t{event.kind}\t{event.thread_id}\t{version}\t{node}"


def main() -> None:
    url, schema, out = sys.argv[1:4]
    after = sys.argv[4] if len(sys.argv) > 4 else None
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with EventFeed(url, schema=schema, after=after, poll_s=0.2) as feed:
        for item in feed.follow():
            os.write(fd, f"{describe(item)}\n".encode())


if __name__ == "__main__":
    main()
