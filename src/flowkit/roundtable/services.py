"""What the roundtable's nodes use besides the state: the configuration, the characters'
LLMs, the log files and the memory store (seed 004 §3's I/O handles, as run-time services of
the flow rather than state)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .config import RoundtableConfig
from .events import Status, status_event
from .llms import Cast
from .logs import RoundLogs
from .memory import SessionMemory

if TYPE_CHECKING:
    from .._node import Context

__all__ = ["Services"]

Level = Literal["debug", "info", "warning", "error"]


@dataclass(frozen=True, slots=True)
class Services:
    """The flow's services; one object shared by every session of the flow."""

    config: RoundtableConfig
    cast: Cast
    logs: RoundLogs
    memory: SessionMemory | None

    def operation(self, ctx: Context, level: Level, event: str, module: str, **fields: Any) -> None:
        """One operation-log event: flowkit's logger (``event`` with ``fields``) and, when
        enabled, the session's operation log file. ``fields`` never hold anyone's words."""
        getattr(ctx.log, level)(event, **fields)
        detail = " ".join(f"{key}={value}" for key, value in fields.items())
        self.logs.operation(
            ctx.thread_id, ctx.clock(), level.upper(), module, f"{event} {detail}".strip()
        )

    def status(self, ctx: Context, display_names: list[str], status: Status) -> None:
        """Send a status event per character (the origin's ``update_status``)."""
        for name in display_names:
            ctx.emit(status_event(name, status))
