"""How a long operation reports how far it got, without knowing who listens.

Library functions that walk a whole store (``prune_threads``, ``copy_threads``, a reindex, a
worker's loop) take an optional ``on_progress(done, total, what)``: ``done`` things so far,
``total`` when known (else ``None``), ``what`` a short phrase for the current phase ("read",
"deleted", "claimed 3, done 2, failed 0"). A command line draws it on a terminal
(``flowkit.terminal.progress``); a server could turn the same calls into events. A callback
must be cheap and must not raise: it is called once per item.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["OnProgress"]

#: ``on_progress(done, total, what)``; ``total`` is ``None`` when not known in advance.
OnProgress = Callable[[int, int | None, str], None]
