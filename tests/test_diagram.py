"""Mermaid and DOT export: every state and route drawn, gates distinct, labels escaped."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

from _external import require
from pydantic import BaseModel

from flowkit import END, Flow, Route, RouteTable, field, when
from flowkit.diagram import edges, to_dot, to_mermaid
from flowkit.examples.review import flow as review
from flowkit.workflows import load_flow

FLOWS = Path(__file__).resolve().parent / "flows"

# Values that break naive diagram writers: Mermaid's edge-label bars, HTML, quotes,
# newlines, Mermaid entity syntax, DOT escapes and arrow tokens.
NASTY = ["a|b", "</script>", 'say "hi"\nthen go', "#quot;", "&lt;", "back\\slash", "-->", "]]"]


class Weird(BaseModel):
    x: str = ""
    ok: bool = False


class Answer(BaseModel):
    ok: bool = False


def _noop(state: Weird) -> None:
    return None


def weird_flow() -> Flow:
    """A flow whose names and condition values are all awkward for diagram syntax."""
    table = RouteTable(
        "t",
        [Route(field("x").eq(v), target) for v, target in zip(NASTY, ["my node", "a|b", "<x>",
                                                                     "end", "end", "graph",
                                                                     "my node", "a|b"],
                                                              strict=True)]
        + [Route(when("is_ok", lambda s: bool(s.ok)), END)],
        default="bad",
    )  # fmt: skip
    return Flow(
        name='we"ird\n</script>',
        state=Weird,
        start="end",
        nodes={"end": _noop, "my node": _noop, "a|b": _noop, "<x>": _noop},
        gates={"graph": Answer},
        finals={"bad": "failed", "fine": "done"},
        routes={
            "end": table,
            "my node": "graph",
            "a|b": "fine",
            "<x>": END,
            "graph": RouteTable("g", [Route(field("ok"), "fine")], default="end"),
        },
    )


def _decode(text: str) -> str:
    def entity(match: re.Match[str]) -> str:
        code = match.group(1)
        return chr(int(code)) if code.isdigit() else html.unescape(f"&{code};")

    return re.sub(r"#(\w+);", entity, text)


def _mermaid_edge_labels(text: str) -> list[str]:
    return [_decode(m) for m in re.findall(r'-->\|"([^"]*)"\|', text)]


def _dot_strings(text: str) -> list[str]:
    quoted = re.findall(r'"((?:[^"\\]|\\.)*)"', text)
    return [
        html.unescape(re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r"}.get(m[1], m[1]), q))
        for q in quoted
    ]


def test_mermaid_of_the_review_flow() -> None:
    assert to_mermaid(review) == "\n".join(
        [
            "%% flow review",
            "flowchart TD",
            '    __start__(("start"))',
            '    draft("draft")',
            '    publish("publish")',
            '    review{{"review"}}',
            '    __end__(["END"])',
            "    __start__ --> draft",
            "    draft --> review",
            '    review -->|"is_error"| __end__',
            '    review -->|"approved"| publish',
            '    review -->|"default"| draft',
            "    publish --> __end__",
            "    classDef gate fill:#fff4d6,stroke:#c98a00,stroke-width:2px",
            "    classDef done fill:#e3f4e1,stroke:#3a7d34",
            "    classDef failed fill:#fbe3e3,stroke:#b23b3b",
            "    classDef terminal fill:#333,stroke:#333,color:#fff",
            "    class review gate",
            "    class __start__,__end__ terminal",
            "",
        ]
    )


def test_dot_of_the_review_flow_draws_the_gate_as_a_hexagon() -> None:
    dot = to_dot(review)
    assert dot.startswith('digraph "review" {\n')
    assert '"review" [shape=hexagon' in dot
    assert '"draft" [label="draft"];' in dot
    assert '"__start__" -> "draft";' in dot
    assert '"review" -> "publish" [label="approved"];' in dot
    assert '"review" -> "draft" [label="default"];' in dot
    assert '"publish" -> "__end__";' in dot
    assert dot.endswith("}\n")


def test_one_edge_per_rule_and_default_labelled_with_its_condition() -> None:
    flow = load_flow(f"{FLOWS / 'good.py'}:flow")
    drawn = [(e.source, e.target, e.label) for e in edges(flow)]
    assert drawn == [
        ("triage", "approve", "priority == 'high'"),
        ("triage", "resolve", "default"),
        ("approve", "rejected", "rejected"),
        ("approve", "resolve", "approved"),
        ("approve", "approve", "default"),
        ("resolve", END, ""),
    ]
    mermaid = to_mermaid(flow)
    assert mermaid.count("-->") == len(drawn) + 1  # plus the start marker
    assert 'approve{{"approve"}}' in mermaid
    assert 'rejected(["rejected"])' in mermaid
    assert "class rejected failed" in mermaid
    assert to_dot(flow).count(" -> ") == len(drawn) + 1


def test_mermaid_labels_survive_nasty_values_and_names() -> None:
    flow = weird_flow()
    text = to_mermaid(flow)
    assert _mermaid_edge_labels(text) == [e.label for e in edges(flow) if e.label]
    for line in text.splitlines()[1:]:
        # Inside every quoted label: no raw quote, bar, angle bracket, backslash or newline.
        for label in re.findall(r'"([^"]*)"', line):
            assert not set(label) & set("|<>\\`&"), line
    assert "</script>" not in text and "\r" not in text
    assert text.count("\n") == len(text.splitlines())  # no newline leaked out of a label
    # Names that are Mermaid keywords or not plain identifiers get safe generated ids.
    assert '_s0("end")' in text
    assert '_s2("a#124;b")' in text
    assert '_s4{{"graph"}}' in text


def test_dot_labels_survive_nasty_values_and_names() -> None:
    flow = weird_flow()
    text = to_dot(flow)
    strings = _dot_strings(text)
    for label in [e.label for e in edges(flow) if e.label]:
        assert label in strings
    assert flow.name in strings
    assert "</script>" not in text
    assert len(text.splitlines()) == 6 + len(flow.states) + len(list(edges(flow))) + 1


def test_graphviz_renders_the_nasty_flow_with_its_labels(tmp_path: Path) -> None:
    require(shutil.which("dot") is not None, "Graphviz `dot` on PATH (apt-get install graphviz)")
    flow = weird_flow()
    svg = subprocess.run(
        ["dot", "-Tsvg"], input=to_dot(flow), capture_output=True, text=True, check=True
    ).stdout
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    assert "x == '</script>'" in texts
    assert "x == 'a|b'" in texts
    assert "<x>" in texts
