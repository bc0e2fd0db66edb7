"""How deep a program nests once written as Blockly XML.

Blockly writes a chain by putting each next block inside the ``<next>`` of the one before,
and a body inside its ``<statement>``, so a long chain nests deep. XML readers refuse
documents nested deeper than ``MAX_XML_DEPTH`` elements (libxml2, and so lxml and
``validate_xml``, without its "huge" option), so such a program could be written but never
read back. The check finds the first step that would sit too deep, before any XML is written
(the text of a chain grows with the square of its length, as each level is indented).
"""

from __future__ import annotations

from collections.abc import Sequence

from .steps import Step

__all__ = ["MAX_XML_DEPTH", "first_too_deep"]

#: The deepest element XML readers accept (``<xml>`` is level 1, a top-level block level 2).
MAX_XML_DEPTH = 256


def first_too_deep(chain: Sequence[Step], *, wrapper: bool = False) -> tuple[Step, str] | None:
    """The first step of a top-level ``chain`` (and its path, as problems number steps) that
    would nest deeper than ``MAX_XML_DEPTH``; ``None`` when the whole chain fits.

    ``wrapper``: the chain is one synthesized sub-program whose body is numbered 1, 2 ...
    """
    if wrapper:
        return _block(chain[0], 2, "") if chain else None
    return _chain(chain, 2, "")


def _chain(chain: Sequence[Step], depth: int, prefix: str) -> tuple[Step, str] | None:
    for offset, step in enumerate(chain):
        found = _block(step, depth + 2 * offset, f"{prefix}{offset + 1}")
        if found is not None:
            return found
    return None


def _block(step: Step, depth: int, path: str) -> tuple[Step, str] | None:
    if depth + 1 > MAX_XML_DEPTH:  # its fields and mutation sit one level below it
        return step, path
    for item in step.inputs.values():
        if isinstance(item, Step):  # <value><block>: two levels down, same step number
            found = _block(item, depth + 2, path)
        else:  # <statement><block>...: the body's steps are numbered below this one
            found = _chain(item, depth + 2, f"{path}." if path else "")
        if found is not None:
            return found
    return None
