"""Parameter mapping (seed 002 node 6): logical point, number and flag names in module steps
become slot keys of the robot's parameter tables, reusing named slots and naming free ones.
Input tables are never modified; the result is a new program, new tables and a report.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final, TypeVar

from flowkit.errors import ParameterTableError

from ..foundation._atomic import write_atomically
from ._param_report import Action, BlockRef, MappingEntry, MappingReport
from ._tables import (
    MAX_TABLE_BYTES,
    POSE_KEYS,
    FlagTable,
    NumberTable,
    ParameterKind,
    ParameterTable,
    Slot,
    TeachingTable,
    same_file,
)
from .catalog import Catalog, default_catalog
from .steps import Program, Step

__all__ = [
    "MAX_TABLE_BYTES",
    "PARAMETER_FIELDS",
    "POSE_KEYS",
    "POSITION_CONCEPTS",
    "SYNONYMS",
    "BlockRef",
    "FlagTable",
    "MappingEntry",
    "MappingReport",
    "NoFreeSlotError",
    "NumberTable",
    "ParameterKind",
    "ParameterMapping",
    "ParameterTable",
    "Slot",
    "TeachingTable",
    "apply_teaching",
    "map_parameters",
    "name_words",
    "normalize_name",
    "parameter_fields",
    "parse_slot_key",
]

_T = TypeVar("_T", bound=ParameterTable)

#: Which block fields hold a teaching point, a number variable or a flag (BLOCKS.md §2).
PARAMETER_FIELDS: Final[Mapping[str, Mapping[str, ParameterKind]]] = MappingProxyType(
    {
        "moveL": {"point_name_list": "point"},
        "moveP": {"point_name_list": "point"},
        "wait_timer": {"name": "number"},
        "set_number": {"name": "number"},
        "set_external_io_output_during": {"name": "number"},
        "set_output_during": {"name": "number"},
        "math_custom_number": {"name": "number"},
        "logic_custom_flag": {"name": "flag"},
    }
)

#: Canonical word -> words meaning the same in a parameter name. A name reuses a slot by
#: synonyms only when its whole set of canonical words equals the slot's (never on one shared
#: word) and exactly one slot matches; ``default`` is deliberately not a synonym of ``home``.
SYNONYMS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "home": ("initial", "init", "start", "starting", "beginning", "origin", "safe", "safety"),
        "wait": ("standby", "waiting"),
        "approach": ("approaching", "above", "near", "hover"),
        "exit": ("depart", "departure", "departing", "retreat", "retreating"),
        "grasp": ("grasping", "grasped", "grip", "gripping", "gripped", "pick", "pickup"),
        "place": ("placing", "placed", "placement", "put"),
        "release": ("releasing", "released"),
        "exact": ("precise", "accurate"),
    }
)
#: Synonyms that describe a robot position: applied to teaching points only (a number
#: variable called ``start`` is not a ``home``).
POSITION_CONCEPTS: Final = frozenset({"home", "wait", "approach", "exit"})
_CANONICAL = {word: concept for concept, words in SYNONYMS.items() for word in (concept, *words)}
_ARTICLES = frozenset({"a", "an"})
_COMMON = frozenset({"the", *_ARTICLES, "of", "for", "to", "at"})
_STOP_WORDS: Mapping[ParameterKind, frozenset[str]] = {
    "point": _COMMON | {"point", "position", "pos"},
    "number": _COMMON | {"number", "value"},
    "flag": _COMMON | {"flag"},
}
_SLOT_KEY = re.compile(r"([PNF])0*([0-9]{1,6})", re.IGNORECASE)
_KIND_OF_PREFIX: Mapping[str, ParameterKind] = {"P": "point", "N": "number", "F": "flag"}
_LABEL = {"point": "teaching point", "number": "number variable", "flag": "flag"}
_TABLE = {"point": TeachingTable.label, "number": NumberTable.label, "flag": FlagTable.label}
_TODO: Mapping[ParameterKind, str] = {
    "point": "teach its position before running the program",
    "number": "set its value before running the program",
    "flag": "",
}


def normalize_name(text: str) -> str:
    """NFKC, case-folded, ``_``/``-`` read as spaces, whitespace collapsed and trimmed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.sub(r"[_\-]", " ", folded).split())


def name_words(text: str, kind: ParameterKind) -> frozenset[str]:
    """The canonical words of a name: stop words dropped, synonyms mapped (``SYNONYMS``)."""
    words = set()
    said = re.findall(r"\w+", normalize_name(text))
    for index, word in enumerate(said):
        # An article comes before a word: a last "a" is a label ("pallet A" is not "pallet").
        label = word in _ARTICLES and index == len(said) - 1
        if word in _STOP_WORDS[kind] and not label:
            continue
        concept = _CANONICAL.get(word, word)
        words.add(word if concept in POSITION_CONCEPTS and kind != "point" else concept)
    return frozenset(words)


def parse_slot_key(text: str) -> tuple[ParameterKind, str] | None:
    """``(kind, "P21")`` when ``text`` is written as a slot key (``P21``, ``p021``), else None."""
    match = _SLOT_KEY.fullmatch(unicodedata.normalize("NFKC", text).strip())
    if not match:
        return None
    prefix = match.group(1).upper()
    return _KIND_OF_PREFIX[prefix], f"{prefix}{int(match.group(2))}"


class NoFreeSlotError(ParameterTableError):
    """A table has no free slot left for a new name; ``entries`` lists every such name and
    ``report`` the whole mapping so far."""

    def __init__(self, entries: Sequence[MappingEntry], report: MappingReport) -> None:
        self.entries = list(entries)
        self.report = report
        names = "; ".join(f"{e.kind} {e.logical!r}" for e in self.entries)
        super().__init__(
            f"no free slot left for {len(self.entries)} name(s): {names}. Clear the name of "
            "unused slots in the table, or write existing slot keys (P21, N5, F3) in the steps"
        )


@dataclass(frozen=True)
class ParameterMapping:
    """The result of ``map_parameters``: the mapped program, the updated tables (None where
    none was given) and the report."""

    program: Program
    points: TeachingTable | None
    numbers: NumberTable | None
    flags: FlagTable | None
    report: MappingReport


#: The slot numbers every field of a kind that the steps use accepts: (lowest, highest).
Bounds = Mapping[ParameterKind, tuple[int | None, int | None]]


def _bounds(uses: Sequence[tuple[Step, str, ParameterKind, BlockRef]], catalog: Catalog) -> Bounds:
    """Per kind, the range all its fields in ``uses`` accept (a free slot outside it, such as
    ``P0`` for ``moveP``'s ``P1``..``P100``, is never given to a new name)."""
    found: dict[ParameterKind, tuple[int | None, int | None]] = {}
    for step, field_name, kind, _ in uses:
        spec = catalog.get(step.type)
        field = next((f for f in spec.fields if f.name == field_name), None) if spec else None
        low, high = found.get(kind, (None, None))
        if field is not None and field.min is not None:
            low = int(field.min) if low is None else max(low, int(field.min))
        if field is not None and field.max is not None:
            high = int(field.max) if high is None else min(high, int(field.max))
        found[kind] = (low, high)
    return found


class _Mapper:
    def __init__(
        self,
        tables: Mapping[ParameterKind, ParameterTable | None],
        taken: set[str],
        bounds: Bounds,
    ) -> None:
        self.tables = tables
        self.new_names: dict[ParameterKind, dict[str, str]] = {k: {} for k in tables}
        self.named: dict[ParameterKind, list[Slot]] = {}
        self.free: dict[ParameterKind, list[str]] = {}
        for kind, table in tables.items():
            slots = sorted(table or (), key=lambda s: s.number)
            self.named[kind] = [s for s in slots if not s.free]
            # A free slot the steps already use by key is not free for a new name, nor is one
            # outside the range of the fields that name it.
            low, high = bounds.get(kind, (None, None))
            self.free[kind] = [
                s.key
                for s in slots
                if s.free
                and s.key not in taken
                and (low is None or s.number >= low)
                and (high is None or s.number <= high)
            ]
        self.entries: dict[tuple[ParameterKind, str], MappingEntry] = {}
        self.full: list[MappingEntry] = []

    def resolve(self, kind: ParameterKind, raw: str, where: BlockRef) -> MappingEntry:
        key = parse_slot_key(raw)
        ident = f"key:{key[0]}:{key[1]}" if key else f"name:{normalize_name(raw)}"
        entry = self.entries.get((kind, ident))
        if entry is None:
            entry = self._decide(kind, raw, key)
            self.entries[(kind, ident)] = entry
        elif raw.strip() != entry.logical and raw.strip() not in entry.spellings:
            entry.spellings.append(raw.strip())
        entry.blocks.append(where)
        return entry

    def _decide(
        self, kind: ParameterKind, raw: str, key: tuple[ParameterKind, str] | None
    ) -> MappingEntry:
        table, name = self.tables[kind], raw.strip()
        label = _LABEL[kind]
        if key is not None and key[0] != kind:
            note = f"{key[1]} is a {_LABEL[key[0]]} key, but this field takes a {label}"
            return MappingEntry(kind=kind, logical=name, action="error", note=note)
        if key is not None:
            slot = table.get(key[1]) if table is not None else None
            where = _describe(table) if table is not None else ""
            if table is not None and slot is None:
                keys = sorted(s.number for s in table)
                have = f"{table.prefix}{keys[0]}…{table.prefix}{keys[-1]}" if keys else "none"
                note = f"{key[1]} is not in {where} (it has {have}); use one of those"
                return MappingEntry(kind=kind, logical=name, action="error", note=note)
            note = "" if table is not None else f"no {_TABLE[kind]} given; key not checked"
            if slot is not None and slot.free:
                note = f"the slot has no name in {where}"
            slot_name = slot.name if slot is not None else None
            return MappingEntry(
                kind=kind, logical=name, slot=key[1], slot_name=slot_name, action="kept", note=note
            )
        if not normalize_name(raw):
            note = f"empty {label}; write a slot key or a name"
            return MappingEntry(kind=kind, logical=name, action="error", note=note)
        if table is None:
            note = f"no {_TABLE[kind]} given; the name stays in the program"
            return MappingEntry(kind=kind, logical=name, action="unmapped", note=note)
        return self._match(kind, name, table)

    def _match(self, kind: ParameterKind, name: str, table: ParameterTable) -> MappingEntry:
        wanted = normalize_name(name)
        exact = [s for s in self.named[kind] if normalize_name(s.name) == wanted]
        if exact:
            others = ", ".join(s.key for s in exact[1:])
            note = f"{others} have the same name; the lowest slot is used" if others else ""
            return _entry(kind, name, exact[0], "reused", note)
        words = name_words(name, kind)
        similar = [s for s in self.named[kind] if words and name_words(s.name, kind) == words]
        if len(similar) == 1:
            note = f"matches {similar[0].name!r} by synonyms"
            return _entry(kind, name, similar[0], "reused", note)
        candidates = [f"{s.key} {s.name!r}" for s in similar]
        note = ""
        if candidates:
            note = (
                f"ambiguous, it could be {' or '.join(candidates)}; a new slot was assigned "
                "(write one of those keys in the steps to use it instead). "
            )
        if not self.free[kind]:
            note = f"{note}no free slot left in {_describe(table)}"
            entry = MappingEntry(kind=kind, logical=name, action="error", note=note)
            self.full.append(entry)
        else:
            key = self.free[kind].pop(0)
            slot = table.get(key)
            assert slot is not None  # free keys come from this table
            slot = slot.renamed(" ".join(name.split()))
            self.new_names[kind][key] = slot.name
            self.named[kind] = sorted([*self.named[kind], slot], key=lambda s: s.number)
            entry = _entry(kind, name, slot, "assigned", (note + _TODO[kind]).strip())
        entry.candidates = candidates
        return entry


def _entry(kind: ParameterKind, name: str, slot: Slot, action: Action, note: str) -> MappingEntry:
    return MappingEntry(
        kind=kind, logical=name, slot=slot.key, slot_name=slot.name, action=action, note=note
    )


def _describe(table: ParameterTable) -> str:
    return table.source.name if table.source is not None else f"the {table.label}"


def _located(program: Program) -> Iterator[tuple[Step, str]]:
    main_seen = False
    for index, stack in enumerate(program.stacks, 1):
        head = stack[0]
        name = head.field("NAME")
        if head.type == "procedures_defnoreturn" and name and len(stack) == 1:
            for input_name, item in head.inputs.items():
                prefix = name if input_name == "STACK" else f"{name}/{input_name}"
                yield from _chain(item if isinstance(item, list) else [item], prefix)
            continue
        label = f"stack{index}"
        if head.type == "select_robot" and not main_seen:
            label, main_seen = "main", True
        yield from _chain(stack, label)


def _chain(steps: Sequence[Step], prefix: str) -> Iterator[tuple[Step, str]]:
    for number, step in enumerate(steps, 1):
        yield from _nested(step, f"{prefix}/{number}")


def _nested(step: Step, path: str) -> Iterator[tuple[Step, str]]:
    yield step, path
    for name, item in step.inputs.items():
        if isinstance(item, Step):
            yield from _nested(item, f"{path}/{name}")
        else:
            yield from _chain(item, f"{path}/{name}")


def parameter_fields(catalog: Catalog | None = None) -> Mapping[str, Mapping[str, ParameterKind]]:
    """``PARAMETER_FIELDS``, and with ``catalog`` its blocks' slot fields too: every ``ref``
    field whose prefix is ``P``, ``N`` or ``F`` (a block of your own that takes a point)."""
    if catalog is None:
        return PARAMETER_FIELDS
    found = {block: dict(fields) for block, fields in PARAMETER_FIELDS.items()}
    for block_type, spec in catalog.blocks.items():
        for field in spec.fields:
            kind = _KIND_OF_PREFIX.get(field.prefix or "") if field.kind == "ref" else None
            if kind is not None:
                found.setdefault(block_type, {})[field.name] = kind
    return found


def map_parameters(
    program: Program,
    *,
    points: TeachingTable | None,
    numbers: NumberTable | None = None,
    flags: FlagTable | None = None,
    catalog: Catalog | None = None,
) -> ParameterMapping:
    """Replace every logical point, number and flag name in ``program`` by a slot key.

    Per name, in document order: an existing slot key stays (unknown key -> ``error``); an
    equal slot name (``normalize_name``) is reused; else one unambiguous synonym match
    (``SYNONYMS``) is reused; else the lowest free slot is assigned and named. The same name
    always gets the same slot. Without a table for a kind its names stay and are reported
    ``unmapped``. Deterministic and idempotent; the inputs are not modified. ``catalog``: the
    blocks of your own whose fields hold slots too (``parameter_fields``).

    Raises:
        NoFreeSlotError: a table ran out of free slots (it lists every name left over).
    """
    tables: dict[ParameterKind, ParameterTable | None] = {
        "point": points,
        "number": numbers,
        "flag": flags,
    }
    mapped = program.model_copy(deep=True)
    uses: list[tuple[Step, str, ParameterKind, BlockRef]] = []
    fields = parameter_fields(catalog)
    for step, path in _located(mapped):
        for field_name, kind in fields.get(step.type, {}).items():
            value = step.fields.get(field_name)
            if value is not None:
                ref = BlockRef(path=path, block_type=step.type, field=field_name, block_id=step.id)
                uses.append((step, field_name, kind, ref))
    keys = (parse_slot_key(step.fields[field_name]) for step, field_name, _, _ in uses)
    bounds = _bounds(uses, catalog or default_catalog())
    mapper = _Mapper(tables, {key[1] for key in keys if key is not None}, bounds)
    for step, field_name, kind, ref in uses:
        entry = mapper.resolve(kind, step.fields[field_name], ref)
        if entry.slot is not None and entry.action != "error":
            step.fields = {k: entry.slot if k == field_name else v for k, v in step.fields.items()}
    entries = list(mapper.entries.values())
    report = MappingReport(
        sources={
            k: str(t.source) if t.source is not None else None
            for k, t in tables.items()
            if t is not None
        },
        entries=entries,
    )
    if mapper.full:
        raise NoFreeSlotError(mapper.full, report)

    def updated(table: _T | None, kind: ParameterKind) -> _T | None:
        return table.with_names(mapper.new_names[kind]) if table is not None else None

    return ParameterMapping(
        program=mapped,
        points=updated(points, "point"),
        numbers=updated(numbers, "number"),
        flags=updated(flags, "flag"),
        report=report,
    )


def apply_teaching(
    program: Program,
    teaching_path: str | os.PathLike[str] | None,
    output_dir: str | os.PathLike[str],
    *,
    catalog: Catalog | None = None,
) -> tuple[Program, MappingReport]:
    """Map ``program`` onto ``teaching_path`` (and ``number_parameter.yaml`` /
    ``flag_parameter.yaml`` beside it when present), write the updated tables and
    ``parameter_mapping.md`` / ``.json`` as new files into ``output_dir``, and return the
    mapped program and the report. The input files are only read.

    Raises:
        ParameterTableError: a table cannot be read, or ``output_dir`` holds an input table.
        NoFreeSlotError: a table ran out of free slots (nothing is written then).
    """
    points = numbers = flags = None
    if teaching_path is not None:
        teaching = Path(teaching_path)
        points = TeachingTable.load(teaching)
        if (teaching.parent / NumberTable.filename).is_file():
            numbers = NumberTable.load(teaching.parent / NumberTable.filename)
        if (teaching.parent / FlagTable.filename).is_file():
            flags = FlagTable.load(teaching.parent / FlagTable.filename)
    target = Path(output_dir)
    given = [t for t in (points, numbers, flags) if t is not None]
    sources = [t.source for t in given if t.source is not None]
    # Checked before anything is written, so a refusal leaves no partial output behind.
    clash = [s for s in sources if any(same_file(target / t.filename, s) for t in given)]
    if clash:
        raise ParameterTableError(
            f"holds the input table {clash[0].name}; input tables are never modified in "
            "place, so choose another output directory",
            path=str(target),
        )
    result = map_parameters(program, points=points, numbers=numbers, flags=flags, catalog=catalog)
    target.mkdir(parents=True, exist_ok=True)
    for updated in (result.points, result.numbers, result.flags):
        if updated is not None:
            updated.save(target / updated.filename)
    write_atomically(target / "parameter_mapping.md", result.report.to_markdown())
    write_atomically(
        target / "parameter_mapping.json", result.report.model_dump_json(indent=2) + "\n"
    )
    return result.program, result.report
