"""No command prints a terminal control sequence that came from user data.

A slot value or message holding ESC sequences would otherwise recolour, retitle or clear the
terminal of whoever reads a chat or a stored thread.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from flowkit.cli import main
from flowkit.terminal.output import printable, terminal_safe

ESC = "\x1b[2J\x1b]0;owned\x07"  # clear the screen, set the window title
CSI_C1 = "\x9b31m"  # the one-byte C1 form of CSI


def _controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


def test_printable_escapes_c0_and_c1_but_keeps_newline_and_tab():
    assert printable(f"a{ESC}\tb\n{CSI_C1}\x7f\r") == (
        "a\\x1b[2J\\x1b]0;owned\\x07\tb\n\\u009b31m\\u007f\\x0d"
    )


def test_json_through_the_safe_stream_stays_valid_json_with_the_same_data():
    data = {"text": f"x{ESC}{CSI_C1}\x7f y"}
    out = io.StringIO()
    terminal_safe(out).write(json.dumps(data, ensure_ascii=False))
    assert not _controls(out.getvalue())
    assert json.loads(out.getvalue()) == data


def test_chat_show_and_history_print_no_control_character(tmp_path: Path, capsys, monkeypatch):
    store = str(tmp_path / "store")
    lines = [
        f"book maintenance for robot 2 tomorrow at 3 pm {ESC}",
        f"\x1b[31mSato{CSI_C1}\x1b[0m",  # the requester's name, shown back in the booking
        "/state",
    ]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    assert main(["chat", "robot_cell", "--store", store, "--thread", "esc"]) == 0
    chat = capsys.readouterr()
    assert "for \\x1b[31mSato\\u009b31m\\x1b[0m." in chat.out
    outputs = [chat.out, chat.err]
    for command in (["show", "esc"], ["history", "esc"], ["threads"], ["show", "esc", "--json"]):
        main([*command, "--store", store])
        captured = capsys.readouterr()
        outputs += [captured.out, captured.err]
    assert [c for text in outputs for c in _controls(text)] == []


def test_an_error_naming_user_input_prints_no_control_character(tmp_path, capsys):
    main(["show", f"x{ESC}", "--store", str(tmp_path)])
    captured = capsys.readouterr()
    assert captured.err and not _controls(captured.err) and not _controls(captured.out)


def test_what_a_command_prints_on_stderr_is_escaped_too(tmp_path: Path, capsys):
    flow_file = tmp_path / "shouty.py"
    flow_file.write_text(
        "from pydantic import BaseModel\n"
        "from flowkit import END, Flow\n\n"
        "class State(BaseModel):\n"
        "    text: str = ''\n\n"
        "def boom(state, ctx):\n"
        "    raise RuntimeError('bad input ' + state.text)\n\n"
        "flow = Flow(name='shouty', state=State, start='boom', nodes={'boom': boom},"
        " routes={'boom': END})\n",
        encoding="utf-8",
    )
    value = json.dumps({"text": ESC})
    code = main(["start", f"{flow_file}:flow", "t1", "--input", value, "--store", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 1 and "bad input \\x1b[2J" in captured.err
    assert not _controls(captured.err) and not _controls(captured.out)
