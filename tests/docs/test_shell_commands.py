"""The shell commands of README.md and docs/index.md run as written on a fresh Debian machine:
`python3` (there is no `python`), `pip` only inside a venv (the system Python is
"externally managed" and refuses `pip install`), and the venv's own `flowkit`.

A command is a `$ ` line of a console block (every line, in a block with no prompt), a line
of a bash/sh block, or an inline code span of two or more words that runs Python or pip. A
block that activates the venv (`. .venv/bin/activate`) may use plain names after it.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs" / "index.md"]

_FENCE = re.compile(
    r"^[ \t]*```(?P<lang>[\w-]*)[ \t]*\n(?P<body>.*?)^[ \t]*```[ \t]*$", re.M | re.S
)
_SPAN = re.compile(r"`([^`\n]+)`")
_SEPARATORS = re.compile(r"&&|\|\||[;|]")
_ACTIVATE = re.compile(r"^(?:\.|source)\s+\S*bin/activate\b")
_ASSIGNMENT = re.compile(r"^\w+=")


def _block_commands(lang: str, body: str) -> list[str]:
    lines = [line.strip() for line in body.splitlines()]
    if lang == "console":
        prompted = [line[2:] for line in lines if line.startswith("$ ")]
        return prompted or [line for line in lines if line]
    return [line for line in lines if line and not line.startswith("#")]


def _simple_commands(line: str) -> list[list[str]]:
    found = []
    for part in _SEPARATORS.split(line):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            words = part.split()
        while words and _ASSIGNMENT.match(words[0]):
            words = words[1:]
        if words:
            found.append(words)
    return found


def _problem(words: list[str], *, in_venv: bool, inline: bool) -> str | None:
    """Why ``words`` do not run as written on Debian, or None."""
    program = words[0]
    if in_venv:
        return None
    if program == "python":
        return "Debian has no `python`: use `python3`, or the venv's `.venv/bin/python`"
    if program in ("pip", "pip3") or words[:3] == ["python3", "-m", "pip"]:
        return "a bare pip install is refused (externally managed): use `.venv/bin/pip`"
    if program == "python3" and words[1:3] != ["-m", "venv"]:
        return "the system `python3` has no flowkit: use `.venv/bin/python`"
    if program == "flowkit" and not inline:
        return "`flowkit` is the venv's: use `.venv/bin/flowkit` or activate the venv first"
    return None


def debian_problems(text: str) -> list[str]:
    """Every command of a Markdown page that would not run as written, with why."""
    problems = []
    for block in _FENCE.finditer(text):
        if block["lang"] not in ("console", "bash", "sh", "shell"):
            continue
        in_venv = False
        for line in _block_commands(block["lang"], block["body"]):
            for words in _simple_commands(line):
                if _ACTIVATE.match(" ".join(words)):
                    in_venv = True
                elif reason := _problem(words, in_venv=in_venv, inline=False):
                    problems.append(f"`{line}`: {reason}")
    prose = _FENCE.sub("", text)
    for span in _SPAN.findall(prose):
        for words in _simple_commands(span):
            if len(words) >= 2 and (reason := _problem(words, in_venv=False, inline=True)):
                problems.append(f"`{span}`: {reason}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_the_commands_run_as_written_on_debian(page: Path) -> None:
    assert debian_problems(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("```console\n$ pip install -e .\n```\n", True),
        ("```console\n$ flowkit demo\n```\n", True),
        ("```bash\npython -m venv .venv\n```\n", True),
        ("Run `python sixty.py` now.\n", True),
        ("Run `python3 sixty.py` now.\n", True),
        ("```console\npython3 -m venv .venv && .venv/bin/pip install -e . && x\n```\n", False),
        ("```console\n$ . .venv/bin/activate\n$ pip install -e .\n$ flowkit demo\n```\n", False),
        ("```console\n$ .venv/bin/flowkit demo\nflowkit demo output\n```\n", False),
        ("The command `flowkit demo quality`, or plain `python3`.\n", False),
    ],
)
def test_the_checker_tells_debian_safe_commands_from_the_others(text: str, bad: bool) -> None:
    assert bool(debian_problems(text)) is bad


def test_the_readme_gives_exactly_two_commands_for_a_fresh_machine() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Quick start\n")
    quick = readme[start : readme.index("\n## ", start + 1)]
    commands = [
        line
        for block in _FENCE.finditer(quick)
        for line in _block_commands(block["lang"], block["body"])
    ]
    assert len(commands) == 2, commands
    for command in commands:
        assert command.startswith("python3 -m venv .venv && .venv/bin/pip install -e "), command
