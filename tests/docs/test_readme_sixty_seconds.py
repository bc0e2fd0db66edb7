"""The README's "Sixty seconds": saved as `sixty.py`, it runs twice in a row in one folder, and
every shell command the section suggests afterwards succeeds and shows the user's own flow.

Run as a newcomer would: the snippet and the commands are separate processes in a fresh
folder, with flowkit importable but nothing else beside them.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def fenced(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONIOENCODING": "utf-8"}
    for name in ("FLOWKIT_STORE", "FLOWKIT_LLM"):
        env.pop(name, None)
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def suggested_commands() -> list[list[str]]:
    """The `$ .venv/bin/flowkit ...` lines of the section's console block, comments removed:
    the venv's flowkit, which is here the one importable from this checkout."""
    [console] = fenced(section("Sixty seconds"), "console")
    commands = []
    for line in console.splitlines():
        if line.startswith("$ "):
            words = shlex.split(line[2:], comments=True)
            assert words[0] == ".venv/bin/flowkit", line
            commands.append([sys.executable, "-m", "flowkit", *words[1:]])
    return commands


def test_the_snippet_is_a_file_the_user_saves_and_the_commands_name_it() -> None:
    text = section("Sixty seconds")
    assert "`sixty.py`" in text
    assert "`.venv/bin/python sixty.py`" in text  # the venv's Python: flowkit is installed there
    commands = suggested_commands()
    assert commands, "the section suggests no shell commands"
    for words in commands:
        assert not any(w in ("review", "sas", "dialogue") for w in words[3:]), words
    targets = [w for words in commands for w in words if w.endswith(":flow")]
    assert targets and set(targets) == {"sixty.py:flow"}


def test_sixty_seconds_runs_twice_and_the_suggested_commands_show_the_users_flow(
    tmp_path: Path,
) -> None:
    [code] = fenced(section("Sixty seconds"), "python")
    (tmp_path / "sixty.py").write_text(code, encoding="utf-8")
    for thread in ("t1", "t2"):
        done = run([sys.executable, "sixty.py"], tmp_path)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        assert done.stdout.startswith(f"{thread}: done"), done.stdout
    outputs = []
    for command in suggested_commands():
        result = run(command, tmp_path)
        shown = " ".join(command[3:])
        assert result.returncode == 0, f"flowkit {shown}: {result.stderr}"
        assert "Traceback" not in result.stderr, shown
        # Every command shows the user's flow `doc`, never a shipped example.
        assert re.search(r"\bdoc\b", result.stdout), f"flowkit {shown} printed:\n{result.stdout}"
        outputs.append(result.stdout)
    everything = "\n".join(outputs)
    assert "draft --> review" in everything  # the diagram of the user's flow
    assert "OK doc:" in everything
    assert re.search(r"^t1\s+doc\s+done", everything, re.MULTILINE)
    assert re.search(r"^t2\s+doc\s+done", everything, re.MULTILINE)
    assert re.search(r"^2\s+input\s+review\s+publish", everything, re.MULTILINE)  # t1's history
    # Importing the flow for the commands ran nothing: still exactly the two threads.
    assert sorted(p.name for p in (tmp_path / "runs" / "threads").iterdir()) == ["t1", "t2"]
