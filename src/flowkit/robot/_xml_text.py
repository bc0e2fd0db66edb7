"""What text an XML program file can hold: the characters XML 1.0 allows, the names of
elements and attributes, and the space and comments allowed around and between elements.

Every model of a program (steps, their layout, tasks) checks its strings against these rules
when built, so a bad character is refused where it was written, not later by lxml.
"""

from __future__ import annotations

import re

__all__ = ["ATTRIBUTE", "BETWEEN", "EPILOGUE", "NAME", "PROLOG", "xml_text"]

# Characters XML 1.0 cannot hold at all (not even escaped); lxml would refuse them later.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
ATTRIBUTE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
#: Text a file may have around its root: the XML declaration first, then space and comments.
OUTSIDE_COMMENTS = r"(?:[ \t\r\n]|<!--(?:(?!--).)*-->)*"
PROLOG = re.compile(r"(?:<\?xml[ \t\r\n][^<>?]*\?>)?" + OUTSIDE_COMMENTS, re.DOTALL)
EPILOGUE = re.compile(OUTSIDE_COMMENTS, re.DOTALL)
#: Text between elements inside the root: space and comments, as around the root.
BETWEEN = EPILOGUE


def xml_text(value: str, what: str) -> str:
    """``value`` unchanged, or ``ValueError`` naming ``what`` and the character XML refuses."""
    bad = _NOT_XML.search(value)
    if bad:
        raise ValueError(
            f"{what} contains the character U+{ord(bad.group()):04X}, which XML cannot hold; "
            "remove it"
        )
    return value
