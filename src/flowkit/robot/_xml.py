"""Hardened XML reading and writing for robot programs (the only module that touches lxml).

Parsers never load DTDs, resolve entities or reach the network, and refuse documents that
declare a DOCTYPE at all. lxml is imported inside the functions so ``import flowkit.robot``
stays light; it has no type stubs, so its objects are typed ``Any`` and kept in here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from flowkit.errors import (
    InvalidProgramError,
    RobotProgramError,
    UnsafeXMLError,
    UntrustedInputError,
)
from flowkit.foundation._untrusted import read_regular_file

from .problems import Problem

__all__ = [
    "BLOCKLY_NS",
    "MAX_PROGRAM_BYTES",
    "Element",
    "local_name",
    "new_comment",
    "new_element",
    "parse_document",
    "parse_xml",
    "read_program_file",
    "read_source",
    "serialize",
]

#: A program or steps file larger than this is refused unread (programs are tens of kB).
MAX_PROGRAM_BYTES = 8 * 1024 * 1024
BLOCKLY_NS = "https://developers.google.com/blockly/xml"
# A DOCTYPE can only stand in the prolog: after the declaration, comments and PIs.
_DOCTYPE = re.compile(r"\A\ufeff?(?:\s|<\?.*?\?>|<!--.*?-->)*<!DOCTYPE", re.DOTALL)
#: An lxml element; lxml ships no type information.
Element = Any


def read_source(
    source: str | bytes | os.PathLike[str] | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
) -> tuple[bytes, str | None]:
    """The document bytes and a path for messages.

    ``source`` is the XML itself (``str`` or ``bytes``) or a file (a ``Path``); ``path=``
    names a file as a ``str``. A ``str`` is never taken for a file name: one that is not
    markup is refused with a hint, so a typo cannot open ``/dev/zero`` or a FIFO.

    Raises:
        RobotProgramError: both or neither given; a ``str`` that is not XML; the file cannot
            be read, is not a regular file, or is larger than ``MAX_PROGRAM_BYTES``.
    """
    if (source is None) == (path is None):
        raise RobotProgramError(
            "Pass the program either as XML (text, bytes or a Path) or as path=...; "
            f"got {'both' if source is not None else 'neither'}."
        )
    if path is None and isinstance(source, bytes):
        return source, None
    if path is None and isinstance(source, str):
        if not source.lstrip().startswith("<"):
            raise RobotProgramError(
                "The program text is not XML (it does not start with `<`). To read a file, "
                "pass Path(...) or path=...; a str is always the program itself."
            )
        return source.encode("utf-8"), None
    file = path if path is not None else source
    assert file is not None and not isinstance(file, bytes)
    return read_program_file(file, what="robot program"), os.fspath(file)


def read_program_file(path: str | os.PathLike[str], *, what: str) -> bytes:
    """The bytes of a program or steps file: a regular file of at most ``MAX_PROGRAM_BYTES``.

    Raises:
        RobotProgramError: it cannot be read, is not a regular file (a FIFO or a device is
            refused without blocking) or is too large.
    """
    where = os.fspath(path)
    try:
        return read_regular_file(where, what=what, max_bytes=MAX_PROGRAM_BYTES)
    except OSError as exc:
        raise RobotProgramError(
            f"Cannot read {where}: {exc.strerror or exc}; check the path.", path=where
        ) from exc
    except UntrustedInputError as exc:
        raise RobotProgramError(str(exc), path=where) from exc


def _parser(*, keep_comments: bool = False) -> Any:
    from lxml import etree  # type: ignore[import-untyped]

    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=not keep_comments,
        remove_pis=True,
    )


def parse_xml(
    source: str | bytes | os.PathLike[str] | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
) -> tuple[Element, str | None]:
    """Parse a robot program safely; return its root element and the file path (if any).

    ``source`` is XML text, bytes or a ``Path``; ``path=`` a file name (see ``read_source``).

    Raises:
        UnsafeXMLError: the document has a DOCTYPE, entity declarations or references.
        InvalidProgramError: it is not well-formed XML, nested too deeply, or its root is
            not ``<xml xmlns="https://developers.google.com/blockly/xml">``.
    """
    data, where = read_source(source, path=path)
    return _parse_bytes(data, where)


def parse_document(
    source: str | bytes | os.PathLike[str] | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
) -> tuple[Element, str | None, str]:
    """Like ``parse_xml``, keeping the comments inside the root (as ``Comment`` nodes, whose
    ``tag`` is not a ``str``); also returns the document as text (for what the tree forgets:
    the prolog, ``<a></a>`` against ``<a/>``)."""
    data, where = read_source(source, path=path)
    root, where = _parse_bytes(data, where, keep_comments=True)
    return root, where, data.decode("utf-8", errors="replace")


def _parse_bytes(
    data: bytes, path: str | None, *, keep_comments: bool = False
) -> tuple[Element, str | None]:
    from lxml import etree

    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        problem = Problem(
            severity="error",
            code="xml_syntax",
            message="a NUL character; XML cannot hold one, remove it",
            line=line,
        )
        raise InvalidProgramError([problem], path=path)
    if _DOCTYPE.match(data.decode("utf-8", errors="replace")):
        raise _unsafe(path)
    try:
        root = etree.fromstring(data, _parser(keep_comments=keep_comments))
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
    tag: str,
    parent: Element | None = None,
    attributes: Mapping[str, str] | None = None,
    *,
    prefix: str = "",
) -> Element:
    """A Blockly-namespace element with ``attributes`` in order, appended to ``parent``; a
    root declares the namespace with ``prefix`` ("" = the default namespace)."""
    from lxml import etree

    qualified = f"{{{BLOCKLY_NS}}}{tag}"
    if parent is None:
        element = etree.Element(qualified, nsmap={prefix or None: BLOCKLY_NS})
    else:
        element = etree.SubElement(parent, qualified)
    for key, value in (attributes or {}).items():
        element.set(key, value)
    return element


def new_comment(text: str) -> Element:
    """An XML comment node holding ``text``."""
    from lxml import etree

    return etree.Comment(text)


def serialize(
    root: Element,
    *,
    xml_declaration: bool = False,
    after_indent: Callable[[], None] | None = None,
) -> str:
    """The document as text, indented by two spaces like the editor, without a trailing
    newline; ``after_indent`` may then change the text between elements."""
    from lxml import etree

    etree.indent(root, space="  ")
    if after_indent is not None:
        after_indent()
    text: str = etree.tostring(root, encoding="unicode")
    if xml_declaration:
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + text
    return text
