"""Check templates (seed 003 UC-120-001): one YAML file per kind of check, read from a folder.

The templates flowkit ships are files in the package (``flowkit/quality/templates/checks/
check_step<NN>_<category>.yaml``: typo, notation, style, structure); a folder of your own
replaces them (``Workspace(templates=...)``, ``flowkit quality check --templates DIR``). A
template names its ``step_id`` (the file name's number), its ``category`` and what the check
prompt tells the LLM (``name``, ``instruction``); a template that is not that is QC-006
(``TemplateMismatchError``, naming the file and the field).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import UntrustedInputError
from .errors import QualityInputError, TemplateMismatchError

__all__ = ["CheckTemplate", "load_check_templates", "shipped_templates_folder"]

#: A template is a few lines; anything larger is not one.
_MAX_BYTES: Final = 64 * 1024
_FILE = re.compile(r"^check_step(\d*).*\.ya?ml$")
_EXPECTED: Final = {
    "step_id": "a whole number from 1 to 99, the number in the file name",
    "category": "lower-case letters, digits and _ (the issues' category, e.g. typo)",
    "name": "a line of text (how the prompt names the check)",
    "instruction": "text (what the check looks for)",
}


@dataclass(frozen=True)
class CheckTemplate:
    """One kind of check: its step number, the category of what it finds, what to look for."""

    step_id: int
    category: str
    name: str
    instruction: str


class _Template(BaseModel):
    """What a template file must hold, exactly."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    step_id: int = Field(ge=1, le=99)
    category: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    name: str = Field(min_length=1, max_length=200)
    instruction: str = Field(min_length=1, max_length=4000)


def shipped_templates_folder() -> Path:
    """The folder of the templates flowkit ships (package data)."""
    return Path(str(resources.files("flowkit.quality").joinpath("templates", "checks")))


def load_check_templates(
    folder: str | os.PathLike[str] | None = None,
) -> tuple[CheckTemplate, ...]:
    """The templates in ``folder`` (default: the shipped ones), by step.

    Every ``check_step*.yaml`` (or ``.yml``) file of the folder is a template; other files
    are left alone.

    Raises:
        TemplateMismatchError: a template is not what the check expects (QC-006); ``.template``
            is its file, ``.field`` the field (``None`` when the file is not a mapping).
        QualityInputError: ``folder`` is not a folder, or holds no template.
    """
    if folder is None:
        return _shipped()
    return _load(Path(folder))


@functools.cache
def _shipped() -> tuple[CheckTemplate, ...]:
    return _load(shipped_templates_folder())


def _load(folder: Path) -> tuple[CheckTemplate, ...]:
    if not folder.is_dir():
        raise QualityInputError(f"{folder} is not a folder of check templates (check_step*.yaml).")
    files = sorted(p for p in folder.iterdir() if _FILE.match(p.name) and p.is_file())
    if not files:
        raise QualityInputError(
            f"There are no check templates (check_step<NN>_<category>.yaml) in {folder}; "
            f"copy the shipped ones from {shipped_templates_folder()} to start from."
        )
    seen: dict[tuple[str, object], Path] = {}  # (field, value) -> the template that has it
    templates: list[CheckTemplate] = []
    for path in files:
        template = _read(path)
        for field, value in (("step_id", template.step_id), ("category", template.category)):
            other = seen.setdefault((field, value), path)
            if other != path:
                raise _mismatch(
                    path, field, f"is {value!r}, like {other.name}; each check has its own"
                )
        templates.append(template)
    return tuple(sorted(templates, key=lambda t: t.step_id))


def _read(path: Path) -> CheckTemplate:
    data = _parse(path)
    if not isinstance(data, dict):
        raise _mismatch(path, None, "is not a mapping of step_id, category, name and instruction")
    try:
        found = _Template.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else None
        if error["type"] == "extra_forbidden":
            reason = "is not a field of a check template (step_id, category, name, instruction)"
        elif error["type"] == "missing":
            reason = f"is missing: {_EXPECTED.get(str(field), '')}"
        else:
            value = data.get(field) if field else None
            reason = f"is {str(value)[:40]!r}, not {_EXPECTED.get(str(field), 'valid')}"
        raise _mismatch(path, field, reason) from None
    number = _FILE.match(path.name)
    if number and number[1] and int(number[1]) != found.step_id:
        raise _mismatch(
            path, "step_id", f"is {found.step_id}, but the file name says step {int(number[1])}"
        )
    return CheckTemplate(found.step_id, found.category, found.name, found.instruction)


def _parse(path: Path) -> Any:
    import yaml

    from ..foundation._untrusted import parse_yaml, read_regular_file

    try:
        text = read_regular_file(path, what="check template", max_bytes=_MAX_BYTES).decode(
            "utf-8-sig"
        )
        return parse_yaml(text, what="check template", path=str(path), allow_aliases=False)
    except OSError as exc:
        raise _mismatch(path, None, f"cannot be read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError:
        raise _mismatch(path, None, "is not UTF-8 text") from None
    except UntrustedInputError as exc:
        raise _mismatch(path, None, f"is refused: {exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise _mismatch(path, None, f"is not YAML{where}") from None


def _mismatch(path: Path, field: str | None, reason: str) -> TemplateMismatchError:
    what = f"field `{field}` " if field else ""
    return TemplateMismatchError(
        f"Check template {path.name} does not fit the check: {what}{reason}; fix it in {path}.",
        template=path,
        field=field,
    )
