"""The parameter-mapping report: one entry per logical name or slot key found in a program,
with the slot it got, what was done and where it occurs; readable as Markdown, exact as JSON.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ._tables import ParameterKind

__all__ = ["Action", "BlockRef", "MappingEntry", "MappingReport"]

Action = Literal["reused", "assigned", "kept", "unmapped", "error"]
_HEADINGS: dict[ParameterKind, str] = {
    "point": "Teaching points",
    "number": "Number variables",
    "flag": "Flags",
}


class BlockRef(BaseModel):
    """Where a parameter occurs: ``path`` is ``main/3`` (third step of the main program),
    ``Open_Clamp/2/DO/1`` (first step in the ``DO`` body of step 2 of sub-program
    ``Open_Clamp``), ``main/5/IF0/A`` (a value input); ``stack3/1`` for other stacks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    block_type: str
    field: str
    block_id: str | None = None


class MappingEntry(BaseModel):
    """One logical name (or slot key) of one kind and what became of it.

    ``logical`` is the name as first written (other spellings that normalise to it are in
    ``spellings``); ``slot`` and ``slot_name`` are the slot it maps to and that slot's name in
    the updated table; ``candidates`` lists the slots of an ambiguous synonym match; ``blocks``
    is every place it occurs.
    """

    model_config = ConfigDict(extra="forbid")

    kind: ParameterKind
    logical: str
    slot: str | None = None
    slot_name: str | None = None
    action: Action
    note: str = ""
    candidates: list[str] = []
    spellings: list[str] = []
    blocks: list[BlockRef] = []


class MappingReport(BaseModel):
    """The parameter-mapping report; ``sources`` names the table file per kind given (None =
    a table built in memory); kinds without a table are absent."""

    model_config = ConfigDict(extra="forbid")

    sources: dict[ParameterKind, str | None] = {}
    entries: list[MappingEntry] = []

    @property
    def problems(self) -> list[MappingEntry]:
        return [e for e in self.entries if e.action == "error"]

    @property
    def ok(self) -> bool:
        """No errors (unmapped names are not errors here; validation reports them)."""
        return not self.problems

    def counts(self) -> dict[str, int]:
        actions: tuple[Action, ...] = ("reused", "assigned", "kept", "unmapped", "error")
        return {a: sum(1 for e in self.entries if e.action == a) for a in actions}

    def to_markdown(self) -> str:
        lines = ["# Parameter mapping", ""]
        for kind, label in _HEADINGS.items():
            if kind not in self.sources:
                lines.append(f"- {label}: no table given; names stay as written")
            else:
                lines.append(f"- {label}: `{self.sources[kind] or '(in memory)'}`")
        lines.append("")
        if not self.entries:
            lines.append("The program has no point, number variable or flag fields.")
            return "\n".join(lines) + "\n"
        lines += [
            "| Kind | Name in the steps | Slot | Slot name | Action | Where | Note |",
            "|---|---|---|---|---|---|---|",
        ]
        for e in self.entries:
            where = [b.path for b in e.blocks[:6]]
            if len(e.blocks) > 6:
                where.append(f"+{len(e.blocks) - 6} more")
            name = e.logical or "(empty)"
            if e.spellings:
                name += " (also written " + ", ".join(e.spellings) + ")"
            cells = [e.kind, name, e.slot or "-", e.slot_name or "-", e.action]
            cells += [", ".join(where), e.note]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        summary = ", ".join(f"{n} {a}" for a, n in self.counts().items() if n)
        lines += ["", f"Summary: {summary}."]
        return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("\\", "\\\\").replace("|", "\\|") or " "
