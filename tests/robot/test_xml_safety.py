"""Hostile XML is refused before anything is read; hostile text in steps stays text."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from pydantic import ValidationError

from flowkit.errors import InvalidProgramError, UnsafeXMLError
from flowkit.robot import (
    Step,
    canonical_form,
    compile_program,
    decompile,
    validate_xml,
)
from flowkit.robot.text import parse, render

NS = 'xmlns="https://developers.google.com/blockly/xml"'
INJECTION = '</field><block type="x"><field name="a">pwned</field></block><field name="b">'


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that records every request (there must be none)."""
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'<!ENTITY leak "leaked">')

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", requests
    server.shutdown()
    server.server_close()


def _attacks(base: str, secret: Path) -> dict[str, str]:
    body = f'<xml {NS}><block type="select_robot" id="a"><field name="robotName">&e;</field>'
    body += "</block></xml>"
    return {
        "xxe_file": f'<!DOCTYPE xml [<!ENTITY e SYSTEM "file://{secret}">]>{body}',
        "xxe_network": f'<!DOCTYPE xml [<!ENTITY e SYSTEM "{base}/e">]>{body}',
        "external_dtd": f'<!DOCTYPE xml SYSTEM "{base}/x.dtd"><xml {NS}/>',
        "parameter_entity": f'<!DOCTYPE xml [<!ENTITY % p SYSTEM "{base}/p.dtd"> %p;]>{body}',
        "billion_laughs": "<!DOCTYPE xml [<!ENTITY a0 'lol'>"
        + "".join(f"<!ENTITY a{i} '{f'&a{i - 1};' * 10}'>" for i in range(1, 10))
        + f"]><xml {NS}><block type='a' id='a'><field name='f'>&a9;</field></block></xml>",
        "doctype_only": f"<!DOCTYPE xml><xml {NS}/>",
    }


@pytest.mark.parametrize(
    "attack",
    [
        "xxe_file",
        "xxe_network",
        "external_dtd",
        "parameter_entity",
        "billion_laughs",
        "doctype_only",
    ],
)
def test_documents_with_doctype_or_entities_are_refused_without_fetching(
    attack: str, listener: tuple[str, list[str]], tmp_path: Path
) -> None:
    base, requests = listener
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    xml = _attacks(base, secret)[attack]
    for read in (decompile, validate_xml, canonical_form):
        with pytest.raises(UnsafeXMLError) as caught:
            read(xml)  # type: ignore[operator]
        assert "DOCTYPE" in str(caught.value) and "TOP SECRET" not in str(caught.value)
    path = tmp_path / "attack.xml"
    path.write_text(xml)
    with pytest.raises(UnsafeXMLError) as from_file:
        decompile(path)
    assert str(path) in str(from_file.value)
    assert requests == []


def test_an_undeclared_entity_is_a_syntax_problem() -> None:
    xml = f'<xml {NS}><block type="a" id="a"><field name="f">&xxe;</field></block></xml>'
    with pytest.raises(InvalidProgramError) as caught:
        decompile(xml)
    assert caught.value.problems[0].code == "xml_syntax"


def test_markup_in_a_field_value_stays_text() -> None:
    steps = [
        Step(type="select_robot", fields={"robotName": INJECTION}),
        Step(type="procedures_callnoreturn", mutation={"name": 'a"b<c>&d'}),
    ]
    xml = compile_program(steps, validate=False, deterministic=True)
    assert xml.count("<block ") == 2 and "pwned</field>" not in xml
    assert '&lt;/field&gt;&lt;block type="x"&gt;' in xml
    program = decompile(xml)
    assert program.stacks[0][0].fields["robotName"] == INJECTION
    assert program.stacks[0][1].param("name") == 'a"b<c>&d'


def test_markup_in_the_source_sentence_stays_text() -> None:
    source = f"move -- there --> {INJECTION} ]]> <!-- x"
    steps = [Step(type="select_robot", fields={"robotName": "r"}, source=source)]
    xml = compile_program(steps, source_comments=True, deterministic=True)
    assert xml.count("<block ") == 1
    assert decompile(xml).stacks[0][0].source == source
    assert parse(render(steps)) == steps  # the text form quotes it


def test_characters_xml_cannot_hold_are_rejected_in_the_model() -> None:
    with pytest.raises(ValidationError, match="U\\+0000"):
        Step(type="select_robot", fields={"robotName": "a\x00b"})
    with pytest.raises(ValidationError, match="must match"):
        Step(type='x"><block')
    with pytest.raises(ValidationError, match="must match"):
        Step(type="a", mutation={"bad name": "1"})
