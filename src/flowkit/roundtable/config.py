"""The roundtable configuration as data: the characters (each with its own LLM), their
personas, the rules and prompt template, the conversation limits, the next-speaker policy,
post-processing, memory and logs.

One YAML or JSON file holds what the origin spread over ``config.yaml``, ``personas.yaml``
and ``global_rules.yaml``. ``load_config`` reports every problem at once in a
``RoundtableConfigError``, each with its place in the file (and line); the JSON schema
(``schemas/roundtable-config.schema.json``) describes the same shape for editors. The
models live in ``_models`` (below ``_checks``, which cross-checks them) and are re-exported
here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import UntrustedInputError
from ..foundation._untrusted import check_data_depth
from ._checks import config_problems
from ._files import Lines, read_config_file
from ._models import (
    CharacterSpec,
    ConversationSpec,
    Generation,
    LogsSpec,
    MemorySpec,
    PersonaSpec,
    PostprocessSpec,
    Provider,
    RoundtableConfig,
    RulesSpec,
)
from .errors import RoundtableConfigError

__all__ = [
    "CharacterSpec",
    "ConversationSpec",
    "Generation",
    "LogsSpec",
    "MemorySpec",
    "PersonaSpec",
    "PostprocessSpec",
    "Provider",
    "RoundtableConfig",
    "RulesSpec",
    "config_json_schema",
    "example_names",
    "load_config",
    "resolve_config_path",
]

_EXAMPLES = Path(__file__).with_name("examples")


def config_json_schema() -> dict[str, Any]:
    """The JSON schema of a configuration file (``schemas/roundtable-config.schema.json``)."""
    schema = RoundtableConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://flowkit.dev/schemas/roundtable-config.schema.json"
    return schema


def example_names() -> list[str]:
    """The configurations shipped with flowkit (``trio-ja``, ``trio-en``)."""
    return sorted(p.stem for p in _EXAMPLES.glob("*.yaml"))


def resolve_config_path(source: str | os.PathLike[str]) -> Path:
    """The file ``source`` names: a path, else a shipped example's name.

    Raises:
        RoundtableConfigError: it is neither.
    """
    path = Path(source)
    if path.is_file():
        return path
    shipped = _EXAMPLES / f"{os.fspath(source)}.yaml"
    if "/" not in os.fspath(source) and shipped.is_file():
        return shipped
    known = ", ".join(example_names())
    raise RoundtableConfigError(
        [f"`{os.fspath(source)}` is neither a file nor a shipped example ({known}); pass a path"],
        path=os.fspath(source),
    )


def load_config(
    source: RoundtableConfig | Mapping[str, Any] | str | os.PathLike[str],
) -> RoundtableConfig:
    """A validated configuration from a file, a shipped example's name, or plain data.

    Relative ``logs`` folders of a file are taken relative to the file's folder.

    Raises:
        RoundtableConfigError: the file cannot be read, or the configuration has problems
            (all of them, each with its place and line).
    """
    if isinstance(source, RoundtableConfig):
        return source
    if isinstance(source, Mapping):
        try:
            check_data_depth(source, what="roundtable configuration")
        except UntrustedInputError as exc:
            raise RoundtableConfigError([str(exc)]) from exc
        return _validated(source, {}, None)
    if not isinstance(source, str | os.PathLike):
        raise RoundtableConfigError(
            [
                "expected a file path, a shipped example's name, a mapping or a "
                f"RoundtableConfig, not {type(source).__name__}"
            ]
        )
    path = resolve_config_path(source)
    try:
        data, lines = read_config_file(path)
    except ValueError as exc:
        raise RoundtableConfigError([str(exc)], path=str(path)) from exc
    config = _validated(data, lines, str(path))
    return _anchored(config, path.parent.resolve())


def _anchored(config: RoundtableConfig, folder: Path) -> RoundtableConfig:
    logs = config.logs
    moved = {
        key: str(folder / value)
        for key, value in logs.model_dump().items()
        if value is not None and not Path(value).is_absolute()
    }
    if not moved:
        return config
    return config.model_copy(update={"logs": logs.model_copy(update=moved)})


def _validated(data: Any, lines: Lines, path: str | None) -> RoundtableConfig:
    config, problems = config_problems(data, lines)
    if problems or config is None:
        raise RoundtableConfigError(problems, path=path)
    return config
