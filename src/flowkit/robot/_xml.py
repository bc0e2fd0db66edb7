"""Hardened XML reading and writing for robot programs (the only module that touches lxml).

Parsers never load DTDs, resolve entities or reach the network, and refuse documents that
declare a DOCTYPE at all. lxml is imported inside the functions so ``import flowkit.robot``
stays light; it has no type stubs, so its objects are typed ``Any`` and kept in here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flowkit.errors import InvalidProgramError, RobotProgramError, UnsafeXMLError

from .problems import Problem

__all__ = [
    "BLOCKLY_NS",
    "Element",
    "local_name",
    "new_element",
    "parse_xml",
    "read_source",
    "serialize",
]

BLOCKLY_NS = "https://developers.google.com/blockly/xml"
# A DOCTYPE can only stand in the prolog: after the declaration, comments and PIs.
_DOCTYPE = re.compile(r"\A\ufeff?(?:\s|<\?.*?\?>|<!--.*?-->)*<!DOCTYPE", re.DOTALL)
#: An lxml element; lxml ships no type information.
Element = Any


def read_source(source: str | bytes | Path) -> tuple[bytes, str | None]:
    """The document bytes and a path for messages. A ``str`` starting with ``<`` (after
    whitespace) is XML text; any other ``str`` or a ``Path`` is a file to read."""
    if isinstance(source, bytes):
        return source, None
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return source.encode("utf-8"), None
    path = Path(source)
    try:
        return path.read_bytes(), str(path)
    except OSError as exc:
        raise RobotProgramError(
            f"Cannot read {path}: {exc.strerror}; check the path.", path=str(path)
        ) from exc


def _parser() -> Any:
    from lxml import etree  # type: ignore[import-untyped]

    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def parse_xml(source: str | bytes | Path) -> tuple[Element, str | None]:
    """Parse a robot program safely; return its root element and the file path (if any).

    Raises:
        UnsafeXMLError: the document has a DOCTYPE, entity declarations or references.
        InvalidProgramError: it is not well-formed XML, nested too deeply, or its root is
            not ``<xml xmlns="https://developers.google.com/blockly/xml">``.
    """
    from lxml import etree

    data, path = read_source(source)
    if _DOCTYPE.match(data.decode("utf-8", errors="replace")):
        raise _unsafe(path)
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        message = str(exc.msg or exc)
        if "entity" in message.lower() and b"<!ENTITY" in data:
            raise _unsafe(path) from exc
        if "Excessive depth" in message:
            message = (
                "the XML nests deeper than 256 levels (a chain of about 120 blocks); "
                "split long chains into sub-programs"
            )
        else:
            message = f"not well-formed XML: {message}; fix the markup"
        problem = Problem(
            severity="error", code="xml_syntax", message=message, line=exc.lineno or None
        )
        raise InvalidProgramError([problem], path=path) from exc
    docinfo = root.getroottree().docinfo
    entities = next(iter(root.iter(etree.Entity)), None)
    if docinfo.doctype or docinfo.internalDTD is not None or entities is not None:
        raise _unsafe(path)
    if root.tag != f"{{{BLOCKLY_NS}}}xml":
        problem = Problem(
            severity="error",
            code="bad_root",
            message=f'the root element must be <xml xmlns="{BLOCKLY_NS}">, not <{root.tag}>',
            line=root.sourceline,
        )
        raise InvalidProgramError([problem], path=path)
    return root, path


def _unsafe(path: str | None) -> UnsafeXMLError:
    where = f"{path}: " if path else ""
    return UnsafeXMLError(
        f"{where}the XML declares a DOCTYPE or uses entities; robot programs never do, and "
        "flowkit does not read such documents (XXE and entity-expansion attacks). Remove the "
        "<!DOCTYPE ...> and any &name; references.",
        path=path,
    )


def local_name(element: Element) -> str:
    """The element's tag without the Blockly namespace (other namespaces kept as ``{ns}x``)."""
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    prefix = f"{{{BLOCKLY_NS}}}"
    return tag[len(prefix) :] if tag.startswith(prefix) else tag


def new_element(
    tag: str, parent: Element | None = None, attributes: Mapping[str, str] | None = None
) -> Element:
    """A Blockly-namespace element with ``attributes`` in order, appended to ``parent``."""
    from lxml import etree

    qualified = f"{{{BLOCKLY_NS}}}{tag}"
    if parent is None:
        element = etree.Element(qualified, nsmap={None: BLOCKLY_NS})
    else:
        element = etree.SubElement(parent, qualified)
    for key, value in (attributes or {}).items():
        element.set(key, value)
    return element


def serialize(root: Element, *, xml_declaration: bool = False) -> str:
    """The document as text, indented by two spaces like the editor, without a trailing newline."""
    from lxml import etree

    etree.indent(root, space="  ")
    text: str = etree.tostring(root, encoding="unicode")
    if xml_declaration:
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + text
    return text
