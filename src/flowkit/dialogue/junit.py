"""Conversation test results as a JUnit XML report, the format CI servers read and ``rasa
test`` users expect: one ``testcase`` per conversation, a ``failure`` per failed conversation
listing each turn that differed, with what the user said and what was expected and seen.

The XML is built with lxml, which escapes markup; characters XML cannot hold at all (control
characters) are written as ``\\xNN`` first, so any conversation text makes a valid report.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime

from lxml import etree  # type: ignore[import-untyped]

from ..foundation._atomic import write_atomically
from .conversations import ConversationResult

__all__ = ["junit_xml", "write_junit"]

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", value)


def junit_xml(
    results: Sequence[ConversationResult], *, suite: str, classname: str | None = None
) -> bytes:
    """The report for ``results`` as one ``testsuite`` named ``suite`` (UTF-8 bytes)."""
    failed = sum(not r.passed for r in results)
    seconds = f"{sum(r.seconds for r in results):.3f}"
    counts = {"tests": str(len(results)), "failures": str(failed), "errors": "0"}
    root = etree.Element("testsuites", name="flowkit dialogue test", time=seconds, **counts)
    node = etree.SubElement(
        root,
        "testsuite",
        name=_text(suite),
        skipped="0",
        time=seconds,
        timestamp=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"),
        **counts,
    )
    for result in results:
        case = etree.SubElement(
            node,
            "testcase",
            classname=_text(classname or suite),
            name=_text(result.name),
            time=f"{result.seconds:.3f}",
        )
        if result.passed:
            continue
        first_turn, first = result.failures[0]
        failure = etree.SubElement(
            case,
            "failure",
            type="ConversationMismatch",
            message=_text(f"turn {first_turn}: {first}"),
        )
        failure.text = _text(_details(result))
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True))


def _details(result: ConversationResult) -> str:
    lines = []
    for turn, problem in result.failures:
        said = result.user_text(turn)
        lines.append(f"turn {turn}" + (f" (user: {said!r})" if said is not None else ""))
        lines.append(f"  {problem}")
    return "\n".join(lines) + "\n"


def write_junit(
    path: str | os.PathLike[str],
    results: Sequence[ConversationResult],
    *,
    suite: str,
    classname: str | None = None,
) -> None:
    """Write the report to ``path`` atomically (a reader never sees half a file)."""
    write_atomically(path, junit_xml(results, suite=suite, classname=classname))
