"""What the element tree forgets about a program file but a byte-exact round trip needs: the
text around the root (XML declaration, comments, the final newline) and which childless blocks
were written ``<block ...></block>`` rather than ``<block .../>``."""

from __future__ import annotations

import re

from ._markup import gaps, indent, self_closing_elements
from ._xml import BLOCKLY_NS, Element
from ._xml_text import EPILOGUE, PROLOG
from .steps import Document

__all__ = ["document_markup", "outside_root"]

_ROOT_START = re.compile(r"<[A-Za-z_]")

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_END_TAG = re.compile(r"</[^\s<>]+\s*>")
_SELF_CLOSING = re.compile(r"\s*/>")
_TAG_END_OR_COMMENT = re.compile(r"<!--.*?-->|/>", re.DOTALL)


def outside_root(text: str) -> Document | None:
    """The text before the root element and after it, exactly as written; None where that
    is the compiler's own (nothing) or holds more than a declaration, space and comments."""
    prolog = PROLOG.match(text)
    if prolog is None or not _ROOT_START.match(text, prolog.end()):
        return None
    # The root's end tag is the last end tag followed by nothing but comments and space;
    # scanned from the end with anchored matches, so the time stays linear.
    epilogue = ""
    start = text.rfind("</")
    while start >= 0:
        end = _END_TAG.match(text, start)
        if end is not None and EPILOGUE.fullmatch(text, end.end()):
            epilogue = text[end.end() :]
            break
        start = text.rfind("</", 0, start)
    if not prolog.group() and not epilogue:
        return None
    return Document(prolog=prolog.group(), epilogue=epilogue)


def document_markup(document: Document | None, root: Element, text: str) -> Document | None:
    """``document`` with how the root was written where the compiler writes it otherwise:
    the namespace prefix and declarations, the ``" />"`` spelling, the text before the first
    block; None where all of it is the compiler's."""
    found = document or Document()
    update: dict[str, object] = {}
    prefix = root.prefix or ""
    declared = {key or "": uri for key, uri in root.nsmap.items()}
    if prefix:
        update["prefix"] = prefix
    if declared != {prefix: BLOCKLY_NS}:
        update["namespaces"] = declared
    ends = _SELF_CLOSING.findall(_COMMENT.sub("", text))
    if ends and all(end == " />" for end in ends):
        update["self_closing"] = " />"
    children, texts = gaps(root)
    expected = indent(1) if children else None
    if texts[0] != (expected or "") or (not children and root not in _closed(root, text)):
        update["text"] = texts[0]
    if not update:
        return document
    return found.model_copy(update=update)


def _closed(root: Element, text: str) -> set[Element]:
    return self_closing_elements(root, text) or set()


def written_as(text: str, document: Document) -> str:
    """The compiler's serialisation of the root with the document's namespace declarations
    and self-closing spelling."""
    if document.namespaces:
        declared = " ".join(
            f'xmlns:{prefix}="{uri}"' if prefix else f'xmlns="{uri}"'
            for prefix, uri in document.namespaces.items()
        )
        own = (
            f'xmlns:{document.prefix}="{BLOCKLY_NS}"'
            if document.prefix
            else f'xmlns="{BLOCKLY_NS}"'
        )
        end = text.index(">")
        text = text[:end].replace(own, declared, 1) + text[end:]
    if document.self_closing != "/>":
        # ``/>`` ends a tag everywhere but in comments (``>`` in text and values is escaped).
        text = _TAG_END_OR_COMMENT.sub(
            lambda m: m.group() if m.group().startswith("<!--") else document.self_closing, text
        )
    return text
