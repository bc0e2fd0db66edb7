"""The ``flowkit`` command: one module per command group, each registering its sub-commands.

- ``flows``: ``graph``, ``check``, ``workflows`` (flow definitions; no store)
- ``threads``: ``threads``, ``show``, ``history`` (read a store; never create anything)
- ``runs``: ``start``, ``resume``, ``fork``, ``update-state``, ``delete`` (your own flows)
- ``runtime``: ``stats``, ``recover``
- ``scale``: ``store init``, ``store copy``, ``worker`` (PostgreSQL, the ``postgres`` extra)
- ``serve``: ``serve``; ``auth``: ``auth hash`` (token hashes for ``serve --auth``)
- ``demo``: ``demo``; the workflows add ``sas`` (``flowkit.sas.cli``), ``chat`` and
  ``dialogue`` (``flowkit.dialogue.cli``), ``roundtable`` (``flowkit.roundtable.cli``),
  ``quality`` (``flowkit.quality.cli``)

Exit codes: 0 success, 1 the command failed (the reason is on stderr), 2 bad usage or a
TARGET / store that cannot be loaded. Errors never end in a traceback (``-vv`` shows one for
unexpected failures). Every command's heavy imports happen inside it, so ``--help`` is fast.
"""

from __future__ import annotations

import sys

from ..terminal.errors import CommandError
from ..terminal.inputs import load_target
from ._main import build_parser, main

__all__ = ["CommandError", "build_parser", "load_target", "main"]

if __name__ == "__main__":  # pragma: no cover - `python -m flowkit.cli`
    sys.exit(main())
