"""A problem found in a robot program: what is wrong, how bad, where, and what to do."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..foundation._plain import shorten

__all__ = ["Problem", "errors_only"]


class Problem(BaseModel):
    """One finding of ``validate_xml`` / ``validate_steps``.

    ``code`` is a stable snake_case name (``unknown_block_type``, ``loop_with_next`` ...).
    Where it is: ``line`` in the XML; ``task`` and ``step`` (numbered as in the text form,
    ``4.1`` = first step in the body of step 4) in module steps; ``stack`` (1-based) in a
    program; and the block's ``block_id`` / ``block_type``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    severity: Literal["error", "warning"]
    code: str
    message: str
    line: int | None = None
    block_id: str | None = None
    block_type: str | None = None
    task: str | None = None
    stack: int | None = None
    step: str | None = None

    def __str__(self) -> str:
        where: list[str] = []
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.task is not None:
            where.append(f"task {shorten(self.task)!r}")
        elif self.stack is not None:
            where.append(f"stack {self.stack}")
        if self.step:
            where.append(f"step {self.step}")
        if self.block_type:
            ident = f" id={shorten(self.block_id)!r}" if self.block_id else ""
            where.append(f"<{shorten(self.block_type)}{ident}>")
        prefix = ", ".join(where)
        return f"{prefix + ': ' if prefix else ''}{self.severity} [{self.code}] {self.message}"


def errors_only(problems: list[Problem]) -> list[Problem]:
    """The problems with severity ``error`` (warnings do not stop compiling)."""
    return [p for p in problems if p.severity == "error"]
