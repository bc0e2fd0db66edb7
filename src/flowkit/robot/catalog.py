"""The block catalog as data: which block types exist, their fields, mutations and inputs.

``load_catalog()`` returns the shipped quick-fcpr-new catalog (30 template types plus 8 types
the editor knows); ``load_catalog(path)`` reads a user's own JSON file, and
``Catalog.merge`` combines them, so another robot's block set needs no change to flowkit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from flowkit.errors import CatalogError, UnsafePatternError, UntrustedInputError
from flowkit.foundation._safe_regex import compile_pattern
from flowkit.foundation._untrusted import parse_json, read_regular_file

from ._resources import schema_path
from ._specs import AttributeSpec, BlockSpec, FieldSpec, InputSpec, TextSpec, ValueRule

__all__ = [
    "AttributeSpec",
    "BlockSpec",
    "Catalog",
    "FieldSpec",
    "InputSpec",
    "TextSpec",
    "catalog_json_schema",
    "default_catalog",
    "load_catalog",
]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class Catalog(BaseModel):
    """A set of block types, keyed by type name; immutable once loaded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: Literal[1] = 1
    name: str
    description: str = ""
    blocks: dict[str, BlockSpec]

    def get(self, block_type: str) -> BlockSpec | None:
        """The spec of ``block_type``, or None when the catalog does not know it."""
        return self.blocks.get(block_type)

    def __contains__(self, block_type: object) -> bool:
        return block_type in self.blocks

    def merge(self, other: Catalog) -> Catalog:
        """A new catalog with ``other``'s blocks added; on a clash ``other``'s spec wins."""
        merged = Catalog(
            name=f"{self.name}+{other.name}",
            description=self.description,
            blocks={**self.blocks, **other.blocks},
        )
        _raise_if_problems(merged, None)
        return merged

    def describe(self, types: Iterable[str] | None = None) -> str:
        """A plain-text reference of the blocks (all, or ``types``), e.g. for an LLM prompt:
        each type's purpose, fields with allowed values and defaults, mutation, inputs and
        what may follow it."""
        chosen = list(self.blocks) if types is None else list(types)
        return "\n".join(_describe(name, self.blocks[name]) for name in chosen) + "\n"

    def problems(self) -> list[str]:
        """Consistency problems the JSON schema cannot express (empty when the catalog is fine)."""
        found: list[str] = []
        for block_type, spec in self.blocks.items():
            found.extend(f"block `{block_type}`: {p}" for p in _block_problems(spec))
        return found


def _describe(name: str, spec: BlockSpec) -> str:
    origin = " [editor only, not in the template set]" if spec.origin == "editor" else ""
    role = f"value, gives {spec.output}" if spec.output else spec.role
    lines = [f"- {name} ({role}){origin}: {spec.description}"]
    fields = []
    for rule in spec.fields:
        need = (
            "required"
            if rule.required
            else (f"default {rule.default}" if rule.default is not None else "optional")
        )
        fields.append(f"{rule.name} = {rule.expected()} ({need})")
    if fields:
        lines.append("  fields: " + "; ".join(fields))
    if spec.mutation:
        attributes = [f"{a.name} = {a.expected()}" for a in spec.mutation]
        lines.append("  mutation: " + "; ".join(attributes))
    for item in spec.inputs:
        kind = (
            f"{item.check or 'any'} value"
            if item.kind == "value"
            else (f"body of {item.accepts} blocks")
        )
        need = ", required" if item.required else ""
        lines.append(f"  input {item.name}: {kind}{need} - {item.description}")
    if spec.role != "value" and not spec.next:
        lines.append("  nothing may follow it in its chain")
    return "\n".join(lines)


def _block_problems(spec: BlockSpec) -> list[str]:
    found: list[str] = []
    if (spec.role == "value") != (spec.output is not None):
        found.append("value blocks need `output` (Boolean or Number); other roles must not")
    if spec.next and spec.role in ("hat", "terminal", "value"):
        found.append(f"a `{spec.role}` block cannot have `next: true`")
    names: set[str] = set()
    for rule in (*spec.fields, *spec.mutation):
        found.extend(_rule_problems(rule))
    for field in spec.fields:
        for name in filter(None, (field.name, field.short)):
            if name in names:
                found.append(f"field name or short name `{name}` is used twice")
            names.add(name)
            if not _NAME.fullmatch(name):
                found.append(f"field name `{name}` must match {_NAME.pattern}")
    attributes = {a.name for a in spec.mutation}
    for item in spec.inputs:
        if "{n}" in item.name and not item.repeat:
            found.append(f"input `{item.name}` has {{n}} but no `repeat` attribute")
        for ref in filter(None, (item.repeat, item.when)):
            if ref not in attributes:
                found.append(f"input `{item.name}` refers to undeclared mutation `{ref}`")
        if item.kind == "value" and item.accepts != "any":
            found.append(f"value input `{item.name}` cannot set `accepts`")
    for name in spec.text.positional:
        kind, _, attr = name.partition(":")
        known = spec.attribute(attr) if kind == "mutation" and attr else spec.field(name)
        if known is None:
            found.append(f"text.positional names unknown `{name}`")
    keyword_input = spec.text.keyword_input
    if (keyword_input is None) != (spec.text.keyword is None):
        found.append("text.keyword and text.keyword_input go together")
    elif keyword_input is not None:
        target = spec.input(keyword_input)
        if target is None or target.kind != "value" or "{n}" in target.name:
            found.append(f"text.keyword_input `{keyword_input}` is not a fixed value input")
    return found


def _rule_problems(rule: ValueRule) -> list[str]:
    found: list[str] = []
    label = f"`{getattr(rule, 'name', '?')}`"
    if rule.kind == "enum" and not rule.values:
        found.append(f"{label} is an enum without `values`")
    if rule.kind == "ref" and not rule.prefix:
        found.append(f"{label} is a ref without `prefix` (like `P`)")
    if rule.pattern is not None:
        try:
            compile_pattern(rule.pattern, what="pattern")
        except UnsafePatternError as exc:
            found.append(f"{label} has an unusable pattern: {exc}")
            return found
    if rule.required and rule.default is not None:
        found.append(f"{label} is required and has a default; keep one of them")
    if rule.default is not None and not rule.accepts(rule.default):
        found.append(f"{label} default `{rule.default}` is not {rule.expected()}")
    return found


def _raise_if_problems(catalog: Catalog, path: str | None) -> None:
    problems = catalog.problems()
    if problems:
        raise CatalogError(problems, path=path)


def _parse(data: Any, path: str | None) -> Catalog:
    try:
        catalog = Catalog.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}"
            for err in exc.errors()
        ]
        raise CatalogError(problems, path=path) from exc
    _raise_if_problems(catalog, path)
    return catalog


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Load a block catalog JSON file; without ``path``, the shipped quick-fcpr-new catalog.

    Raises:
        CatalogError: the file is missing, not JSON, or not a valid catalog (every problem
            listed, each with its JSON location).
    """
    if path is None:
        return default_catalog()
    where = str(path)
    try:
        raw = read_regular_file(path, what="block catalog")
        data = parse_json(raw, what="block catalog", path=where)
    except OSError as exc:
        raise CatalogError([f"cannot read the file: {exc.strerror or exc}"], path=where) from exc
    except UntrustedInputError as exc:
        raise CatalogError([str(exc)], path=where) from exc
    except UnicodeDecodeError as exc:
        problem = f"not UTF-8 text (byte {exc.start}); save it as UTF-8"
        raise CatalogError([problem], path=where) from exc
    except json.JSONDecodeError as exc:
        problem = f"line {exc.lineno}: not JSON ({exc.msg})"
        raise CatalogError([problem], path=where) from exc
    if isinstance(data, dict):
        data.pop("$schema", None)
    return _parse(data, where)


@cache
def default_catalog() -> Catalog:
    """The shipped catalog (``schemas/robot-blocks/quick-fcpr-new.json``), loaded once."""
    return load_catalog(schema_path("robot-blocks", "quick-fcpr-new.json"))


def catalog_json_schema() -> dict[str, Any]:
    """The JSON Schema of catalog files (shipped as ``schemas/robot-block-catalog.schema.json``)."""
    schema = Catalog.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "flowkit robot block catalog"
    schema["properties"]["$schema"] = {"type": "string"}
    return schema
