"""``update_status_{thinking,idle,active}``: the origin's status messages as events.

THINKING before the speaker's LLM call, IDLE for it once its turn is over and the round goes
on, ACTIVE for every character when the round ends and the table waits for the person.
"""

from __future__ import annotations

from ...definition._node import Context, Node, node
from ...roundtable.services import Services
from ...roundtable.state import RoundtableState

__all__ = ["make_update_status_active", "make_update_status_idle", "make_update_status_thinking"]


def make_update_status_thinking(services: Services) -> Node:
    @node(reads=["current_display_name"], writes=[])
    def update_status_thinking(state: RoundtableState, ctx: Context) -> None:
        services.status(ctx, [state.current_display_name], "THINKING")

    return update_status_thinking


def make_update_status_idle(services: Services) -> Node:
    @node(reads=["current_display_name"], writes=[])
    def update_status_idle(state: RoundtableState, ctx: Context) -> None:
        services.status(ctx, [state.current_display_name], "IDLE")

    return update_status_idle


def make_update_status_active(services: Services) -> Node:
    @node(reads=["registry"], writes=[])
    def update_status_active(state: RoundtableState, ctx: Context) -> None:
        services.status(ctx, [m.display_name for m in state.registry], "ACTIVE")

    return update_status_active
