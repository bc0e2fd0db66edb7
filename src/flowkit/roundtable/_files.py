"""Reading a configuration file: YAML or JSON within the untrusted-input limits, with the line
of every key and item so each problem can say where it is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import UntrustedInputError
from ..foundation._untrusted import read_regular_file
from ..foundation._yaml_lines import Lines, line_of, lines_of

__all__ = ["MAX_BYTES", "Lines", "line_of", "read_config_file"]

#: A configuration is a few kilobytes of personas and rules.
MAX_BYTES = 1024 * 1024


def read_config_file(path: Path) -> tuple[Any, Lines]:
    """The data of ``path`` and the line of each key; raises ``ValueError`` with one plain
    sentence when the file cannot be read as YAML or JSON."""
    import yaml

    from ..foundation._untrusted import compose_yaml, construct_yaml, parse_json

    what = "roundtable configuration"
    try:
        raw = read_regular_file(path, what=what, max_bytes=MAX_BYTES)
    except OSError as exc:
        raise ValueError(f"cannot read it ({exc.strerror or type(exc).__name__})") from exc
    except UntrustedInputError as exc:
        raise ValueError(str(exc)) from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start}); save it as UTF-8") from exc
    if not text.strip():
        raise ValueError("the file is empty; write the configuration in it")
    try:
        if path.suffix.lower() == ".json":
            data = parse_json(text, what=what, max_bytes=MAX_BYTES)
            try:
                node = compose_yaml(text, what=what, max_bytes=MAX_BYTES)
            except (yaml.YAMLError, UntrustedInputError):
                return data, {}
            return data, lines_of(node)
        node = compose_yaml(text, what=what, max_bytes=MAX_BYTES, allow_aliases=False)
        return construct_yaml(node, what=what), lines_of(node)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {exc.lineno}: invalid JSON: {exc.msg}; fix the syntax") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        reason = getattr(exc, "problem", None) or type(exc).__name__
        raise ValueError(f"{where}invalid YAML: {reason}; fix the syntax") from exc
    except UntrustedInputError as exc:
        line = getattr(exc, "line", None)  # a NumberTooLongError knows where it is
        raise ValueError(f"line {line}: {exc}" if line else str(exc)) from exc
