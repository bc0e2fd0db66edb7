"""How a program file was written, beyond what its blocks mean: ``Markup`` (per block) and
``Document`` (around and inside the root element).

Kept apart from the step model because none of it changes what a program does: it only lets
a file another tool wrote come back byte for byte (``_markup`` and ``_document`` read and
write it); every part may be deleted, and the compiler's own way is used instead.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from ._xml import BLOCKLY_NS
from ._xml_text import ATTRIBUTE, BETWEEN, EPILOGUE, NAME, PROLOG, xml_text

__all__ = ["Document", "Markup"]

#: A child element of a block, as ``Markup`` names it: ``mutation``, ``comment``, ``next``,
#: ``field:NAME``, ``value:NAME``, ``statement:NAME``.
_CHILD_KEY = re.compile(r"(?:mutation|comment|next|(?:field|value|statement):[A-Za-z_][\w-]*)")
_SPACE_KEY = re.compile(rf"(?:text|tail|{_CHILD_KEY.pattern}\.(?:text|tail))")


class Markup(BaseModel):
    """How a block was written where that is not the compiler's own way, so a file another
    tool wrote comes back byte for byte; every part may be deleted (the compiler's way then).

    ``attributes``: the order of the ``<block>`` attributes as found. ``children``: the order
    of its child elements (``field:NAME``, ``mutation``, ``comment``, ``value:NAME``,
    ``statement:NAME``, ``next``). ``closed``: children written self-closing
    (``<mutation/>``) where the compiler writes an end tag. ``space``: the text between
    elements where it is not the compiler's two-space indentation: ``text`` (inside the
    block, before its first child), ``tail`` (after the block), ``KEY.text`` and
    ``KEY.tail`` (inside and after a child); it holds spaces, line breaks and
    ``<!-- comments -->`` only, so XML comments inside the root keep their place.
    """

    model_config = ConfigDict(extra="forbid")

    attributes: list[str] = []
    children: list[str] = []
    closed: list[str] = []
    space: dict[str, str] = {}

    @model_validator(mode="after")
    def _check(self) -> Markup:
        for name in self.attributes:
            if not ATTRIBUTE.fullmatch(name):
                raise ValueError(f"markup attribute {name!r} must match {ATTRIBUTE.pattern}")
        for key in [*self.children, *self.closed]:
            if not _CHILD_KEY.fullmatch(key):
                raise ValueError(
                    f"markup child {key!r} must be mutation, comment, next, field:NAME, "
                    "value:NAME or statement:NAME"
                )
        for key, value in self.space.items():
            if not _SPACE_KEY.fullmatch(key):
                raise ValueError(
                    f"markup space key {key!r} must be text, tail, KEY.text or KEY.tail"
                )
            xml_text(value, f"markup space {key}")
            if not BETWEEN.fullmatch(value):
                raise ValueError(f"markup space {key} holds only space and <!-- comments -->")
        return self


class Document(BaseModel):
    """How a program file looked around its root element, for a byte-exact round trip:
    ``prolog`` is the text before it (XML declaration, comments), ``epilogue`` the text
    after it (usually the final newline). The rest says how the root was written where the
    compiler writes it otherwise: ``prefix`` of the Blockly elements (``blockly`` writes
    ``<blockly:block>``; "" the default namespace), ``namespaces`` the root's namespace
    declarations in order (prefix -> URI, "" for ``xmlns=``; empty: just the one the prefix
    needs), ``self_closing`` how an empty element ends (``"/>"`` or ``" />"``), ``text`` the
    text inside the root before its first block (spaces and ``<!-- comments -->``)."""

    model_config = ConfigDict(extra="forbid")

    prolog: str = ""
    epilogue: str = ""
    prefix: str = ""
    namespaces: dict[str, str] = {}
    self_closing: Literal["/>", " />"] = "/>"
    text: str | None = None

    @model_validator(mode="after")
    def _outside_text(self) -> Document:
        for name, value, pattern in (
            ("prolog", self.prolog, PROLOG),
            ("epilogue", self.epilogue, EPILOGUE),
        ):
            xml_text(value, name)
            if not pattern.fullmatch(value):
                raise ValueError(
                    f"{name} holds only space and <!-- comments -->"
                    + (" after an optional <?xml ...?> declaration" if name == "prolog" else "")
                )
        for prefix in [self.prefix, *self.namespaces]:
            if prefix and not NAME.fullmatch(prefix):
                raise ValueError(f"namespace prefix {prefix!r} must match {NAME.pattern}")
        if self.namespaces and self.namespaces.get(self.prefix) != BLOCKLY_NS:
            raise ValueError(f"namespaces must declare the prefix {self.prefix!r} as {BLOCKLY_NS}")
        for uri in self.namespaces.values():
            xml_text(uri, "namespace")
            if '"' in uri or "<" in uri or "&" in uri:
                raise ValueError(f'namespace {uri!r} must not hold ", < or &')
        if self.text is not None:
            xml_text(self.text, "text")
            if not BETWEEN.fullmatch(self.text):
                raise ValueError("text holds only space and <!-- comments -->")
        return self
