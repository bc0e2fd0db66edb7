"""The ``## document`` line of the text form: how a program file looked around and inside its
root (``Document``), so text -> XML gives back the declaration, comments, namespace prefix
and ``" />"`` spelling; only whitespace between elements is the compiler's own.

``## document @ prolog="<?xml version='1.0'?>\\n" epilogue="\\n" prefix=blockly
ns.blockly="https://..." self_closing=" />" text="<!-- ... -->"``: every key may be deleted
(the compiler's way then); the whole line too.
"""

from __future__ import annotations

from pydantic import ValidationError

from ..foundation._plain import shorten
from ._text_annotate import split_annotation
from ._text_lex import RESERVED, TextSyntaxError, lex, quote
from .steps import Document

__all__ = ["parse_document_line", "render_document", "text_document"]

_QUOTED = RESERVED | {"|", "@"}
_KEYS = ("prolog", "epilogue", "prefix", "self_closing", "text")
#: ``ns.PREFIX="uri"``, and ``ns="uri"`` for ``xmlns="uri"``.
_NS = "ns"


def text_document(document: Document | None) -> Document | None:
    """What the text form keeps of ``document``: all but a ``text`` of whitespace only."""
    if document is None:
        return None
    if document.text is not None and not document.text.strip():
        document = document.model_copy(update={"text": None})
    return None if document == Document() else document


def render_document(document: Document) -> str:
    """The annotation of the ``## document`` line (without ``@``)."""
    data = document.model_dump(exclude_defaults=True)
    words = [f"{key}={quote(str(data[key]), _QUOTED)}" for key in _KEYS if key in data]
    words.extend(
        f"{_NS + '.' + prefix if prefix else _NS}={quote(uri, _QUOTED)}"
        for prefix, uri in document.namespaces.items()
    )
    return " ".join(words)


def parse_document_line(text: str) -> Document:
    """The ``Document`` of a ``## document @ ...`` line (``text`` is what follows ``document``).

    Raises:
        TextSyntaxError: not ``@ key=value ...`` with known keys, or values a document
            cannot hold.
    """
    head, rest = split_annotation(lex(" " + text))
    if head or rest is None:
        raise TextSyntaxError('after `## document` only `@ key="value" ...` may follow')
    data: dict[str, object] = {}
    namespaces: dict[str, str] = {}
    index = 0
    while index < len(rest):
        key, equals = rest[index], rest[index + 1] if index + 1 < len(rest) else None
        value = rest[index + 2] if index + 2 < len(rest) else None
        if equals is None or equals.text != "=" or value is None:
            raise TextSyntaxError(
                f"expected key=value on the `## document` line at `{shorten(key.text)}`"
            )
        name = key.value
        if name == _NS or name.startswith(_NS + "."):
            namespaces[name[len(_NS) + 1 :]] = value.value
        elif name in _KEYS and name not in data:
            data[name] = value.value
        else:
            known = ", ".join([*_KEYS, "ns", "ns.PREFIX"])
            raise TextSyntaxError(
                f"`{shorten(name)}` on the `## document` line: use each of {known} once"
            )
        index += 3
    if namespaces:
        data["namespaces"] = namespaces
    try:
        return Document.model_validate(data)
    except ValidationError as exc:
        message = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        raise TextSyntaxError(f"the `## document` line: {message}") from None
