"""What the build-time checks read of a flow (``FlowShape``): ``Flow`` has all of it.

The checks (``_validate``, ``_migration``) run while a ``Flow`` is built, so they take this
protocol rather than import ``Flow`` itself, which imports them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import BaseModel

from ._gate import Gate
from ._node import Node
from ._route_table import RouteTable
from ._state import StateSchema

__all__ = ["FlowShape"]


class FlowShape(Protocol):
    """A flow as its definition checks see it."""

    @property
    def name(self) -> str: ...
    @property
    def state(self) -> type[BaseModel]: ...
    @property
    def start(self) -> str: ...
    @property
    def nodes(self) -> Mapping[str, Node]: ...
    @property
    def gates(self) -> Mapping[str, Gate]: ...
    @property
    def finals(self) -> Mapping[str, str]: ...
    @property
    def routes(self) -> Mapping[str, str | RouteTable]: ...
    @property
    def change_classes(self) -> Mapping[str, frozenset[str]]: ...
    @property
    def schema(self) -> StateSchema: ...
    @property
    def error_field(self) -> str | None: ...
    @property
    def version(self) -> int: ...
    @property
    def migrations(self) -> Sequence[object]: ...
    @property
    def states(self) -> list[str]: ...
