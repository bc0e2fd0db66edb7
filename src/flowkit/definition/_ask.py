"""A node that asks: ``ctx.ask(payload)`` ends the node's step with a pause.

The node declares what the answer looks like (``@node(asks=Model)``, or a ``Gate`` for an
``apply`` of its own). When it asks, its step ends there: the update it gives with the question
is saved with the pause and its payload, and the thread waits at the node. The answer,
validated against the declared model, becomes the node's update and the node's route decides
where the run goes. Nothing the node did before asking runs again: a node that needs a second
answer is routed back to itself (or to another node that asks) and asks again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["Ask"]


class Ask(Exception):  # noqa: N818  (a signal, not an error: the node asked, on purpose)
    """Raised by ``ctx.ask(payload, update=...)``: the engine turns it into a pause.

    A node may also ``raise Ask(payload)`` itself (a node that takes no context). Do not catch
    it in the node: nothing after it is meant to run in this step.
    """

    def __init__(
        self,
        payload: Any = None,
        *,
        update: Mapping[str, Any] | None = None,
        input: type[BaseModel] | None = None,
    ) -> None:
        super().__init__("a node asked for input")
        self.payload = payload
        self.update = update
        self.input = input

    def __repr__(self) -> str:
        # Never the payload: it may hold the person's data.
        return "Ask(...)"
