"""Every problem of a domain file at once: syntax, shape (the pydantic models) and meaning
(``_checks``), each with where it is (the path in the file and, for YAML and JSON files, the
line) and what to do.

Shape errors do not hide the cross-checks: the items that fit the models are checked as a
domain of their own, and references to items that are themselves broken are not reported
twice ("entity `x` is not defined" when `x` is there but malformed).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import DomainError, UntrustedInputError
from ..foundation._untrusted import (
    compose_yaml,
    construct_yaml,
    parse_json,
    read_regular_file,
)
from ..foundation._yaml_lines import Lines, line_of, lines_of
from . import _models
from ._checks import domain_problems, domain_warnings
from ._locate import resolve_path
from ._models import Domain
from .actions import resolve_handlers

__all__ = ["MAX_BYTES", "DomainCheck", "Problem", "check_domain", "parse_file", "problems_of"]

#: A domain file larger than this is refused before parsing (a domain is a few kB).
MAX_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem: ``where`` is a dotted path in the file (``slots.time.entity``)."""

    where: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        at = f"line {self.line}: " if self.line is not None else ""
        return f"{at}{self.where}: {self.message}"

    def to_data(self) -> dict[str, Any]:
        return {"where": self.where, "line": self.line, "message": self.message}


class UnreadableFileError(Exception):
    """The file itself cannot be read as a domain (too large, not UTF-8, bad syntax ...)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        super().__init__(str(problem))


def parse_file(path: Path, what: str = "domain file") -> tuple[Any, Lines]:
    """The data of a YAML or JSON file and the line of every key and item in it.

    Raises:
        DomainError: the file cannot be read, is too large, not UTF-8, or not valid syntax.
    """
    try:
        return read_file(path, what)
    except UnreadableFileError as exc:
        raise DomainError([str(exc.problem)], path=str(path)) from exc


def read_file(path: Path, what: str = "domain file") -> tuple[Any, Lines]:
    """``parse_file``, raising ``UnreadableFileError`` (one problem about the file as a whole)."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise UnreadableFileError(
                Problem(
                    "(file)",
                    f"the file is {size / 1024 / 1024:.1f} MB; a {what} is at most "
                    f"{MAX_BYTES // 1024 // 1024} MB. Pass the {what} itself",
                )
            )
        raw = read_regular_file(path, what=what, max_bytes=MAX_BYTES)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UnreadableFileError(Problem("(file)", f"cannot read it ({reason})")) from exc
    except UntrustedInputError as exc:  # grew past the limit since the stat
        raise UnreadableFileError(Problem("(file)", str(exc))) from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise UnreadableFileError(
            Problem("(file)", f"not UTF-8 text (byte {exc.start}); save it as UTF-8", line)
        ) from exc
    if not text.strip():
        raise UnreadableFileError(
            Problem(
                "(file)",
                f"the file is empty; write the {what} in it"
                + (" (`flowkit dialogue schema` describes one)" if what == "domain file" else ""),
            )
        )
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise UnreadableFileError(Problem("(file)", "a NUL byte; this is not a text file", line))
    try:
        return _parse(text, json_file=path.suffix.lower() == ".json", what=what)
    except UntrustedInputError as exc:
        at = getattr(exc, "line", None)  # a NumberTooLongError knows where it is
        raise UnreadableFileError(Problem("(file)", str(exc), at)) from exc


@dataclass(frozen=True, slots=True)
class DomainCheck:
    """What ``flowkit dialogue check`` reports: the file, the domain if it loads, the problems,
    and warnings (a domain that loads but may not work as meant)."""

    path: str
    domain: Any  # a Domain when there are no problems, else None
    problems: list[Problem]
    warnings: list[Problem] = field(default_factory=list)


def check_domain(source: str | Path) -> DomainCheck:
    """Every problem of the domain file ``source`` (a path or a shipped example's name),
    including action handlers that cannot be imported.

    Raises:
        DomainError: ``source`` is neither a file nor a shipped example.
    """
    path = resolve_path(source)
    try:
        data, lines = read_file(path)
    except UnreadableFileError as exc:
        return DomainCheck(str(path), None, [exc.problem])
    domain, problems = problems_of(data, lines)
    if domain is not None and not problems:
        try:
            resolve_handlers(domain)
        except DomainError as exc:
            problems = _located(exc.problems, lines)
    if domain is None or problems:
        return DomainCheck(str(path), None, problems)
    return DomainCheck(str(path), domain, [], _located(domain_warnings(domain), lines))


def _parse(text: str, *, json_file: bool, what: str) -> tuple[Any, Lines]:
    if json_file:
        try:
            data = parse_json(text, what=what, max_bytes=MAX_BYTES)
        except json.JSONDecodeError as exc:
            where = Problem("(file)", f"invalid JSON: {exc.msg}; fix the syntax", exc.lineno)
            raise UnreadableFileError(where) from exc
        # JSON is YAML too: the YAML parser gives the lines (best effort).
        try:
            return data, lines_of(compose_yaml(text, what=what, max_bytes=MAX_BYTES))
        except (yaml.YAMLError, UntrustedInputError):
            return data, {}
    try:
        node = compose_yaml(text, what=what, max_bytes=MAX_BYTES)
        data = construct_yaml(node, what=what)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or type(exc).__name__
        raise UnreadableFileError(
            Problem("(file)", f"invalid YAML: {reason}; fix the syntax", line)
        ) from exc
    return data, lines_of(node)


def problems_of(data: Any, lines: Lines | None = None) -> tuple[Domain | None, list[Problem]]:
    """The domain ``data`` makes (None if its shape is wrong) and all its problems."""
    lines = lines or {}
    if not isinstance(data, Mapping):
        kind = "nothing" if data is None else f"a {type(data).__name__}"
        return None, [Problem("(top)", f"expected a mapping of domain keys, got {kind}", 1)]
    try:
        domain = Domain.model_validate(data)
    except ValidationError as exc:
        return None, _shape_problems(data, exc, lines)
    return domain, _meaning_problems(domain, {}, lines)


_SECTIONS = ("intents", "faq", "entities", "slots", "goals", "actions", "responses")


def _shape_problems(data: Mapping[str, Any], exc: ValidationError, lines: Lines) -> list[Problem]:
    found: list[Problem] = []
    broken: dict[str, set[str]] = {}
    for error in exc.errors(include_url=False, include_input=False):
        loc = tuple(str(part) for part in error["loc"])
        boolean_key = _boolean_key(error, lines)
        if boolean_key is not None:  # `values: {yes: ...}`: the key YAML made a boolean
            loc = boolean_key
            message = _yaml_boolean(loc[-1].casefold() in _TRUE, loc[-1])
        else:
            message = _plain(error, loc, _value_at(data, error["loc"]))
        found.append(Problem(".".join(loc) or "(top)", message, line_of(lines, loc)))
        if loc:
            broken.setdefault(loc[0], set()).add(loc[1] if len(loc) > 1 else "*")
    # What fits the models is still cross-checked, so one typo does not hide the rest.
    kept: dict[str, Any] = {}
    for key, value in data.items():
        gone = broken.get(str(key), set())
        if "*" in gone or (key not in _SECTIONS and gone):
            continue
        if key in _SECTIONS and isinstance(value, Mapping):
            kept[key] = {k: v for k, v in value.items() if str(k) not in gone}
        else:
            kept[key] = value
    kept.setdefault("name", "unnamed")
    for section in _SECTIONS:
        kept.setdefault(section, {})
    try:
        partial = Domain.model_validate(kept)
    except ValidationError:  # pragma: no cover - kept holds only what validated above
        return found
    return found + _meaning_problems(partial, broken, lines)


def _meaning_problems(
    domain: Domain, broken: Mapping[str, set[str]], lines: Lines
) -> list[Problem]:
    return _located(domain_problems(domain, broken=broken), lines)


def _located(problems: list[str], lines: Lines) -> list[Problem]:
    """``where: message`` texts as problems with their lines."""
    found = []
    for text in problems:
        where, _, message = text.partition(": ")
        found.append(Problem(where, message, line_of(lines, tuple(where.split(".")))))
    return found


def _value_at(data: Any, loc: tuple[Any, ...]) -> Any:
    """The value at ``loc`` in ``data`` (None when the path does not lead anywhere)."""
    for part in loc:
        if (isinstance(data, Mapping) and part in data) or (
            isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data)
        ):
            data = data[part]
        else:
            return None
    return data


#: The words YAML 1.1 (PyYAML) reads as booleans when unquoted, in any of three cases.
_TRUE = ("yes", "true", "on")
_FALSE = ("no", "false", "off")


def _boolean_key(error: Mapping[str, Any], lines: Lines) -> tuple[str, ...] | None:
    """The path of a mapping key YAML read as a boolean (as written in the file), if the
    error is about one: pydantic reports it as ``...: True/1, [key]``."""
    raw = error["loc"]
    if error["type"] != "string_type" or len(raw) < 2 or raw[-1] != "[key]":
        return None
    parent = tuple(str(part) for part in raw[:-2])
    words = _TRUE if raw[-2] in (True, "True") else _FALSE
    for path in lines:
        if len(path) == len(parent) + 1 and path[:-1] == parent and path[-1].casefold() in words:
            return path
    return None


def _yaml_boolean(value: bool, word: str | None = None) -> str:
    """Where text belongs, YAML read an unquoted yes/no as a boolean: say what to write."""
    word = word or ("yes" if value else "no")
    others = [w for w in (_TRUE if value else _FALSE) if w != word.casefold()]
    return (
        f'YAML reads an unquoted {word} as {str(value).lower()}; write "{word}" (in quotes) to '
        f"mean the word (an unquoted {' or '.join(others)} is read as {str(value).lower()} too)"
    )


def _plain(error: Mapping[str, Any], loc: tuple[str, ...], value: Any = None) -> str:
    """A pydantic error in plain words, with what to do; never the input value (but for a
    YAML boolean where text belongs, which is a yes or a no, said with the fix)."""
    kind, msg = error["type"], str(error["msg"])
    if kind == "string_type" and isinstance(value, bool):
        return _yaml_boolean(value)
    if kind == "missing":
        return f"`{loc[-1] if loc else 'this'}` is required but missing; add it"
    if kind == "extra_forbidden":
        key = loc[-1] if loc else "?"
        close = difflib.get_close_matches(key, _known_keys(), n=1)
        hint = f" (did you mean `{close[0]}`?)" if close else ""
        return f"unknown key `{key}`{hint}; remove it or fix its spelling"
    text = msg[0].lower() + msg[1:] if msg else kind
    return f"{text}; fix the value"


def _known_keys() -> list[str]:
    keys: set[str] = set()
    for value in vars(_models).values():
        if isinstance(value, type) and issubclass(value, BaseModel):
            keys |= set(value.model_fields)
    return sorted(keys)
