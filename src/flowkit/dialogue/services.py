"""What the dialogue nodes share for one domain: the recognisers, the renderer, the action
handlers, the artifact store and the ledger, built once per flow.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from typing import Any

from .actions import Artifacts, Handler, MemoryArtifacts, resolve_handlers
from .domain import Domain
from .ledger import Ledger, MemoryLedger
from .nlu import LLMRecognizer, OfflineRecognizer, Recognizer
from .responses import Renderer

__all__ = ["Services", "make_services"]


@dataclass(frozen=True, slots=True)
class Services:
    domain: Domain
    recognizer: Recognizer
    offline: OfflineRecognizer
    renderer: Renderer
    handlers: Mapping[str, Handler]
    artifacts: Artifacts
    tz: tzinfo
    ledger: Ledger

    def today(self, ctx: Any) -> date:
        """Today in the domain's time zone, by the runner's clock (so tests can fix it)."""
        now: datetime = ctx.clock() if ctx is not None else datetime.now(UTC)
        return now.astimezone(self.tz).date()


def make_services(
    domain: Domain,
    *,
    understanding: str = "auto",
    actions: Mapping[str, Handler] | None = None,
    artifacts: Artifacts | None = None,
    ledger: Ledger | None = None,
) -> Services:
    offline = OfflineRecognizer(domain)
    recognizer: Recognizer = offline
    if understanding != "offline":
        recognizer = LLMRecognizer(domain, offline)
    return Services(
        domain=domain,
        recognizer=recognizer,
        offline=offline,
        renderer=Renderer(domain),
        handlers=resolve_handlers(domain, actions),
        artifacts=artifacts or MemoryArtifacts(),
        tz=parse_timezone(domain.timezone),
        ledger=ledger if ledger is not None else MemoryLedger(),
    )


def parse_timezone(name: str) -> tzinfo:
    """``UTC``, an offset such as ``+09:00``, or an IANA name such as ``Asia/Tokyo``."""
    if name.upper() in ("UTC", "Z"):
        return UTC
    offset = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", name)
    if offset:
        sign = 1 if offset[1] == "+" else -1
        return timezone(sign * timedelta(hours=int(offset[2]), minutes=int(offset[3])))
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        from ..errors import DomainError

        raise DomainError(
            [f"timezone: `{name}` is unknown; use UTC, an offset like +09:00, or an IANA name"]
        ) from exc
