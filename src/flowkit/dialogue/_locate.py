"""Where a domain file is: a path, or the name of an example domain shipped with flowkit
(``examples/robot_cell.yaml`` and its ``robot_cell.conversations.yaml``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import DomainError

__all__ = ["example_names", "example_path", "resolve_path"]

_EXAMPLES = Path(__file__).with_name("examples")


def example_names() -> list[str]:
    """Names of the example domains shipped with flowkit (``robot_cell``)."""
    return sorted(
        p.stem
        for p in _EXAMPLES.glob("*.yaml")
        if "." not in p.stem  # not NAME.conversations.yaml, NAME.eval.yaml
    )


def example_path(name: str, suffix: str = ".yaml") -> Path | None:
    path = _EXAMPLES / f"{name}{suffix}"
    return path if path.is_file() else None


def resolve_path(source: str | Path) -> Path:
    """The file ``source`` names: a path, else a shipped example's name.

    Raises:
        DomainError: it is neither (the message lists the shipped examples).
    """
    path = Path(source)
    if path.is_file():
        return path
    shipped = example_path(str(source))
    if shipped is None:
        known = ", ".join(example_names()) or "none"
        raise DomainError(
            [f"`{source}` is neither a file nor a shipped example ({known}); pass a path."],
            path=str(source),
        )
    return shipped
