"""What the dialogue nodes share for one domain: the recognisers, the renderer, the action
handlers, the artifact store and the ledger, built once per flow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, tzinfo
from typing import Any

from ._models import Domain, parse_timezone
from .actions import Artifacts, Handler, MemoryArtifacts, resolve_handlers
from .ledger import Ledger, MemoryLedger
from .nlu import LLMRecognizer, OfflineRecognizer, Recognizer
from .responses import Renderer

__all__ = ["Services", "make_services", "parse_timezone"]


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
    response_seed: int | None = None,
) -> Services:
    offline = OfflineRecognizer(domain)
    recognizer: Recognizer = offline
    if understanding != "offline":
        recognizer = LLMRecognizer(domain, offline)
    return Services(
        domain=domain,
        recognizer=recognizer,
        offline=offline,
        renderer=Renderer(domain, seed=response_seed),
        handlers=resolve_handlers(domain, actions),
        artifacts=artifacts or MemoryArtifacts(),
        tz=parse_timezone(domain.timezone),
        ledger=ledger if ledger is not None else MemoryLedger(),
    )
