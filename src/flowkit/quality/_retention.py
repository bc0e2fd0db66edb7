"""How long audit entries stay in the live log before they are archived (seed 003 §6.2).

A module of its own so the CLI can show the default without importing the audit log.
"""

from __future__ import annotations

from typing import Final

__all__ = ["KEEP_DAYS"]

#: Entries older than this many days are moved to the archive.
KEEP_DAYS: Final = 90
