"""The robot controller's parameter tables (teaching points, number variables, flags): strict,
bounded loading from YAML and atomic saving to a new file, with every key and value kept as-is.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from flowkit.errors import ParameterTableError, UntrustedInputError
from flowkit.foundation._untrusted import parse_yaml as parse_yaml_within_limits
from flowkit.foundation._untrusted import read_regular_file

from ..foundation._atomic import write_atomically

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_TABLE_BYTES",
    "POSE_KEYS",
    "FlagTable",
    "NumberTable",
    "ParameterKind",
    "ParameterTable",
    "Scalar",
    "Slot",
    "TeachingTable",
]

ParameterKind = Literal["point", "number", "flag"]
Scalar = str | int | float | bool | None

#: The pose and motion keys of a teaching point, in the controller's order.
POSE_KEYS = (
    *("x_pos", "y_pos", "z_pos", "rx_pos", "ry_pos", "rz_pos"),
    *("vel", "acc", "dec", "dist", "stime", "tool"),
)
#: Real tables are about 20 KB; far larger files are mistakes or attacks (and the node limit
#: bounds what a small file can make the parser build).
MAX_TABLE_BYTES = 2 * 1024 * 1024
# A table is three levels deep; these bound what a hostile file can make the parser build.
_MAX_DEPTH = 16
_MAX_NODES = 200_000


@dataclass(frozen=True)
class Slot:
    """One row of a table: its key (``P21``) and its entries in file order, ``name`` included."""

    key: str
    entries: tuple[tuple[str, Scalar], ...]

    @property
    def name(self) -> str:
        """The display name; empty means the slot is free."""
        value = self.get("name")
        return value if isinstance(value, str) else ""

    @property
    def free(self) -> bool:
        return not self.name.strip()

    @property
    def number(self) -> int:
        return int(self.key[1:])

    @property
    def value(self) -> Scalar:
        """The ``value`` entry of a number variable or flag (None for a teaching point)."""
        return self.get("value")

    def get(self, name: str, default: Scalar = None) -> Scalar:
        return next((v for k, v in self.entries if k == name), default)

    def as_dict(self) -> dict[str, Scalar]:
        return dict(self.entries)

    def renamed(self, name: str) -> Slot:
        """A copy with ``name`` replaced (in place of the old entry, so key order is kept)."""
        items = [(k, name if k == "name" else v) for k, v in self.entries]
        return Slot(self.key, tuple(items))


@dataclass(frozen=True)
class ParameterTable:
    """Slots in file order; ``source`` is the file it was read from (never written to)."""

    kind: ClassVar[ParameterKind]
    prefix: ClassVar[str]
    filename: ClassVar[str]
    label: ClassVar[str]
    required: ClassVar[tuple[str, ...]] = ("name",)

    slots: tuple[Slot, ...]
    # Where a table came from does not change what it holds, so equality ignores it.
    source: Path | None = field(default=None, compare=False)
    _index: dict[str, Slot] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, Slot] = {}
        for slot in self.slots:
            problem = "appears twice; keep one entry per key" if slot.key in index else None
            if not _key_pattern(self.prefix).fullmatch(slot.key):
                problem = f"is not a {self.label} key; use {self.prefix}1, {self.prefix}2, ..."
            if problem:
                where = str(self.source) if self.source else None
                raise ParameterTableError(problem, path=where, key=slot.key)
            index[slot.key] = slot
        object.__setattr__(self, "_index", index)

    def __len__(self) -> int:
        return len(self.slots)

    def __iter__(self) -> Iterator[Slot]:
        return iter(self.slots)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def get(self, key: str) -> Slot | None:
        return self._index.get(key)

    def free_slots(self) -> list[Slot]:
        """Slots with an empty name, lowest number first (file order does not matter)."""
        return sorted((s for s in self.slots if s.free), key=lambda s: s.number)

    def with_names(self, names: Mapping[str, str]) -> Self:
        """A new table where the slots keyed in ``names`` get that name; the rest are kept."""
        slots = tuple(s.renamed(names[s.key]) if s.key in names else s for s in self.slots)
        return type(self)(slots, self.source)

    def to_mapping(self) -> dict[str, dict[str, Scalar]]:
        return {slot.key: slot.as_dict() for slot in self.slots}

    @classmethod
    def from_mapping(cls, data: object, *, source: str | os.PathLike[str] | None = None) -> Self:
        """Validate parsed YAML (a mapping of slot key -> entries) into a table.

        Raises:
            ParameterTableError: naming the file and the key that is wrong, and what to do.
        """
        path, where = (Path(source), str(source)) if source is not None else (None, None)
        if not isinstance(data, dict):
            found = "an empty file" if data is None else type(data).__name__
            raise ParameterTableError(
                f"a {cls.label} must be a mapping of keys such as {cls.prefix}1 to entries, "
                f"found {found}",
                path=where,
            )
        slots = []
        for key, entry in data.items():
            problem = None
            if not isinstance(key, str) or not _key_pattern(cls.prefix).fullmatch(key):
                problem = f"is not a {cls.label} key; keys are {cls.prefix}1, {cls.prefix}2, ..."
            elif not isinstance(entry, dict):
                problem = f"must be a mapping of 'name' and values, found {type(entry).__name__}"
            if problem:
                raise ParameterTableError(problem, path=where, key=str(key))
            slots.append(Slot(key, tuple(cls._entries(key, entry, where))))
        return cls(tuple(slots), path)

    @classmethod
    def _entries(
        cls, key: str, entry: dict[Any, Any], where: str | None
    ) -> list[tuple[str, Scalar]]:
        for needed in cls.required:
            if needed not in entry:
                hint = " (use '' for a free slot)" if needed == "name" else ""
                raise ParameterTableError(f"has no '{needed}'{hint}", path=where, key=key)
        items: list[tuple[str, Scalar]] = []
        for name, value in entry.items():
            problem = cls._check(str(name), value) if isinstance(name, str) else "is no text"
            if problem:
                raise ParameterTableError(problem, path=where, key=f"{key}.{name}")
            items.append((name, value))
        return items

    @classmethod
    def _check(cls, name: str, value: object) -> str | None:
        """Why entry ``name`` with ``value`` is not acceptable, or None."""
        if name == "name":
            if isinstance(value, str):
                return None
            return f"must be text, found {value!r}; quote it in the YAML file (name: '{value}')"
        return cls._check_value(name, value)

    @classmethod
    def _check_value(cls, name: str, value: object) -> str | None:
        if name != "value":
            return f"is not an entry of a {cls.label}; it has only 'name' and 'value'"
        return None if _is_number(value) else f"must be a finite number, found {value!r}"

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        """Read a table from a YAML file (at most ``MAX_TABLE_BYTES``; no aliases, no tags)."""
        return cls.from_mapping(_read_yaml(Path(path), cls.label), source=path)

    def dumps(self) -> str:
        """The table as YAML, in slot and entry order."""
        import yaml

        return yaml.safe_dump(
            self.to_mapping(),
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=1000,
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the table to ``path`` atomically and return it; refuses the file it was read
        from, so an input table is never modified in place."""
        target = Path(path)
        if self.source is not None and same_file(target, self.source):
            raise ParameterTableError(
                "is the file this table was read from; input tables are never modified in "
                "place, so write to another file or directory",
                path=str(target),
            )
        write_atomically(target, self.dumps())
        return target


class TeachingTable(ParameterTable):
    """Teaching points ``P1``…: ``name`` plus pose and motion values (``POSE_KEYS`` and any
    other numeric entry a controller writes, such as ``posture``)."""

    kind: ClassVar[ParameterKind] = "point"
    prefix: ClassVar[str] = "P"
    filename: ClassVar[str] = "teaching.yaml"
    label: ClassVar[str] = "teaching table"

    @classmethod
    def _check_value(cls, name: str, value: object) -> str | None:
        # Controllers write null for an unset tool; anything else must be a finite number.
        if value is None or _is_number(value):
            return None
        return f"must be a finite number or null, found {value!r}"


class NumberTable(ParameterTable):
    """Number variables ``N1``…: ``name`` and a numeric ``value``."""

    kind: ClassVar[ParameterKind] = "number"
    prefix: ClassVar[str] = "N"
    filename: ClassVar[str] = "number_parameter.yaml"
    label: ClassVar[str] = "number table"
    required: ClassVar[tuple[str, ...]] = ("name", "value")


class FlagTable(ParameterTable):
    """Flags ``F1``…: ``name`` and a Boolean ``value``."""

    kind: ClassVar[ParameterKind] = "flag"
    prefix: ClassVar[str] = "F"
    filename: ClassVar[str] = "flag_parameter.yaml"
    label: ClassVar[str] = "flag table"
    required: ClassVar[tuple[str, ...]] = ("name", "value")

    @classmethod
    def _check_value(cls, name: str, value: object) -> str | None:
        if name != "value":
            return super()._check_value(name, value)
        return None if isinstance(value, bool) else f"must be true or false, found {value!r}"


@cache
def _key_pattern(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"{prefix}(?:0|[1-9][0-9]{{0,5}})")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def same_file(a: Path, b: Path) -> bool:
    with contextlib.suppress(OSError):
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


class _LimitError(Exception):
    pass


def _too_large(label: str, where: str) -> ParameterTableError:
    return ParameterTableError(
        f"is larger than {MAX_TABLE_BYTES} bytes; a {label} is normally a few kilobytes",
        path=where,
    )


def _read_yaml(path: Path, label: str) -> object:
    where = str(path)
    try:
        raw = read_regular_file(path, what=label, max_bytes=MAX_TABLE_BYTES + 1)
    except FileNotFoundError:
        raise ParameterTableError(f"{label} not found; check the path", path=where) from None
    except OSError as exc:
        raise ParameterTableError(f"cannot be read: {exc.strerror or exc}", path=where) from exc
    except UntrustedInputError as exc:
        raise _too_large(label, where) from exc
    if len(raw) > MAX_TABLE_BYTES:
        raise _too_large(label, where)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParameterTableError(
            f"is not UTF-8 text (byte {exc.start}); save it as UTF-8", path=where
        ) from exc
    return parse_yaml(text, path=where)


def parse_yaml(text: str, *, path: str | None = None) -> object:
    """Parse one YAML document with PyYAML's safe loader behind the guarded door
    (``flowkit.foundation._untrusted``): anchors and aliases refused (so alias bombs never expand),
    deep nesting and huge documents refused before the composer runs."""
    import yaml

    try:
        return parse_yaml_within_limits(
            text,
            what="parameter table",
            loader=_loader(),
            max_bytes=MAX_TABLE_BYTES,
            max_depth=_MAX_DEPTH,
            max_nodes=_MAX_NODES,
            allow_aliases=False,
        )
    except _LimitError as exc:
        raise ParameterTableError(str(exc), path=path) from None
    except UntrustedInputError as exc:
        raise ParameterTableError(str(exc), path=path) from exc
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise ParameterTableError(
            f"is not a valid parameter table YAML file ({detail}); fix the file or export it "
            "again from the controller",
            path=path,
        ) from exc


@cache
def _loader() -> type[yaml.SafeLoader]:
    import yaml

    # libyaml's safe loader when present (about ten times faster); its constructor is the
    # same Python SafeConstructor, so no tag can build a Python object either way.
    base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class DuplicateCheckingLoader(base):  # type: ignore[valid-type,misc]
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            seen: set[str] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = str(key_node.value)
                if key in seen:
                    raise _LimitError(
                        f"has the key {key!r} twice (line {key_node.start_mark.line + 1}); keep one"
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]

    return DuplicateCheckingLoader
