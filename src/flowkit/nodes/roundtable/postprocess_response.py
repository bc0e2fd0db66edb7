"""``postprocess_response``: the reply as it is shown and logged: no ``<think>``, no
directives, no greeting, two sentences within 160 characters ending like a sentence; an
empty reply shows as 「（応答なし）」 (``flowkit.roundtable.text``)."""

from __future__ import annotations

from typing import Any

from ...definition._node import Node, node
from ...roundtable.services import Services
from ...roundtable.state import RoundtableState
from ...roundtable.text import display_text, postprocess

__all__ = ["make_postprocess_response"]


def make_postprocess_response(services: Services) -> Node:
    settings = services.config.postprocess_settings
    names = [
        name
        for c in services.config.characters
        for name in (c.display_name, c.short_name, c.id, *c.synonyms)
        if name
    ]

    @node(reads=["last_response_text"], writes=["display_text"])
    def postprocess_response(state: RoundtableState) -> dict[str, Any]:
        processed = postprocess(state.last_response_text or "", settings, names=names)
        return {"display_text": display_text(processed, settings)}

    return postprocess_response
