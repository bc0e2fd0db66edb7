"""The flows the campaign drives, and the strict comparison it reads values back with.

``box``: node ``tick`` counts, then gate ``inbox`` takes a parcel (any ``text`` and
``data``) into the state, and ``tick`` runs again: every entry point (start, resume,
update_state) can carry a hostile value into a stored state.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel

from flowkit import Flow, Gate

__all__ = ["BOX", "Box", "same"]


class Box(BaseModel):
    text: str = ""
    data: Any = None
    count: int = 0


class Parcel(BaseModel):
    text: str = ""
    data: Any = None


def _open(state: Box, parcel: Parcel) -> dict[str, Any]:
    return parcel.model_dump(exclude_unset=True)


def _tick(state: Box) -> dict[str, Any]:
    return {"count": state.count + 1}


BOX = Flow(
    name="hardening_box",
    state=Box,
    start="tick",
    nodes={"tick": _tick},
    gates={"inbox": Gate(Parcel, apply=_open)},
    routes={"tick": "inbox", "inbox": "tick"},
)


def same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (``1 == 1.0 == True`` is not enough);
    NaN equals NaN and ``-0.0`` differs from ``0.0``. Iterative: values may be very deep."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, float):
            if not (x == y or (math.isnan(x) and math.isnan(y))):
                return False
            if math.copysign(1.0, x) != math.copysign(1.0, y):
                return False
        elif isinstance(x, dict):
            if list(x) != list(y) or not all(same(k, j) for k, j in zip(x, y, strict=True)):
                return False
            pending.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list | tuple):
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True
