"""The workflow registry: names the ``flowkit`` command (and apps) can load flows by.

Built-in names map to ``"module:attribute"`` strings; third-party packages add theirs under
the ``flowkit.workflows`` entry-point group. A target is a registered name, a
``module:attribute`` or a ``path/to/file.py:attribute`` naming a ``Flow`` or a zero-argument
callable that returns one.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping
from hashlib import sha256
from pathlib import Path
from types import ModuleType

from .definition._flow import Flow
from .errors import FlowDefinitionError, WorkflowLoadError
from .foundation._plain import shorten

__all__ = [
    "BUILTIN",
    "DEMO_ANSWERS",
    "ENTRY_POINT_GROUP",
    "WorkflowLoadError",
    "load_flow",
    "registered",
]

ENTRY_POINT_GROUP = "flowkit.workflows"

#: Workflows that ship with flowkit: name -> "module:attribute".
BUILTIN: Mapping[str, str] = {
    "dialogue": "flowkit.dialogue.workflow:example_flow",
    "quality": "flowkit.quality.workflow:flow",
    "review": "flowkit.examples.review:flow",
    "roundtable": "flowkit.roundtable.workflow:example_flow",
    "sas": "flowkit.sas.workflow:flow",
}

#: Workflows whose demo ships recorded LLM answers (``--llm replay:demo``): name ->
#: "module:attribute" of their ``DemoAnswers``, imported only for a flow of that name.
DEMO_ANSWERS: Mapping[str, str] = {
    "quality": "flowkit.quality.demo:ANSWERS",
    "sas": "flowkit.sas.demo:ANSWERS",
}


def registered() -> dict[str, str]:
    """Every known workflow name -> its ``module:attribute``, built-ins first."""
    found = dict(BUILTIN)
    for name, value in _entry_points().items():
        found.setdefault(name, value)
    return found


def _entry_points() -> dict[str, str]:
    # importlib.metadata scans every installed distribution, so it is only asked when a
    # name is not built in (or when listing everything).
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


MAX_TARGET = 4096
"""The longest target ``load_flow`` reads (a path may be this long, PATH_MAX)."""


def load_flow(target: str) -> Flow:
    """The Flow that ``target`` names.

    ``FlowDefinitionError`` from building the flow passes through unchanged (it lists the
    flow's problems); anything else that goes wrong is a ``WorkflowLoadError``.
    """
    if len(target) > MAX_TARGET:
        raise WorkflowLoadError(
            shorten(target),
            f"`{shorten(target)}` is not a workflow target: a target is a registered name or "
            f"`module:attribute` / `path/to/file.py:attribute`, at most {MAX_TARGET} characters.",
        )
    spec = BUILTIN.get(target)
    if spec is None and ":" not in target:
        spec = _entry_points().get(target)
        if spec is None:
            known = ", ".join(sorted(registered())) or "none"
            raise WorkflowLoadError(
                target,
                f"`{target}` is not a registered workflow (known: {known}); pass a registered "
                "name or `module:attribute` / `path/to/file.py:attribute` naming a Flow.",
            )
    return _load_spec(target, spec or target)


def _load_spec(target: str, spec: str) -> Flow:
    module_name, _, attribute = spec.rpartition(":")
    if not module_name or not attribute:
        raise WorkflowLoadError(
            target, f"`{spec}` is not `module:attribute`; write it like `myapp.flows:review`."
        )
    module = _import(target, module_name)
    value: object = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise WorkflowLoadError(
                target,
                f"`{module_name}` has no attribute `{attribute}`; check the name after the colon.",
            ) from None
    if not isinstance(value, Flow) and callable(value):
        if _needs_arguments(value):
            raise WorkflowLoadError(
                target,
                f"`{spec}` is a function that needs arguments; point at a Flow or at a "
                "zero-argument function returning one.",
            )
        try:
            value = value()
        except FlowDefinitionError:
            raise
        except Exception as exc:
            raise WorkflowLoadError(
                target,
                f"Calling `{spec}` to build the flow failed: {type(exc).__name__}: {exc}",
            ) from exc
    if not isinstance(value, Flow):
        raise WorkflowLoadError(
            target,
            f"`{spec}` is not a flowkit Flow (it is of type {type(value).__name__}); point at "
            "a Flow or at a zero-argument function returning one.",
        )
    return value


def _needs_arguments(fn: object) -> bool:
    import inspect

    try:
        signature = inspect.signature(fn)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False  # builtins without a signature: let the call decide
    return any(
        p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        for p in signature.parameters.values()
    )


def _import(target: str, module_name: str) -> ModuleType:
    try:
        if module_name.endswith(".py"):
            return _import_file(target, Path(module_name))
        if not all(part.isidentifier() for part in module_name.split(".")):
            raise WorkflowLoadError(
                target,
                f"`{module_name}` is neither a `.py` file nor a module name; write "
                "`path/to/file.py:attribute` or `package.module:attribute`.",
            )
        # Like `python -m`, a flow module in the current directory should just work.
        if "" not in sys.path and str(Path.cwd()) not in sys.path:
            sys.path.insert(0, str(Path.cwd()))
        return importlib.import_module(module_name)
    except (FlowDefinitionError, WorkflowLoadError):
        raise
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise WorkflowLoadError(
                target,
                f"Module `{module_name}` cannot be found; check the spelling, install it, or run "
                "from the folder that contains it.",
            ) from exc
        raise WorkflowLoadError(
            target, f"Importing `{module_name}` failed: {type(exc).__name__}: {exc}"
        ) from exc
    except Exception as exc:
        raise WorkflowLoadError(
            target, f"Importing `{module_name}` failed: {type(exc).__name__}: {exc}"
        ) from exc


def _import_file(target: str, path: Path) -> ModuleType:
    path = path.resolve()
    if path.is_dir():
        raise WorkflowLoadError(target, f"`{path}` is a directory, not a `.py` file.")
    if not path.is_file():
        raise WorkflowLoadError(target, f"File `{path}` does not exist.")
    # One module per file path, so loading the same file twice gives the same objects.
    name = f"_flowkit_file_{path.stem}_{sha256(str(path).encode()).hexdigest()[:10]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise WorkflowLoadError(target, f"`{path}` cannot be imported as a Python module.")
    _put_first_on_sys_path(path.parent)
    module = importlib.util.module_from_spec(spec)
    # Registered before running it: pydantic and dataclasses look their module up by name.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _put_first_on_sys_path(folder: Path) -> None:
    # As `python path/file.py` does, the file's folder is importable, so the flow can import
    # the modules beside it. It stays for the process: imports inside node functions run
    # later. A folder already on the path keeps its place, so the order never flips.
    entry = str(folder)
    if entry not in sys.path:
        sys.path.insert(0, entry)
