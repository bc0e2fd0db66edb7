"""The re-check agreement set (seed 003 §2.2): how often the engine's verdict on an issue after
an edit is the one written down for it, over the cases of tests/quality/data/agreement_set.yaml.

Each case plants a problem in a public-domain Japanese excerpt, takes the issue a rule-based
check reports for it, applies the case's edit, and then does what the ``verify`` node does for
one issue: place its range in the edited text (``Remapper``) and judge it against the
re-check's findings (``judge``). The verdict read off the judgement is compared with the one
the case expects; the set's header says what each verdict means.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from flowkit.quality.embed import Embedder
from flowkit.quality.ids import new_issue_id
from flowkit.quality.judge import Judgement, judge, locate_findings
from flowkit.quality.models import Issue, sha256_text
from flowkit.quality.remap import Remapper
from flowkit.quality.state import Finding

DATA = Path(__file__).resolve().parents[1] / "tests" / "quality" / "data"
SET = DATA / "agreement_set.yaml"
VERDICTS = ("resolved", "still_open", "regressed", "manual")
#: What ends the clause a finding quotes.
_BOUNDARY = "、。「」『』―\n"


class AgreementSetError(ValueError):
    """The agreement set's data cannot be used as written (the message names the case)."""


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    original: str
    edited: str
    issue: Issue
    expected: str


@dataclass(frozen=True)
class CaseOutcome:
    id: str
    kind: str
    expected: str
    got: str
    state: str
    method: str
    confidence: float

    @property
    def agreed(self) -> bool:
        return self.got == self.expected


def _excerpt(path: Path) -> str:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    body = [line for line in lines if not line.startswith("#")]
    return "".join(body).lstrip("\n")


@cache
def load(path: Path = SET) -> tuple[dict[str, Any], str]:
    """The set as written and the excerpt it plants its problems in."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data, _excerpt(path.parent / data["source"])


def detect(text: str, checks: list[dict[str, str]]) -> list[Finding]:
    """The rule-based check: a finding per match of a rule, quoting the clause it is in."""
    found: list[tuple[int, Finding]] = []
    for check in checks:
        for match in re.finditer(check["pattern"], text):
            start, end = match.start(), match.end()
            while start > 0 and text[start - 1] not in _BOUNDARY:
                start -= 1
            while end < len(text) and text[end] not in _BOUNDARY:
                end += 1
            quote = text[start:end].strip("\u3000 ")
            finding = Finding(
                category=check["category"], description=check["description"], quote=quote
            )
            found.append((start, finding))
    return [finding for _, finding in sorted(found, key=lambda pair: pair[0])]


def _once(text: str, old: str, case: str) -> int:
    if text.count(old) != 1:
        raise AgreementSetError(f"case {case}: {old!r} occurs {text.count(old)} times, not once")
    return text.index(old)


def _paragraphs(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _apply(text: str, op: dict[str, Any], case: str) -> str:
    if "replace" in op:
        old, new = (str(part) for part in op["replace"])
        paragraphs = _paragraphs(text)
        where = op.get("in")
        if where is None:
            at = _once(text, old, case)
            return text[:at] + new + text[at + len(old) :]
        paragraphs[where - 1] = _apply(paragraphs[where - 1], {"replace": [old, new]}, case)
        return "".join(paragraphs)
    if "replace_all" in op:
        old, new = op["replace_all"]
        if old not in text:
            raise AgreementSetError(f"case {case}: {old!r} is not in the text")
        return text.replace(old, new)
    try:
        return _paragraph_op(_paragraphs(text), op, case)
    except IndexError:
        raise AgreementSetError(f"case {case}: {op} names a paragraph the text has not") from None


def _paragraph_op(paragraphs: list[str], op: dict[str, Any], case: str) -> str:
    if "replace_paragraph" in op:
        n, new = op["replace_paragraph"]
        paragraphs[n - 1] = new.rstrip("\n") + "\n"
    elif "move_paragraph" in op:
        n, m = op["move_paragraph"]
        paragraphs.insert(m - 1, paragraphs.pop(n - 1))
    elif "copy_paragraph" in op:
        n, m = op["copy_paragraph"]
        paragraphs.insert(m - 1, paragraphs[n - 1])
    elif "delete_paragraph" in op:
        del paragraphs[op["delete_paragraph"] - 1]
    else:
        raise AgreementSetError(f"case {case}: unknown edit operation {sorted(op)}")
    return "".join(paragraphs)


def _plant(text: str, plants: list[list[str]], case: str) -> tuple[str, int]:
    """The text with its problems planted, and where the first one is (its first changed
    character)."""
    at = -1
    for correct, wrong in plants:
        start = _once(text, correct, case)
        text = text[:start] + wrong + text[start + len(correct) :]
        if at == -1:
            at = start + next(
                (i for i, (a, b) in enumerate(zip(correct, wrong, strict=False)) if a != b),
                min(len(correct), len(wrong)),
            )
        elif start <= at:
            at += len(wrong) - len(correct)
    return text, at


def cases(path: Path = SET) -> list[Case]:
    """Every case, planted, edited and with its issue (the finding covering the plant)."""
    data, excerpt = load(path)
    out = []
    for n, raw in enumerate(data["cases"]):
        name = raw["id"]
        if raw["expected"] not in VERDICTS:
            raise AgreementSetError(f"case {name}: unknown verdict {raw['expected']!r}")
        original, at = _plant(excerpt, raw["plant"], name)
        findings = detect(original, data["checks"])
        located = locate_findings(original, findings)
        covering = [
            (f, r)
            for f, r in zip(findings, located, strict=True)
            if r is not None and r.start_char <= at < r.end_char
        ]
        if len(covering) != 1:
            raise AgreementSetError(f"case {name}: {len(covering)} findings cover the plant")
        finding, found = covering[0]
        edited = original
        for op in raw["edit"]:
            edited = _apply(edited, op, name)
        issue = Issue(
            issue_id=new_issue_id(datetime(2026, 1, 1, tzinfo=UTC), f"{n:08x}"),
            session_id="agreement",
            step_id=1,
            manuscript_hash=sha256_text(original),
            text_range=found,
            range_checksum=sha256_text(original[found.start_char : found.end_char]),
            category=finding.category,
            state="InProgress",
        )
        out.append(Case(name, raw["kind"], original, edited, issue, raw["expected"]))
    return out


def reading(judgement: Judgement) -> str:
    """The engine's judgement as one of ``VERDICTS`` (or ``partial``, which is none of them)."""
    if judgement.state == "Resolved":
        return "resolved"
    if judgement.state == "Recurrence":
        return "regressed" if judgement.checksum_changed else "still_open"
    return "manual" if judgement.placement.range is None else "partial"


def judge_case(case: Case, checks: list[dict[str, str]], embedder: Embedder | None) -> Judgement:
    """What the ``verify`` node makes of the case's issue after the edit."""
    remapper = Remapper(case.original, case.edited, embedder=embedder)
    placement = remapper.place(case.issue.text_range, case.issue.range_checksum)
    findings = detect(case.edited, checks)
    return judge(
        case.issue,
        placement,
        old_text=case.original,
        new_text=case.edited,
        findings=findings,
        located=locate_findings(case.edited, findings),
        embedder=remapper.embedder,
        worked=True,
    )


def run(embedder: Embedder | None = None, path: Path = SET) -> list[CaseOutcome]:
    """Every case's expected verdict beside the engine's, with ``embedder`` (default n-gram)."""
    checks = load(path)[0]["checks"]
    outcomes = []
    for case in cases(path):
        judgement = judge_case(case, checks, embedder)
        placement = judgement.placement
        outcomes.append(
            CaseOutcome(
                id=case.id,
                kind=case.kind,
                expected=case.expected,
                got=reading(judgement),
                state=judgement.state,
                method=placement.method or "manual_confirmation",
                confidence=placement.confidence,
            )
        )
    return outcomes


def summary(outcomes: list[CaseOutcome]) -> dict[str, Any]:
    """The agreement figure, and how the disagreements went."""
    agreed = sum(o.agreed for o in outcomes)
    missed = [o for o in outcomes if not o.agreed]
    return {
        "agreed": agreed,
        "cases": len(outcomes),
        "percent": round(100 * agreed / len(outcomes), 1) if outcomes else 0.0,
        # a problem still there (or undecidable) closed as fixed: the costly disagreement
        "wrongly_resolved": sum(o.got == "resolved" for o in missed),
        # the engine asked a person where the set knows the answer: safe, but not agreement
        "left_to_a_person": sum(o.got == "manual" for o in missed),
        "disagreements": [o.id for o in missed],
    }


def table(by_embedder: Mapping[str, list[CaseOutcome]]) -> str:
    """Markdown: per case, the expected verdict and each embedder's (✗ where they differ)."""
    names = list(by_embedder)
    lines = [
        "| case | edit | expected | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    first = next(iter(by_embedder.values()))
    for index, outcome in enumerate(first):
        cells = []
        for name in names:
            mine = by_embedder[name][index]
            mark = "" if mine.agreed else " ✗"
            cells.append(f"{mine.got} (`{mine.method}` {mine.confidence:.2f}){mark}")
        lines.append(
            f"| {outcome.id} | {outcome.kind} | {outcome.expected} | " + " | ".join(cells) + " |"
        )
    totals = [summary(by_embedder[name]) for name in names]
    lines.append(
        "| **agreement** | | | "
        + " | ".join(f"**{s['agreed']}/{s['cases']} = {s['percent']:g} %**" for s in totals)
        + " |"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _quality_edits import EMBEDDERS

    found = {name: run(factory()) for name, factory in EMBEDDERS.items()}
    print(table(found))
