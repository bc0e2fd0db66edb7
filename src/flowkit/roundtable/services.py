"""What the roundtable's nodes use besides the state: the configuration, the characters'
LLMs and the log files (seed 004 §3's I/O handles, as services of the flow rather than
state). Long-term memory is the runner's (``ctx.memory``): ``memory_of`` reaches it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .config import RoundtableConfig
from .events import Status, status_event
from .llms import Cast
from .logs import RoundLogs

if TYPE_CHECKING:
    from ..definition._node import Context
    from ..memory import Memory

__all__ = ["Services", "memory_of"]

Level = Literal["debug", "info", "warning", "error"]


@dataclass(frozen=True, slots=True)
class Services:
    """The flow's services; one object shared by every session of the flow."""

    config: RoundtableConfig
    cast: Cast
    logs: RoundLogs

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


def memory_of(ctx: Context) -> Memory | None:
    """The runner's long-term memory, or ``None`` when it was given none."""
    from ..errors import RunError

    try:
        return ctx.memory
    except RunError:
        return None
