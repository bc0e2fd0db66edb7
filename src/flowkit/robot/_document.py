"""What the element tree forgets about a program file but a byte-exact round trip needs: the
text around the root (XML declaration, comments, the final newline) and which childless blocks
were written ``<block ...></block>`` rather than ``<block .../>``."""

from __future__ import annotations

import re

from ._xml import BLOCKLY_NS, Element
from .steps import EPILOGUE, PROLOG, Document

__all__ = ["empty_blocks", "outside_root"]

_ROOT_START = re.compile(r"<[A-Za-z_]")

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_END_TAG = re.compile(r"</[^\s<>]+\s*>")
_ATTRIBUTES = r"(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*\s*"
_BLOCK_TAG = re.compile(r"<(?:[A-Za-z_][\w.-]*:)?block" + _ATTRIBUTES + r"(/?)>")


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


def empty_blocks(root: Element, text: str) -> dict[Element, str]:
    """Childless ``<block>`` elements written with an end tag -> the text between the tags.

    The start tags are matched to the elements in document order; where the count differs
    (markup this scan does not understand, such as CDATA) nothing is reported, so the
    compiler's ``<block .../>`` is used.
    """
    closes = [m.group(1) == "/" for m in _BLOCK_TAG.finditer(_COMMENT.sub("", text))]
    blocks = list(root.iter(f"{{{BLOCKLY_NS}}}block"))
    if len(closes) != len(blocks):
        return {}
    return {
        block: block.text or ""
        for block, self_closing in zip(blocks, closes, strict=True)
        if not self_closing and len(block) == 0
    }
